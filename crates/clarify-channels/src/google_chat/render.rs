//! How a request looks on Google Chat: a card v2 whose agent text is escaped for the card's
//! HTML subset, with buttons and inputs, and the synchronous responses to a click.

use clarify_core::{Context, QuestionKind, Scope};
use clarify_model::RequestRecord;
use serde_json::{Value, json};

use crate::act::input_id;
use crate::layout::{self, THE_REST};
use crate::layout::words::{headline, outcome_text};
use crate::notice::Notice;
use crate::text::{cut, escape_markup};

/// Which event format a call came in, to answer in the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Classic,
    AddOn,
}

/// Room for display blocks in a card (a message is at most 32,000 bytes).
const MAX_DISPLAY: usize = 8_000;
const MAX_TEXT: usize = 2_000;
const MAX_BUTTONS: usize = 5;

/// Agent text for a card's HTML subset: escaped, with line breaks kept.
pub(super) fn html(text: &str, max: usize) -> String {
    escape_markup(&cut(text, max)).replace('\n', "<br>")
}

/// Preformatted text: escaped, in a monospace font where Chat has one.
fn pre(text: &str) -> String {
    format!("<font face=\"monospace\">{}</font>", html(text, usize::MAX))
}

fn paragraph(text: String) -> Value {
    json!({"textParagraph": {"text": text}})
}

fn button(text: &str, request: &str, action: &str, filled: bool) -> Value {
    let mut b = json!({"text": cut(text, 40), "onClick": {"action": {
        "function": "clarify",
        "parameters": [{"key": "request", "value": request}, {"key": "action", "value": action}],
    }}});
    if filled {
        b["type"] = json!("FILLED");
    }
    b
}

fn buttons(list: Vec<Value>) -> Value {
    json!({"buttonList": {"buttons": list}})
}

fn text_input(name: String, label: &str, value: Option<String>) -> Value {
    let mut w =
        json!({"textInput": {"name": name, "label": cut(label, 100), "type": "MULTIPLE_LINE"}});
    if let Some(v) = value {
        w["textInput"]["value"] = json!(v);
    }
    w
}

/// The message (`text` and `cardsV2`) for `record` as it is now.
pub fn message(record: &RequestRecord, answer_url: &str) -> Value {
    message_with(record, answer_url, true)
}

/// The message of `notice`: without answer controls when it offers only "Open in clarify".
pub(crate) fn notice_message(notice: &Notice<'_>) -> Value {
    message_with(notice.record, notice.answer_url, !notice.open_only())
}

/// The message for `record`, with its answer controls while pending when `answerable`, else
/// the line saying a passkey confirmation is needed.
fn message_with(record: &RequestRecord, answer_url: &str, answerable: bool) -> Value {
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut widgets = Vec::new();
    match &request.context {
        Some(Context::Text(t)) => widgets.push(paragraph(html(t, MAX_TEXT))),
        Some(Context::Json(map)) => widgets.push(paragraph(pre(&cut(
            &serde_json::to_string_pretty(map).unwrap_or_default(),
            MAX_TEXT,
        )))),
        None => {}
    }
    let more = format!("{THE_REST}: {answer_url}");
    if let Some(display) =
        crate::layout::words::display_text(record, &clarify_render::text::Plain, MAX_DISPLAY, &more)
    {
        widgets.push(paragraph(pre(&display)));
    }
    for q in &request.questions {
        let mut text = format!("<b>{}</b>", html(&q.text, MAX_TEXT));
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                let label = |l: &str| html(l, 100);
                for line in layout::option_lines(c, label, " <i>(recommended)</i>", None) {
                    text.push_str(&format!("<br>{line}"));
                }
            }
            QuestionKind::Approval(a) => {
                let action = pre(&cut(&a.action.name, 100));
                text.push_str(&format!("<br>{}{action}", layout::ACTION));
                if let Some(pretty) = layout::arguments(request, a) {
                    text.push_str(&format!("<br>{}", pre(&cut(&pretty, MAX_TEXT))));
                    if pretty.chars().count() > MAX_TEXT {
                        text.push_str(&format!("<br>(cut: {})", html(&more, 500)));
                    }
                }
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
        widgets.push(paragraph(text));
    }
    if pending {
        let footer = layout::pending_facts(record, cut, layout::expires);
        if !footer.is_empty() {
            widgets.push(paragraph(format!(
                "<font color=\"#80868b\">{}</font>",
                html(&footer.join(" · "), 500)
            )));
        }
        if answerable {
            widgets.extend(controls(record));
        } else {
            widgets.push(paragraph(format!(
                "<b>{}</b>",
                html(crate::layout::words::STEP_UP_LINE, 200)
            )));
        }
    } else {
        widgets.push(paragraph(format!(
            "<b>{}</b>",
            html(&outcome_text(record), MAX_TEXT)
        )));
    }
    widgets.push(json!({"buttonList": {"buttons": [{"text": if pending { "Open in clarify" } else { "Open the record" },
        "onClick": {"openLink": {"url": answer_url}}}]}}));
    let mut header = json!({"title": cut(&headline(record), 200)});
    if let Some(by) = crate::layout::words::asked_by(request, |a| cut(a, 60), |s| cut(s, 60)) {
        header["subtitle"] = json!(by);
    }
    json!({
        "text": cut(&headline(record), 200),
        "cardsV2": [{"cardId": "request", "card": {"header": header, "sections": [{"widgets": widgets}]}}],
    })
}

