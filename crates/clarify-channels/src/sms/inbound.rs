//! What Twilio sends to `POST /hooks/sms/<name>` (and `/hooks/whatsapp/<name>`) when a person
//! replies: a form of the message's parameters (`From`, `To`, `Body`, `MessageSid`, …), signed.
//! The signature is checked first ([`crate::twilio::verified`]); the reply is then answered as
//! typed text ([`crate::texting::answer_text`]: by the short code it names, or the newest
//! pending request the person may answer) and clarify replies with TwiML saying what happened.

use super::{Line, Sms};
use crate::layout::words::{outcome_text, vote_note};
use crate::platform::{Call, Desk, Done, HookReply};
use crate::twilio::{self, message_reply, param, required};

/// Answers a reply texted on `line` to channel `channel`.
pub(crate) async fn hook<D: Desk>(
    sms: &Sms,
    line: Line,
    desk: &D,
    channel: &str,
    call: Call<'_>,
) -> HookReply {
    let params = match twilio::verified(&sms.account.auth_token, &desk.hook_url(channel), &call) {
        Ok(params) => params,
        Err(e) => return HookReply::refused(e),
    };
    let from = match required(&params, "From") {
        Ok(from) => from,
        Err(e) => return HookReply::refused(e),
    };
    let Some(number) = line.number(from) else {
        return HookReply::Malformed(format!(
            "{from:?} is not a {} address",
            line.platform()
        ));
    };
    if line == Line::WhatsApp {
        // The person wrote: WhatsApp takes free-form messages to them for 24 hours.
        crate::window::wrote(desk, channel, &sms.window_key(&number)).await;
    }
    let text = param(&params, "Body").unwrap_or("").trim();
    if text.is_empty() {
        return HookReply::Xml(message_reply(
            "Reply with text: 1 or 2, an option's name, or approve/deny and the request's code.",
        ));
    }
    let said = match crate::texting::answer_text(desk, channel, &number, text).await {
        Ok(Done::Resolved(record)) => vote_note(&record).unwrap_or_else(|| {
            format!(
                "[{}] {}.",
                clarify_model::short_code(&record.id),
                outcome_text(&record)
            )
        }),
        Ok(Done::Nothing(_) | Done::Open { .. }) => "Nothing was answered.".to_owned(),
        Err(refusal) => refusal.message,
    };
    HookReply::Xml(message_reply(&said))
}
