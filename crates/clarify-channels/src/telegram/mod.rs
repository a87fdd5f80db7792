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
//! [`read`] reads either into an [`Inbound`].

pub mod config;
pub mod inbound;
pub mod render;
#[cfg(test)]
mod tests;

use std::time::Duration;

use clarify_model::{EventKind, RequestRecord};
use serde_json::{Value, json};

use crate::act::Focus;
use crate::platform::{Call, Desk, HookReply, Platform};
use futures_util::future::BoxFuture;
use crate::notice::{Notice, SendError, Sent};
use crate::text::cut;
use inbound::id_of;
pub use inbound::{Inbound, Press, prompt_act, read, verify};
pub(crate) use render::notice_keyboard;
pub use render::{Html, MAX_TEXT, escape, keyboard, message_text};
use render::{mention_of, prompt_text};

const PLATFORM: &str = "telegram";

/// Telegram's limit on an `answerCallbackQuery` notice.
const MAX_NOTICE: usize = 200;

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

impl Platform for Telegram {
    type Table = config::RawTelegram;
    const IDENTITY: Option<&'static str> = Some("telegram");

    /// Announces, replies to the announcement, or edits it, as `notice` asks.
    async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, None) => {
                let mut text = message_text(notice, &notice.mention);
                if notice.open_only() {
                    text = format!("{text}\n\n{}", crate::layout::words::STEP_UP_LINE);
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
            (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, Some(announcement)) => {
                let (chat, id) = split_ref(announcement, &self.chat_id);
                let mentions: Vec<String> = notice.mention.iter().map(|m| mention_of(m)).collect();
                let text = crate::layout::words::follow_up_words(notice.event, notice.record, &mentions);
                let mut body = json!({
                    "chat_id": chat,
                    "text": text,
                    "parse_mode": "HTML",
                    "reply_parameters": {"message_id": id, "allow_sending_without_reply": true},
                });
                if notice.event == EventKind::Warned
                    && let Some(keyboard) = render::extend_keyboard(notice)
                {
                    body["reply_markup"] = keyboard;
                }
                let sent = self.call(client, "sendMessage", &body, None).await?;
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

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, desk, channel, call).await
    }

    /// Polling `getUpdates`, for a channel without a webhook secret.
    fn background<D: Desk>(&self, desk: D, channel: String) -> Option<BoxFuture<'static, ()>> {
        if self.webhook_secret.is_some() {
            return None;
        }
        Some(Box::pin(inbound::poll(self.clone(), desk, channel)))
    }

    /// Telegram's button notices are short and show no links, and a link in a group would show
    /// to all: the way to the link is `/link` in the bot's private chat.
    fn unknown_person(&self, who: &str) -> Option<String> {
        Some(format!(
            "clarify does not know who you are yet ({who}): send /link to this bot in a private \
             chat to link your account. Nothing was answered."
        ))
    }
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
        let header_wait = crate::http::RetryAfter::read(response.headers());
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
            .map(|s| crate::http::RetryAfter::For(Duration::from_secs(s)));
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
/// the Bot API takes them: integers where they are numbers. Not `text::split_ref`: a chat may
/// be `@username`, and the Bot API wants numbers as numbers.
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
