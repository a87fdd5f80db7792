//! How a request reads in an e-mail: the plain text and HTML bodies, and the signed links that
//! answer it one way each.

use std::fmt::Write;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clarify_core::{Context, QuestionKind, Scope};
use clarify_model::EventKind;
use serde_json::{Value, json};

use crate::layout::{self, ACTION};
use crate::layout::words::{headline, outcome_text};
use crate::notice::Notice;
use crate::text::cut;

/// How much of an approval's pretty arguments a message shows; the answer link has the rest.
const MAX_ARGUMENTS: usize = 20_000;

/// A link that answers one way once confirmed: its label and its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    pub url: String,
}

/// The links that answer `notice`'s request one way each, once confirmed: for one `single`
/// question each option, for one approval each offered Approve scope and Deny; none for
/// anything else (and none for a quorum request, whose votes are cast by person).
pub fn choices(notice: &Notice<'_>) -> Vec<Choice> {
    let request = &notice.record.request;
    if notice.open_only() {
        // A passkey confirmation is needed: only the page in clarify can ask for it.
        return Vec::new();
    }
    let link = |label: String, answer: Value| Choice {
        label,
        url: format!(
            "{}?answer={}",
            notice.answer_url,
            URL_SAFE_NO_PAD.encode(answer.to_string())
        ),
    };
    let ([q], false) = (request.questions.as_slice(), request.is_quorum()) else {
        return Vec::new();
    };
    let answer = |fields: Value| json!({"answers": {q.id.clone(): fields}});
    match &q.kind {
        QuestionKind::Approval(a) => {
            let mut out: Vec<Choice> = a
                .scopes
                .iter()
                .map(|scope| {
                    let label = match scope {
                        Scope::Once => "Approve".to_owned(),
                        Scope::Session => "Approve for this session".to_owned(),
                        Scope::Always => "Approve always".to_owned(),
                    };
                    link(
                        label,
                        answer(json!({"decision": "approve", "scope": scope.as_str()})),
                    )
                })
                .collect();
            out.push(link("Deny".to_owned(), answer(json!({"decision": "deny"}))));
            out
        }
        QuestionKind::Single(c) => c
            .options
            .iter()
            .map(|o| link(cut(&o.label, 200), answer(json!({"option": o.id}))))
            .collect(),
        _ => Vec::new(),
    }
}

/// The look of display blocks in a message: mail readers drop a page's stylesheet, so the few
/// rules the blocks' classes need travel in the message's head.
const DISPLAY_STYLE: &str = ".block{margin:0 0 1em}.block-title{font-size:1em;margin:0 0 .3em}\
.scroll{overflow-x:auto}.code,.diff-lines{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}\
.diff-lines{border-collapse:collapse}.diff-lines td{padding:0 .4em;white-space:pre;vertical-align:top}\
.diff-lines .num{color:#888;text-align:right}.diff-lines .add{background:#e6ffec}\
.diff-lines .del{background:#ffebe9}.diff-lines .hunk{color:#555;background:#f0f4ff}\
.diff-file{font-weight:bold;margin:.3em 0}.diff-stat .add{color:#1a7f37}.diff-stat .del{color:#cf222e}\
.facts div{display:flex;gap:.5em}.facts dt{font-weight:bold}.facts dd{margin:0}\
pre.code{background:#f6f8fa;padding:.5em}";

