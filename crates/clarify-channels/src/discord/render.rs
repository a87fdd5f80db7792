//! How a request looks on Discord: the message (content, components, mentions), the modals
//! for text, and the interaction responses.

use clarify_core::{Context, QuestionKind, Scope};
use clarify_store::RequestRecord;
use serde_json::{Value, json};

use crate::answer::{Focus, input_id};
use crate::text::fit;
use crate::{Notice, cut, headline, outcome_text};

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

/// Room for display blocks in a message's content, whose whole limit is [`MAX_CONTENT`].
const MAX_DISPLAY: usize = 1_000;

/// Discord's markdown, for display blocks: agent text is escaped character by character, so
/// nothing it holds formats, links or mentions (and `allowed_mentions` would stop a mention
/// anyway); diffs go in a ```` ```diff ```` block, which Discord colours.
#[derive(Debug, Clone, Copy)]
pub struct Markdown;

impl clarify_render::Markup for Markdown {
    fn text(&self, s: &str) -> String {
        escape(s)
    }
    fn strong(&self, inner: &str) -> String {
        format!("**{inner}**")
    }
    fn emphasis(&self, inner: &str) -> String {
        format!("*{inner}*")
    }
    fn strike(&self, inner: &str) -> String {
        format!("~~{inner}~~")
    }
    fn code(&self, s: &str) -> String {
        format!("`{}`", s.replace('`', "'"))
    }
    fn link(&self, url: &str, label: &str) -> String {
        // Angle brackets keep Discord from embedding a preview; the encoded parentheses and
        // brackets keep the URL from closing the link early.
        let url = url
            .replace('(', "%28")
            .replace(')', "%29")
            .replace('>', "%3E");
        format!("[{label}](<{url}>)")
    }
    fn pre(&self, s: &str, language: Option<&str>) -> String {
        format!(
            "```{}\n{}\n```",
            language.unwrap_or(""),
            s.replace("```", "``\u{200b}`")
        )
    }
    fn quote(&self, inner: &str) -> String {
        inner
            .lines()
            .map(|l| format!("> {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// JSON in a code block; a fence inside cannot close it.
pub(super) fn code(json: &str, max: usize) -> String {
    format!(
        "```json\n{}\n```",
        cut(json, max).replace("```", "``\u{200b}`")
    )
}

/// The message (content, components, mentions) for `record` as it is now; `mention` are the
/// user ids to mention.
pub fn message(record: &RequestRecord, answer_url: &str, mention: &[String]) -> Value {
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut parts = vec![format!("**{}**", fit(&Markdown, &headline(record), 200))];
    if pending && !mention.is_empty() {
        let m: Vec<String> = mention.iter().map(|m| format!("<@{m}>")).collect();
        parts.push(m.join(" "));
    }
    match &request.context {
        Some(Context::Text(t)) => parts.push(fit(&Markdown, t, 400)),
        Some(Context::Json(map)) => {
            parts.push(code(
                &serde_json::to_string_pretty(map).unwrap_or_default(),
                300,
            ));
        }
        None => {}
    }
    let more = format!("[The rest is on the answer page](<{answer_url}>)");
    parts.extend(crate::display_text(record, &Markdown, MAX_DISPLAY, &more));
    for q in &request.questions {
        let mut part = fit(&Markdown, &q.text, 400);
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                for (i, o) in c.options.iter().enumerate() {
                    let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        " *(recommended)*"
                    } else {
                        ""
                    };
                    part.push_str(&format!(
                        "\n{}. {}{mark}",
                        i + 1,
                        fit(&Markdown, &o.label, 80)
                    ));
                }
            }
            QuestionKind::Approval(a) => {
                part.push_str(&format!(
                    "\nAction: `{}`",
                    cut(&a.action.name, 100).replace('`', "'")
                ));
                // The display blocks above show what the action does; without them, its
                // arguments.
                if request.display.is_empty() {
                    let pretty =
                        serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default();
                    part.push_str(&format!("\n{}", code(&pretty, 500)));
                    if pretty.chars().count() > 500 {
                        part.push_str("\n(cut: the rest is in clarify)");
                    }
                }
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
        parts.push(part);
    }
    let mut footer: Vec<String> = crate::asked_by(
        request,
        |a| fit(&Markdown, a, 60),
        |s| fit(&Markdown, s, 60),
    )
    .into_iter()
    .collect();
    if pending {
        if let Some(at) = record.expires_at {
            // Discord renders this in each reader's time zone, as "in 14 minutes".
            footer.push(format!("expires <t:{}:R>", at.timestamp()));
        }
        if request.is_quorum() {
            footer.push(escape(&outcome_text(record)));
        }
        if let Some(by) = &request.responders {
            footer.push(format!("for {}", fit(&Markdown, &by.join(", "), 200)));
        }
    }
    if !footer.is_empty() {
        parts.push(format!("-# {}", footer.join(" · ")));
    }
    if !pending {
        parts.push(format!(
            "**{}**",
            fit(&Markdown, &outcome_text(record), 400)
        ));
    }
    let mut content = parts.join("\n\n");
    if content.chars().count() > MAX_CONTENT {
        content = fit(
            &Markdown,
            &format!("{}: {}", headline(record), outcome_text(record)),
            1_000,
        );
    }
    json!({
        "content": content,
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
            body["content"] = Value::from(format!("{content}\n\n{}", crate::STEP_UP_LINE));
        }
        body["components"] = json!([row(vec![link(crate::OPEN_IN_CLARIFY, notice.answer_url)])]);
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
pub fn update_message(record: &RequestRecord, answer_url: &str) -> Value {
    json!({"type": 7, "data": message(record, answer_url, &[])})
}

/// A response only the clicker sees.
pub fn ephemeral(text: &str) -> Value {
    json!({"type": 4, "data": {"content": cut(text, MAX_CONTENT), "flags": EPHEMERAL,
                               "allowed_mentions": {"parse": []}}})
}

/// Acknowledges a click that changes nothing on the message.
pub fn acknowledge() -> Value {
    json!({"type": 6})
}
