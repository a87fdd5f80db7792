//! A phone call that asks, through Twilio's Voice API: clarify calls the person on call, reads
//! the request, takes a key press, confirms it, and answers.
//!
//! A call is `POST {api_url}/2010-04-01/Accounts/{AccountSid}/Calls.json` with `To`, `From`,
//! `Url` (the channel's hook with `?request=<id>`, which Twilio fetches once the call is picked
//! up), `StatusCallback` (the same with `&step=status`) and `MachineDetection=Enable`. It goes to
//! the channel's `to` numbers or, without them, to the numbers `[identities]` gives the
//! request's responders; with none, the send is skipped. The announcement, a reminder and an
//! escalation each place a call; a resolution or a vote does not (a call cannot be taken back).
//!
//! Every callback is verified by `X-Twilio-Signature` before anything is read. The signature
//! covers the full URL, query included, so the request a call is about and the step it is at
//! travel in the URL clarify gave Twilio and cannot be changed by anyone else. The steps
//! ([`inbound`], the TwiML in [`render`]): the call is answered, and `<Say>` reads the headline,
//! the question and the keys inside a one-digit `<Gather>`; the key pressed is repeated and a
//! second `<Gather>` asks for 1 to confirm; the confirmed choice is answered through the desk as
//! the person called (`phone:<To>` in `[identities]`), by the rules every path shares. An
//! answering machine, no answer, busy or a failed call answers nothing: the request waits, and
//! its reminders and escalation go on. A request that needs a passkey confirmation is read, and
//! the person is told to open the link sent by text or e-mail; no key answers it. A request a
//! keypad cannot answer (free text, several options, several questions) is read with the same
//! advice.
pub mod config;
pub mod inbound;
pub mod render;
#[cfg(test)]
mod tests;

use clarify_model::EventKind;

use crate::notice::{Notice, SendError, Sent};
use crate::platform::{Call, Desk, HookReply, Platform};
use crate::twilio::Account;

const PLATFORM: &str = "voice";

/// A voice channel: the Twilio account, the number calls come from, the fixed numbers called
/// (empty: the request's responders, through `[identities]`), and the language spoken.
#[derive(Debug, Clone)]
pub struct Voice {
    pub account: Account,
    pub from: String,
    pub to: Vec<String>,
    pub language: String,
}

impl Platform for Voice {
    type Table = config::RawVoice;
    const IDENTITY: Option<&'static str> = Some("phone");

    async fn send(&self, client: &reqwest::Client, notice: &Notice<'_>) -> Result<Sent, SendError> {
        if notice.resolves() || notice.event == EventKind::Voted {
            return Ok(Sent::Skipped {
                why: "a call cannot be taken back: only a pending request calls",
            });
        }
        let numbers = if self.to.is_empty() {
            &notice.recipients
        } else {
            &self.to
        };
        if numbers.is_empty() {
            return Ok(Sent::Skipped {
                why: "no number to call: the channel has no `to`, and [identities] maps no \
                      phone number to the request's responders",
            });
        }
        let step = inbound::Step::Ask {
            passkey: notice.open_only(),
        };
        let url = step.url(notice.hook_url, &notice.record.id);
        let status = inbound::Step::Status.url(notice.hook_url, &notice.record.id);
        let mut first = None;
        for number in numbers {
            let form = [
                ("To", number.clone()),
                ("From", self.from.clone()),
                ("Url", url.clone()),
                ("Method", "POST".to_owned()),
                ("StatusCallback", status.clone()),
                ("StatusCallbackMethod", "POST".to_owned()),
                ("MachineDetection", "Enable".to_owned()),
            ];
            let sid = self
                .account
                .create(client, PLATFORM, "Calls", &form)
                .await?;
            first.get_or_insert(sid);
        }
        Ok(Sent::Posted { message_ref: first })
    }

    async fn hook<D: Desk>(&self, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
        inbound::hook(self, desk, channel, call).await
    }

    fn unknown_person(&self, who: &str) -> Option<String> {
        Some(crate::sms::unknown_number(who))
    }
}
