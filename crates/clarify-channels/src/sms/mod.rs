//! SMS through Twilio's Messaging API: a text message to the person on call, answered by
//! replying to it.
//!
//! A message is `POST {api_url}/2010-04-01/Accounts/{AccountSid}/Messages.json` with `To`,
//! `From` (or `MessagingServiceSid`) and `Body`, form-encoded, with the account SID and auth
//! token as basic auth (see [`crate::twilio`]). It goes to the channel's `to` numbers or, without
//! them, to the numbers `[identities]` gives the request's responders (`"phone:+4930…" =
//! "alice"`); with none, the send is skipped. The announcement names the request's short code
//! and numbers its options ([`render::body`]); a reminder or an escalation is the same message
//! again with a first line saying so (a text message cannot be edited or threaded), and the
//! resolution a short line saying how the request ended. A request that needs a passkey
//! confirmation gets only its link.
//!
//! Replies come to `POST /hooks/sms/<name>` (the number's "A message comes in" webhook),
//! verified by `X-Twilio-Signature` before anything is read, and are answered as typed replies
//! ([`crate::texting`]); clarify answers with TwiML saying what happened ([`inbound`]).
//! WhatsApp through Twilio ([`crate::whatsapp`]) is this module with `whatsapp:` addresses.
pub mod config;
pub mod inbound;
pub mod render;
#[cfg(test)]
mod tests;

use clarify_model::EventKind;

use crate::notice::{Notice, SendError, Sent};
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::twilio::Account;

/// An SMS channel: the Twilio account, the sender, and the fixed recipients (empty: the
/// request's responders, through `[identities]`).
#[derive(Debug, Clone)]
pub struct Sms {
    pub account: Account,
    pub from: Sender,
    pub to: Vec<String>,
}

/// Who sends a channel's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sender {
    /// A Twilio number (E.164), as `From`.
    Number(String),
    /// A Messaging Service's SID, as `MessagingServiceSid`: it picks the number.
    Service(String),
}

/// The two ways a number is texted through Twilio's Messaging API, which differ only in how an
/// address is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    Sms,
    WhatsApp,
}

impl Line {
    pub(crate) fn platform(self) -> &'static str {
        match self {
            Self::Sms => "sms",
            Self::WhatsApp => "whatsapp",
        }
    }

    /// The number `number` (E.164) as Twilio addresses it on this line.
    pub(crate) fn address(self, number: &str) -> String {
        match self {
            Self::Sms => number.to_owned(),
            Self::WhatsApp => format!("whatsapp:{number}"),
        }
    }

    /// The number (E.164) a Twilio address on this line names; `None` for another line's.
    pub(crate) fn number(self, address: &str) -> Option<String> {
        let number = match self {
            Self::Sms => address.strip_prefix("whatsapp:").map_or(Some(address), |_| None),
            Self::WhatsApp => address.strip_prefix("whatsapp:"),
        }?;
        let number = number.trim();
        (!number.is_empty()).then(|| number.to_owned())
    }
}

impl Platform for Sms {
    type Table = config::RawSms;
    const IDENTITY: Option<&'static str> = Some("phone");

    async fn send(&self, client: &reqwest::Client, notice: &Notice<'_>) -> Result<Sent, SendError> {
        self.send_on(Line::Sms, client, notice, &|_| Form::Text).await
    }

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, Line::Sms, desk, channel, call).await
    }

    fn unknown_person(&self, who: &str) -> Option<String> {
        Some(unknown_number(who))
    }
}

/// What a number `[identities]` does not map is told.
pub(crate) fn unknown_number(who: &str) -> String {
    format!(
        "clarify does not know this number. Ask an admin to map \"{who}\" to your name under \
         [identities]. Nothing was answered."
    )
}

/// How a message goes to one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form<'a> {
    /// The message's text (`Body`).
    Text,
    /// An approved WhatsApp template (`ContentSid`), with the request's headline and short code
    /// as its variables `1` and `2`: what WhatsApp delivers outside a number's 24-hour window.
    Template(&'a str),
    /// Nothing: not worth sending to this number.
    Skip,
}

impl Sms {
    /// The numbers `notice` goes to: the channel's `to`, or the responders' numbers.
    pub(crate) fn numbers<'a>(&'a self, notice: &'a Notice<'_>) -> &'a [String] {
        if self.to.is_empty() {
            &notice.recipients
        } else {
            &self.to
        }
    }

    /// The key under which the time of `number`'s last WhatsApp message to this channel's
    /// sender (its number or Messaging Service) is kept: WhatsApp takes free-form messages to
    /// the number for 24 hours after it ([`crate::whatsapp`]).
    pub(crate) fn window_key(&self, number: &str) -> String {
        let sender = match &self.from {
            Sender::Number(n) | Sender::Service(n) => n,
        };
        format!("whatsapp:last_inbound:{sender}:{number}")
    }

    /// Texts `notice` on `line` to each recipient, in the form `form` gives each number: the
    /// reference is the first message's SID.
    pub(crate) async fn send_on<'f>(
        &self,
        line: Line,
        client: &reqwest::Client,
        notice: &Notice<'_>,
        form: &(dyn Fn(&str) -> Form<'f> + Sync),
    ) -> Result<Sent, SendError> {
        if notice.event == EventKind::Voted {
            return Ok(Sent::Skipped {
                why: "a vote is not texted; the resolution is",
            });
        }
        let numbers = self.numbers(notice);
        if numbers.is_empty() {
            return Ok(Sent::Skipped {
                why: "no number to text: the channel has no `to`, and [identities] maps no \
                      phone number to the request's responders",
            });
        }
        let body = render::body(notice);
        let mut first = None;
        for number in numbers {
            let mut params = vec![("To", line.address(number))];
            match form(number) {
                Form::Text => params.push(("Body", body.clone())),
                Form::Template(content_sid) => {
                    let variables = serde_json::json!({
                        "1": crate::whatsapp_cloud::render::parameter(
                            &crate::layout::words::headline(notice.record)
                        ),
                        "2": clarify_model::short_code(&notice.record.id),
                    });
                    params.push(("ContentSid", content_sid.to_owned()));
                    params.push(("ContentVariables", variables.to_string()));
                }
                Form::Skip => continue,
            }
            match &self.from {
                Sender::Number(n) => params.push(("From", line.address(n))),
                Sender::Service(sid) => params.push(("MessagingServiceSid", sid.clone())),
            }
            let sid = self
                .account
                .create(client, line.platform(), "Messages", &params)
                .await?;
            first.get_or_insert(sid);
        }
        if first.is_none() {
            return Ok(Sent::Skipped {
                why: "nobody to tell: every recipient is outside WhatsApp's 24-hour window",
            });
        }
        Ok(Sent::Posted { message_ref: first })
    }
}
