//! How a request looks on WhatsApp: the message body (plain text: WhatsApp's `*bold*` has no
//! escape, so nothing the agent wrote could be kept from turning into markup), its reply buttons
//! or list, the template for a number outside its 24-hour window, and the texts that follow up.

use clarify_core::{Context, QuestionKind, Scope};
use clarify_model::{EventKind, RequestRecord, short_code};
use serde_json::{Value, json};

use super::Template;
use crate::layout::words::{STEP_UP_LINE, asked_by, headline, outcome_text};
use crate::layout::{self, ACTION, THE_REST};
use crate::notice::Notice;
use crate::telegram::Press;
use crate::text::cut;

/// The Cloud API's limit on an interactive message's body.
pub const MAX_INTERACTIVE_BODY: usize = 1_024;
/// Its limit on a text message's body.
pub const MAX_TEXT: usize = 4_096;
/// Reply buttons a message may carry.
pub const MAX_BUTTONS: usize = 3;
/// A reply button's title.
pub const MAX_BUTTON_TITLE: usize = 20;
/// Rows a list message may carry.
pub const MAX_ROWS: usize = 10;
/// A list row's title, and its description.
pub const MAX_ROW_TITLE: usize = 24;
pub const MAX_ROW_DESCRIPTION: usize = 72;
/// A template's text parameter, kept short (the template's own text counts too).
const MAX_PARAMETER: usize = 200;
/// Room for display blocks, as plain text.
const MAX_DISPLAY: usize = 600;

/// One answer a tap can give: the button's id and its title (and a list row's description).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub id: String,
    pub title: String,
    pub description: Option<String>,
}

/// The id of the button that makes `press` on request `id`.
pub fn button_id(id: &str, press: Press) -> String {
    format!("{id}:{}", press.encode())
}

/// The request and the press a button's id names; `None` for an id clarify did not write.
pub fn read_button(id: &str) -> Option<(String, Press)> {
    let (request, press) = id.rsplit_once(':')?;
    (!request.is_empty()).then(|| Press::decode(press).map(|p| (request.to_owned(), p)))?
}

/// The answers a tap can give `record`: one question, a `single` choice (its options) or an
/// approval (Approve, Deny); none otherwise, nor for more options than a list holds.
pub fn choices(record: &RequestRecord) -> Vec<Choice> {
    let request = &record.request;
    let [q] = request.questions.as_slice() else {
        return Vec::new();
    };
    let id = &record.id;
    match &q.kind {
        QuestionKind::Single(c) if c.options.len() <= MAX_ROWS => c
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| Choice {
                id: button_id(id, Press::Option(i)),
                title: o.label.clone(),
                description: o.description.clone(),
            })
            .collect(),
        QuestionKind::Approval(_) => vec![
            Choice {
                id: button_id(id, Press::Approve(Scope::Once)),
                title: "Approve".to_owned(),
                description: None,
            },
            Choice {
                id: button_id(id, Press::Deny),
                title: "Deny".to_owned(),
                description: None,
            },
        ],
        _ => Vec::new(),
    }
}

/// The body of a request's message: headline, context, display blocks, the question with its
/// options numbered (or its action), who asked, the expiry, the short code and how to answer.
pub fn body(notice: &Notice<'_>) -> String {
    let record = notice.record;
    let request = &record.request;
    let code = short_code(&record.id);
    let lead = match notice.event {
        EventKind::Reminded => "Reminder: ",
        EventKind::Escalated => "Escalated to you: ",
        _ => "",
    };
    let mut parts = vec![format!("{lead}{}", cut(&headline(record), 200))];
    match &request.context {
        Some(Context::Text(t)) => parts.push(cut(t, 300)),
        Some(Context::Json(map)) => parts.push(cut(&layout::pretty(map), 300)),
        None => {}
    }
    let more = format!("({THE_REST}: {})", notice.answer_url);
    parts.extend(crate::layout::words::display_text(
        record,
        &clarify_render::text::Plain,
        MAX_DISPLAY,
        &more,
    ));
    for q in &request.questions {
        let mut lines = vec![cut(&q.text, 300)];
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                lines.extend(layout::option_lines(
                    c,
                    |l| cut(l, 60),
                    " (recommended)",
                    None,
                ));
            }
            QuestionKind::Approval(a) => {
                lines.push(format!("{ACTION}{}", cut(&a.action.name, 80)));
                if let Some(args) = layout::arguments(request, a) {
                    lines.push(cut(&args, 300));
                }
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
        parts.push(lines.join("\n"));
    }
    let mut footer: Vec<String> = asked_by(request, |a| cut(a, 40), |s| cut(s, 40))
        .into_iter()
        .collect();
    if let Some(at) = record.expires_at {
        footer.push(layout::expires(at));
    }
    footer.push(format!("code {code}"));
    parts.push(footer.join(" · "));
    if notice.open_only() {
        parts.push(format!("{STEP_UP_LINE}\n{}", notice.answer_url));
    } else {
        parts.push(format!(
            "{}\n{}",
            hint(record, &code),
            notice.answer_url
        ));
    }
    parts.join("\n\n")
}

