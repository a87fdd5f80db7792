//! Microsoft Teams: requests posted by an Azure Bot (the Bot Framework) to one conversation as
//! Adaptive Cards 1.5 with `Action.Execute`, answered on the card.
//!
//! Outbound, clarify gets a token by the client-credentials grant at `login_url` (the app's
//! tenant's token endpoint, scope `https://api.botframework.com/.default`), keeps it until
//! shortly before it expires, and calls the Bot Connector at the conversation's `serviceUrl`:
//! `POST /v3/conversations/{id}/activities` to announce, `.../activities/{activity}` to reply
//! (reminders, escalations), `PUT .../activities/{activity}` to refresh the card for everyone.
//! A bot can only message a conversation it was added to; its reference (service URL and
//! conversation id) is configured, or captured from the `conversationUpdate` (or
//! `installationUpdate`) activity Teams sends when the bot is added ([`Inbound::Added`]). A
//! message's reference is `<activity id> <conversation id>`.
//!
//! Inbound, every activity carries a JWT the Bot Framework signs; [`Teams::verify`] checks it
//! against the keys its OpenID metadata (`openid_url`) publishes: RS256, issuer
//! `https://api.botframework.com`, audience the app id, the validity window (five minutes of
//! skew), the `serviceurl` claim equal to the activity's `serviceUrl`, and the key endorsing the
//! activity's channel. Anything else is refused before the activity is acted on. A click is an
//! `adaptiveCard/action` invoke whose response (within Teams' time limit) is the card as it now
//! is, for the clicker at once; the outbox's edit then shows it to everyone.
//!
//! Inputs live on the card itself: a `multi` question is a multi-select with Submit; Other, an
//! open answer, a deny's reason, the changes asked for, edited arguments and a form's fields are
//! `Action.ShowCard` forms opened in place. Agent text goes into `TextRun`s, which Teams never
//! reads as markdown, so nothing the agent wrote formats, links or mentions.
pub mod config;
pub mod inbound;
pub mod render;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use clarify_model::EventKind;
use serde_json::{Value, json};

use crate::jwt::{Expect, Keys, Refused};
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::notice::{Notice, SendError, Sent};
pub use inbound::{Inbound, read};
pub(crate) use render::notice_card;
pub use render::{card, card_response, private};

const PLATFORM: &str = "teams";
/// The issuer of the tokens the Bot Framework signs.
pub const ISSUER: &str = "https://api.botframework.com";
/// The scope of the token clarify asks for.
pub const SCOPE: &str = "https://api.botframework.com/.default";
/// Microsoft's OpenID metadata for the Bot Framework's tokens.
pub const OPENID_URL: &str = "https://login.botframework.com/v1/.well-known/openidconfiguration";
/// The card type of an attachment and an invoke response.
pub const CARD: &str = "application/vnd.microsoft.card.adaptive";

/// Where requests go: the Bot Connector's base URL for the conversation, and its id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Conversation {
    pub service_url: String,
    pub conversation_id: String,
}

/// A Teams channel's configuration, and what it learns while running.
#[derive(Clone)]
pub struct Teams {
    /// The bot's Microsoft App ID: the audience of the tokens it receives.
    pub app_id: String,
    /// The app's client secret.
    pub app_password: String,
    /// The Microsoft Entra tenant the (single-tenant) bot is registered in.
    pub tenant_id: String,
    /// The client-credentials token endpoint.
    pub login_url: url::Url,
    /// Where the Bot Framework's signing keys are published.
    pub keys: Keys,
    /// The conversation configured, if any; it wins over one captured.
    pub configured: Option<Conversation>,
    /// The conversation captured when the bot was added to one (or loaded from the store).
    pub captured: Arc<std::sync::Mutex<Option<Conversation>>>,
    token: Arc<crate::oauth::TokenCache>,
}

impl std::fmt::Debug for Teams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teams")
            .field("app_id", &self.app_id)
            .field("tenant_id", &self.tenant_id)
            .field("login_url", &self.login_url.as_str())
            .field("keys", &self.keys)
            .field("configured", &self.configured)
            .finish_non_exhaustive()
    }
}

/// The token endpoint of a single-tenant bot in `tenant_id`, on `login` (Microsoft's
/// `https://login.microsoftonline.com`).
pub fn token_url(login: &str, tenant_id: &str) -> String {
    format!(
        "{}/{tenant_id}/oauth2/v2.0/token",
        login.trim_end_matches('/')
    )
}

impl Platform for Teams {
    type Table = config::RawTeams;
    const IDENTITY: Option<&'static str> = Some("teams");