/// Escapes text for HTML content and quoted attribute values.
pub fn escape_html(text: &str) -> String {
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

/// The plain text and HTML bodies of `notice`'s message.
pub fn bodies(notice: &Notice<'_>) -> (String, String) {
    let record = notice.record;
    let request = &record.request;
    let mut text = String::new();
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><style>{DISPLAY_STYLE}</style></head><body style=\"font-family: sans-serif\">",
    );
    let e = escape_html;
    let _ = write!(html, "<h2>{}</h2>", e(&headline(record)));
    let _ = writeln!(text, "{}\n", headline(record));

    if notice.resolves() || notice.event == EventKind::Voted {
        let outcome = outcome_text(record);
        let _ = writeln!(text, "{outcome}\n\n{}", notice.answer_url);
        let _ = write!(
            html,
            "<p><strong>{}</strong></p><p><a href=\"{}\">See the request in clarify</a></p></body></html>",
            e(&outcome),
            e(notice.answer_url)
        );
        return (text, html);
    }

    let warning = crate::layout::words::follow_up_words(notice.event, notice.record, &[]);
    let intro = match notice.event {
        EventKind::Reminded => Some("Reminder: this request is still waiting for an answer."),
        EventKind::Warned => Some(warning.as_str()),
        EventKind::Escalated => Some("This request has been escalated to you."),
        _ => None,
    };
    if let Some(intro) = intro {
        let _ = writeln!(text, "{intro}\n");
        let _ = write!(html, "<p><em>{}</em></p>", e(intro));
    }
    match &request.context {
        Some(Context::Text(t)) => {
            let _ = writeln!(text, "{t}\n");
            let _ = write!(html, "<p style=\"white-space: pre-wrap\">{}</p>", e(t));
        }
        Some(Context::Json(map)) => {
            let pretty = serde_json::to_string_pretty(map).unwrap_or_default();
            let _ = writeln!(text, "{pretty}\n");
            let _ = write!(html, "<pre>{}</pre>", e(&pretty));
        }
        None => {}
    }
    if !request.display.is_empty() {
        // Images are served to signed-in people only; a message shows their alt text.
        html.push_str(&clarify_render::html::blocks(&request.display, &|_| None));
        let shown = clarify_render::render_blocks(
            &request.display,
            &clarify_render::text::Plain,
            usize::MAX,
            "",
        );
        let _ = writeln!(text, "{shown}\n");
    }
    for q in &request.questions {
        let _ = writeln!(text, "{}", q.text);
        let _ = write!(html, "<p><strong>{}</strong></p>", e(&q.text));
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                html.push_str("<ul>");
                for o in &c.options {
                    let recommended = c.recommended.as_deref() == Some(o.id.as_str());
                    let mark = if recommended { " (recommended)" } else { "" };
                    let _ = writeln!(text, "- {}{mark}", o.label);
                    let _ = write!(html, "<li>{}{mark}</li>", e(&o.label));
                }
                html.push_str("</ul>");
            }
            QuestionKind::Approval(a) => {
                let _ = writeln!(text, "{ACTION}{}", a.action.name);
                let _ = write!(html, "<p>{ACTION}<code>{}</code></p>", e(&a.action.name));
                if let Some(pretty) = layout::arguments(request, a) {
                    let shown = cut(&pretty, MAX_ARGUMENTS);
                    let _ = write!(html, "<pre>{}</pre>", e(&shown));
                    if pretty.chars().count() > MAX_ARGUMENTS {
                        let more = "(cut: the rest is in clarify)";
                        let _ = writeln!(text, "{shown} {more}");
                        let _ = write!(html, "<p>{}</p>", e(more));
                    } else {
                        let _ = writeln!(text, "{shown}");
                    }
                }
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
        text.push('\n');
    }

    let choices = choices(notice);
    if !choices.is_empty() {
        text.push_str("Answer (each link asks you to confirm):\n");
        html.push_str("<p>Answer (each link asks you to confirm):</p><p>");
        for c in &choices {
            let _ = writeln!(text, "- {}: {}", c.label, c.url);
            let _ = write!(
                html,
                "<a href=\"{}\" style=\"display: inline-block; margin: 0 0.5em 0.5em 0; padding: 0.4em 0.9em; border: 1px solid #888; border-radius: 4px; text-decoration: none\">{}</a> ",
                e(&c.url),
                e(&c.label)
            );
        }
        html.push_str("</p>");
        text.push('\n');
    }
    let approval = request
        .questions
        .iter()
        .any(|q| matches!(q.kind, QuestionKind::Approval(_)));
    let open = match (choices.is_empty(), approval) {
        _ if notice.open_only() => {
            let _ = writeln!(text, "{}\n", crate::layout::words::STEP_UP_LINE);
            let _ = write!(html, "<p>{}</p>", e(crate::layout::words::STEP_UP_LINE));
            crate::layout::words::OPEN_IN_CLARIFY
        }
        (true, _) => "Answer in clarify",
        // Requesting changes takes a reason, which a link cannot carry: the page asks for it.
        (false, true) => "Request changes, or open the request in clarify",
        (false, false) => "Or open the request in clarify",
    };
    let _ = writeln!(text, "{open}: {}\n", notice.answer_url);
    let _ = write!(
        html,
        "<p><a href=\"{}\">{open}</a></p>",
        e(notice.answer_url)
    );
    if !notice.personal.is_empty() && !notice.open_only() {
        let lead = "Your own link: it answers as you (and votes, where approvals are counted)";
        let _ = writeln!(text, "{lead}:");
        let _ = write!(html, "<p>{lead}:</p><ul>");
        for (name, url) in &notice.personal {
            let _ = writeln!(text, "  {name}: {url}");
            let _ = write!(
                html,
                "<li><a href=\"{}\">Answer as {}</a></li>",
                e(url),
                e(name)
            );
        }
        text.push('\n');
        html.push_str("</ul>");
    }

    let mut footer: Vec<String> = crate::layout::words::asked_by(request, str::to_owned, str::to_owned)
        .into_iter()
        .collect();
    if let Some(at) = record.expires_at {
        footer.push(layout::expires(at));
    }
    if let Some(by) = &request.responders {
        footer.push(format!("for {}", by.join(", ")));
    }
    if request.is_quorum() {
        footer.push(format!(
            "needs {} approvals from named responders: {}",
            request.approvals_required,
            outcome_text(record)
        ));
    }
    if !footer.is_empty() {
        let line = footer.join(" · ");
        let _ = writeln!(text, "{line}");
        let _ = write!(html, "<p><small>{}</small></p>", e(&line));
    }
    html.push_str("</body></html>");
    (text, html)
}
