//! How a request looks on Mattermost: the post (message and button attachment), the dialogs
//! for text, and the responses to a click. What the message says is the layout's
//! (`crate::layout`); here is only Mattermost's dialect of it.

use clarify_core::{QuestionKind, Scope};
use clarify_model::RequestRecord;
use clarify_render::Markup;
use serde_json::{Value, json};

use super::token::{button_token, dialog_token};
use crate::act::{Focus, input_id};
use crate::layout::{self, Dialect, Limits};
use crate::text::fit;
use crate::layout::words::headline;
use crate::notice::Notice;
use crate::text::cut;

/// Mattermost's default limit on a post's message (`MaxPostSize`, 16,383 characters).
pub const MAX_MESSAGE: usize = 16_383;
/// Buttons beyond this many options become a menu.
const MAX_BUTTONS: usize = 5;
const MAX_LABEL: usize = 60;
/// A dialog's title is at most 24 characters.
const MAX_DIALOG_TITLE: usize = 24;
/// A `textarea` element holds at most 3,000 characters.
const MAX_TEXTAREA: usize = 3_000;
const MAX_ELEMENT_NAME: usize = 24;
const MAX_HELP: usize = 150;

/// Mattermost's markdown escaped: nothing the agent wrote formats, links or mentions anyone
/// (`@channel`, `@all`, `~town-square`).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            // A zero-width space after `@` keeps any word from becoming a mention.
            '@' => out.push_str("@\u{200b}"),
            '\\' | '*' | '_' | '~' | '`' | '|' | '>' | '<' | '#' | '[' | ']' | '(' | ')' | '-' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// What sets Mattermost's markdown apart: `_` emphasises, agent text is escaped with
/// backslashes and a zero-width space after `@`, and a link's URL is percent-encoded where it
/// would end the link.
#[derive(Debug, Clone, Copy, Default)]
pub struct MattermostFlavour;

impl layout::Flavour for MattermostFlavour {
    const EMPHASIS: char = '_';
    fn escape(text: &str) -> String {
        escape(text)
    }
    fn target(url: &str) -> String {
        url.replace('(', "%28")
            .replace(')', "%29")
            .replace(' ', "%20")
    }
}

/// Mattermost's markdown, for posts and display blocks.
pub type Markdown = layout::Markdown<MattermostFlavour>;

const MARKDOWN: Markdown = layout::Markdown(MattermostFlavour);

/// A post shows options' descriptions, and ends in a link to the answer page: its buttons
/// carry none.
impl Dialect for Markdown {
    const LIMITS: Limits = Limits {
        message: MAX_MESSAGE,
        fallback: 2_000,
        display: 6_000,
        context: 1_000,
        json: 1_000,
        question: 1_000,
        option: 100,
        description: Some(200),
        action: 100,
        arguments: 2_000,
        names: 60,
        outcome: 1_000,
    };
    const OPEN_LINK: bool = true;
    fn mention(&self, username: &str) -> String {
        username.to_owned()
    }
    fn answer_link(&self, url: &str, label: &str) -> String {
        format!("[{label}]({url})")
    }
    fn cut_note(&self, answer_url: &str) -> String {
        format!("(cut: [the rest is on the answer page]({answer_url}))")
    }
    fn headline(&self, text: &str) -> String {
        format!("#### {text}")
    }
    fn question(&self, text: &str) -> String {
        self.strong(text)
    }
}

/// The post's message for `record` as it is now; `mention` are `@username`s.
pub fn text(record: &RequestRecord, answer_url: &str, mention: &[String]) -> String {
    layout::message(&MARKDOWN, record, answer_url, mention)
}

/// The post's `props`: an attachment with the buttons of a pending request (none once it is
/// resolved, which removes them).
pub fn props(record: &RequestRecord, key: &[u8], hook_url: &str) -> Value {
    let actions = actions(record, key, hook_url);
    if actions.is_empty() {
        return json!({"attachments": []});
    }
    json!({"attachments": [{
        "fallback": cut(&headline(record), 200),
        "color": "#3b82f6",
        "actions": actions,
    }]})
}

/// The post announcing `notice`'s request: for one that needs a passkey confirmation, no
/// buttons (its text keeps the "Open in clarify" link) and the line saying why.
pub(crate) fn announcement(notice: &Notice<'_>, mention: &[String]) -> Value {
    let mut body = post(
        notice.record,
        notice.answer_url,
        notice.action_key,
        notice.hook_url,
        mention,
    );
    if notice.open_only() {
        body["props"] = json!({"attachments": []});
        if let Some(message) = body["message"].as_str() {
            body["message"] = json!(format!("{message}\n\n{}", crate::layout::words::STEP_UP_LINE));
        }
    }
    body
}

