//! Blocks into any text format, through the [`Markup`] a format implements.
//!
//! Chat platforms, e-mail's text part and the terminal each have their own way to make text
//! bold, to link, to fence a block, and to keep agent text from formatting or mentioning
//! anyone. They share everything else here: how markdown maps to those few constructs (raw HTML
//! is shown as text; links survive only for `http`, `https` and `mailto`; tables become aligned
//! preformatted text), how a diff is laid out, and how blocks are cut to a platform's budget
//! with a closing line (a link to the answer page, say) that says there is more.

use clarify_core::display::{Block, Content, DiffView, LineKind, parse_diff};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use crate::allowed_link;

/// How one text format writes the few constructs blocks need.
pub trait Markup {
    /// Agent text made inert: nothing in it may format, link or mention anyone.
    fn text(&self, s: &str) -> String;
    /// Marked-up text made bold.
    fn strong(&self, inner: &str) -> String;
    fn emphasis(&self, inner: &str) -> String {
        inner.to_owned()
    }
    fn strike(&self, inner: &str) -> String {
        inner.to_owned()
    }
    /// Raw text as inline code.
    fn code(&self, s: &str) -> String;
    /// A link (already checked to be `http`, `https` or `mailto`) reading as `label` (marked
    /// up).
    fn link(&self, url: &str, label: &str) -> String;
    /// Raw text as a preformatted block that nothing inside can close.
    fn pre(&self, s: &str, language: Option<&str>) -> String;
    /// Marked-up text set apart as a quote.
    fn quote(&self, inner: &str) -> String {
        inner
            .lines()
            .map(|l| format!("\u{2502} {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
    /// A diff's lines (each with its marker), preformatted.
    fn diff(&self, lines: &[(LineKind, String)]) -> String {
        let text = lines
            .iter()
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        self.pre(&text, Some("diff"))
    }
    /// The length the platform counts (characters, unless it counts otherwise).
    fn len(&self, s: &str) -> usize {
        s.chars().count()
    }
}

/// `text` (CommonMark with GitHub tables, strikethrough and task lists) in this markup.
pub fn markdown(text: &str, m: &dyn Markup) -> String {
    let mut stack = vec![Frame::new(Kind::Root)];
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(tag) => stack.push(Frame::new(Kind::of(&tag))),
            Event::End(end) => {
                // The parser balances tags, so a root is always below; be safe anyway.
                if stack.len() < 2 {
                    continue;
                }
                let Some(frame) = stack.pop() else { continue };
                let Some(parent) = stack.last_mut() else {
                    continue;
                };
                finish(frame, &end, parent, m);
            }
            Event::Text(t) => {
                let Some(top) = stack.last_mut() else {
                    continue;
                };
                top.raw.push_str(&t);
                if !matches!(top.kind, Kind::CodeBlock(_)) {
                    top.buf.push_str(&m.text(&t));
                }
            }
            // Raw HTML is shown as the text it is.
            Event::Html(t) | Event::InlineHtml(t) => {
                let Some(top) = stack.last_mut() else {
                    continue;
                };
                top.raw.push_str(&t);
                top.buf.push_str(&m.text(&t));
            }
            Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                let Some(top) = stack.last_mut() else {
                    continue;
                };
                top.raw.push_str(&t);
                top.buf.push_str(&m.code(&t));
            }
            Event::SoftBreak => push_both(&mut stack, " "),
            Event::HardBreak => push_both(&mut stack, "\n"),
            Event::Rule => push_both(&mut stack, "\u{2014}\u{2014}\u{2014}\n\n"),
            Event::TaskListMarker(done) => {
                push_both(&mut stack, if done { "\u{2611} " } else { "\u{2610} " })
            }
            Event::FootnoteReference(t) => {
                let Some(top) = stack.last_mut() else {
                    continue;
                };
                top.raw.push_str(&format!("[{t}]"));
                top.buf.push_str(&m.text(&format!("[{t}]")));
            }
        }
    }
    stack
        .into_iter()
        .next()
        .map(|root| root.buf.trim().to_owned())
        .unwrap_or_default()
}

pub(crate) fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

fn push_both(stack: &mut [Frame], s: &str) {
    if let Some(top) = stack.last_mut() {
        top.raw.push_str(s);
        top.buf.push_str(s);
    }
}

#[derive(Debug)]
enum Kind {
    Root,
    Paragraph,
    Heading,
    Quote,
    CodeBlock(Option<String>),
    List(Option<u64>),
    Item,
    Emphasis,
    Strong,
    Strike,
    Link(String),
    Image(String),
    Table,
    Row,
    Cell,
    Other,
}

