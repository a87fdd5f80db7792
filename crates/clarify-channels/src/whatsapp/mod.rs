//! WhatsApp through Twilio's Messaging API: the SMS channel ([`crate::sms`]) with WhatsApp
//! addresses. Twilio sends a WhatsApp message when `To` and `From` are `whatsapp:+…`; the
//! sender is a WhatsApp-enabled Twilio number (or the sandbox's, to try it) or a Messaging
//! Service with one. The message, the replies at `POST /hooks/whatsapp/<name>` (verified by
//! `X-Twilio-Signature` first) and the answers are the SMS channel's; people are still named
//! `phone:+…` in `[identities]`, the `whatsapp:` prefix stripped, so one entry serves a person's
//! SMS, WhatsApp and voice channels.
//!
//! WhatsApp delivers a free-form message only within 24 hours of the person's last message to
//! the number; outside that window Twilio refuses it (error 63016) and the handbook's page says
//! how to keep the window open or use the Cloud API channel's templates instead.
pub mod config;
#[cfg(test)]
mod tests;

use crate::notice::{Notice, SendError, Sent};
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::sms::{Line, Sms};

/// A WhatsApp channel through Twilio: an SMS channel's account, sender and recipients, written
/// as WhatsApp addresses when sent.
#[derive(Debug, Clone)]
pub struct WhatsApp(pub Sms);

impl Platform for WhatsApp {
    type Table = config::RawWhatsApp;
    const IDENTITY: Option<&'static str> = Some("phone");

    async fn send(&self, client: &reqwest::Client, notice: &Notice<'_>) -> Result<Sent, SendError> {
        self.0.send_on(Line::WhatsApp, client, notice).await
    }

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        crate::sms::inbound::hook(&self.0, Line::WhatsApp, desk, channel, call).await
    }

    fn unknown_person(&self, who: &str) -> Option<String> {
        Some(crate::sms::unknown_number(who))
    }
}