/// The whole post body for `record`.
pub fn post(
    record: &RequestRecord,
    answer_url: &str,
    key: &[u8],
    hook_url: &str,
    mention: &[String],
) -> Value {
    json!({
        "message": text(record, answer_url, mention),
        "props": props(record, key, hook_url),
    })
}

/// The buttons (and menus) of a pending request's post.
fn actions(record: &RequestRecord, key: &[u8], hook_url: &str) -> Vec<Value> {
    if record.status.is_resolved() {
        return Vec::new();
    }
    let request = &record.request;
    let button = |name: &str, action: &str, style: &str| {
        json!({
            "id": action.replace(':', ""),
            "type": "button",
            "name": cut(name, MAX_LABEL),
            "style": style,
            "integration": {"url": hook_url, "context": {
                "request": record.id, "action": action,
                "token": button_token(key, &record.id, action),
            }},
        })
    };
    let mut out = Vec::new();
    if let [q] = request.questions.as_slice() {
        match &q.kind {
            QuestionKind::Single(c) if c.options.len() <= MAX_BUTTONS => {
                for (i, o) in c.options.iter().enumerate() {
                    let style = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        "primary"
                    } else {
                        "default"
                    };
                    out.push(button(&o.label, &format!("o:{i}"), style));
                }
                if c.allow_other {
                    out.push(button("Other…", "x", "default"));
                }
            }
            QuestionKind::Single(c) => {
                let options: Vec<Value> = c
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| json!({"text": cut(&o.label, MAX_LABEL), "value": i.to_string()}))
                    .collect();
                out.push(json!({
                    "id": "sel",
                    "type": "select",
                    "name": "Choose one…",
                    "options": options,
                    "integration": {"url": hook_url, "context": {
                        "request": record.id, "action": "sel",
                        "token": button_token(key, &record.id, "sel"),
                    }},
                }));
                if c.allow_other {
                    out.push(button("Other…", "x", "default"));
                }
            }
            QuestionKind::Multi(_) => out.push(button("Choose…", "m", "primary")),
            QuestionKind::Open => out.push(button("Answer…", "w", "primary")),
            QuestionKind::Form(_) => out.push(button("Fill in…", "f", "primary")),
            QuestionKind::Approval(a) => {
                for s in &a.scopes {
                    let label = match s {
                        Scope::Once => "Approve",
                        Scope::Session => "Approve for this session",
                        Scope::Always => "Approve always",
                    };
                    out.push(button(label, &format!("a:{}", s.as_str()), "success"));
                }
                out.push(button("Deny", "d", "danger"));
                out.push(button("Request changes…", "c", "default"));
                out.push(button("Deny with reason…", "r", "default"));
                if a.allow_edit {
                    out.push(button("Edit arguments…", "e", "default"));
                }
            }
        }
    }
    if request.allow_skip {
        out.push(button("Skip", "s", "default"));
    }
    out
}

