//! Telegram: requests posted by a bot to one chat as messages with inline keyboards, answered by
//! their buttons or by replying to the message.
//!
//! The Bot API is called over plain `reqwest` + `serde` at `<api_url>/bot<token>/<method>`: the
//! few methods needed (`sendMessage`, `editMessageText`, `editMessageReplyMarkup`,
//! `answerCallbackQuery`, `getUpdates`) do not justify a framework crate. A message's reference
//! is `<chat id>:<message id>`; a button's callback data is a few bytes naming what it does
//! (never the request: the message it sits on finds that through the store), so it stays far
//! below Telegram's 64-byte limit and cannot be forged into another request.
//!
//! Per kind: `single` one button per option; `multi` toggling buttons (`✅` marks the chosen
//! ones, the selection travels in the buttons' data) and Done; `approval` one Approve per offered
//! scope, Deny, and Deny with reason; `open`, Other and a deny's reason ask for a reply with
//! ForceReply (the prompt names the announcement it belongs to, and the reply is matched by
//! `reply_to_message`); forms, edited arguments and requests of several questions use the signed
//! answer link. Text is sent as HTML with everything the agent wrote escaped.
//!
//! Updates reach clarify by long polling (`getUpdates`, the default: no public URL needed) or at
//! `POST /hooks/telegram/{name}`, checked against the `X-Telegram-Bot-Api-Secret-Token` header;
//! [`read_update`] reads either into an [`Update`].

use std::collections::BTreeMap;
use std::time::Duration;

use clarify_core::{Context, QuestionKind, Scope};
use clarify_store::{EventKind, RequestRecord};
use serde_json::{Value, json};

use crate::answer::{Act, Focus, Input, input_id};
use crate::{Notice, SendError, Sent, cut, headline, outcome_text};

const PLATFORM: &str = "telegram";
/// Telegram's limit on a message's text, counted after entities are parsed.
pub const MAX_TEXT: usize = 4_096;
/// Room kept for the pretty JSON of an approval's arguments.
const MAX_ARGUMENTS: usize = 1_500;
/// Telegram's limit on an `answerCallbackQuery` notice.
const MAX_NOTICE: usize = 200;
/// Options shown as buttons; more are answered through the answer link.
const MAX_OPTION_BUTTONS: usize = 24;

/// A Telegram channel's configuration.
#[derive(Clone)]
pub struct Telegram {
    /// `123456:ABC-DEF…`, from @BotFather.
    pub bot_token: String,
    /// The chat requests are posted to: a user's, a group's or a channel's id (`-100…`).
    pub chat_id: String,
    /// The Bot API's base URL (`https://api.telegram.org`).
    pub api_url: url::Url,
    /// With a secret, updates arrive at `/hooks/telegram/{name}` (webhook mode) carrying it;
    /// without, clarify polls `getUpdates`.
    pub webhook_secret: Option<String>,
}

impl std::fmt::Debug for Telegram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telegram")
            .field("chat_id", &self.chat_id)
            .field("api_url", &self.api_url.as_str())
            .field("webhook", &self.webhook_secret.is_some())
            .finish_non_exhaustive()
    }
}

/// What a button of a clarify message does: its callback data, read back by [`Press::decode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    /// Option `n` of a `single` question.
    Option(usize),
    /// A `multi` question's buttons after a toggle: the options chosen now (bit `n`: option `n`).
    Toggle(u32),
    /// Done on a `multi` question with these options chosen.
    Done(u32),
    Approve(Scope),
    Deny,
    /// Deny with a reason: asks for a reply.
    Reason,
    /// Request changes: asks for a reply saying which.
    Revise,
    /// Other, or the answer of an `open` question: asks for a reply.
    Write,
    Skip,
}

impl Press {
    pub fn encode(self) -> String {
        match self {
            Self::Option(n) => format!("o{n}"),
            Self::Toggle(mask) => format!("t{mask:x}"),
            Self::Done(mask) => format!("m{mask:x}"),
            Self::Approve(Scope::Once) => "ao".to_owned(),
            Self::Approve(Scope::Session) => "as".to_owned(),
            Self::Approve(Scope::Always) => "aa".to_owned(),
            Self::Deny => "d".to_owned(),
            Self::Reason => "r".to_owned(),
            Self::Revise => "c".to_owned(),
            Self::Write => "w".to_owned(),
            Self::Skip => "s".to_owned(),
        }
    }

