//! Mattermost: requests posted by a bot account to one channel, with message buttons and menus,
//! answered in place or in an interactive dialog.
//!
//! The REST API v4 is called at `url` (`POST /api/v4/posts`, `PUT /api/v4/posts/{id}/patch`,
//! `POST /api/v4/actions/dialogs/open`, `GET /api/v4/users/{id}`) with the bot's token as a
//! bearer token. A post's reference is its id.
//!
//! Mattermost signs nothing it sends to an integration. So each button's integration context
//! carries the request's id, what the button does and a token: an HMAC-SHA256 of both under the
//! server's key ([`Notice::action_key`]), compared in constant time. Mattermost keeps the
//! context on its server (clients never see it), so only a call Mattermost makes for a button
//! clarify posted gets through; a forged or altered one is refused before anything is read. A
//! dialog clarify opens carries the same kind of token in its `state`, bound also to the person
//! it was opened for, so someone who reads their own dialog's state cannot answer as another.
//!
//! A click is answered in the HTTP response: the post updated to show the request as it is now
//! (its buttons gone once resolved), or `ephemeral_text` only the clicker sees for a refusal.
//! Text (an open answer, Other, a deny's reason, the changes asked for, edited arguments, a
//! form's fields, several options of a `multi` question) is typed in a dialog; a dialog's
//! refusal is shown beside the element it concerns.

use std::collections::BTreeMap;

use clarify_core::{Context, QuestionKind, Scope};
use clarify_store::{EventKind, RequestRecord};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::answer::{Control, Focus, Input, control, input_id};
use crate::{Notice, SendError, Sent, cut, headline, outcome_text};

const PLATFORM: &str = "mattermost";
/// Mattermost's default limit on a post's message (`MaxPostSize`, 16,383 characters).
pub const MAX_MESSAGE: usize = 16_383;
/// Room for display blocks in a post.
const MAX_DISPLAY: usize = 6_000;
/// Buttons beyond this many options become a menu.
const MAX_BUTTONS: usize = 5;
const MAX_LABEL: usize = 60;
/// A dialog's title is at most 24 characters.
const MAX_DIALOG_TITLE: usize = 24;
/// A `textarea` element holds at most 3,000 characters.
const MAX_TEXTAREA: usize = 3_000;
const MAX_ELEMENT_NAME: usize = 24;
const MAX_HELP: usize = 150;

/// A Mattermost channel's configuration.
#[derive(Clone)]
pub struct Mattermost {
    /// The Mattermost server (`https://chat.example.com`).
    pub url: url::Url,
    /// The bot account's access token.
    pub bot_token: String,
    /// The channel requests are posted to.
    pub channel_id: String,
}

impl std::fmt::Debug for Mattermost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mattermost")
            .field("url", &self.url.as_str())
            .field("channel_id", &self.channel_id)
            .finish_non_exhaustive()
    }
}

fn mac(key: &[u8], message: &str) -> Vec<u8> {
    #[allow(clippy::expect_used)]
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    m.update(message.as_bytes());
    m.finalize().into_bytes().to_vec()
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether `token` is the one `key` gives `message`, compared in constant time.
fn genuine(key: &[u8], message: &str, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    let expected = b64(&mac(key, message));
    expected.len() == token.len() && bool::from(expected.as_bytes().ct_eq(token.as_bytes()))
}

/// The token of a button that does `action` on request `request`.
pub fn button_token(key: &[u8], request: &str, action: &str) -> String {
    b64(&mac(key, &format!("mattermost-button:{request}:{action}")))
}

/// The token of a dialog for `focus` of request `request`, opened for `user`.
fn dialog_token(key: &[u8], request: &str, focus: Focus, user: &str) -> String {
    b64(&mac(
        key,
        &format!("mattermost-dialog:{request}:{}:{user}", focus.encode()),
    ))
}

/// What a verified call from Mattermost asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// `user` pressed a button (or chose in a menu) of request `request`'s post; `trigger` opens
    /// a dialog.
    Click {
        user: String,
        request: String,
        control: Control,
        trigger: Option<String>,
    },
    /// `user` submitted the dialog for `focus` of request `request`.
    Submit {
        user: String,
        request: String,
        focus: Focus,
        inputs: BTreeMap<String, Input>,
    },
    /// `user` closed a dialog without submitting it.
    Cancelled,
}

/// Why a call was refused: it did not come from a button or dialog clarify made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unverified(pub &'static str);

