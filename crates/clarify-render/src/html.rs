//! Blocks as HTML for the inbox, the answer-link page, e-mail and the evidence report.
//!
//! Two layers keep agent text inert. First, every string is escaped where it is placed, and
//! markdown is parsed with its raw HTML turned into text, images turned into links, and links
//! kept only for `http`, `https` and `mailto`. Then the markdown's HTML passes ammonia's
//! allow-list (text-level tags only, no attributes but `href` and a fixed `rel`), which would
//! catch anything the first layer let through. Pages add a Content-Security-Policy without
//! inline script as a third.
//!
//! The HTML carries classes (`block`, `diff`, `add`, `del`, ...) for the pages' stylesheet and
//! no style of its own. A changed line shows `+` or `−` as text beside its numbers, so the
//! change reads without colour; long lines scroll inside their block (`.scroll`), never the
//! page.

use std::collections::HashSet;
use std::fmt::Write;
use std::sync::LazyLock;

use clarify_core::display::{Block, Content, DiffView, LineKind, parse_diff};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use crate::allowed_link;

/// The `rel` of every link to somewhere else.
pub const LINK_REL: &str = "noopener noreferrer nofollow";

/// Escapes text for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

static CLEANER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let tags: HashSet<&str> = [
        "p",
        "br",
        "hr",
        "strong",
        "em",
        "del",
        "code",
        "pre",
        "a",
        "ul",
        "ol",
        "li",
        "blockquote",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    ]
    .into_iter()
    .collect();
    let mut b = ammonia::Builder::empty();
    b.tags(tags)
        .add_tag_attributes("a", ["href"])
        .add_tag_attributes("ol", ["start"])
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some(LINK_REL))
        .strip_comments(true);
    b
});

/// Markdown as safe HTML.
pub fn markdown(text: &str) -> String {
    // Which links were kept, so each end tag matches its start.
    let mut kept: Vec<bool> = Vec::new();
    let events = Parser::new_ext(text, crate::markup::options()).filter_map(|event| match event {
        Event::Html(t) | Event::InlineHtml(t) => Some(Event::Text(t)),
        Event::TaskListMarker(done) => Some(Event::Text(
            if done { "\u{2611} " } else { "\u{2610} " }.into(),
        )),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = allowed_link(&dest_url);
            kept.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        // An image in markdown becomes a link to it: nothing is fetched from elsewhere.
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = allowed_link(&dest_url);
            kept.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Link | TagEnd::Image) => kept
            .pop()
            .unwrap_or(false)
            .then_some(Event::End(TagEnd::Link)),
        other => Some(other),
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    CLEANER.clean(&html).to_string()
}

/// A diff as a table per file: `path +N −M`, then each hunk's header and lines with their old
/// and new numbers and marker.
pub fn diff(path: Option<&str>, text: &str) -> String {
    match parse_diff(text) {
        Ok(view) => diff_view(path, &view),
        // Stored diffs were checked when the request was made; still, never lose one.
        Err(_) => format!("<pre class=\"code\"><code>{}</code></pre>", escape(text)),
    }
}

/// A diff already read.
pub fn diff_view(path: Option<&str>, view: &DiffView) -> String {
    let mut out = String::from("<div class=\"diff\">");
    let single = view.files.len() == 1;
    for file in &view.files {
        let name = file
            .path()
            .or(if single { path } else { None })
            .unwrap_or("");
        let _ = write!(
            out,
            "<div class=\"diff-file\"><span class=\"diff-path\">{}</span> <span class=\"diff-stat\"><span class=\"add\">+{}</span> <span class=\"del\">\u{2212}{}</span></span></div>",
            escape(name),
            file.added,
            file.removed
        );
        if file.binary {
            out.push_str("<p class=\"note\">A binary file.</p>");
            continue;
        }
        out.push_str("<div class=\"scroll\"><table class=\"diff-lines\"><tbody>");
        for hunk in &file.hunks {
            let _ = write!(
                out,
                "<tr class=\"hunk\"><td class=\"num\"></td><td class=\"num\"></td><td class=\"mark\"></td><td class=\"text\">{}</td></tr>",
                escape(&hunk.header())
            );
            for line in &hunk.lines {
                let (class, mark, label) = match line.kind {
                    LineKind::Added => ("add", "+", "added"),
                    LineKind::Removed => ("del", "\u{2212}", "removed"),
                    LineKind::Context => ("ctx", "", "unchanged"),
                };
                let num = |n: Option<usize>| n.map(|n| n.to_string()).unwrap_or_default();
                let _ = write!(
                    out,
                    "<tr class=\"{class}\"><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"mark\" title=\"{label}\">{mark}</td><td class=\"text\">{}</td></tr>",
                    num(line.old),
                    num(line.new),
                    escape(&line.text)
                );
            }
        }
        out.push_str("</tbody></table></div>");
    }
    out.push_str("</div>");
    out
}

/// Blocks as HTML; `image_url(n)` is where block `n`'s image is served (clarify's own route),
/// or `None` where images cannot be shown (e-mail), which shows the alt text instead.
pub fn blocks(blocks: &[Block], image_url: &dyn Fn(usize) -> Option<String>) -> String {
    let mut out = String::new();
    for (n, b) in blocks.iter().enumerate() {
        let _ = write!(
            out,
            "<section class=\"block block-{}\">",
            b.content.type_name()
        );
        if let (Some(title), false) = (&b.title, matches!(b.content, Content::Link { .. })) {
            let _ = write!(out, "<h3 class=\"block-title\">{}</h3>", escape(title));
        }
        match &b.content {
            Content::Markdown { text } => {
                let _ = write!(out, "<div class=\"markdown\">{}</div>", markdown(text));
            }
            Content::Diff { path, diff: text } => out.push_str(&diff(path.as_deref(), text)),
            Content::Code { language, text } => {
                let class = language
                    .as_deref()
                    .map(|l| format!(" class=\"language-{}\"", escape(l)))
                    .unwrap_or_default();
                let _ = write!(
                    out,
                    "<div class=\"scroll\"><pre class=\"code\"><code{class}>{}</code></pre></div>",
                    escape(text)
                );
            }
            Content::Fields { items } => {
                out.push_str("<dl class=\"facts\">");
                for f in items {
                    let _ = write!(
                        out,
                        "<div><dt>{}</dt><dd>{}</dd></div>",
                        escape(&f.label),
                        escape(&f.value)
                    );
                }
                out.push_str("</dl>");
            }
            Content::Image { alt, .. } => match image_url(n) {
                Some(url) => {
                    let _ = write!(
                        out,
                        "<figure><img src=\"{}\" alt=\"{}\" loading=\"lazy\"><figcaption>{}</figcaption></figure>",
                        escape(&url),
                        escape(alt),
                        escape(alt)
                    );
                }
                None => {
                    let _ = write!(out, "<p class=\"note\">[image: {}]</p>", escape(alt));
                }
            },
            // Checked when the request was made; checked again, as this is where it would hurt.
            Content::Link { url } if !allowed_link(url) => {
                let _ = write!(out, "<p>{}</p>", escape(b.title.as_deref().unwrap_or(url)));
            }
            Content::Link { url } => {
                let label = b.title.as_deref().unwrap_or(url);
                let _ = write!(
                    out,
                    "<p><a href=\"{}\" rel=\"{LINK_REL}\">{}</a></p>",
                    escape(url),
                    escape(label)
                );
            }
        }
        out.push_str("</section>");
    }
    out
}