    /// The press `data` names; `None` for data clarify did not write.
    pub fn decode(data: &str) -> Option<Self> {
        let (head, rest) = data.split_at_checked(1)?;
        Some(match (head, rest) {
            ("o", n) => Self::Option(n.parse().ok()?),
            ("t", m) => Self::Toggle(u32::from_str_radix(m, 16).ok()?),
            ("m", m) => Self::Done(u32::from_str_radix(m, 16).ok()?),
            ("a", "o") => Self::Approve(Scope::Once),
            ("a", "s") => Self::Approve(Scope::Session),
            ("a", "a") => Self::Approve(Scope::Always),
            ("d", "") => Self::Deny,
            ("r", "") => Self::Reason,
            ("c", "") => Self::Revise,
            ("w", "") => Self::Write,
            ("s", "") => Self::Skip,
            _ => return None,
        })
    }

    /// The act a press stands for on a request of one question; `None` for presses that change
    /// only the message (a toggle) or ask for a reply.
    pub fn act(self) -> Option<Act> {
        use clarify_core::Decision;
        Some(match self {
            Self::Option(index) => Act::Option { question: 0, index },
            Self::Done(mask) => Act::Options {
                question: 0,
                indexes: indexes(mask),
            },
            Self::Approve(scope) => Act::Decide {
                question: 0,
                decision: Decision::Approve,
                scope,
            },
            Self::Deny => Act::Decide {
                question: 0,
                decision: Decision::Deny,
                scope: Scope::Once,
            },
            Self::Skip => Act::Skip,
            Self::Toggle(_) | Self::Reason | Self::Revise | Self::Write => return None,
        })
    }
}

/// The option indexes a mask holds.
fn indexes(mask: u32) -> Vec<usize> {
    (0..32).filter(|n| mask & (1 << n) != 0).collect()
}

/// What an update asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// A button was pressed on message `message_ref` by `user`; the query must be answered.
    Press {
        query_id: String,
        user: String,
        message_ref: String,
        data: String,
    },
    /// `user` replied `text` to message `reply_to` (the bot's), whose prompt line, if it has
    /// one, names the announcement and what the reply is for.
    Reply {
        user: String,
        chat_id: String,
        message_id: i64,
        reply_to: String,
        prompt: Option<(String, Focus)>,
        text: String,
    },
    /// `/start` (or `/id`): the user asks which id to put into `[identities]`.
    Start { user: String, chat_id: String },
    /// `/link`: the user asks for a link that links their account to their clarify sign-in;
    /// `private` when sent in the bot's private chat, the only place such a link may go.
    Link {
        user: String,
        chat_id: String,
        private: bool,
    },
    /// Something clarify does not act on, and why.
    Ignore(&'static str),
}

/// The first line of a prompt's text names the announcement it belongs to: `#<message id>`.
/// Only the bot's own messages are read for it.
const PROMPT_MARK: &str = "↩ #";

