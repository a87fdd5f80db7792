//! WhatsApp through Twilio's Messaging API: the SMS channel ([`crate::sms`]) with WhatsApp
//! addresses. Twilio sends a WhatsApp message when `To` and `From` are `whatsapp:+…`; the
//! sender is a WhatsApp-enabled Twilio number (or the sandbox's, to try it) or a Messaging
//! Service with one. The message, the replies at `POST /hooks/whatsapp/<name>` (verified by
//! `X-Twilio-Signature` first) and the answers are the SMS channel's; people are still named
//! `phone:+…` in `[identities]`, the `whatsapp:` prefix stripped, so one entry serves a person's
//! SMS, WhatsApp and voice channels.
//!
//! WhatsApp delivers a free-form message only within 24 hours of the person's last message to
//! the number. Each reply that reaches the channel's webhook is kept as that number's last
//! message; with `content_sid` (an approved template of Twilio's Content API), a number outside
//! its window gets the template instead, its variables `1` and `2` the request's headline and
//! short code, and a resolution is not sent to it (not worth a paid template). Without
//! `content_sid` every message is free-form, and Twilio fails one outside the window (error
//! 63016), as the handbook's page says.
pub mod config;
#[cfg(test)]
mod tests;

use crate::notice::{Notice, SendError, Sent};
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::sms::{Form, Line, Sms};

/// A WhatsApp channel through Twilio: an SMS channel's account, sender and recipients, written
/// as WhatsApp addresses when sent, and the template for numbers outside their window.
#[derive(Debug, Clone)]
pub struct WhatsApp {
    pub sms: Sms,
    /// An approved template (Twilio Content API, `HX…`) for a number outside its 24-hour
    /// window; its variables `1` and `2` are the request's headline and short code.
    pub content_sid: Option<String>,
}

impl Platform for WhatsApp {
    type Table = config::RawWhatsApp;
    const IDENTITY: Option<&'static str> = Some("phone");

    /// Without what the channel keeps, every message is free-form.
    async fn send(&self, client: &reqwest::Client, notice: &Notice<'_>) -> Result<Sent, SendError> {
        self.sms
            .send_on(Line::WhatsApp, client, notice, &|_| Form::Text)
            .await
    }

    async fn deliver<D: Desk>(
        &self,
        desk: &D,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        let Some(content_sid) = self.content_sid.as_deref() else {
            return self.send(client, notice).await;
        };
        let open =
            crate::window::open(desk, self.sms.numbers(notice), |n| self.sms.window_key(n)).await;
        let news = notice.resolves();
        let form = |number: &str| {
            if open.iter().any(|o| o == number) {
                Form::Text
            } else if news {
                Form::Skip
            } else {
                Form::Template(content_sid)
            }
        };
        self.sms.send_on(Line::WhatsApp, client, notice, &form).await
    }

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        crate::sms::inbound::hook(&self.sms, Line::WhatsApp, desk, channel, call).await
    }

    fn unknown_person(&self, who: &str) -> Option<String> {
        Some(crate::sms::unknown_number(who))
    }
}