/// Verifies a call to `/hooks/mattermost/{name}` (its token, under `key`), then reads it.
pub fn read(key: &[u8], body: &[u8]) -> Result<Inbound, Unverified> {
    let body: Value =
        serde_json::from_slice(body).map_err(|_| Unverified("the body is not JSON"))?;
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let user = text(&body["user_id"]);
    if body["type"] == "dialog_submission" {
        // state: `<request id> <focus> <token>`.
        let state = body["state"].as_str().unwrap_or_default();
        let mut parts = state.split(' ');
        let (Some(request), Some(focus), Some(token), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Unverified("a dialog submission without clarify's state"));
        };
        let Some(focus) = Focus::decode(focus) else {
            return Err(Unverified("a dialog submission without clarify's state"));
        };
        let user = user.ok_or(Unverified("a dialog submission without user_id"))?;
        if !genuine(
            key,
            &format!("mattermost-dialog:{request}:{}:{user}", focus.encode()),
            token,
        ) {
            return Err(Unverified("the dialog's token does not match"));
        }
        if body["cancelled"] == true {
            return Ok(Inbound::Cancelled);
        }
        let mut inputs = BTreeMap::new();
        let mut many: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if let Some(submission) = body["submission"].as_object() {
            for (name, value) in submission {
                // A `multi` question's options are one checkbox each: `q0.o3`.
                if let Some((question, index)) = name.split_once(".o")
                    && index.parse::<usize>().is_ok()
                {
                    let chosen = many.entry(question.to_owned()).or_default();
                    if value == true || value == "true" {
                        chosen.push(index.to_owned());
                    }
                    continue;
                }
                let input = match value {
                    Value::String(s) => Input::Text(s.clone()),
                    Value::Bool(b) => Input::One(Some(b.to_string())),
                    Value::Null => Input::One(None),
                    other => Input::Text(other.to_string()),
                };
                inputs.insert(name.clone(), input);
            }
        }
        for (question, chosen) in many {
            inputs.insert(question, Input::Many(chosen));
        }
        return Ok(Inbound::Submit {
            user,
            request: request.to_owned(),
            focus,
            inputs,
        });
    }
    let context = &body["context"];
    let (Some(request), Some(action), Some(token)) = (
        text(&context["request"]),
        text(&context["action"]),
        text(&context["token"]),
    ) else {
        return Err(Unverified(
            "a call without the context of a button clarify made",
        ));
    };
    if !genuine(
        key,
        &format!("mattermost-button:{request}:{action}"),
        &token,
    ) {
        return Err(Unverified("the button's token does not match"));
    }
    let user = user.ok_or(Unverified("an action without user_id"))?;
    // A menu adds the chosen option's value to the context.
    let values: Vec<String> = text(&context["selected_option"]).into_iter().collect();
    Ok(Inbound::Click {
        user,
        request,
        control: control(&action, &values),
        trigger: text(&body["trigger_id"]),
    })
}

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

