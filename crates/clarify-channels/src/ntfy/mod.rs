//! ntfy (<https://ntfy.sh>, or a self-hosted server): a push to a topic, answered from the
//! notification.
//!
//! A message is published as JSON to the server's root URL (`{"topic", "title", "message",
//! "priority", "tags", "click", "actions"}`), with `Authorization: Bearer <token>` when the
//! channel has a token. ntfy allows three action buttons per message. A request whose one
//! question can be answered by a tap gets one `http` button per answer (Approve and Deny for an
//! approval; the options of a `single` question with at most two options), each POSTing the
//! answer as JSON to the request's signed answer link, and a `view` button opening the link; any
//! other request gets the `view` button only. A quorum request counts votes by person, which an
//! anonymous link cannot cast, so it gets the `view` button too. ntfy cannot edit a message
//! once sent, so a resolution is a follow-up push saying how the request ended.
pub mod config;
pub mod render;
#[cfg(test)]
mod tests;

use clarify_model::EventKind;
use serde_json::Value;

use crate::platform::Platform;
use crate::notice::{Notice, SendError, Sent};
use crate::text::cut;

#[derive(Clone)]
pub struct Ntfy {
    pub url: url::Url,
    pub topic: String,
    pub token: Option<String>,
}

impl std::fmt::Debug for Ntfy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ntfy")
            .field("url", &self.url.as_str())
            .field("topic", &self.topic)
            .field("token", &self.token.as_ref().map(|_| ".."))
            .finish()
    }
}

impl Platform for Ntfy {
    type Table = config::RawNtfy;
    const IDENTITY: Option<&'static str> = None;

    async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        if notice.event == EventKind::Voted {
            // A push cannot be edited, and a vote is no news to wake a phone for.
            return Ok(Sent::Skipped {
                why: "ntfy cannot edit a push; votes show in the inbox",
            });
        }
        let body = if notice.resolves() {
            self.resolved(notice)
        } else {
            self.message(notice)
        };
        let mut post = client.post(self.url.clone()).json(&body);
        if let Some(token) = &self.token {
            post = post.bearer_auth(token);
        }
        let response = post.send().await.map_err(|e| SendError::Unreachable {
            platform: "ntfy",
            detail: if e.is_timeout() {
                "no answer in time".to_owned()
            } else {
                e.to_string()
            },
        })?;
        let status = response.status();
        let retry_after = crate::http::RetryAfter::read(response.headers());
        let text = response.text().await.unwrap_or_default();
        if !status.is_success() {
            // ntfy's errors are JSON: {"code": 40101, "http": 401, "error": "unauthorized", ...}.
            let detail = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_owned))
                .unwrap_or_else(|| cut(text.trim(), 200));
            return Err(SendError::Refused {
                platform: "ntfy",
                status: status.as_u16(),
                detail,
                retry_after,
            });
        }
        let message_ref = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["id"].as_str().map(str::to_owned));
        Ok(Sent::Posted { message_ref })
    }
}

impl Ntfy {
}
