//! How a request looks on Discord: the message (content, components, mentions), the modals
//! for text, and the interaction responses. What the content says is the layout's
//! (`crate::layout`); here is only Discord's dialect of it.

use chrono::{DateTime, Utc};
use clarify_core::{QuestionKind, Scope};
use clarify_model::RequestRecord;
use serde_json::{Value, json};

use crate::act::{Focus, input_id};
use crate::layout::{self, Dialect, Limits};
use crate::layout::words::headline;
use crate::notice::Notice;
use crate::text::cut;

/// Discord's limit on a message's content.
pub const MAX_CONTENT: usize = 2_000;
const MAX_LABEL: usize = 80;
const MAX_BUTTONS: usize = 5;
const MAX_SELECT: usize = 25;
const MAX_MODAL_TITLE: usize = 45;
const MAX_INPUT: usize = 4_000;
/// A modal holds at most five inputs; a form with more fields is answered through the link.
const MAX_MODAL_INPUTS: usize = 5;
const MAX_INPUT_LABEL: usize = 45;
const MAX_PLACEHOLDER: usize = 100;

/// Message flag: only the user who clicked sees the message.
const EPHEMERAL: u64 = 1 << 6;

/// Discord markdown escaped: nothing the agent wrote formats, links or mentions. Not shared with
/// Mattermost's: that one puts a zero-width space after `@` instead of a backslash, which is what
/// keeps a word from becoming a mention there.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '*'
                | '_'
                | '~'
                | '`'
                | '|'
                | '>'
                | '<'
                | '#'
                | '['
                | ']'
                | '('
                | ')'
                | '-'
                | '@'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What sets Discord's markdown apart: `*` emphasises, agent text is escaped with backslashes
/// (and `allowed_mentions` would stop a mention anyway), and a link's URL sits in angle
/// brackets, which keep Discord from embedding a preview.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiscordFlavour;

impl layout::Flavour for DiscordFlavour {
    const EMPHASIS: char = '*';
    fn escape(text: &str) -> String {
        escape(text)
    }
    fn target(url: &str) -> String {
        // The encoded parentheses and bracket keep the URL from closing the link early.
        let url = url
            .replace('(', "%28")
            .replace(')', "%29")
            .replace('>', "%3E");
        format!("<{url}>")
    }
}

/// Discord's markdown, for messages and display blocks.
pub type Markdown = layout::Markdown<DiscordFlavour>;

const MARKDOWN: Markdown = layout::Markdown(DiscordFlavour);

impl Dialect for Markdown {
    const LIMITS: Limits = Limits {
        message: MAX_CONTENT,
        fallback: 1_000,
        display: 1_000,
        context: 400,
        json: 300,
        question: 400,
        option: 80,
        description: None,
        action: 100,
        arguments: 500,
        names: 60,
        outcome: 400,
    };
    fn mention(&self, id: &str) -> String {
        format!("<@{id}>")
    }
    fn answer_link(&self, url: &str, label: &str) -> String {
        format!("[{label}](<{url}>)")
    }
    fn cut_note(&self, _answer_url: &str) -> String {
        "(cut: the rest is in clarify)".to_owned()
    }
    fn expiry(&self, at: DateTime<Utc>) -> String {
        // Discord renders this in each reader's time zone, as "in 14 minutes".
        format!("expires <t:{}:R>", at.timestamp())
    }
    fn small(&self, text: &str) -> String {
        format!("-# {text}")
    }
}

/// JSON in a code block; a fence inside cannot close it.
#[cfg(test)]
pub(super) fn code(json: &str, max: usize) -> String {
    MARKDOWN.json(&cut(json, max))
}

/// The message (content, components, mentions) for `record` as it is now; `mention` are the
/// user ids to mention.
pub fn message(record: &RequestRecord, answer_url: &str, mention: &[String]) -> Value {
    let pending = !record.status.is_resolved();
    json!({
        "content": layout::message(&MARKDOWN, record, answer_url, mention),
        "components": components(record, answer_url),
        "allowed_mentions": {"parse": [], "users": if pending { mention.to_vec() } else { Vec::new() }},
    })
}

fn button(label: &str, custom_id: &str, style: u8) -> Value {
    json!({"type": 2, "style": style, "label": cut(label, MAX_LABEL), "custom_id": custom_id})
}

