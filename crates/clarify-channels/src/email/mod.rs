//! E-mail: a message over SMTP, answered through signed links.
//!
//! The announcement is a `multipart/alternative` message (plain text and HTML; everything the
//! agent wrote is escaped in the HTML) with the headline as its Subject. It carries the
//! question(s), the context, the options (the recommended one marked), an approval's action
//! and arguments, who asked, the expiry, and links: for one `single` question, one link per
//! option; for one approval, one per offered Approve scope and Deny; always the request's
//! answer link. A choice's link is the answer link with `?answer=<the answer body as URL-safe
//! base64>`: opening it only shows a confirmation page, and only that page's POST answers, so a
//! mail scanner that follows every link answers nothing. A quorum request counts votes by
//! person, which an anonymous link cannot cast, so it gets the answer link only, as do other
//! kinds and requests of several questions. Where the request names people (its responders, a
//! configured group's members), the message also lists a personal link for each
//! ([`Notice::personal`]): it answers, or votes, as that person.
//!
//! Recipients: the channel's `to`; without one, the addresses `[identities]` gives the
//! request's responders (see [`Notice::recipients`]). With none, the send is skipped.
//!
//! Threading: the announcement's `Message-ID` is its message reference; a reminder, an
//! escalation, a vote and the resolution are replies to it (`In-Reply-To`, `References`,
//! `Re: ` Subject). A sent mail cannot be edited, so a resolution is a reply saying how the
//! request ended.
//!
//! Replies: with a `mailgun_signing_key`, a reply to an announcement answers it, posted by
//! Mailgun's inbound routing to `/hooks/email/{name}` (see [`inbound`]).
//!
//! Transport (lettre's, on tokio): `smtps://` is implicit TLS (rustls, the Web PKI roots);
//! `smtp://` is plain SMTP, meant for a relay on the same host or network, unless the URL asks
//! for STARTTLS with `?tls=required` (refused when the server does not offer it) or
//! `?tls=opportunistic`. Credentials come from the URL's `user:password`, or the `password`
//! key (with the URL's user, or else the `from` address). SMTP's transient failures (`4xx`,
//! no connection) are retried; permanent ones (`5xx`) are not.
pub mod config;
pub mod inbound;
pub mod render;
#[cfg(test)]
mod tests;

use std::time::Duration;

use clarify_model::EventKind;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::layout::words::headline;
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::notice::{Notice, SendError, Sent};
use crate::text::cut;
pub use render::{Choice, bodies, choices, escape_html};

const PLATFORM: &str = "email";

/// An e-mail channel: the SMTP server, its password if not in the URL, the sender, and the
/// fixed recipients (empty: the request's responders, through `[identities]`).
#[derive(Clone)]
pub struct Email {
    pub smtp_url: url::Url,
    pub password: Option<String>,
    pub from: String,
    pub to: Vec<String>,
    /// Mailgun's webhook signing key: with it, replies posted to `/hooks/email/{name}` answer.
    pub mailgun_signing_key: Option<String>,
}

impl std::fmt::Debug for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = self.smtp_url.clone();
        if shown.password().is_some() {
            let _ = shown.set_password(Some(".."));
        }
        f.debug_struct("Email")
            .field("smtp_url", &shown.as_str())
            .field("password", &self.password.as_ref().map(|_| ".."))
            .field("from", &self.from)
            .field("to", &self.to)
            .field("replies", &self.mailgun_signing_key.is_some())
            .finish()
    }
}

#[derive(Debug)]
pub struct Composed {
    pub message: Message,
    pub message_id: String,
}

impl Platform for Email {
    type Table = config::RawEmail;
    const IDENTITY: Option<&'static str> = Some("email");

    async fn send(&self, _client: &reqwest::Client, notice: &Notice<'_>) -> Result<Sent, SendError> {
        let Some(composed) = self.compose(notice)? else {
            return Ok(Sent::Skipped {
                why: "no recipient: the channel has no `to`, and [identities] gives none of the request's responders an email: address",
            });
        };
        let transport = self.transport()?;
        transport.send(composed.message).await.map_err(smtp_error)?;
        Ok(Sent::Posted {
            message_ref: Some(composed.message_id),
        })
    }

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, desk, channel, call).await
    }
}

