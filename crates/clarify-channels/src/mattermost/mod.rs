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
pub mod config;
pub mod inbound;
pub mod render;
mod token;
#[cfg(test)]
mod tests;

use clarify_model::EventKind;
use serde_json::{Value, json};

use crate::platform::{Call, Desk, HookReply, Platform};
use crate::notice::{Notice, SendError, Sent};
use crate::text::cut;
pub use inbound::{Inbound, read};
pub use token::button_token;
pub(crate) use render::announcement;
pub use render::{
    MAX_MESSAGE, Markdown, dialog, dialog_error, escape, post, private, props, text, update,
};

const PLATFORM: &str = "mattermost";

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

impl Platform for Mattermost {
    type Table = config::RawMattermost;
    const IDENTITY: Option<&'static str> = Some("mattermost");

    /// Announces, replies to the announcement's thread, or edits the announcement, as
    /// `notice` asks.
    async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use reqwest::Method;
        let record = notice.record;
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, None) => {
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
            (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, Some(root)) => {
                let mention = self.mentions(client, &notice.mention).await;
                let body = json!({
                    "channel_id": self.channel_id,
                    "root_id": root,
                    "message": crate::layout::words::follow_up_words(notice.event, notice.record, &mention),
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

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, desk, channel, call).await
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
        let wait = crate::http::RetryAfter::read(response.headers()).or_else(|| {
            // Mattermost's rate limiter names the wait in X-Ratelimit-Reset (seconds).
            response
                .headers()
                .get("x-ratelimit-reset")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|s| crate::http::RetryAfter::For(std::time::Duration::from_secs(s)))
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

}