/// Reads one update (`getUpdates` result item or webhook body); `Err` names what is missing.
/// `bot_id` is the bot's own user id, whose messages alone are read for prompts.
pub fn read_update(update: &Value, bot_id: Option<&str>) -> Result<Update, String> {
    if !update.is_object() {
        return Err("an update must be a JSON object".to_owned());
    }
    if let Some(query) = update.get("callback_query") {
        let query_id = text_of(&query["id"]).ok_or("a callback query without an id")?;
        let user = id_of(&query["from"]["id"]).ok_or("a callback query without from.id")?;
        let message = &query["message"];
        let (Some(chat), Some(message_id)) =
            (id_of(&message["chat"]["id"]), id_of(&message["message_id"]))
        else {
            // An inline-mode message or one too old for Telegram to include.
            return Ok(Update::Ignore("a press on a message clarify cannot see"));
        };
        return Ok(Update::Press {
            query_id,
            user,
            message_ref: format!("{chat}:{message_id}"),
            data: query["data"].as_str().unwrap_or_default().to_owned(),
        });
    }
    let Some(message) = update.get("message") else {
        return Ok(Update::Ignore("an update clarify does not use"));
    };
    let Some(user) = id_of(&message["from"]["id"]) else {
        return Ok(Update::Ignore("a message without a sender"));
    };
    if message["from"]["is_bot"] == true {
        return Ok(Update::Ignore("a bot's message"));
    }
    let chat_id = id_of(&message["chat"]["id"]).ok_or("a message without chat.id")?;
    let message_id = message["message_id"]
        .as_i64()
        .ok_or("a message without message_id")?;
    let text = message["text"].as_str().unwrap_or_default().trim();
    let command = text.split_whitespace().next().unwrap_or_default();
    let command = command.split('@').next().unwrap_or_default();
    if command == "/start" || command == "/id" {
        return Ok(Update::Start { user, chat_id });
    }
    if command == "/link" {
        let private = message["chat"]["type"] == "private";
        return Ok(Update::Link {
            user,
            chat_id,
            private,
        });
    }
    let replied = &message["reply_to_message"];
    let Some(reply_to) = id_of(&replied["message_id"]) else {
        return Ok(Update::Ignore("a message that replies to nothing"));
    };
    if text.is_empty() {
        return Ok(Update::Ignore("a reply without text"));
    }
    let from_bot = match bot_id {
        Some(bot) => id_of(&replied["from"]["id"]).as_deref() == Some(bot),
        None => replied["from"]["is_bot"] == true,
    };
    let prompt = if from_bot {
        replied["text"].as_str().and_then(read_prompt)
    } else {
        None
    };
    Ok(Update::Reply {
        reply_to: format!("{chat_id}:{reply_to}"),
        user,
        chat_id,
        message_id,
        prompt,
        text: text.to_owned(),
    })
}

/// Checks a webhook call's `X-Telegram-Bot-Api-Secret-Token` header against the channel's
/// secret (the one given to `setWebhook`), in constant time.
pub fn verify(secret: &str, header: Option<&str>) -> Result<(), &'static str> {
    use subtle::ConstantTimeEq;
    let given = header.ok_or("X-Telegram-Bot-Api-Secret-Token is required")?;
    let same = given.len() == secret.len() && bool::from(given.as_bytes().ct_eq(secret.as_bytes()));
    if same {
        Ok(())
    } else {
        Err("X-Telegram-Bot-Api-Secret-Token does not match")
    }
}

