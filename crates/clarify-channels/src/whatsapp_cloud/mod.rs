//! WhatsApp through Meta's Cloud API: requests sent by a business number to people's phones as
//! messages with reply buttons, answered by a tap or a typed reply.
//!
//! The Graph API is called over plain `reqwest` + `serde` at
//! `<api_url>/<api_version>/<phone_number_id>/messages` with the access token as a bearer token.
//! A message's reference is the `wamid…` id the send answers with (the first recipient's, when a
//! request goes to several numbers).
//!
//! Per request: one question of one `single` choice or one approval gets reply buttons (three at
//! most, titles of 20 characters) or, with four to ten options, a list; anything else is text
//! with the options numbered, answered by a typed reply or through the answer link. Every
//! message carries the request's short code, which a typed reply may name (`approve K7Q2X`). A
//! step-up request gets only its link. A button's id is `<request id>:<press>`, so a tap names
//! its request; the store still checks that request was announced on this channel.
//!
//! The 24-hour window: WhatsApp delivers free-form messages only to a number that wrote to the
//! business number in the last 24 hours; to others only an approved template. Each inbound
//! message's time is kept per number (through the server's `Desk`), and a number outside the
//! window, or one the API refuses with error 131047 (re-engagement), gets the configured
//! `template` with the headline and the short code as its two body parameters.
//!
//! Meta calls `POST /hooks/whatsapp-cloud/{name}`, signed with the app secret
//! (`X-Hub-Signature-256`), checked before anything is read; `GET` on it answers Meta's webhook
//! check (`hub.verify_token`, `hub.challenge`). See [`inbound`].

pub mod config;
pub mod inbound;
pub mod render;
#[cfg(test)]
mod tests;

use clarify_model::EventKind;
use serde_json::Value;

use crate::notice::{Notice, SendError, Sent};
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::text::cut;

const PLATFORM: &str = "whatsapp_cloud";

/// The Cloud API's error code for a free-form message to a number outside its 24-hour window.
pub const REENGAGEMENT: i64 = 131_047;

/// An approved message template: its name and language code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub name: String,
    pub language: String,
}

/// A WhatsApp Cloud API channel's configuration.
#[derive(Clone)]
pub struct WhatsAppCloud {
    pub access_token: String,
    /// The Meta app's secret, which signs webhook calls.
    pub app_secret: String,
    /// What Meta's webhook check must carry; `None` refuses the check.
    pub verify_token: Option<String>,
    /// The business phone number's id.
    pub phone_number_id: String,
    /// What a number outside the 24-hour window gets.
    pub template: Option<Template>,
    /// Fixed recipients (`+4930…`); empty: the request's responders' numbers.
    pub to: Vec<String>,
    /// `v21.0`.
    pub api_version: String,
    /// The Graph API's base URL (`https://graph.facebook.com`).
    pub api_url: url::Url,
}

impl std::fmt::Debug for WhatsAppCloud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhatsAppCloud")
            .field("phone_number_id", &self.phone_number_id)
            .field("template", &self.template)
            .field("to", &self.to)
            .field("api_url", &self.api_url.as_str())
            .finish_non_exhaustive()
    }
}

/// `text` as a number in international form, `+` and digits (`+49 30 1234-567` is
/// `+49301234567`); `None` if it is not one.
pub fn number(text: &str) -> Option<String> {
    let digits: String = text
        .trim()
        .strip_prefix('+')?
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '.'))
        .collect();
    ((7..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("+{digits}"))
}

/// The key under which the time of `number`'s last message to business number `phone` is kept.
pub(crate) fn window_key(phone_number_id: &str, number: &str) -> String {
    format!("whatsapp_cloud:last_inbound:{phone_number_id}:{number}")
}

/// What a send to one number came to.
enum Outcome {
    Sent(String),
    Failed(SendError),
}

/// Why the Graph API refused a message: the error, and its Cloud API code.
struct Refused {
    error: SendError,
    code: Option<i64>,
}

impl Platform for WhatsAppCloud {
    type Table = config::RawWhatsAppCloud;
    const IDENTITY: Option<&'static str> = Some("phone");

    /// Without what the channel keeps, every number is tried with the free-form message first
    /// (a template follows a 131047 refusal).
    async fn send(&self, client: &reqwest::Client, notice: &Notice<'_>) -> Result<Sent, SendError> {
        self.post_all(client, notice, |_| true).await
    }

    async fn deliver<D: Desk>(
        &self,
        desk: &D,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        let open = crate::window::open(desk, &self.recipients(notice), |n| {
            window_key(&self.phone_number_id, n)
        })
        .await;
        self.post_all(client, notice, |n| open.iter().any(|o| o == n))
            .await
    }

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, desk, channel, call).await
    }

    fn handshake(&self, channel: &str, query: &str) -> HookReply {
        inbound::handshake(self, channel, query)
    }
}

