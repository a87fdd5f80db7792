//! Discord: requests posted by a bot to one channel as messages with buttons and selects,
//! answered through Discord's interactions endpoint.
//!
//! The REST API is called over plain `reqwest` + `serde` at `api_url` (`POST
//! /channels/{id}/messages`, `PATCH /channels/{id}/messages/{id}`), with `Authorization: Bot
//! <token>` and the `DiscordBot (...)` user agent Discord asks for. A message's reference is
//! `<channel id>:<message id>`. Components carry a short `custom_id` naming what they do, never
//! the request: the message they sit on finds it through the store.
//!
//! Interactions arrive at `POST /hooks/discord/{name}`, signed with Ed25519 over the timestamp
//! and the raw body; [`verify`] checks that against the application's public key before
//! anything is read (Discord also sends invalid signatures on purpose, and drops an endpoint
//! that accepts them). A click is answered in the HTTP response: `UPDATE_MESSAGE` with the
//! message as it is now, a modal (type 9) for text, a deny's reason and edited arguments, or an
//! ephemeral message (flag 64) that only the clicker sees for a refusal.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clarify_core::{Context, QuestionKind, Scope};
use clarify_store::{EventKind, RequestRecord};
use serde_json::{Value, json};

pub use crate::answer::Control;
use crate::answer::{Act, Focus, Input, control, input_id};
use crate::{Notice, SendError, Sent, cut, headline, outcome_text};

const PLATFORM: &str = "discord";
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
/// How far a call's timestamp may be from now. Discord names no window; five minutes, as
/// Slack's, keeps a captured call from being replayed later.
const MAX_SKEW_SECONDS: i64 = 300;
const USER_AGENT: &str = concat!(
    "DiscordBot (https://github.com/clarify-hitl/clarify, ",
    env!("CARGO_PKG_VERSION"),
    ")"
);
/// Message flag: only the user who clicked sees the message.
const EPHEMERAL: u64 = 1 << 6;

/// A Discord channel's configuration.
#[derive(Clone)]
pub struct Discord {
    pub bot_token: String,
    /// The application's public key (64 hex digits), which verifies interaction calls.
    pub public_key: String,
    /// The channel requests are posted to.
    pub channel_id: String,
    /// The REST API's base URL (`https://discord.com/api/v10`).
    pub api_url: url::Url,
}

impl std::fmt::Debug for Discord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discord")
            .field("channel_id", &self.channel_id)
            .field("api_url", &self.api_url.as_str())
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

/// Checks Discord's Ed25519 signature (`X-Signature-Ed25519`, hex) over `X-Signature-Timestamp`
/// and the raw `body`, against `public_key` (hex), at `now`.
pub fn verify(
    public_key: &str,
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), &'static str> {
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};
    let (Some(signature), Some(timestamp)) = (signature, timestamp) else {
        return Err("X-Signature-Ed25519 and X-Signature-Timestamp are required");
    };
    let at: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| "X-Signature-Timestamp is not a number")?;
    if (now.timestamp() - at).abs() > MAX_SKEW_SECONDS {
        return Err("the call's timestamp is more than five minutes from now");
    }
    let key: [u8; 32] = crate::decode_hex(public_key)
        .and_then(|k| k.try_into().ok())
        .ok_or("the configured public key is not 32 bytes of hex")?;
    let key =
        VerifyingKey::from_bytes(&key).map_err(|_| "the configured public key is not a key")?;
    let signature: [u8; 64] = crate::decode_hex(signature.trim())
        .and_then(|s| s.try_into().ok())
        .ok_or("X-Signature-Ed25519 is not 64 bytes of hex")?;
    let mut message = timestamp.as_bytes().to_vec();
    message.extend_from_slice(body);
    key.verify(&message, &Signature::from_bytes(&signature))
        .map_err(|_| "the signature does not match")
}