impl Kind {
    fn of(tag: &Tag<'_>) -> Self {
        match tag {
            Tag::Paragraph => Self::Paragraph,
            Tag::Heading { .. } => Self::Heading,
            Tag::BlockQuote(_) => Self::Quote,
            Tag::CodeBlock(CodeBlockKind::Fenced(lang)) => {
                let lang = lang.split_whitespace().next().unwrap_or_default();
                Self::CodeBlock((!lang.is_empty()).then(|| lang.to_owned()))
            }
            Tag::CodeBlock(CodeBlockKind::Indented) => Self::CodeBlock(None),
            Tag::List(start) => Self::List(*start),
            Tag::Item => Self::Item,
            Tag::Emphasis => Self::Emphasis,
            Tag::Strong => Self::Strong,
            Tag::Strikethrough => Self::Strike,
            Tag::Link { dest_url, .. } => Self::Link(dest_url.to_string()),
            Tag::Image { dest_url, .. } => Self::Image(dest_url.to_string()),
            Tag::Table(_) => Self::Table,
            Tag::TableHead | Tag::TableRow => Self::Row,
            Tag::TableCell => Self::Cell,
            _ => Self::Other,
        }
    }
}

/// Markup being built for one open tag: its marked-up text, its plain text (for tables and
/// code), and what lists and tables collect.
struct Frame {
    kind: Kind,
    buf: String,
    raw: String,
    cells: Vec<String>,
    rows: Vec<Vec<String>>,
    /// A list's next item number.
    next: u64,
}

impl Frame {
    fn new(kind: Kind) -> Self {
        let next = match kind {
            Kind::List(Some(start)) => start,
            _ => 1,
        };
        Self {
            kind,
            buf: String::new(),
            raw: String::new(),
            cells: Vec::new(),
            rows: Vec::new(),
            next,
        }
    }
}

fn finish(frame: Frame, _end: &TagEnd, parent: &mut Frame, m: &dyn Markup) {
    let Frame {
        kind,
        buf,
        raw,
        cells,
        rows,
        ..
    } = frame;
    let (marked, plain) = match kind {
        Kind::Root | Kind::Other => (buf, raw),
        Kind::Paragraph => (format!("{}\n\n", buf.trim()), format!("{}\n\n", raw.trim())),
        Kind::Heading => (
            format!("{}\n\n", m.strong(buf.trim())),
            format!("{}\n\n", raw.trim()),
        ),
        Kind::Quote => (
            format!("{}\n\n", m.quote(buf.trim())),
            format!("{}\n\n", raw.trim()),
        ),
        Kind::CodeBlock(lang) => {
            let code = raw.trim_end_matches('\n');
            (
                format!("{}\n\n", m.pre(code, lang.as_deref())),
                format!("{code}\n\n"),
            )
        }
        Kind::List(_) => (
            format!("{}\n\n", buf.trim_end()),
            format!("{}\n\n", raw.trim_end()),
        ),
        Kind::Item => {
            let prefix = match parent.kind {
                Kind::List(Some(_)) => {
                    let n = parent.next;
                    parent.next += 1;
                    format!("{n}. ")
                }
                _ => "\u{2022} ".to_owned(),
            };
            let indent = |s: &str| s.trim().replace('\n', "\n   ");
            (
                format!("{prefix}{}\n", indent(&buf)),
                format!("{prefix}{}\n", indent(&raw)),
            )
        }
        Kind::Emphasis => (m.emphasis(&buf), raw),
        Kind::Strong => (m.strong(&buf), raw),
        Kind::Strike => (m.strike(&buf), raw),
        Kind::Link(url) if allowed_link(&url) => (m.link(&url, &buf), raw),
        Kind::Image(url) if allowed_link(&url) => {
            let label = if buf.trim().is_empty() {
                m.text("image")
            } else {
                buf
            };
            (m.link(&url, &label), raw)
        }
        Kind::Link(_) | Kind::Image(_) => (buf, raw),
        Kind::Cell => {
            parent.cells.push(one_line(&raw));
            return;
        }
        Kind::Row => {
            parent.rows.push(cells);
            return;
        }
        Kind::Table => {
            let table = aligned(&rows);
            (
                format!("{}\n\n", m.pre(&table, None)),
                format!("{table}\n\n"),
            )
        }
    };
    parent.buf.push_str(&marked);
    parent.raw.push_str(&plain);
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A table as monospaced text, its columns padded to their widest cell.
fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |r: &Vec<String>| {
        (0..columns)
            .map(|c| {
                let cell = r.get(c).map_or("", String::as_str);
                format!("{cell:<width$}", width = widths[c])
            })
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_owned()
    };
    let mut out: Vec<String> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        out.push(line(r));
        if i == 0 && rows.len() > 1 {
            out.push(
                widths
                    .iter()
                    .map(|w| "-".repeat(*w))
                    .collect::<Vec<_>>()
                    .join("-+-"),
            );
        }
    }
    out.join("\n")
}

/// A diff block's lines, each with its marker: file headers (`path +N −M`), hunk headers, and
/// the lines.
pub fn diff_lines(path: Option<&str>, diff: &str) -> Vec<(LineKind, String)> {
    let Ok(view) = parse_diff(diff) else {
        return diff
            .lines()
            .map(|l| (LineKind::Context, l.to_owned()))
            .collect();
    };
    view_lines(path, &view)
}