/// How to answer by typing, for the request's one question.
fn hint(record: &RequestRecord, code: &str) -> String {
    match record.request.questions.as_slice() {
        [q] => match &q.kind {
            QuestionKind::Approval(_) => {
                format!("Tap a button, or reply \"approve {code}\" or \"deny {code} <reason>\"; or open:")
            }
            QuestionKind::Single(_) | QuestionKind::Multi(_) => {
                format!("Reply with an option's number (\"2 {code}\"), or open:")
            }
            QuestionKind::Open => format!("Reply with your answer (\"{code} <answer>\"), or open:"),
            QuestionKind::Form(_) => "Answer it here:".to_owned(),
        },
        _ => "Answer it here:".to_owned(),
    }
}

/// The message `notice` sends to `to` inside its 24-hour window: reply buttons (three answers
/// at most), a list (up to ten), or text; a follow-up or an outcome is text.
pub fn message(notice: &Notice<'_>, to: &str) -> Value {
    if notice.resolves() {
        let record = notice.record;
        let line = format!(
            "{} (code {}): {}",
            cut(&headline(record), 200),
            short_code(&record.id),
            outcome_text(record)
        );
        return text(to, &line);
    }
    let choices = if notice.open_only() {
        Vec::new()
    } else {
        choices(notice.record)
    };
    if choices.is_empty() {
        return text(to, &body(notice));
    }
    let body = cut(&body(notice), MAX_INTERACTIVE_BODY);
    let action = if choices.len() <= MAX_BUTTONS {
        json!({"buttons": choices.iter().map(|c| json!({
            "type": "reply",
            "reply": {"id": c.id, "title": cut(&c.title, MAX_BUTTON_TITLE)},
        })).collect::<Vec<_>>()})
    } else {
        let rows: Vec<Value> = choices
            .iter()
            .map(|c| {
                let mut row = json!({"id": c.id, "title": cut(&c.title, MAX_ROW_TITLE)});
                if let Some(d) = &c.description {
                    row["description"] = json!(cut(d, MAX_ROW_DESCRIPTION));
                }
                row
            })
            .collect();
        json!({"button": "Choose", "sections": [{"title": "Options", "rows": rows}]})
    };
    json!({
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": digits(to),
        "type": "interactive",
        "interactive": {
            "type": if choices.len() <= MAX_BUTTONS { "button" } else { "list" },
            "body": {"text": body},
            "action": action,
        },
    })
}

/// The template a number outside its window gets: the headline and the short code as its two
/// body parameters.
pub fn template(record: &RequestRecord, template: &Template, to: &str) -> Value {
    json!({
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": digits(to),
        "type": "template",
        "template": {
            "name": template.name,
            "language": {"code": template.language},
            "components": [{
                "type": "body",
                "parameters": [
                    {"type": "text", "text": parameter(&headline(record))},
                    {"type": "text", "text": short_code(&record.id)},
                ],
            }],
        },
    })
}

/// A text message.
pub fn text(to: &str, body: &str) -> Value {
    json!({
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": digits(to),
        "type": "text",
        "text": {"body": cut(body, MAX_TEXT), "preview_url": false},
    })
}

/// A template parameter: no line breaks, tabs or runs of spaces (the API refuses them), cut.
pub(crate) fn parameter(text: &str) -> String {
    cut(&text.split_whitespace().collect::<Vec<_>>().join(" "), MAX_PARAMETER)
}

/// A number as the API's `to` takes it: digits only.
fn digits(number: &str) -> String {
    number.chars().filter(char::is_ascii_digit).collect()
}
