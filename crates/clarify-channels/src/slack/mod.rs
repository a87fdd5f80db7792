//! Slack: requests posted as Block Kit messages to one conversation, answered by their buttons,
//! selects and modals, or by a reply typed in the message's thread.
//!
//! The Web API is called over plain `reqwest` + `serde` (`chat.postMessage`, `chat.update`,
//! `chat.postEphemeral`, `views.open`, `apps.connections.open`) at the channel's `api_url`: the
//! handful of calls needed do not justify a client crate, and none of the Slack crates is
//! maintained to the standard of the rest of the stack. A message's reference is
//! `<channel id>:<ts>`, which is what `chat.update` and thread replies need.
//!
//! Inbound calls (see [`inbound`]) arrive at `POST /hooks/slack/{name}` signed with the signing
//! secret, or, with `socket_mode`, over the WebSocket [`socket`] keeps open, which needs no
//! public URL.

pub mod config;
pub mod inbound;
pub mod render;
pub mod socket;
#[cfg(test)]
mod tests;

use serde_json::{Value, json};

use crate::text::split_ref;
use crate::platform::{Call, Desk, HookReply, Platform};
use futures_util::future::BoxFuture;
use crate::notice::{Notice, SendError, Sent};
use crate::text::cut;

const PLATFORM: &str = "slack";

/// A Slack channel's configuration.
#[derive(Clone)]
pub struct Slack {
    /// The bot token (`xoxb-…`).
    pub bot_token: String,
    /// Verifies calls to `/hooks/slack/{name}`; `None` with Socket Mode only.
    pub signing_secret: Option<String>,
    /// The conversation id requests are posted to.
    pub channel: String,
    /// The Web API's base URL (`https://slack.com/api`).
    pub api_url: url::Url,
    pub socket_mode: bool,
    /// The app-level token (`xapp-…`) Socket Mode connects with.
    pub app_token: Option<String>,
    /// User (`U…`) or user group (`S…`) ids mentioned in every announcement.
    pub mention: Vec<String>,
}

impl std::fmt::Debug for Slack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slack")
            .field("channel", &self.channel)
            .field("api_url", &self.api_url.as_str())
            .field("socket_mode", &self.socket_mode)
            .field("mention", &self.mention)
            .finish_non_exhaustive()
    }
}

/// Slack's errors that may pass if the call is made again.
const TRANSIENT: [&str; 5] = [
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
    "ratelimited",
];

impl Platform for Slack {
    type Table = config::RawSlack;
    const IDENTITY: Option<&'static str> = Some("slack");

    /// Announces, follows up in the thread, or edits the announcement, as `notice` asks.
    async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use clarify_model::EventKind;
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, None) => {
                let mut mention = self.mention.clone();
                mention.extend(notice.mention.iter().cloned());
                let (text, blocks) = render::message(notice, &mention);
                let answer = self
                    .call(
                        client,
                        "chat.postMessage",
                        &json!({
                            "channel": self.channel,
                            "text": text,
                            "blocks": blocks,
                            "unfurl_links": false,
                            "unfurl_media": false,
                        }),
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: message_ref(&answer, &self.channel),
                })
            }
            (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, Some(announcement)) => {
                let (channel, ts) = split_ref(announcement, &self.channel);
                let text = render::thread_reply(notice, &notice.mention);
                let mut body = json!({"channel": channel, "thread_ts": ts, "text": text});
                if notice.event == EventKind::Warned
                    && let Some(blocks) = render::extend_blocks(notice, &text)
                {
                    body["blocks"] = blocks;
                }
                let answer = self.call(client, "chat.postMessage", &body).await?;
                Ok(Sent::Posted {
                    message_ref: message_ref(&answer, channel),
                })
            }
            (_, None) => Ok(Sent::Skipped {
                why: "the request was never announced here, so there is nothing to edit",
            }),
            (_, Some(announcement)) => {
                let (channel, ts) = split_ref(announcement, &self.channel);
                let (text, blocks) = render::message(notice, &[]);
                self.call(
                    client,
                    "chat.update",
                    &json!({"channel": channel, "ts": ts, "text": text, "blocks": blocks}),
                )
                .await?;
                Ok(Sent::Edited)
            }
        }
    }

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, desk, channel, call).await
    }

    /// The Socket Mode connection of a channel with `socket_mode = true`: what arrives on it is
    /// answered like a call to the hook.
    fn background<D: Desk>(&self, desk: D, channel: String) -> Option<BoxFuture<'static, ()>> {
        if !self.socket_mode {
            return None;
        }
        let client = desk.http().clone();
        let slack = self.clone();
        let run = socket::run(self.clone(), client, move |inbound| {
            let (desk, channel, slack) = (desk.clone(), channel.clone(), slack.clone());
            async move { inbound::respond(&desk, &channel, &slack, inbound).await }
        });
        Some(Box::pin(run))
    }
}