/// What an interaction asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Interaction {
    /// Discord checks the endpoint: answer PONG.
    Ping,
    /// `user` used a control of message `message_ref`.
    Use {
        user: String,
        message_ref: String,
        /// The message's id alone, for a modal's `custom_id`.
        message_id: String,
        control: Control,
    },
    /// Something clarify does not act on, and why (told to the user).
    Ignore(&'static str),
}

/// Reads an interaction (already verified).
pub fn read_interaction(body: &Value) -> Result<Interaction, String> {
    let kind = body["type"]
        .as_u64()
        .ok_or("an interaction must have a numeric type")?;
    if kind == 1 {
        return Ok(Interaction::Ping);
    }
    if kind != 3 && kind != 5 {
        return Ok(Interaction::Ignore(
            "clarify answers only its own buttons and forms",
        ));
    }
    let user = text_of(&body["member"]["user"]["id"])
        .or_else(|| text_of(&body["user"]["id"]))
        .ok_or("an interaction without member.user.id or user.id")?;
    let data = &body["data"];
    let custom_id = data["custom_id"]
        .as_str()
        .ok_or("an interaction without data.custom_id")?;
    let channel = text_of(&body["channel_id"])
        .or_else(|| text_of(&body["message"]["channel_id"]))
        .ok_or("an interaction without channel_id")?;
    let (message_id, control) = if kind == 3 {
        let message_id =
            text_of(&body["message"]["id"]).ok_or("a component without its message")?;
        let values: Vec<String> = data["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        (message_id, control(custom_id, &values))
    } else {
        // A modal names its focus and the message it was opened from: `deny:0@<message id>`.
        let Some((focus, message_id)) = custom_id.split_once('@') else {
            return Ok(Interaction::Use {
                user,
                message_ref: String::new(),
                message_id: String::new(),
                control: Control::Unknown(custom_id.to_owned()),
            });
        };
        let Some(focus) = Focus::decode(focus) else {
            return Ok(Interaction::Use {
                user,
                message_ref: String::new(),
                message_id: String::new(),
                control: Control::Unknown(custom_id.to_owned()),
            });
        };
        let mut inputs = BTreeMap::new();
        collect_inputs(&data["components"], &mut inputs);
        (
            message_id.to_owned(),
            Control::Act(Act::Submit { focus, inputs }),
        )
    };
    Ok(Interaction::Use {
        user,
        message_ref: format!("{channel}:{message_id}"),
        message_id,
        control,
    })
}

/// Every text input's value in a submitted modal, wherever it sits (in action rows, or in the
/// newer label components).
fn collect_inputs(v: &Value, into: &mut BTreeMap<String, Input>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| collect_inputs(i, into)),
        Value::Object(map) => {
            if let (Some(Value::String(id)), Some(Value::String(value))) =
                (map.get("custom_id"), map.get("value"))
            {
                into.insert(id.clone(), Input::Text(value.clone()));
            }
            for key in ["components", "component"] {
                if let Some(inner) = map.get(key) {
                    collect_inputs(inner, into);
                }
            }
        }
        _ => {}
    }
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Discord markdown escaped: nothing the agent wrote formats, links or mentions.
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

/// `text` cut to `max` characters, then escaped.
fn fit(text: &str, max: usize) -> String {
    escape(&cut(text, max))
}