fn link(label: &str, url: &str) -> Value {
    json!({"type": 2, "style": 5, "label": label, "url": url})
}

fn row(components: Vec<Value>) -> Value {
    json!({"type": 1, "components": components})
}

/// The message announcing `notice`'s request: for one that needs a passkey confirmation, no
/// answer buttons, only "Open in clarify" and the line saying why.
pub(crate) fn announcement(notice: &Notice<'_>) -> Value {
    let mut body = message(notice.record, notice.answer_url, &notice.mention);
    if notice.open_only() {
        if let Some(content) = body["content"].as_str() {
            body["content"] = Value::from(format!("{content}\n\n{}", crate::layout::words::STEP_UP_LINE));
        }
        body["components"] = json!([row(vec![link(crate::layout::words::OPEN_IN_CLARIFY, notice.answer_url)])]);
    }
    body
}

/// The components of a pending request's message; none once it is resolved.
fn components(record: &RequestRecord, answer_url: &str) -> Vec<Value> {
    const PRIMARY: u8 = 1;
    const SECONDARY: u8 = 2;
    const SUCCESS: u8 = 3;
    const DANGER: u8 = 4;
    if record.status.is_resolved() {
        return Vec::new();
    }
    let request = &record.request;
    let mut rows = Vec::new();
    let mut last = Vec::new();
    let mut by_link = true;
    if let [q] = request.questions.as_slice() {
        match &q.kind {
            QuestionKind::Single(c) if c.options.len() <= MAX_SELECT => {
                by_link = false;
                if c.options.len() <= MAX_BUTTONS {
                    rows.push(row(c
                        .options
                        .iter()
                        .enumerate()
                        .map(|(i, o)| {
                            let style = if c.recommended.as_deref() == Some(o.id.as_str()) {
                                PRIMARY
                            } else {
                                SECONDARY
                            };
                            button(&o.label, &format!("o:{i}"), style)
                        })
                        .collect()));
                } else {
                    rows.push(row(vec![select("sel", c, 1, 1)]));
                }
                if c.allow_other {
                    last.push(button("Other…", "x", SECONDARY));
                }
            }
            QuestionKind::Multi(c) if c.options.len() <= MAX_SELECT => {
                by_link = false;
                rows.push(row(vec![select("multi", c, 1, c.options.len())]));
                if c.allow_other {
                    last.push(button("Other…", "x", SECONDARY));
                }
            }
            QuestionKind::Open => {
                by_link = false;
                last.push(button("Answer…", "w", PRIMARY));
            }
            QuestionKind::Form(form) if form.fields.len() <= MAX_MODAL_INPUTS => {
                by_link = false;
                last.push(button("Fill in…", "f", PRIMARY));
            }
            QuestionKind::Approval(a) => {
                by_link = false;
                let mut decide: Vec<Value> = a
                    .scopes
                    .iter()
                    .map(|s| {
                        let label = match s {
                            Scope::Once => "Approve",
                            Scope::Session => "Approve for this session",
                            Scope::Always => "Approve always",
                        };
                        button(label, &format!("a:{}", s.as_str()), SUCCESS)
                    })
                    .collect();
                decide.push(button("Deny", "d", DANGER));
                rows.push(row(decide));
                last.push(button("Request changes…", "c", SECONDARY));
                last.push(button("Deny with reason…", "r", SECONDARY));
                if a.allow_edit {
                    last.push(button("Edit arguments…", "e", SECONDARY));
                }
            }
            _ => {}
        }
    }
    if request.allow_skip {
        last.push(button("Skip", "s", SECONDARY));
    }
    last.push(link(
        if by_link {
            "Answer in clarify"
        } else {
            "Open in clarify"
        },
        answer_url,
    ));
    // Anyone may ask to link their Discord account; a row holds at most five components.
    let link_account = button("Link account", "l", SECONDARY);
    if last.len() < MAX_BUTTONS {
        last.push(link_account);
        rows.push(row(last));
    } else {
        rows.push(row(last));
        rows.push(row(vec![link_account]));
    }
    rows
}