/// Telegram ids are integers (users' may exceed 32 bits), chat usernames strings.
fn id_of(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => n.as_i64().map(|n| n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn text_of(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// The prompt line of a reply prompt: `↩ #<message id> <focus>`.
fn prompt_line(announcement_id: &str, focus: Focus) -> String {
    format!("{PROMPT_MARK}{announcement_id} {}", focus.encode())
}

fn read_prompt(text: &str) -> Option<(String, Focus)> {
    let line = text.lines().next()?.strip_prefix(PROMPT_MARK)?;
    let (id, focus) = line.split_once(' ')?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((id.to_owned(), Focus::decode(focus.trim())?))
}

/// The act of a reply to a prompt for `focus`: the typed text as that form's one input.
pub fn prompt_act(focus: Focus, text: &str) -> Act {
    let input = match focus {
        Focus::Other(n) => input_id(n, Some("other")),
        Focus::Deny(n) | Focus::Revise(n) => input_id(n, Some("reason")),
        Focus::Edit(n) => input_id(n, Some("arguments")),
        Focus::Open(n) | Focus::Form(n) => input_id(n, None),
        Focus::Request => input_id(0, None),
    };
    Act::Submit {
        focus,
        inputs: BTreeMap::from([(input, Input::Text(text.to_owned()))]),
    }
}

/// `&`, `<` and `>` escaped for Telegram's HTML parse mode.
pub fn escape(text: &str) -> String {
    crate::escape_markup(text)
}

/// Room for display blocks in a message, whose whole limit is [`MAX_TEXT`] (counted, as
/// Telegram counts it, after its HTML is parsed).
const MAX_DISPLAY: usize = 2_000;

/// Telegram's HTML parse mode, for display blocks: agent text is escaped, so no tag or entity
/// forms from it; diffs are `<pre><code class="language-diff">`, which Telegram highlights.
#[derive(Debug, Clone, Copy)]
pub struct Html;

impl clarify_render::Markup for Html {
    fn text(&self, s: &str) -> String {
        escape(s)
    }
    fn strong(&self, inner: &str) -> String {
        format!("<b>{inner}</b>")
    }
    fn emphasis(&self, inner: &str) -> String {
        format!("<i>{inner}</i>")
    }
    fn strike(&self, inner: &str) -> String {
        format!("<s>{inner}</s>")
    }
    fn code(&self, s: &str) -> String {
        format!("<code>{}</code>", escape(s))
    }
    fn link(&self, url: &str, label: &str) -> String {
        format!(
            "<a href=\"{}\">{label}</a>",
            escape(url).replace('"', "&quot;")
        )
    }
    fn pre(&self, s: &str, language: Option<&str>) -> String {
        match language {
            // Display languages are validated names (letters, digits, `+#-_.`).
            Some(lang) => format!(
                "<pre><code class=\"language-{}\">{}</code></pre>",
                escape(lang),
                escape(s)
            ),
            None => format!("<pre>{}</pre>", escape(s)),
        }
    }
    fn quote(&self, inner: &str) -> String {
        format!("<blockquote>{inner}</blockquote>")
    }
    /// What Telegram counts: the text once tags are read and entities decoded.
    fn len(&self, s: &str) -> usize {
        let mut n = 0;
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            match c {
                '<' => {
                    for c in chars.by_ref() {
                        if c == '>' {
                            break;
                        }
                    }
                }
                '&' => {
                    for c in chars.by_ref() {
                        if c == ';' {
                            break;
                        }
                    }
                    n += 1;
                }
                _ => n += 1,
            }
        }
        n
    }
}

/// `text` cut to `max` characters, then escaped: Telegram counts the text after parsing, so
/// escapes do not use up the limit.
fn fit(text: &str, max: usize) -> String {
    escape(&cut(text, max))
}

/// A mention of user `id` that works without a username.
fn mention_of(id: &str) -> String {
    format!("<a href=\"tg://user?id={}\">{}</a>", escape(id), escape(id))
}

/// The message's text (HTML) for `notice`: pending, what is asked; resolved, how it ended.
pub fn message_text(notice: &Notice<'_>, mention: &[String]) -> String {
    let record = notice.record;
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut parts = vec![format!("<b>{}</b>", fit(&headline(record), 200))];
    if pending && !mention.is_empty() {
        let m: Vec<String> = mention.iter().map(|m| mention_of(m)).collect();
        parts.push(m.join(" "));
    }
    match &request.context {
        Some(Context::Text(t)) => parts.push(fit(t, 1_000)),
        Some(Context::Json(map)) => {
            let pretty = serde_json::to_string_pretty(map).unwrap_or_default();
            parts.push(format!("<pre>{}</pre>", fit(&pretty, 800)));
        }
        None => {}
    }
    let more = format!(
        "<a href=\"{}\">The rest is on the answer page</a>",
        escape(notice.answer_url).replace('"', "&quot;")
    );
    parts.extend(crate::display_text(record, &Html, MAX_DISPLAY, &more));
    for q in &request.questions {
        let mut part = fit(&q.text, 1_000);
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                for (i, o) in c.options.iter().enumerate() {
                    let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        " <i>(recommended)</i>"
                    } else {
                        ""
                    };
                    part.push_str(&format!("\n{}. {}{mark}", i + 1, fit(&o.label, 200)));
                }
            }
            QuestionKind::Approval(a) if !request.display.is_empty() => {
                // The display blocks above show what the action does.
                part.push_str(&format!(
                    "\nAction: <code>{}</code>",
                    fit(&a.action.name, 200)
                ));
            }
            QuestionKind::Approval(a) => {
                let pretty = serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default();
                let more = if pretty.chars().count() > MAX_ARGUMENTS {
                    format!(
                        "\n<a href=\"{}\">(cut: the rest in clarify)</a>",
                        escape(notice.answer_url)
                    )
                } else {
                    String::new()
                };
                part.push_str(&format!(
                    "\nAction: <code>{}</code>\n<pre>{}</pre>{more}",
                    fit(&a.action.name, 200),
                    fit(&pretty, MAX_ARGUMENTS)
                ));
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
        parts.push(part);
    }
    let mut footer: Vec<String> = crate::asked_by(request, |a| fit(a, 100), |s| fit(s, 100))
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
        if answered_by_reply(record) {
            footer.push("reply to this message to answer".to_owned());
        }
    }
    if !footer.is_empty() {
        parts.push(format!("<i>{}</i>", footer.join(" · ")));
    }
    if !pending {
        parts.push(format!("<b>{}</b>", fit(&outcome_text(record), 1_000)));
    }
    let text = parts.join("\n\n");
    // The parts are cut to fit well inside the limit; this guards the sum (cutting HTML could
    // leave a tag open, so the plain outcome is sent instead).
    if clarify_render::Markup::len(&Html, &text) > MAX_TEXT {
        return fit(
            &format!("{}: {}", headline(record), outcome_text(record)),
            1_000,
        );
    }
    text
}

