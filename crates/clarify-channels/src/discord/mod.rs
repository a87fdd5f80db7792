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
pub mod config;
pub mod inbound;
pub mod render;
#[cfg(test)]
mod tests;

use clarify_model::EventKind;
use serde_json::{Value, json};

pub use crate::act::Control;
use crate::text::split_ref;
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::notice::{Notice, SendError, Sent};
use crate::text::cut;
use inbound::text_of;
pub use inbound::{Inbound, read, verify};
pub(crate) use render::announcement;
pub use render::{
    MAX_CONTENT, Markdown, acknowledge, escape, message, modal, private, update,
};

const PLATFORM: &str = "discord";

const USER_AGENT: &str = concat!(
    "DiscordBot (https://github.com/clarify-hitl/clarify, ",
    env!("CARGO_PKG_VERSION"),
    ")"
);

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

impl Platform for Discord {
    type Table = config::RawDiscord;
    const IDENTITY: Option<&'static str> = Some("discord");

    /// Announces, replies to the announcement, or edits it, as `notice` asks.
    async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use reqwest::Method;
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, None) => {
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
            (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, Some(announcement)) => {
                let (channel, id) = split_ref(announcement, &self.channel_id);
                let mentions: Vec<String> =
                    notice.mention.iter().map(|m| format!("<@{m}>")).collect();
                let text = crate::layout::words::follow_up_words(notice.event, notice.record, &mentions);
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

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, desk, channel, call).await
    }
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
        let header_wait = crate::http::RetryAfter::read(response.headers());
        let text = response.text().await.unwrap_or_default();
        let answer: Option<Value> = serde_json::from_str(&text).ok();
        if status.is_success() {
            return Ok(answer.unwrap_or_default());
        }
        // A 429's body names the wait in (fractional) seconds: {"retry_after": 0.75}.
        let body_wait = answer
            .as_ref()
            .and_then(|a| a["retry_after"].as_f64())
            .and_then(crate::http::RetryAfter::seconds);
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

}

/// `<channel>:<message id>` of a posted message.
fn message_ref(sent: &Value, channel: &str) -> Option<String> {
    let id = text_of(&sent["id"])?;
    let channel = text_of(&sent["channel_id"]).unwrap_or_else(|| channel.to_owned());
    Some(format!("{channel}:{id}"))
}