/// JSON in a code block; a fence inside cannot close it.
fn code(json: &str, max: usize) -> String {
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
    let mut parts = vec![format!("**{}**", fit(&headline(record), 200))];
    if pending && !mention.is_empty() {
        let m: Vec<String> = mention.iter().map(|m| format!("<@{m}>")).collect();
        parts.push(m.join(" "));
    }
    match &request.context {
        Some(Context::Text(t)) => parts.push(fit(t, 400)),
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
        let mut part = fit(&q.text, 400);
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                for (i, o) in c.options.iter().enumerate() {
                    let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        " *(recommended)*"
                    } else {
                        ""
                    };
                    part.push_str(&format!("\n{}. {}{mark}", i + 1, fit(&o.label, 80)));
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
    let mut footer: Vec<String> = crate::asked_by(request, |a| fit(a, 60), |s| fit(s, 60))
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
            footer.push(format!("for {}", fit(&by.join(", "), 200)));
        }
    }
    if !footer.is_empty() {
        parts.push(format!("-# {}", footer.join(" · ")));
    }
    if !pending {
        parts.push(format!("**{}**", fit(&outcome_text(record), 400)));
    }
    let mut content = parts.join("\n\n");
    if content.chars().count() > MAX_CONTENT {
        content = fit(
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
    let mut hint = field.hint();
    if let Some(options) = field.kind.options() {
        let listed: Vec<String> = options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}. {}", i + 1, o.label))
            .collect();
        hint = format!("{hint}: {}", listed.join(", "));
    }
    let mut text = json!({
        "type": 4,
        "custom_id": input_id(0, Some(&format!("f.{}", field.id))),
        "label": cut(&field.label, MAX_INPUT_LABEL),
        "style": 1,
        "required": field.required && field.default.is_none(),
        "placeholder": cut(&hint, MAX_PLACEHOLDER),
        "max_length": MAX_INPUT,
    });
    let default = match &field.default {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Bool(b)) => Some(if *b { "yes" } else { "no" }.to_owned()),
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Some(other) => Some(other.to_string()),
        None => None,
    };
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

impl Discord {
    async fn call(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, SendError> {
        let url = format!("{}{path}", self.api_url.as_str().trim_end_matches('/'));
        let response = client
            .request(method, url)
            .header(
                reqwest::header::AUTHORIZATION,
                format!("Bot {}", self.bot_token),
            )
            .header(reqwest::header::USER_AGENT, USER_AGENT)
            .json(body)
            .send()
            .await
            .map_err(|e| SendError::Unreachable {
                platform: PLATFORM,
                detail: if e.is_timeout() {
                    format!("{path}: no answer in time")
                } else {
                    format!("{path}: {e}")
                },
            })?;
        let status = response.status();
        let header_wait = crate::retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        let answer: Option<Value> = serde_json::from_str(&text).ok();
        if status.is_success() {
            return Ok(answer.unwrap_or_default());
        }
        // A 429's body names the wait in (fractional) seconds: {"retry_after": 0.75}.
        let body_wait = answer
            .as_ref()
            .and_then(|a| a["retry_after"].as_f64())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s.min(3_600.0)));
        let detail = answer
            .as_ref()
            .and_then(|a| a["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| cut(text.trim(), 200));
        Err(SendError::Refused {
            platform: PLATFORM,
            status: status.as_u16(),
            detail: format!("{path}: {detail}"),
            retry_after: body_wait.or(header_wait),
        })
    }

    /// Announces, replies to the announcement, or edits it, as `notice` asks.
    pub(crate) async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use reqwest::Method;
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Escalated, None) => {
                let body = announcement(notice);
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        &format!("/channels/{}/messages", self.channel_id),
                        &body,
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: message_ref(&sent, &self.channel_id),
                })
            }
            (EventKind::Reminded | EventKind::Escalated, Some(announcement)) => {
                let (channel, id) = split_ref(announcement, &self.channel_id);
                let mentions: Vec<String> =
                    notice.mention.iter().map(|m| format!("<@{m}>")).collect();
                let text = crate::follow_up_text(notice.event, &mentions);
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        &format!("/channels/{channel}/messages"),
                        &json!({
                            "content": text,
                            "message_reference": {"message_id": id, "fail_if_not_exists": false},
                            "allowed_mentions": {"parse": [], "users": notice.mention},
                        }),
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: message_ref(&sent, channel),
                })
            }
            (_, None) => Ok(Sent::Skipped {
                why: "the request was never announced here, so there is nothing to edit",
            }),
            (_, Some(announcement)) => {
                let (channel, id) = split_ref(announcement, &self.channel_id);
                self.call(
                    client,
                    Method::PATCH,
                    &format!("/channels/{channel}/messages/{id}"),
                    &message(notice.record, notice.answer_url, &[]),
                )
                .await?;
                Ok(Sent::Edited)
            }
        }
    }
}