/// Whether a reply typed to the announcement can answer it (one question that is not a form).
fn answered_by_reply(record: &RequestRecord) -> bool {
    match record.request.questions.as_slice() {
        [q] => !matches!(q.kind, QuestionKind::Form(_)),
        _ => false,
    }
}

fn button(text: &str, press: Press) -> Value {
    json!({"text": cut(text, 64), "callback_data": press.encode()})
}

fn link(text: &str, url: &str) -> Value {
    json!({"text": text, "url": url})
}

/// The keyboard of `notice`'s message: only "Open in clarify" for a request that needs a
/// passkey confirmation.
pub(crate) fn notice_keyboard(notice: &Notice<'_>) -> Value {
    if notice.open_only() {
        return json!({"inline_keyboard": [[link(crate::OPEN_IN_CLARIFY, notice.answer_url)]]});
    }
    keyboard(notice.record, notice.answer_url, 0)
}

/// The inline keyboard of a pending request's message; `chosen` the options of a `multi`
/// question chosen so far. Empty once resolved.
pub fn keyboard(record: &RequestRecord, answer_url: &str, chosen: u32) -> Value {
    if record.status.is_resolved() {
        return json!({"inline_keyboard": []});
    }
    let request = &record.request;
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let mut by_link = true;
    if let [q] = request.questions.as_slice() {
        match &q.kind {
            QuestionKind::Single(c) if c.options.len() <= MAX_OPTION_BUTTONS => {
                by_link = false;
                for (i, o) in c.options.iter().enumerate() {
                    let star = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        "⭐ "
                    } else {
                        ""
                    };
                    rows.push(vec![button(
                        &format!("{star}{}", o.label),
                        Press::Option(i),
                    )]);
                }
                if c.allow_other {
                    rows.push(vec![button("Other…", Press::Write)]);
                }
            }
            QuestionKind::Multi(c) if c.options.len() <= MAX_OPTION_BUTTONS => {
                by_link = false;
                for (i, o) in c.options.iter().enumerate() {
                    let bit = 1_u32 << i;
                    let mark = if chosen & bit != 0 { "✅" } else { "⬜" };
                    rows.push(vec![button(
                        &format!("{mark} {}", o.label),
                        Press::Toggle(chosen ^ bit),
                    )]);
                }
                let mut last = vec![button("Done", Press::Done(chosen))];
                if c.allow_other {
                    last.push(button("Other…", Press::Write));
                }
                rows.push(last);
            }
            QuestionKind::Open => {
                by_link = false;
                rows.push(vec![button("Answer…", Press::Write)]);
            }
            QuestionKind::Approval(a) => {
                by_link = false;
                let approve: Vec<Value> = a
                    .scopes
                    .iter()
                    .map(|s| {
                        let label = match s {
                            Scope::Once => "✅ Approve",
                            Scope::Session => "✅ For this session",
                            Scope::Always => "✅ Always",
                        };
                        button(label, Press::Approve(*s))
                    })
                    .collect();
                rows.push(approve);
                rows.push(vec![
                    button("⛔ Deny", Press::Deny),
                    button("Deny with reason…", Press::Reason),
                ]);
                rows.push(vec![button("✍️ Request changes…", Press::Revise)]);
                if a.allow_edit {
                    rows.push(vec![link("✏️ Edit arguments…", answer_url)]);
                }
            }
            _ => {}
        }
    }
    let mut last = Vec::new();
    if request.allow_skip {
        last.push(button("Skip", Press::Skip));
    }
    last.push(link(
        if by_link {
            "Answer in clarify"
        } else {
            "Open in clarify"
        },
        answer_url,
    ));
    rows.push(last);
    json!({"inline_keyboard": rows})
}

