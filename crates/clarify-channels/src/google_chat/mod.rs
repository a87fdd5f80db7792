//! Google Chat: requests posted by a Chat app to one space as cards v2, answered on the card.
//!
//! Outbound, clarify signs a JWT assertion with the service account's key and trades it at
//! `token_url` for a token with the `chat.bot` scope (kept until shortly before it expires),
//! then calls the Chat API at `api_url`: `POST /{space}/messages` to announce, the same with the
//! announcement's thread to remind or escalate, `PATCH /{message}?updateMask=text,cards_v2` to
//! show the outcome. A message's reference is `<message name> <thread name>`.
//!
//! Inbound, Google signs each call with a bearer token for the Chat system account
//! (`chat@system.gserviceaccount.com`) whose audience is the project number;
//! [`GoogleChat::verify`] checks it against Google's published certificates (`certs_url`) before
//! the event is read. Both event formats are read: the classic interaction event (`type:
//! CARD_CLICKED`, `common.parameters`, `common.formInputs`) and the Workspace add-on event
//! (`chat.buttonClickedPayload`, `commonEventObject`). A click is answered in the HTTP response
//! with the message updated to show the request as it now is, or a private message only the
//! clicker sees.
//!
//! Inputs live on the card: a `multi` question's checkboxes, a long `single` question's
//! dropdown, the text of an open answer or Other, a deny's reason or the changes asked for,
//! edited arguments and a form's fields, each sent with the button that submits them. Agent text
//! is escaped for the card's small HTML subset, so nothing it holds formats or links.
pub mod config;
pub mod inbound;
pub mod render;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use clarify_model::EventKind;
use serde_json::{Value, json};

use crate::jwt::{Expect, KeySource, Keys, Refused};
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::notice::{Notice, SendError, Sent};
pub use inbound::{Inbound, read};
pub use render::Format;
pub(crate) use render::notice_message;
pub use render::{message, private, update};

const PLATFORM: &str = "google_chat";
/// Who signs Google Chat's calls to an app whose audience is its project number.
pub const ISSUER: &str = "chat@system.gserviceaccount.com";
pub const API_URL: &str = "https://chat.googleapis.com/v1";
pub const TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
pub const CERTS_URL: &str =
    "https://www.googleapis.com/service_accounts/v1/metadata/x509/chat@system.gserviceaccount.com";
/// The scope of a Chat app calling as itself.
pub const SCOPE: &str = "https://www.googleapis.com/auth/chat.bot";

/// A service account's key, as in its JSON key file.
#[derive(Clone)]
pub struct ServiceAccount {
    pub client_email: String,
    /// The PEM private key.
    pub private_key: String,
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .finish_non_exhaustive()
    }
}

impl ServiceAccount {
    /// Reads a service account key file (`type: service_account`).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("is not JSON: {e}"))?;
        let field = |k: &str| {
            v[k].as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("has no {k}; use the JSON key file of a service account"))
        };
        let account = Self {
            client_email: field("client_email")?,
            private_key: field("private_key")?,
        };
        jsonwebtoken::EncodingKey::from_rsa_pem(account.private_key.as_bytes())
            .map_err(|e| format!("has a private_key that is not an RSA key: {e}"))?;
        Ok(account)
    }
}

/// A Google Chat channel's configuration.
#[derive(Clone)]
pub struct GoogleChat {
    pub account: ServiceAccount,
    /// The space requests are posted to: `spaces/AAAA...`.
    pub space: String,
    /// The project number: the audience of Google's tokens.
    pub audience: String,
    pub api_url: url::Url,
    pub token_url: url::Url,
    pub keys: Keys,
    token: Arc<crate::oauth::TokenCache>,
}