/// Mattermost's markdown, for display blocks: agent text escaped character by character; code
/// and diffs in fenced blocks (Mattermost colours `diff`).
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
        format!("_{inner}_")
    }
    fn strike(&self, inner: &str) -> String {
        format!("~~{inner}~~")
    }
    fn code(&self, s: &str) -> String {
        format!("`{}`", s.replace('`', "'"))
    }
    fn link(&self, url: &str, label: &str) -> String {
        let url = url
            .replace('(', "%28")
            .replace(')', "%29")
            .replace(' ', "%20");
        format!("[{label}]({url})")
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

fn code(json: &str, max: usize) -> String {
    format!(
        "```json\n{}\n```",
        cut(json, max).replace("```", "``\u{200b}`")
    )
}

/// The post's message for `record` as it is now; `mention` are `@username`s.
pub fn text(record: &RequestRecord, answer_url: &str, mention: &[String]) -> String {
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut parts = vec![format!("#### {}", fit(&headline(record), 200))];
    if pending && !mention.is_empty() {
        parts.push(mention.join(" "));
    }
    match &request.context {
        Some(Context::Text(t)) => parts.push(fit(t, 1_000)),
        Some(Context::Json(map)) => parts.push(code(
            &serde_json::to_string_pretty(map).unwrap_or_default(),
            1_000,
        )),
        None => {}
    }
    let more = format!("[The rest is on the answer page]({answer_url})");
    parts.extend(crate::display_text(record, &Markdown, MAX_DISPLAY, &more));
    for q in &request.questions {
        let mut part = format!("**{}**", fit(&q.text, 1_000));
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                for (i, o) in c.options.iter().enumerate() {
                    let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        " _(recommended)_"
                    } else {
                        ""
                    };
                    part.push_str(&format!("\n{}. {}{mark}", i + 1, fit(&o.label, 100)));
                    if let Some(d) = &o.description {
                        part.push_str(&format!(" — {}", fit(d, 200)));
                    }
                }
            }
            QuestionKind::Approval(a) => {
                part.push_str(&format!(
                    "\nAction: `{}`",
                    cut(&a.action.name, 100).replace('`', "'")
                ));
                if request.display.is_empty() {
                    let pretty =
                        serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default();
                    part.push_str(&format!("\n{}", code(&pretty, 2_000)));
                    if pretty.chars().count() > 2_000 {
                        part.push_str(&format!(
                            "\n(cut: [the rest is on the answer page]({answer_url}))"
                        ));
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
            footer.push(format!("expires {}", at.format("%Y-%m-%d %H:%M UTC")));
        }
        if request.is_quorum() {
            footer.push(escape(&outcome_text(record)));
        }
        if let Some(by) = &request.responders {
            footer.push(format!("for {}", fit(&by.join(", "), 200)));
        }
    }
    if !footer.is_empty() {
        parts.push(format!("_{}_", footer.join(" · ")));
    }
    if pending {
        parts.push(format!("[Open in clarify]({answer_url})"));
    } else {
        parts.push(format!("**{}**", fit(&outcome_text(record), 1_000)));
    }
    let text = parts.join("\n\n");
    if text.chars().count() > MAX_MESSAGE {
        return fit(
            &format!("{}: {}", headline(record), outcome_text(record)),
            2_000,
        ) + &format!("\n\n[Open in clarify]({answer_url})");
    }
    text
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
            body["message"] = json!(format!("{message}\n\n{}", crate::STEP_UP_LINE));
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
            "introduction_text": fit(&q.text, 1_000),
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
    let name = input_id(0, Some(&format!("f.{}", field.id)));
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
            let mut hint = field.hint();
            if let Some(options) = field.kind.options() {
                let listed: Vec<String> = options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| format!("{}. {}", i + 1, o.label))
                    .collect();
                hint = format!("{hint}: {}", listed.join(", "));
            }
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
pub fn ephemeral(text: &str) -> Value {
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

impl Mattermost {
    async fn call(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, SendError> {
        let url = format!("{}/api/v4{path}", self.url.as_str().trim_end_matches('/'));
        let mut request = client.request(method, url).bearer_auth(&self.bot_token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| SendError::Unreachable {
            platform: PLATFORM,
            detail: if e.is_timeout() {
                format!("{path}: no answer in time")
            } else {
                format!("{path}: {e}")
            },
        })?;
        let status = response.status();
        let wait = crate::retry_after(response.headers()).or_else(|| {
            // Mattermost's rate limiter names the wait in X-Ratelimit-Reset (seconds).
            response
                .headers()
                .get("x-ratelimit-reset")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|s| std::time::Duration::from_secs(s.min(3_600)))
        });
        let text = response.text().await.unwrap_or_default();
        let answer: Option<Value> = serde_json::from_str(&text).ok();
        if status.is_success() {
            return Ok(answer.unwrap_or_default());
        }
        let detail = answer
            .as_ref()
            .and_then(|a| a["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| cut(text.trim(), 200));
        Err(SendError::Refused {
            platform: PLATFORM,
            status: status.as_u16(),
            detail: format!("{path}: {detail}"),
            retry_after: if status.as_u16() == 429 || status.is_server_error() {
                wait
            } else {
                None
            },
        })
    }

    /// Opens `dialog` (from [`dialog`]) with the click's `trigger`, which Mattermost honours
    /// for three seconds.
    pub async fn open_dialog(
        &self,
        client: &reqwest::Client,
        trigger: &str,
        dialog: &Value,
    ) -> Result<(), SendError> {
        let mut body = dialog.clone();
        body["trigger_id"] = json!(trigger);
        self.call(
            client,
            reqwest::Method::POST,
            "/actions/dialogs/open",
            Some(&body),
        )
        .await
        .map(drop)
    }

    /// `@username` of each user id, skipping any Mattermost does not name.
    async fn mentions(&self, client: &reqwest::Client, users: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for id in users {
            let valid = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric());
            if !valid {
                continue;
            }
            match self
                .call(client, reqwest::Method::GET, &format!("/users/{id}"), None)
                .await
            {
                Ok(user) => {
                    if let Some(name) = user["username"].as_str().filter(|n| {
                        n.chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                    }) {
                        out.push(format!("@{name}"));
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "looking up a Mattermost user to mention failed")
                }
            }
        }
        out
    }

    /// Announces, replies to the announcement's thread, or edits the announcement, as
    /// `notice` asks.
    pub(crate) async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use reqwest::Method;
        let record = notice.record;
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Escalated, None) => {
                let mention = self.mentions(client, &notice.mention).await;
                let mut body = announcement(notice, &mention);
                body["channel_id"] = json!(self.channel_id);
                let sent = self
                    .call(client, Method::POST, "/posts", Some(&body))
                    .await?;
                Ok(Sent::Posted {
                    message_ref: sent["id"].as_str().map(str::to_owned),
                })
            }
            (EventKind::Reminded | EventKind::Escalated, Some(root)) => {
                let mention = self.mentions(client, &notice.mention).await;
                let body = json!({
                    "channel_id": self.channel_id,
                    "root_id": root,
                    "message": crate::follow_up_text(notice.event, &mention),
                });
                let sent = self
                    .call(client, Method::POST, "/posts", Some(&body))
                    .await?;
                Ok(Sent::Posted {
                    message_ref: sent["id"].as_str().map(str::to_owned),
                })
            }
            (_, None) => Ok(Sent::Skipped {
                why: "the request was never announced here, so there is nothing to edit",
            }),
            (_, Some(id)) => {
                let mut body = post(
                    record,
                    notice.answer_url,
                    notice.action_key,
                    notice.hook_url,
                    &[],
                );
                body["id"] = json!(id);
                self.call(
                    client,
                    Method::PUT,
                    &format!("/posts/{id}/patch"),
                    Some(&body),
                )
                .await?;
                Ok(Sent::Edited)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"server key";

    fn click(context: Value) -> Vec<u8> {
        json!({"user_id": "u1", "post_id": "p1", "trigger_id": "t1", "context": context})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn only_a_button_clarify_made_gets_through() {
        let token = button_token(KEY, "r1", "a:once");
        let ok = read(
            KEY,
            &click(json!({"request": "r1", "action": "a:once", "token": token})),
        );
        assert!(
            matches!(ok, Ok(Inbound::Click { ref request, .. }) if request == "r1"),
            "{ok:?}"
        );
        for forged in [
            json!({"request": "r2", "action": "a:once", "token": token}),
            json!({"request": "r1", "action": "d", "token": token}),
            json!({"request": "r1", "action": "a:once", "token": "x"}),
            json!({"request": "r1", "action": "a:once"}),
            json!({}),
        ] {
            assert!(read(KEY, &click(forged.clone())).is_err(), "{forged}");
        }
        assert!(
            read(
                b"another key",
                &click(json!({"request": "r1", "action": "a:once", "token": token}))
            )
            .is_err()
        );
        assert!(read(KEY, b"{not json").is_err());
    }

    #[test]
    fn a_dialog_is_bound_to_the_person_it_was_opened_for() {
        let token = dialog_token(KEY, "r1", Focus::Deny(0), "u1");
        let submit = |user: &str| {
            json!({"type": "dialog_submission", "user_id": user, "callback_id": "deny:0",
                   "state": format!("r1 deny:0 {token}"), "submission": {"q0.reason": "no"}})
            .to_string()
            .into_bytes()
        };
        let Ok(Inbound::Submit { focus, inputs, .. }) = read(KEY, &submit("u1")) else {
            panic!("a submission");
        };
        assert_eq!(focus, Focus::Deny(0));
        assert_eq!(inputs.get("q0.reason"), Some(&Input::Text("no".to_owned())));
        assert!(read(KEY, &submit("u2")).is_err());
    }

    #[test]
    fn nothing_the_agent_wrote_mentions_or_formats() {
        let e = escape("@channel **x** ~town-square [a](b)");
        assert!(!e.contains("@channel"), "{e}");
        assert!(!e.contains("**"), "{e}");
        assert!(e.contains("\\~town\\-square"), "{e}");
    }
}