/// `<channel>:<message id>` of a posted message.
fn message_ref(sent: &Value, channel: &str) -> Option<String> {
    let id = text_of(&sent["id"])?;
    let channel = text_of(&sent["channel_id"]).unwrap_or_else(|| channel.to_owned());
    Some(format!("{channel}:{id}"))
}

fn split_ref<'a>(message_ref: &'a str, channel: &'a str) -> (&'a str, &'a str) {
    message_ref
        .split_once(':')
        .unwrap_or((channel, message_ref))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn signatures_are_checked_over_timestamp_and_body() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let public = hex(key.verifying_key().as_bytes());
        let now = Utc::now();
        let ts = now.timestamp().to_string();
        let body = br#"{"type":1}"#;
        let sign = |ts: &str, body: &[u8]| {
            let mut m = ts.as_bytes().to_vec();
            m.extend_from_slice(body);
            hex(&key.sign(&m).to_bytes())
        };
        let good = sign(&ts, body);
        assert_eq!(verify(&public, Some(&good), Some(&ts), body, now), Ok(()));
        assert!(verify(&public, Some(&good), Some(&ts), br#"{"type":2}"#, now).is_err());
        assert!(verify(&public, None, Some(&ts), body, now).is_err());
        assert!(verify(&public, Some("zz"), Some(&ts), body, now).is_err());
        let old = (now.timestamp() - 301).to_string();
        assert!(verify(&public, Some(&sign(&old, body)), Some(&old), body, now).is_err());
        let other = hex(SigningKey::from_bytes(&[8; 32]).verifying_key().as_bytes());
        assert!(verify(&other, Some(&good), Some(&ts), body, now).is_err());
    }

    #[test]
    fn controls_are_read_and_unknown_ones_named() {
        assert_eq!(
            control("o:2", &[]),
            Control::Act(Act::Option {
                question: 0,
                index: 2
            })
        );
        assert_eq!(
            control("multi", &["0".to_owned(), "2".to_owned()]),
            Control::Act(Act::Options {
                question: 0,
                indexes: vec![0, 2]
            })
        );
        assert_eq!(control("r", &[]), Control::Form(Focus::Deny(0)));
        for junk in ["", "o:x", "a:forever", "sel", "zzz", "multi"] {
            let values = if junk == "multi" {
                vec!["x".to_owned()]
            } else {
                Vec::new()
            };
            assert!(
                matches!(control(junk, &values), Control::Unknown(_)),
                "{junk}"
            );
        }
        let modal = json!({"type": 5, "channel_id": "9", "member": {"user": {"id": "42"}},
            "data": {"custom_id": "deny:0@77", "components": [
                {"type": 1, "components": [{"type": 4, "custom_id": "q0.reason", "value": "no"}]},
                {"type": 18, "component": {"type": 4, "custom_id": "q0.other", "value": "x"}}]}});
        let Ok(Interaction::Use {
            user,
            message_ref,
            control,
            ..
        }) = read_interaction(&modal)
        else {
            panic!("a modal submit");
        };
        assert_eq!((user.as_str(), message_ref.as_str()), ("42", "9:77"));
        let Control::Act(Act::Submit { focus, inputs }) = control else {
            panic!("a submit");
        };
        assert_eq!(focus, Focus::Deny(0));
        assert_eq!(inputs.get("q0.reason"), Some(&Input::Text("no".to_owned())));
        assert_eq!(inputs.len(), 2);
        assert_eq!(read_interaction(&json!({"type": 1})), Ok(Interaction::Ping));
        assert!(read_interaction(&json!({"type": "x"})).is_err());
    }

    #[test]
    fn markdown_and_mentions_are_escaped() {
        assert_eq!(
            escape("**hi** @everyone <@1>"),
            "\\*\\*hi\\*\\* \\@everyone \\<\\@1\\>"
        );
        assert!(!code("a```b", 100).contains("a```b"));
    }
}