    /// Announces, replies to the announcement, or refreshes its card, as `notice` asks.
    async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use reqwest::Method;
        let Some(conversation) = self.conversation() else {
            return Err(SendError::Failed {
                platform: PLATFORM,
                error: "no conversation yet: add the bot to a team or chat, or configure \
                        service_url and conversation_id"
                    .to_owned(),
                transient: true,
            });
        };
        let service = conversation.service_url.as_str();
        let message = |card: Value| json!({"type": "message", "attachments": [{"contentType": CARD, "content": card}]});
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, None) => {
                let conv = &conversation.conversation_id;
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        service,
                        &format!("/v3/conversations/{}/activities", encode(conv)),
                        &message(notice_card(notice)),
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: sent["id"].as_str().map(|id| format!("{id} {conv}")),
                })
            }
            (EventKind::Reminded | EventKind::Warned | EventKind::Escalated, Some(reference)) => {
                let (activity, conv) = split_ref(reference, &conversation.conversation_id);
                let mentions: Vec<String> = notice
                    .mention
                    .iter()
                    .map(|m| format!("<at>{m}</at>"))
                    .collect();
                let entities: Vec<Value> = notice
                    .mention
                    .iter()
                    .map(|m| {
                        json!({"type": "mention", "text": format!("<at>{m}</at>"),
                                    "mentioned": {"id": m, "name": m}})
                    })
                    .collect();
                let body = json!({
                    "type": "message", "replyToId": activity,
                    "text": crate::layout::words::follow_up_words(notice.event, notice.record, &mentions),
                    "entities": entities,
                });
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        service,
                        &format!(
                            "/v3/conversations/{}/activities/{}",
                            encode(conv),
                            encode(activity)
                        ),
                        &body,
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: sent["id"].as_str().map(|id| format!("{id} {conv}")),
                })
            }
            (_, None) => Ok(Sent::Skipped {
                why: "the request was never announced here, so there is nothing to edit",
            }),
            (_, Some(reference)) => {
                let (activity, conv) = split_ref(reference, &conversation.conversation_id);
                let mut body = message(card(notice.record, notice.answer_url));
                body["id"] = json!(activity);
                self.call(
                    client,
                    Method::PUT,
                    service,
                    &format!(
                        "/v3/conversations/{}/activities/{}",
                        encode(conv),
                        encode(activity)
                    ),
                    &body,
                )
                .await?;
                Ok(Sent::Edited)
            }
        }
    }

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, desk, channel, call).await
    }

    async fn prepare<D: Desk>(&self, desk: &D, channel: &str) {
        inbound::restore(self, desk, channel).await;
    }
}

impl Teams {
    /// A channel with nothing captured yet.
    pub fn new(
        app_id: String,
        app_password: String,
        tenant_id: String,
        login_url: url::Url,
        openid_url: url::Url,
        configured: Option<Conversation>,
    ) -> Self {
        Self {
            app_id,
            app_password,
            tenant_id,
            login_url,
            keys: Keys::new(crate::jwt::KeySource::OpenId(openid_url)),
            configured,
            captured: Arc::default(),
            token: Arc::default(),
        }
    }

    /// Where requests go now: the configured conversation, or the one captured.
    pub fn conversation(&self) -> Option<Conversation> {
        self.configured
            .clone()
            .or_else(|| self.captured.lock().ok().and_then(|c| c.clone()))
    }

    /// Remembers `conversation` (captured when the bot was added to it).
    pub fn capture(&self, conversation: Conversation) {
        if let Ok(mut c) = self.captured.lock() {
            *c = Some(conversation);
        }
    }

    /// Verifies an inbound activity: the Bot Framework's JWT in `authorization`, checked
    /// against its published keys, with the activity's `serviceUrl` and channel. Returns the
    /// activity, read only once the token is good.
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
        let claims = crate::jwt::check(
            token,
            &key.key,
            &Expect {
                issuers: &[ISSUER],
                audience: &self.app_id,
            },
            now,
        )?;
        let activity: Value = serde_json::from_slice(body)
            .map_err(|_| Refused("the activity is not JSON".to_owned()))?;
        let service_url = activity["serviceUrl"].as_str().unwrap_or_default();
        let claimed = claims
            .get("serviceurl")
            .or_else(|| claims.get("serviceUrl"))
            .and_then(Value::as_str);
        if claimed != Some(service_url) || service_url.is_empty() {
            return Err(Refused(
                "the token's serviceurl does not match the activity's serviceUrl".to_owned(),
            ));
        }
        let channel = activity["channelId"].as_str().unwrap_or_default();
        match &key.endorsements {
            Some(list) if list.iter().any(|e| e == channel) => {}
            _ => {
                return Err(Refused(format!(
                    "the signing key does not endorse the channel {channel:?}"
                )));
            }
        }
        Ok(activity)
    }

    /// A connector token, from the cache or the token endpoint.
    async fn token(&self, client: &reqwest::Client) -> Result<String, SendError> {
        crate::oauth::token(&self.token, PLATFORM, || {
            Ok(client.post(self.login_url.as_str()).form(&[
                ("grant_type", "client_credentials"),
                ("client_id", &self.app_id),
                ("client_secret", &self.app_password),
                ("scope", SCOPE),
            ]))
        })
        .await
    }

    async fn call(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        service_url: &str,
        path: &str,
        body: &Value,
    ) -> Result<Value, SendError> {
        let token = self.token(client).await?;
        let url = format!("{}{path}", service_url.trim_end_matches('/'));
        let request = client.request(method, url).bearer_auth(token).json(body);
        crate::oauth::call(&self.token, PLATFORM, path, request).await
    }

}

/// A path segment, percent-encoded (conversation ids hold `:`, `;`, `@` and `=`).
fn encode(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The activity id and conversation id of a message reference. Not `text::split_ref`: a
/// conversation id holds colons, so Teams' references are split at a space, the activity first.
fn split_ref<'a>(reference: &'a str, conversation: &'a str) -> (&'a str, &'a str) {
    reference
        .split_once(' ')
        .unwrap_or((reference, conversation))
}