impl Slack {
    /// Calls Web API `method` with a JSON body and the bot token; returns Slack's answer when it
    /// says `"ok": true`.
    pub async fn call(
        &self,
        client: &reqwest::Client,
        method: &str,
        body: &Value,
    ) -> Result<Value, SendError> {
        self.call_with(client, method, body, &self.bot_token).await
    }

    pub(crate) async fn call_with(
        &self,
        client: &reqwest::Client,
        method: &str,
        body: &Value,
        token: &str,
    ) -> Result<Value, SendError> {
        let url = format!("{}/{method}", self.api_url.as_str().trim_end_matches('/'));
        let response = client
            .post(url)
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .map_err(|e| SendError::Unreachable {
                platform: PLATFORM,
                detail: if e.is_timeout() {
                    format!("{method}: no answer in time")
                } else {
                    format!("{method}: {e}")
                },
            })?;
        let status = response.status();
        let retry_after = crate::http::RetryAfter::read(response.headers());
        let text = response.text().await.unwrap_or_default();
        let answer: Option<Value> = serde_json::from_str(&text).ok();
        if !status.is_success() {
            let detail = answer
                .as_ref()
                .and_then(|a| a["error"].as_str().map(str::to_owned))
                .unwrap_or_else(|| cut(text.trim(), 200));
            return Err(SendError::Refused {
                platform: PLATFORM,
                status: status.as_u16(),
                detail: format!("{method}: {detail}"),
                retry_after,
            });
        }
        let Some(answer) = answer else {
            return Err(SendError::Failed {
                platform: PLATFORM,
                error: format!("{method}: the answer is not JSON"),
                transient: true,
            });
        };
        if answer["ok"] != true {
            let error = answer["error"].as_str().unwrap_or("unknown_error");
            return Err(SendError::Failed {
                platform: PLATFORM,
                error: format!("{method}: {error}"),
                transient: TRANSIENT.contains(&error),
            });
        }
        Ok(answer)
    }

    /// Opens a modal with `trigger` (valid three seconds after the click).
    pub async fn open_modal(
        &self,
        client: &reqwest::Client,
        trigger: &str,
        view: &Value,
    ) -> Result<(), SendError> {
        self.call(
            client,
            "views.open",
            &json!({"trigger_id": trigger, "view": view}),
        )
        .await
        .map(drop)
    }

    /// Tells `user` something only they see, in `channel` (and `thread_ts`).
    pub async fn tell(
        &self,
        client: &reqwest::Client,
        channel: Option<&str>,
        thread_ts: Option<&str>,
        user: &str,
        text: &str,
    ) -> Result<(), SendError> {
        let mut body = json!({
            "channel": channel.unwrap_or(&self.channel),
            "user": user,
            "text": cut(text, render::MAX_SECTION),
        });
        if let Some(ts) = thread_ts {
            body["thread_ts"] = json!(ts);
        }
        self.call(client, "chat.postEphemeral", &body)
            .await
            .map(drop)
    }
}

/// `<channel>:<ts>` of a posted message.
fn message_ref(answer: &Value, channel: &str) -> Option<String> {
    let ts = answer["ts"].as_str()?;
    let channel = answer["channel"].as_str().unwrap_or(channel);
    Some(format!("{channel}:{ts}"))
}