impl Email {

    /// The recipients of `notice`: `to`, or else the responders' addresses.
    fn recipients<'a>(&'a self, notice: &'a Notice<'_>) -> &'a [String] {
        if self.to.is_empty() {
            &notice.recipients
        } else {
            &self.to
        }
    }

    /// The message for `notice`, or `None` when it has no recipient.
    pub fn compose(&self, notice: &Notice<'_>) -> Result<Option<Composed>, SendError> {
        let from: Mailbox = self.from.parse().map_err(|e| SendError::Failed {
            platform: PLATFORM,
            error: format!("the from address {:?} cannot be used: {e}", self.from),
            transient: false,
        })?;
        let to: Vec<Mailbox> = self
            .recipients(notice)
            .iter()
            .filter_map(|a| match a.parse::<Mailbox>() {
                Ok(m) => Some(m),
                Err(e) => {
                    tracing::warn!(address = %a, error = %e, "an e-mail recipient is not an address; left out");
                    None
                }
            })
            .collect();
        if to.is_empty() {
            return Ok(None);
        }
        let message_id = format!(
            "<{}.{:016x}@{}>",
            notice.record.id,
            rand::random::<u64>(),
            from.email.domain()
        );
        let follow_up = notice.event != EventKind::Created;
        let headline = cut(&headline(notice.record), 200);
        let subject = if follow_up {
            format!("Re: {headline}")
        } else {
            headline
        };
        let mut builder = Message::builder()
            .from(from)
            .subject(subject)
            .message_id(Some(message_id.clone()))
            .date_now();
        for m in to {
            builder = builder.to(m);
        }
        if let Some(announcement) = notice.announcement.filter(|_| follow_up) {
            builder = builder
                .in_reply_to(announcement.to_owned())
                .references(announcement.to_owned());
        }
        let (text, html) = bodies(notice);
        let message = builder
            .multipart(MultiPart::alternative_plain_html(text, html))
            .map_err(|e| SendError::Failed {
                platform: PLATFORM,
                error: format!("the message could not be built: {e}"),
                transient: false,
            })?;
        Ok(Some(Composed {
            message,
            message_id,
        }))
    }

    fn transport(&self) -> Result<AsyncSmtpTransport<Tokio1Executor>, SendError> {
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(self.smtp_url.as_str())
            .map_err(|e| SendError::Failed {
                platform: PLATFORM,
                error: format!("smtp_url cannot be used: {e}"),
                transient: false,
            })?;
        if let Some(password) = &self.password {
            let user = percent_decode(self.smtp_url.username());
            let user = if user.is_empty() {
                self.from
                    .parse::<Mailbox>()
                    .map(|m| m.email.to_string())
                    .unwrap_or_default()
            } else {
                user
            };
            builder = builder.credentials(Credentials::new(user, password.clone()));
        }
        Ok(builder.timeout(Some(Duration::from_secs(30))).build())
    }
}

fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("u={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// An SMTP failure as a [`SendError`]: a reply code is `Failed`, transient for `4xx`; no
/// connection is `Unreachable`; a TLS or client-side failure will not pass by itself.
fn smtp_error(e: lettre::transport::smtp::Error) -> SendError {
    if let Some(code) = e.status() {
        let code = u16::from(code);
        return SendError::Failed {
            platform: PLATFORM,
            error: format!("the SMTP server answered {code}: {e}"),
            transient: (400..500).contains(&code),
        };
    }
    if e.is_tls() || e.is_client() {
        return SendError::Failed {
            platform: PLATFORM,
            error: e.to_string(),
            transient: false,
        };
    }
    SendError::Unreachable {
        platform: PLATFORM,
        detail: if e.is_timeout() {
            "no answer in time".to_owned()
        } else {
            e.to_string()
        },
    }
}