fn view_lines(path: Option<&str>, view: &DiffView) -> Vec<(LineKind, String)> {
    let mut out = Vec::new();
    let single = view.files.len() == 1;
    for file in &view.files {
        let stat = format!("+{} \u{2212}{}", file.added, file.removed);
        let header = match file.path().or(if single { path } else { None }) {
            Some(name) => format!("{name}  {stat}"),
            None => stat,
        };
        out.push((LineKind::Context, header));
        if file.binary {
            out.push((LineKind::Context, "(a binary file)".to_owned()));
        }
        for hunk in &file.hunks {
            out.push((LineKind::Context, hunk.header()));
            for line in &hunk.lines {
                out.push((line.kind, format!("{}{}", line.kind.marker(), line.text)));
            }
        }
    }
    out
}

/// One block in this markup, whole.
pub fn block(b: &Block, m: &dyn Markup) -> String {
    let body = body(b, m, usize::MAX).0;
    match (&b.title, &b.content) {
        // A link's title is its text, not a heading.
        (_, Content::Link { .. }) | (None, _) => body,
        (Some(title), _) => format!("{}\n{body}", m.strong(&m.text(title))),
    }
}

/// A block's body, its preformatted lines cut to `room` in this markup's length; whether it was
/// cut.
fn body(b: &Block, m: &dyn Markup, room: usize) -> (String, bool) {
    match &b.content {
        Content::Markdown { text } => {
            let whole = markdown(text, m);
            if m.len(&whole) <= room {
                (whole, false)
            } else {
                // Cut markup could leave a construct open; the plain text, cut, cannot.
                let plain = markdown(text, &crate::text::Plain);
                (m.text(&cut_chars(&plain, room.saturating_sub(1))), true)
            }
        }
        Content::Code { language, text } => {
            let lines: Vec<&str> = text.lines().collect();
            fit_lines(lines.len(), room, m, |k| {
                m.pre(&lines[..k].join("\n"), language.as_deref())
            })
        }
        Content::Diff { path, diff } => {
            let lines = diff_lines(path.as_deref(), diff);
            fit_lines(lines.len(), room, m, |k| m.diff(&lines[..k]))
        }
        Content::Fields { items } => {
            let lines: Vec<String> = items
                .iter()
                .map(|f| {
                    format!(
                        "{} {}",
                        m.strong(&m.text(&format!("{}:", f.label))),
                        m.text(&f.value)
                    )
                })
                .collect();
            fit_lines(lines.len(), room, m, |k| lines[..k].join("\n"))
        }
        Content::Image { alt, .. } => (m.text(&format!("[image: {alt}]")), false),
        Content::Link { url } => {
            let label = b.title.as_deref().unwrap_or(url);
            (m.link(url, &m.text(label)), false)
        }
    }
}

/// The most of `n` lines whose rendering fits in `room`.
fn fit_lines(
    n: usize,
    room: usize,
    m: &dyn Markup,
    render: impl Fn(usize) -> String,
) -> (String, bool) {
    let whole = render(n);
    if m.len(&whole) <= room {
        return (whole, false);
    }
    // The longest prefix that fits, by bisection: rendering is linear in the lines kept.
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if m.len(&render(mid)) <= room {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        return (String::new(), true);
    }
    (render(lo), true)
}

fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}\u{2026}", &s[..i]),
        None => s.to_owned(),
    }
}

/// All blocks in this markup within `budget` (as the markup counts length). When they do not
/// fit, the block that overflows is cut (preformatted blocks at a line, text at a character,
/// never inside markup), the rest are left out, and `more` (marked up: e.g. "The rest is on the
/// answer page" with its link) ends the text.
pub fn blocks(blocks: &[Block], m: &dyn Markup, budget: usize, more: &str) -> String {
    const SEP: &str = "\n\n";
    let rendered: Vec<String> = blocks.iter().map(|b| block(b, m)).collect();
    let whole = rendered.join(SEP);
    if m.len(&whole) <= budget {
        return whole;
    }
    // Room is kept for the closing line.
    let budget = budget.saturating_sub(m.len(more) + 1);
    let mut out = String::new();
    for (b, whole) in blocks.iter().zip(&rendered) {
        let gap = if out.is_empty() { 0 } else { m.len(SEP) };
        if m.len(&out) + gap + m.len(whole) <= budget {
            if gap > 0 {
                out.push_str(SEP);
            }
            out.push_str(whole);
            continue;
        }
        let title = match (&b.title, &b.content) {
            (Some(t), c) if !matches!(c, Content::Link { .. }) => {
                format!("{}\n", m.strong(&m.text(t)))
            }
            _ => String::new(),
        };
        let room = budget.saturating_sub(m.len(&out) + gap + m.len(&title));
        let (cut, _) = body(b, m, room);
        if !cut.is_empty() {
            if gap > 0 {
                out.push_str(SEP);
            }
            out.push_str(&title);
            out.push_str(&cut);
        }
        break;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(more);
    out
}