fn select(custom_id: &str, c: &clarify_core::Choices, min: usize, max: usize) -> Value {
    let options: Vec<Value> = c
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut option = json!({"label": cut(&o.label, 100), "value": i.to_string()});
            if c.recommended.as_deref() == Some(o.id.as_str()) {
                option["description"] = json!("recommended");
            }
            option
        })
        .collect();
    json!({"type": 3, "custom_id": custom_id, "options": options,
           "min_values": min, "max_values": max,
           "placeholder": if max > 1 { "Choose one or more" } else { "Choose one" }})
}

/// The modal for `focus` of `record`, opened from message `message_id`; `None` when the request
/// has no such question.
pub fn modal(record: &RequestRecord, focus: Focus, message_id: &str) -> Option<Value> {
    let q = record.request.questions.first()?;
    let input =
        |custom_id: String, label: &str, style: u8, value: Option<String>, required: bool| {
            let mut text = json!({"type": 4, "custom_id": custom_id, "label": label, "style": style,
                              "required": required, "max_length": MAX_INPUT});
            if let Some(value) = value.filter(|v| v.chars().count() <= MAX_INPUT) {
                text["value"] = json!(value);
            }
            row(vec![text])
        };
    let (title, component) = match (focus, &q.kind) {
        (Focus::Deny(0), QuestionKind::Approval(_)) => (
            "Deny, with a reason",
            input(input_id(0, Some("reason")), "Reason", 2, None, true),
        ),
        (Focus::Revise(0), QuestionKind::Approval(_)) => (
            "Request changes",
            input(
                input_id(0, Some("reason")),
                "What should change?",
                2,
                None,
                true,
            ),
        ),
        (Focus::Edit(0), QuestionKind::Approval(a)) if a.allow_edit => (
            "Approve with edited arguments",
            input(
                input_id(0, Some("arguments")),
                "Arguments (a JSON object)",
                2,
                serde_json::to_string_pretty(&a.action.arguments).ok(),
                true,
            ),
        ),
        (Focus::Other(0), QuestionKind::Single(_) | QuestionKind::Multi(_)) => (
            "Your own answer",
            input(input_id(0, Some("other")), "Your answer", 2, None, true),
        ),
        (Focus::Open(0), QuestionKind::Open) => (
            "Your answer",
            input(input_id(0, None), "Your answer", 2, None, true),
        ),
        (Focus::Form(0), QuestionKind::Form(form)) if form.fields.len() <= MAX_MODAL_INPUTS => {
            return Some(json!({
                "type": 9,
                "data": {
                    "custom_id": format!("{}@{message_id}", focus.encode()),
                    "title": cut(&headline(record), MAX_MODAL_TITLE),
                    "components": form.fields.iter().map(field_input).collect::<Vec<_>>(),
                }
            }));
        }
        _ => return None,
    };
    Some(json!({
        "type": 9,
        "data": {
            "custom_id": format!("{}@{message_id}", focus.encode()),
            "title": cut(title, MAX_MODAL_TITLE),
            "components": [component],
        }
    }))
}

/// A form field as a modal's text input: typed values are read by core's `value_from_text`
/// (numbers, yes/no, an option's number, id or label), and the placeholder says what fits.
fn field_input(field: &clarify_core::Field) -> Value {
    let hint = crate::form::typed_hint(field);
    let mut text = json!({
        "type": 4,
        "custom_id": crate::form::field_id(field),
        "label": cut(&field.label, MAX_INPUT_LABEL),
        "style": 1,
        "required": field.required && field.default.is_none(),
        "placeholder": cut(&hint, MAX_PLACEHOLDER),
        "max_length": MAX_INPUT,
    });
    let default = crate::form::typed_default(field, ", ");
    if let Some(default) = default.filter(|d| d.chars().count() <= MAX_INPUT) {
        text["value"] = json!(default);
    }
    row(vec![text])
}

/// The response that edits the clicked message to show `record` as it is now.
pub fn update(record: &RequestRecord, answer_url: &str) -> Value {
    json!({"type": 7, "data": message(record, answer_url, &[])})
}

/// A response only the clicker sees.
pub fn private(text: &str) -> Value {
    json!({"type": 4, "data": {"content": cut(text, MAX_CONTENT), "flags": EPHEMERAL,
                               "allowed_mentions": {"parse": []}}})
}

/// Acknowledges a click that changes nothing on the message.
pub fn acknowledge() -> Value {
    json!({"type": 6})
}