/// The inputs and buttons of a pending request of one question.
fn controls(record: &RequestRecord) -> Vec<Value> {
    let request = &record.request;
    let id = record.id.as_str();
    let mut out = Vec::new();
    let mut last = Vec::new();
    if let [q] = request.questions.as_slice() {
        match &q.kind {
            QuestionKind::Single(c) if c.options.len() <= MAX_BUTTONS => {
                let list = c
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        let recommended = c.recommended.as_deref() == Some(o.id.as_str());
                        button(&o.label, id, &format!("o:{i}"), recommended)
                    })
                    .collect();
                out.push(buttons(list));
                if c.allow_other {
                    out.push(text_input(
                        input_id(0, Some("other")),
                        "Or your own answer",
                        None,
                    ));
                    last.push(button("Send my own answer", id, "form:other:0", false));
                }
            }
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                let multi = matches!(q.kind, QuestionKind::Multi(_));
                let items: Vec<Value> = c
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| json!({"text": cut(&o.label, 100), "value": i.to_string(), "selected": false}))
                    .collect();
                out.push(json!({"selectionInput": {
                    "name": input_id(0, None),
                    "label": if multi { "Choose one or more" } else { "Choose one" },
                    "type": if multi { "CHECK_BOX" } else { "DROPDOWN" },
                    "items": items,
                }}));
                last.push(button(
                    "Submit",
                    id,
                    if multi { "multi" } else { "sel" },
                    true,
                ));
                if c.allow_other {
                    out.push(text_input(
                        input_id(0, Some("other")),
                        "Or your own answer",
                        None,
                    ));
                    last.push(button("Send my own answer", id, "form:other:0", false));
                }
            }
            QuestionKind::Open => {
                out.push(text_input(input_id(0, None), "Your answer", None));
                last.push(button("Send", id, "form:open:0", true));
            }
            QuestionKind::Form(f) => {
                out.extend(f.fields.iter().map(field_input));
                last.push(button("Submit", id, "form:form:0", true));
            }
            QuestionKind::Approval(a) => {
                let list = a
                    .scopes
                    .iter()
                    .map(|s| {
                        let label = match s {
                            Scope::Once => "Approve",
                            Scope::Session => "Approve for this session",
                            Scope::Always => "Approve always",
                        };
                        button(label, id, &format!("a:{}", s.as_str()), true)
                    })
                    .chain([button("Deny", id, "d", false)])
                    .collect();
                out.push(buttons(list));
                out.push(text_input(
                    input_id(0, Some("reason")),
                    "A reason, or what should change",
                    None,
                ));
                last.push(button("Request changes", id, "form:revise:0", false));
                last.push(button("Deny with reason", id, "form:deny:0", false));
                if a.allow_edit {
                    out.push(text_input(
                        input_id(0, Some("arguments")),
                        "Arguments (a JSON object)",
                        serde_json::to_string_pretty(&a.action.arguments).ok(),
                    ));
                    last.push(button("Approve these arguments", id, "form:edit:0", false));
                }
            }
        }
    }
    if request.allow_skip {
        last.push(button("Skip", id, "s", false));
    }
    if !last.is_empty() {
        out.push(buttons(last));
    }
    out
}

/// A form field as a card input: checkboxes or a dropdown for options, a switch for a boolean,
/// text for the rest (read by core's `value_from_text`, with a hint saying what fits).
fn field_input(field: &clarify_core::Field) -> Value {
    use clarify_core::form::FieldKind;
    let name = crate::form::field_id(field);
    let default: Vec<String> = match &field.default {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Bool(true)) => vec!["yes".to_owned()],
        Some(other) if !other.is_boolean() => vec![other.to_string()],
        _ => Vec::new(),
    };
    match &field.kind {
        FieldKind::Boolean => {
            json!({"selectionInput": {"name": name, "label": cut(&field.label, 100),
            "type": "SWITCH", "items": [{"text": cut(&field.label, 100), "value": "yes",
                                          "selected": default.iter().any(|d| d == "yes")}]}})
        }
        FieldKind::Choice { options } | FieldKind::Choices { options, .. } => {
            let multi = matches!(field.kind, FieldKind::Choices { .. });
            json!({"selectionInput": {"name": name, "label": cut(&field.label, 100),
                "type": if multi { "CHECK_BOX" } else { "DROPDOWN" },
                "items": options.iter().map(|o| json!({"text": cut(&o.label, 100), "value": o.id,
                                                        "selected": default.contains(&o.id)})).collect::<Vec<_>>()}})
        }
        _ => {
            let mut w = json!({"textInput": {"name": name, "label": cut(&field.label, 100),
                               "hintText": cut(&field.hint(), 100), "type": "SINGLE_LINE"}});
            if let Some(d) = default.first() {
                w["textInput"]["value"] = json!(d);
            }
            w
        }
    }
}

/// The synchronous response that updates the clicked message to show `record` as it is now.
pub fn update(record: &RequestRecord, answer_url: &str, format: Format) -> Value {
    let message = message(record, answer_url);
    match format {
        Format::Classic => json!({"actionResponse": {"type": "UPDATE_MESSAGE"},
                                  "text": message["text"], "cardsV2": message["cardsV2"]}),
        Format::AddOn => json!({"hostAppDataAction": {"chatDataAction": {
            "updateMessageAction": {"message": {"text": message["text"], "cardsV2": message["cardsV2"]}}}}}),
    }
}

/// The synchronous response telling `user` something only they see.
pub fn private(user: &str, text: &str, format: Format) -> Value {
    let message = json!({"text": cut(text, 2_000), "privateMessageViewer": {"name": user}});
    match format {
        Format::Classic => {
            let mut m = message;
            m["actionResponse"] = json!({"type": "NEW_MESSAGE"});
            m
        }
        Format::AddOn => json!({"hostAppDataAction": {"chatDataAction": {
            "createMessageAction": {"message": message}}}}),
    }
}