/// The text of a reply prompt for `focus` of the request announced as message `announcement`.
fn prompt_text(record: &RequestRecord, announcement: &str, focus: Focus, user: &str) -> String {
    let what = match focus {
        Focus::Deny(_) => "Why deny? Reply to this message with the reason.",
        Focus::Revise(_) => "What should change? Reply to this message to say.",
        Focus::Other(_) => "Reply to this message with your own answer.",
        _ => "Reply to this message with your answer.",
    };
    format!(
        "{}\n{} {}\n<i>{}</i>",
        escape(&prompt_line(announcement, focus)),
        mention_of(user),
        what,
        fit(&headline(record), 200)
    )
}

impl Telegram {
    /// The bot's own user id: the part of its token before the colon.
    pub fn bot_id(&self) -> Option<&str> {
        let (id, _) = self.bot_token.split_once(':')?;
        (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then_some(id)
    }

    /// Calls Bot API `method` with a JSON body; `result` when Telegram says `"ok": true`.
    /// `wait` is how long the call may take (long polling waits on purpose).
    pub async fn call(
        &self,
        client: &reqwest::Client,
        method: &str,
        body: &Value,
        wait: Option<Duration>,
    ) -> Result<Value, SendError> {
        let url = format!(
            "{}/bot{}/{method}",
            self.api_url.as_str().trim_end_matches('/'),
            self.bot_token
        );
        let mut post = client.post(url).json(body);
        if let Some(wait) = wait {
            post = post.timeout(wait);
        }
        let response = post.send().await.map_err(|e| SendError::Unreachable {
            platform: PLATFORM,
            // reqwest's message would carry the URL, and with it the token.
            detail: if e.is_timeout() {
                format!("{method}: no answer in time")
            } else if e.is_connect() {
                format!("{method}: could not connect")
            } else {
                format!("{method}: the connection failed")
            },
        })?;
        let status = response.status();
        let header_wait = crate::retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        let answer: Option<Value> = serde_json::from_str(&text).ok();
        let ok = answer.as_ref().is_some_and(|a| a["ok"] == true);
        if status.is_success() && ok {
            return Ok(answer.map(|mut a| a["result"].take()).unwrap_or_default());
        }
        let description = answer
            .as_ref()
            .and_then(|a| a["description"].as_str().map(str::to_owned))
            .unwrap_or_else(|| cut(text.trim(), 200));
        // Flood control names the wait in the body: {"parameters": {"retry_after": 3}}.
        let body_wait = answer
            .as_ref()
            .and_then(|a| a["parameters"]["retry_after"].as_u64())
            .map(|s| Duration::from_secs(s.min(3_600)));
        let code = answer
            .as_ref()
            .and_then(|a| a["error_code"].as_u64())
            .and_then(|c| u16::try_from(c).ok());
        Err(SendError::Refused {
            platform: PLATFORM,
            status: if status.is_success() {
                code.unwrap_or(500)
            } else {
                status.as_u16()
            },
            detail: format!("{method}: {description}"),
            retry_after: body_wait.or(header_wait),
        })
    }

    /// Announces, replies to the announcement, or edits it, as `notice` asks.
    pub(crate) async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Escalated, None) => {
                let mut text = message_text(notice, &notice.mention);
                if notice.open_only() {
                    text = format!("{text}\n\n{}", crate::STEP_UP_LINE);
                }
                let sent = self
                    .call(
                        client,
                        "sendMessage",
                        &json!({
                            "chat_id": number_or_text(&self.chat_id),
                            "text": text,
                            "parse_mode": "HTML",
                            "link_preview_options": {"is_disabled": true},
                            "reply_markup": notice_keyboard(notice),
                        }),
                        None,
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: message_ref(&sent, &self.chat_id),
                })
            }
            (EventKind::Reminded | EventKind::Escalated, Some(announcement)) => {
                let (chat, id) = split_ref(announcement, &self.chat_id);
                let mentions: Vec<String> = notice.mention.iter().map(|m| mention_of(m)).collect();
                let text = crate::follow_up_text(notice.event, &mentions);
                let sent = self
                    .call(
                        client,
                        "sendMessage",
                        &json!({
                            "chat_id": chat,
                            "text": text,
                            "parse_mode": "HTML",
                            "reply_parameters": {"message_id": id, "allow_sending_without_reply": true},
                        }),
                        None,
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: message_ref(&sent, &text_of_id(&chat)),
                })
            }
            (_, None) => Ok(Sent::Skipped {
                why: "the request was never announced here, so there is nothing to edit",
            }),
            (_, Some(announcement)) => {
                let (chat, id) = split_ref(announcement, &self.chat_id);
                let edit = self
                    .call(
                        client,
                        "editMessageText",
                        &json!({
                            "chat_id": chat,
                            "message_id": id,
                            "text": message_text(notice, &[]),
                            "parse_mode": "HTML",
                            "link_preview_options": {"is_disabled": true},
                            "reply_markup": notice_keyboard(notice),
                        }),
                        None,
                    )
                    .await;
                match edit {
                    Ok(_) => Ok(Sent::Edited),
                    // An edit that changes nothing (a repeated follow-up) is what was wanted.
                    Err(SendError::Refused { detail, .. })
                        if detail.contains("message is not modified") =>
                    {
                        Ok(Sent::Edited)
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Answers a button press at once: stops the spinner, with `text` as a notice (an alert
    /// for a refusal the person must read).
    pub async fn answer_press(
        &self,
        client: &reqwest::Client,
        query_id: &str,
        text: Option<&str>,
        alert: bool,
    ) -> Result<(), SendError> {
        let mut body = json!({"callback_query_id": query_id});
        if let Some(text) = text {
            body["text"] = json!(cut(text, MAX_NOTICE));
            body["show_alert"] = json!(alert);
        }
        self.call(client, "answerCallbackQuery", &body, None)
            .await
            .map(drop)
    }

    /// Redraws the keyboard of message `message_ref` with the `multi` options `chosen`.
    pub async fn redraw(
        &self,
        client: &reqwest::Client,
        message_ref: &str,
        record: &RequestRecord,
        answer_url: &str,
        chosen: u32,
    ) -> Result<(), SendError> {
        let (chat, id) = split_ref(message_ref, &self.chat_id);
        self.call(
            client,
            "editMessageReplyMarkup",
            &json!({"chat_id": chat, "message_id": id,
                    "reply_markup": keyboard(record, answer_url, chosen)}),
            None,
        )
        .await
        .map(drop)
    }

    /// Asks `user` to reply with the text `focus` needs, as a reply to the announcement
    /// `message_ref`, with ForceReply so their app opens the reply field.
    pub async fn ask_reply(
        &self,
        client: &reqwest::Client,
        message_ref: &str,
        record: &RequestRecord,
        focus: Focus,
        user: &str,
    ) -> Result<(), SendError> {
        let (chat, id) = split_ref(message_ref, &self.chat_id);
        let text = prompt_text(record, &text_of_id(&id), focus, user);
        self.call(
            client,
            "sendMessage",
            &json!({
                "chat_id": chat,
                "text": text,
                "parse_mode": "HTML",
                "reply_parameters": {"message_id": id, "allow_sending_without_reply": true},
                "reply_markup": {"force_reply": true, "selective": true,
                                 "input_field_placeholder": "Your answer"},
            }),
            None,
        )
        .await
        .map(drop)
    }

    /// Sends `text` (plain) to `chat`, as a reply to `reply_to` when given.
    pub async fn say(
        &self,
        client: &reqwest::Client,
        chat: &str,
        reply_to: Option<i64>,
        text: &str,
    ) -> Result<(), SendError> {
        let mut body = json!({"chat_id": number_or_text(chat), "text": cut(text, MAX_TEXT)});
        if let Some(id) = reply_to {
            body["reply_parameters"] =
                json!({"message_id": id, "allow_sending_without_reply": true});
        }
        self.call(client, "sendMessage", &body, None)
            .await
            .map(drop)
    }

    /// Long-polls for updates from `offset`, waiting up to `wait` for one to arrive.
    pub async fn updates(
        &self,
        client: &reqwest::Client,
        offset: Option<i64>,
        wait: Duration,
    ) -> Result<Vec<Value>, SendError> {
        let mut body = json!({
            "timeout": wait.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        if let Some(offset) = offset {
            body["offset"] = json!(offset);
        }
        let result = self
            .call(
                client,
                "getUpdates",
                &body,
                Some(wait + Duration::from_secs(10)),
            )
            .await?;
        match result {
            Value::Array(items) => Ok(items),
            _ => Err(SendError::Failed {
                platform: PLATFORM,
                error: "getUpdates: the result is not a list".to_owned(),
                transient: true,
            }),
        }
    }
}

/// `<chat>:<message id>` of a sent message.
fn message_ref(sent: &Value, chat: &str) -> Option<String> {
    let id = sent["message_id"].as_i64()?;
    let chat = id_of(&sent["chat"]["id"]).unwrap_or_else(|| chat.to_owned());
    Some(format!("{chat}:{id}"))
}

/// The chat and message id of a message reference (a bare id is in the configured chat), as
/// the Bot API takes them: integers where they are numbers.
fn split_ref<'a>(message_ref: &'a str, chat: &'a str) -> (Value, Value) {
    let (chat, id) = message_ref.rsplit_once(':').unwrap_or((chat, message_ref));
    (number_or_text(chat), number_or_text(id))
}

fn text_of_id(id: &Value) -> String {
    id.as_str().map_or_else(|| id.to_string(), str::to_owned)
}

fn number_or_text(text: &str) -> Value {
    text.parse::<i64>()
        .map_or_else(|_| json!(text), Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presses_round_trip_and_stay_short() {
        let all = [
            Press::Option(23),
            Press::Toggle(0x00ff_ffff),
            Press::Done(5),
            Press::Approve(Scope::Once),
            Press::Approve(Scope::Session),
            Press::Approve(Scope::Always),
            Press::Deny,
            Press::Reason,
            Press::Write,
            Press::Skip,
        ];
        for press in all {
            let data = press.encode();
            assert!(data.len() <= 64, "{data}");
            assert_eq!(Press::decode(&data), Some(press));
        }
        for junk in [
            "",
            "x",
            "o",
            "oX",
            "tz",
            "ab",
            "d1",
            "é",
            "o99999999999999999999",
        ] {
            assert_eq!(Press::decode(junk), None, "{junk}");
        }
        assert_eq!(indexes(0b101), [0, 2]);
    }

    #[test]
    fn updates_are_read_and_prompts_only_from_the_bot() {
        let press = json!({"update_id": 7, "callback_query": {
            "id": "q1", "from": {"id": 5_000_000_000_i64, "is_bot": false},
            "message": {"message_id": 42, "chat": {"id": -1001}}, "data": "ao"}});
        assert_eq!(
            read_update(&press, Some("99")),
            Ok(Update::Press {
                query_id: "q1".to_owned(),
                user: "5000000000".to_owned(),
                message_ref: "-1001:42".to_owned(),
                data: "ao".to_owned(),
            })
        );
        let reply = |from: i64, text: &str| {
            json!({"update_id": 8, "message": {
                "message_id": 50, "from": {"id": 5, "is_bot": false}, "chat": {"id": -1001},
                "text": " no thanks ",
                "reply_to_message": {"message_id": 43, "from": {"id": from, "is_bot": true},
                                     "text": text}}})
        };
        let Ok(Update::Reply {
            prompt,
            text,
            reply_to,
            ..
        }) = read_update(&reply(99, "↩ #42 deny:0\nWhy deny?"), Some("99"))
        else {
            panic!("a reply");
        };
        assert_eq!(prompt, Some(("42".to_owned(), Focus::Deny(0))));
        assert_eq!(text, "no thanks");
        assert_eq!(reply_to, "-1001:43");
        let Ok(Update::Reply { prompt, .. }) = read_update(&reply(12, "↩ #42 deny:0"), Some("99"))
        else {
            panic!("a reply");
        };
        assert_eq!(prompt, None, "another bot's message is no prompt of ours");
        assert_eq!(
            read_update(
                &json!({"message": {"message_id": 1, "from": {"id": 5}, "chat": {"id": 5},
                                    "text": "/start"}}),
                None
            ),
            Ok(Update::Start {
                user: "5".to_owned(),
                chat_id: "5".to_owned()
            })
        );
        assert!(read_update(&json!([1]), None).is_err());
        assert_eq!(
            read_update(&json!({"edited_message": {}}), None),
            Ok(Update::Ignore("an update clarify does not use"))
        );
    }

    #[test]
    fn escaping_covers_what_html_mode_reads() {
        assert_eq!(escape("<b>&</b>"), "&lt;b&gt;&amp;&lt;/b&gt;");
        assert_eq!(fit("<<<<", 3), "&lt;&lt;…");
    }
}