/// The dialog (the body of `dialogs/open`, less its trigger) for `focus` of `record`, opened
/// for `user`; `None` when the request has no such question.
pub fn dialog(
    record: &RequestRecord,
    focus: Focus,
    user: &str,
    key: &[u8],
    hook_url: &str,
) -> Option<Value> {
    let q = record.request.questions.first()?;
    let textarea = |name: String, label: &str, default: Option<String>, optional: bool| {
        let mut e = json!({"display_name": cut(label, MAX_ELEMENT_NAME), "name": name,
                           "type": "textarea", "optional": optional, "max_length": MAX_TEXTAREA});
        if let Some(d) = default.filter(|d| d.chars().count() <= MAX_TEXTAREA) {
            e["default"] = json!(d);
        }
        e
    };
    let (title, elements): (String, Vec<Value>) = match (focus, &q.kind) {
        (Focus::Deny(0), QuestionKind::Approval(_)) => (
            "Deny, with a reason".to_owned(),
            vec![textarea(input_id(0, Some("reason")), "Reason", None, false)],
        ),
        (Focus::Revise(0), QuestionKind::Approval(_)) => (
            "Request changes".to_owned(),
            vec![textarea(
                input_id(0, Some("reason")),
                "What should change?",
                None,
                false,
            )],
        ),
        (Focus::Edit(0), QuestionKind::Approval(a)) if a.allow_edit => (
            "Edit the arguments".to_owned(),
            vec![textarea(
                input_id(0, Some("arguments")),
                "Arguments (JSON)",
                serde_json::to_string_pretty(&a.action.arguments).ok(),
                false,
            )],
        ),
        (Focus::Other(0), QuestionKind::Single(_) | QuestionKind::Multi(_)) => (
            "Your own answer".to_owned(),
            vec![textarea(
                input_id(0, Some("other")),
                "Your answer",
                None,
                false,
            )],
        ),
        (Focus::Open(0), QuestionKind::Open) => (
            "Your answer".to_owned(),
            vec![textarea(input_id(0, None), "Your answer", None, false)],
        ),
        (Focus::Request, QuestionKind::Multi(c)) => {
            let mut elements: Vec<Value> = c
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    let mut label = o.label.clone();
                    if c.recommended.as_deref() == Some(o.id.as_str()) {
                        label.push_str(" (recommended)");
                    }
                    json!({"display_name": format!("Option {}", i + 1), "name": format!("q0.o{i}"),
                           "type": "bool", "optional": true, "placeholder": cut(&label, MAX_HELP)})
                })
                .collect();
            if c.allow_other {
                elements.push(textarea(
                    input_id(0, Some("other")),
                    "Or your own answer",
                    None,
                    true,
                ));
            }
            ("Choose".to_owned(), elements)
        }
        (Focus::Form(0), QuestionKind::Form(form)) => (
            cut(&headline(record), MAX_DIALOG_TITLE),
            form.fields.iter().map(field_element).collect(),
        ),
        _ => return None,
    };
    Some(json!({
        "url": hook_url,
        "dialog": {
            "callback_id": focus.encode(),
            "title": cut(&title, MAX_DIALOG_TITLE),
            "introduction_text": fit(&MARKDOWN, &q.text, 1_000),
            "elements": elements,
            "submit_label": "Submit",
            "notify_on_cancel": false,
            "state": format!("{} {} {}", record.id, focus.encode(), dialog_token(key, &record.id, focus, user)),
        },
    }))
}

/// A form field as a dialog element: a checkbox for a boolean, a menu for one choice, text for
/// the rest (read by core's `value_from_text`, with help saying what fits).
fn field_element(field: &clarify_core::Field) -> Value {
    use clarify_core::form::FieldKind;
    let name = crate::form::field_id(field);
    let optional = !field.required || field.default.is_some();
    let mut element = match &field.kind {
        FieldKind::Boolean => {
            json!({"type": "bool", "placeholder": cut(&field.label, MAX_HELP)})
        }
        FieldKind::Choice { options, .. } => json!({
            "type": "select",
            "options": options.iter().map(|o| json!({"text": cut(&o.label, MAX_LABEL), "value": o.id})).collect::<Vec<_>>(),
        }),
        _ => {
            let hint = crate::form::typed_hint(field);
            json!({"type": "text", "max_length": 150, "help_text": cut(&hint, MAX_HELP)})
        }
    };
    element["display_name"] = json!(cut(&field.label, MAX_ELEMENT_NAME));
    element["name"] = json!(name);
    element["optional"] = json!(optional);
    match (&field.default, &field.kind) {
        (Some(Value::Bool(b)), _) => element["default"] = json!(b.to_string()),
        (Some(Value::String(s)), _) => element["default"] = json!(s),
        (Some(Value::Array(items)), _) => {
            element["default"] = json!(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        (Some(other), _) => element["default"] = json!(other.to_string()),
        (None, _) => {}
    }
    element
}

/// The response to a click that updates the post to show `record` as it is now; `note` is
/// shown to the clicker only.
pub fn update(
    record: &RequestRecord,
    answer_url: &str,
    key: &[u8],
    hook_url: &str,
    note: Option<&str>,
) -> Value {
    let mut response = json!({"update": post(record, answer_url, key, hook_url, &[])});
    if let Some(note) = note {
        response["ephemeral_text"] = json!(cut(note, 2_000));
    }
    response
}

/// A response only the clicker sees; the post stays as it is.
pub fn private(text: &str) -> Value {
    json!({"ephemeral_text": cut(text, 2_000)})
}

/// The response to a dialog submission that keeps the dialog open with `message` beside the
/// element `input` (or above them all).
pub fn dialog_error(input: Option<&str>, message: &str) -> Value {
    match input {
        Some(input) => json!({"errors": {input: cut(message, 500)}}),
        None => json!({"error": cut(message, 500)}),
    }
}