impl WhatsAppCloud {
    /// The numbers `notice` goes to: `to`, or the responders' numbers.
    fn recipients(&self, notice: &Notice<'_>) -> Vec<String> {
        let given = if self.to.is_empty() {
            &notice.recipients
        } else {
            &self.to
        };
        let mut numbers: Vec<String> = Vec::new();
        for g in given {
            match number(g) {
                Some(n) if !numbers.contains(&n) => numbers.push(n),
                Some(_) => {}
                None => {
                    tracing::warn!(number = %g, "a WhatsApp recipient is not a number in international form; left out")
                }
            }
        }
        numbers
    }

    /// Sends `notice` to each recipient: the free-form message to those `open` says are in
    /// their window (a template instead when the API says they are not), the template to the
    /// others. The first message sent is the reference.
    async fn post_all(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
        open: impl Fn(&str) -> bool,
    ) -> Result<Sent, SendError> {
        let numbers = self.recipients(notice);
        if numbers.is_empty() {
            return Ok(Sent::Skipped {
                why: "no recipient: the channel has no `to`, and [identities] gives none of the request's responders a phone: number",
            });
        }
        let news = notice.resolves();
        if !news && !matches!(notice.event, EventKind::Created | EventKind::Reminded | EventKind::Escalated) {
            return Ok(Sent::Skipped {
                why: "WhatsApp messages cannot be edited, and a vote is no news to send",
            });
        }
        let mut first: Option<String> = None;
        let mut failure: Option<SendError> = None;
        for n in &numbers {
            let outcome = if open(n) {
                match self.post(client, &render::message(notice, n)).await {
                    Ok(id) => Outcome::Sent(id),
                    Err(Refused {
                        code: Some(REENGAGEMENT),
                        ..
                    }) if !news => self.post_template(client, notice, n).await,
                    Err(r) => Outcome::Failed(r.error),
                }
            } else if news {
                // How a request ended is not worth a paid template to someone who went quiet.
                continue;
            } else {
                self.post_template(client, notice, n).await
            };
            match outcome {
                Outcome::Sent(id) => {
                    first.get_or_insert(id);
                }
                Outcome::Failed(e) => {
                    tracing::warn!(number = %n, error = %e, "a WhatsApp message did not go out");
                    failure.get_or_insert(e);
                }
            }
        }
        match (first, failure) {
            (Some(id), _) => Ok(Sent::Posted {
                message_ref: (!news).then_some(id),
            }),
            (None, Some(e)) => Err(e),
            (None, None) => Ok(Sent::Skipped {
                why: "nobody to tell: every recipient is outside WhatsApp's 24-hour window",
            }),
        }
    }

    async fn post_template(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
        n: &str,
    ) -> Outcome {
        let Some(template) = &self.template else {
            return Outcome::Failed(SendError::Failed {
                platform: PLATFORM,
                error: format!(
                    "{n} has not written to the business number in the last 24 hours, so \
                     WhatsApp takes only a template, and the channel has no `template`"
                ),
                transient: false,
            });
        };
        match self
            .post(client, &render::template(notice.record, template, n))
            .await
        {
            Ok(id) => Outcome::Sent(id),
            Err(r) => Outcome::Failed(r.error),
        }
    }

    /// Sends `text` to `to` (a reply to what they sent).
    pub async fn say(&self, client: &reqwest::Client, to: &str, text: &str) -> Result<String, SendError> {
        self.post(client, &render::text(to, text))
            .await
            .map_err(|r| r.error)
    }

    /// Posts one message; the id of the message sent.
    async fn post(&self, client: &reqwest::Client, body: &Value) -> Result<String, Refused> {
        let url = format!(
            "{}/{}/{}/messages",
            self.api_url.as_str().trim_end_matches('/'),
            self.api_version,
            self.phone_number_id
        );
        let response = client
            .post(url)
            .bearer_auth(&self.access_token)
            .json(body)
            .send()
            .await
            .map_err(|e| Refused {
                error: SendError::Unreachable {
                    platform: PLATFORM,
                    detail: if e.is_timeout() {
                        "messages: no answer in time".to_owned()
                    } else {
                        "messages: could not connect".to_owned()
                    },
                },
                code: None,
            })?;
        let status = response.status();
        let retry_after = crate::http::RetryAfter::read(response.headers());
        let text = response.text().await.unwrap_or_default();
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_success() {
            return answer["messages"][0]["id"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| Refused {
                    error: SendError::Failed {
                        platform: PLATFORM,
                        error: "messages: the answer names no message id".to_owned(),
                        transient: false,
                    },
                    code: None,
                });
        }
        let error = &answer["error"];
        let code = error["code"].as_i64();
        let message = error["message"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| cut(text.trim(), 200));
        let details = error["error_data"]["details"].as_str().unwrap_or_default();
        // Throughput and pair rate limits are answered 400 with a code of their own.
        let limited = matches!(code, Some(4 | 80_007 | 130_429 | 131_048 | 131_056));
        Err(Refused {
            error: SendError::Refused {
                platform: PLATFORM,
                status: if limited { 429 } else { status.as_u16() },
                detail: format!(
                    "messages: {message}{}{}",
                    code.map(|c| format!(" (#{c})")).unwrap_or_default(),
                    if details.is_empty() {
                        String::new()
                    } else {
                        format!(": {details}")
                    }
                ),
                retry_after,
            },
            code,
        })
    }
}