impl std::fmt::Debug for GoogleChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleChat")
            .field("client_email", &self.account.client_email)
            .field("space", &self.space)
            .field("audience", &self.audience)
            .field("api_url", &self.api_url.as_str())
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl Platform for GoogleChat {
    type Table = config::RawGoogleChat;
    const IDENTITY: Option<&'static str> = Some("google_chat");

    /// Announces, replies in the announcement's thread, or updates it, as `notice` asks.
    async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use reqwest::Method;
        let reference = |sent: &Value| {
            let name = sent["name"].as_str()?;
            let thread = sent["thread"]["name"].as_str().unwrap_or_default();
            Some(format!("{name} {thread}").trim().to_owned())
        };
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, None) => {
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        &format!("{}/messages", self.space),
                        &notice_message(notice),
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: reference(&sent),
                })
            }
            (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, Some(announcement)) => {
                let thread = announcement
                    .split_once(' ')
                    .map(|(_, t)| t)
                    .unwrap_or_default();
                let mentions: Vec<String> = notice
                    .mention
                    .iter()
                    .filter(|m| m.starts_with("users/"))
                    .map(|m| format!("<{m}>"))
                    .collect();
                let mut body = json!({"text": crate::layout::words::follow_up_words(notice.event, notice.record, &mentions)});
                if !thread.is_empty() {
                    body["thread"] = json!({"name": thread});
                }
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        &format!(
                            "{}/messages?messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD",
                            self.space
                        ),
                        &body,
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: reference(&sent),
                })
            }
            (_, None) => Ok(Sent::Skipped {
                why: "the request was never announced here, so there is nothing to edit",
            }),
            (_, Some(announcement)) => {
                let name = announcement.split(' ').next().unwrap_or(announcement);
                self.call(
                    client,
                    Method::PATCH,
                    &format!("{name}?updateMask=text,cards_v2"),
                    &notice_message(notice),
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

impl GoogleChat {
    pub fn new(
        account: ServiceAccount,
        space: String,
        audience: String,
        api_url: url::Url,
        token_url: url::Url,
        certs_url: url::Url,
    ) -> Self {
        Self {
            account,
            space,
            audience,
            api_url,
            token_url,
            keys: Keys::new(KeySource::Certificates(certs_url)),
            token: Arc::default(),
        }
    }

    /// Verifies an inbound call's bearer token (Google's, for the Chat system account, with
    /// the project number as audience), then reads its body.
    pub async fn verify(
        &self,
        client: &reqwest::Client,
        authorization: Option<&str>,
        body: &[u8],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Value, Refused> {
        let token = crate::jwt::bearer(authorization)?;
        let kid = crate::jwt::key_id(token)?;
        let key = self.keys.get(client, &kid).await?;
        crate::jwt::check(
            token,
            &key.key,
            &Expect {
                issuers: &[ISSUER],
                audience: &self.audience,
            },
            now,
        )?;
        serde_json::from_slice(body).map_err(|_| Refused("the event is not JSON".to_owned()))
    }

    /// A Chat API token for the app, from the cache or by a signed assertion.
    async fn token(&self, client: &reqwest::Client) -> Result<String, SendError> {
        crate::oauth::token(&self.token, PLATFORM, || {
            let now = chrono::Utc::now().timestamp();
            let claims = json!({"iss": self.account.client_email, "scope": SCOPE,
                                "aud": self.token_url.as_str(), "iat": now, "exp": now + 3_600});
            let key = jsonwebtoken::EncodingKey::from_rsa_pem(self.account.private_key.as_bytes())
                .map_err(|e| SendError::Failed {
                    platform: PLATFORM,
                    error: format!("the service account's key cannot sign: {e}"),
                    transient: false,
                })?;
            let assertion = jsonwebtoken::encode(
                &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
                &claims,
                &key,
            )
            .map_err(|e| SendError::Failed {
                platform: PLATFORM,
                error: format!("the token assertion could not be signed: {e}"),
                transient: false,
            })?;
            Ok(client.post(self.token_url.as_str()).form(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", &assertion),
            ]))
        })
        .await
    }

    async fn call(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, SendError> {
        let token = self.token(client).await?;
        let url = format!("{}/{path}", self.api_url.as_str().trim_end_matches('/'));
        let request = client.request(method, url).bearer_auth(token).json(body);
        crate::oauth::call(&self.token, PLATFORM, path, request).await
    }

}
