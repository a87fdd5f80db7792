//! What Meta sends to `/hooks/whatsapp-cloud/{name}`: the webhook check (`GET` with
//! `hub.mode=subscribe`, `hub.verify_token` and `hub.challenge`, answered with the challenge),
//! and `POST`ed notifications signed with the app secret (`X-Hub-Signature-256: sha256=<hex
//! HMAC-SHA256 of the raw body>`), checked before anything is read. Of a notification's
//! `entry[].changes[].value.messages[]`, clarify reads a tapped reply button or list row (whose
//! id names the request), a template's quick-reply button, and text: a reply to one of its
//! messages (`context.id`) answers that request, other text is read like a text message (a
//! short code, or the newest request waiting for the person). Delivery statuses are ignored.
//! Every message keeps its sender's 24-hour window open, and the person is told what came of it.

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::WhatsAppCloud;
use crate::act::Act;
use crate::inbound::{InboundError, malformed};
use crate::layout::words::{outcome_text, vote_note};
use crate::platform::{Call, Desk, Done, HookReply, Target};

/// What a message asks of clarify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// `from` (`+4930…`) tapped a reply button or list row with this id.
    Tap { from: String, id: String },
    /// `from` typed `text`, or tapped a template's quick reply reading `text`; `context` is the
    /// message it replies to, if any.
    Text {
        from: String,
        text: String,
        context: Option<String>,
    },
    /// A message clarify does not read (an image, a reaction), from `from`, and why.
    Ignore { from: Option<String>, why: &'static str },
}

impl Inbound {
    /// Who sent it.
    pub fn from(&self) -> Option<&str> {
        match self {
            Self::Tap { from, .. } | Self::Text { from, .. } => Some(from),
            Self::Ignore { from, .. } => from.as_deref(),
        }
    }
}

/// Checks `X-Hub-Signature-256` (`sha256=<hex>`) against `body` signed with `app_secret`, in
/// constant time.
pub fn verify(app_secret: &str, header: Option<&str>, body: &[u8]) -> Result<(), InboundError> {
    let header = header.ok_or(InboundError::Unauthorized(
        "X-Hub-Signature-256 is required",
    ))?;
    let digest = header
        .trim()
        .strip_prefix("sha256=")
        .and_then(crate::text::decode_hex)
        .ok_or(InboundError::Unauthorized(
            "X-Hub-Signature-256 is not sha256=<hex>",
        ))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(app_secret.as_bytes())
        .map_err(|_| InboundError::Unauthorized("the app secret is unusable"))?;
    mac.update(body);
    mac.verify_slice(&digest)
        .map_err(|_| InboundError::Unauthorized("X-Hub-Signature-256 does not match the body"))
}

/// The messages of a verified notification, in order; statuses and other fields are left out.
pub fn read(notification: &Value) -> Result<Vec<Inbound>, InboundError> {
    if !notification.is_object() {
        return Err(malformed("a notification must be a JSON object"));
    }
    let entries = notification["entry"]
        .as_array()
        .ok_or_else(|| malformed("a notification without entry[]"))?;
    let mut found = Vec::new();
    for change in entries
        .iter()
        .flat_map(|e| e["changes"].as_array().into_iter().flatten())
    {
        for m in change["value"]["messages"].as_array().into_iter().flatten() {
            found.push(message(m)?);
        }
    }
    Ok(found)
}

fn message(m: &Value) -> Result<Inbound, InboundError> {
    let from = m["from"]
        .as_str()
        .and_then(|f| super::number(&format!("+{}", f.trim_start_matches('+'))))
        .ok_or_else(|| malformed("a message without a sender's number (from)"))?;
    let context = m["context"]["id"].as_str().map(str::to_owned);
    let text_of = |v: &Value| v.as_str().map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
    Ok(match m["type"].as_str().unwrap_or_default() {
        "interactive" => {
            let i = &m["interactive"];
            let reply = match i["type"].as_str() {
                Some("button_reply") => &i["button_reply"],
                Some("list_reply") => &i["list_reply"],
                _ => {
                    return Ok(Inbound::Ignore {
                        from: Some(from),
                        why: "an interactive reply clarify did not ask for",
                    });
                }
            };
            match text_of(&reply["id"]) {
                Some(id) => Inbound::Tap { from, id },
                None => return Err(malformed("a button reply without an id")),
            }
        }
        "button" => {
            // A template's quick reply: its payload, if clarify wrote one, else its text.
            let b = &m["button"];
            match text_of(&b["payload"]).filter(|p| super::render::read_button(p).is_some()) {
                Some(id) => Inbound::Tap { from, id },
                None => match text_of(&b["text"]) {
                    Some(text) => Inbound::Text {
                        from,
                        text,
                        context,
                    },
                    None => Inbound::Ignore {
                        from: Some(from),
                        why: "a quick reply without text",
                    },
                },
            }
        }
        "text" => match text_of(&m["text"]["body"]) {
            Some(text) => Inbound::Text {
                from,
                text,
                context,
            },
            None => Inbound::Ignore {
                from: Some(from),
                why: "an empty text",
            },
        },
        _ => Inbound::Ignore {
            from: Some(from),
            why: "a message that is not text or a button",
        },
    })
}

/// Answers Meta's webhook check: the challenge when `hub.mode` is `subscribe` and
/// `hub.verify_token` is the channel's (compared in constant time), `401` otherwise.
pub(crate) fn handshake(w: &WhatsAppCloud, channel: &str, query: &str) -> HookReply {
    use subtle::ConstantTimeEq;
    let Some(expected) = w.verify_token.as_deref() else {
        return HookReply::NotFound(
            "this WhatsApp channel has no verify_token, so it answers no webhook check".to_owned(),
        );
    };
    let mut mode = None;
    let mut token = None;
    let mut challenge = None;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "hub.mode" => mode = Some(v.into_owned()),
            "hub.verify_token" => token = Some(v.into_owned()),
            "hub.challenge" => challenge = Some(v.into_owned()),
            _ => {}
        }
    }
    let same = token.as_deref().is_some_and(|t| {
        t.len() == expected.len() && bool::from(t.as_bytes().ct_eq(expected.as_bytes()))
    });
    if !same {
        tracing::warn!(%channel, "refused a WhatsApp webhook check with a wrong verify token");
        return HookReply::Unauthorized("hub.verify_token does not match".to_owned());
    }
    match (mode.as_deref(), challenge) {
        (Some("subscribe"), Some(challenge)) => HookReply::Text(challenge),
        _ => HookReply::Malformed(
            "a webhook check needs hub.mode=subscribe and hub.challenge".to_owned(),
        ),
    }
}

/// Answers a notification: verified before anything is read (`401` otherwise, nothing
/// changed), then each message acted on and its sender told what came of it.
pub(crate) async fn hook<D: Desk>(
    w: &WhatsAppCloud,
    desk: &D,
    channel: &str,
    call: Call<'_>,
) -> HookReply {
    if let Err(e) = verify(&w.app_secret, call.header("x-hub-signature-256"), call.body) {
        tracing::warn!(%channel, error = %e, "refused an unverified WhatsApp call");
        return HookReply::refused(e);
    }
    let messages = match crate::inbound::json(call.body).and_then(|v| read(&v)) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(%channel, error = %e, "refused a WhatsApp notification clarify cannot read");
            return HookReply::refused(e);
        }
    };
    for m in messages {
        if let Some(from) = m.from() {
            crate::window::wrote(desk, channel, &super::window_key(&w.phone_number_id, from)).await;
        }
        handle(w, desk, channel, m).await;
    }
    HookReply::Ok
}

/// Acts on one message and tells its sender what came of it.
async fn handle<D: Desk>(w: &WhatsAppCloud, desk: &D, channel: &str, m: Inbound) {
    let (from, done) = match m {
        Inbound::Ignore { why, .. } => {
            tracing::debug!(%channel, why, "ignored a WhatsApp message");
            return;
        }
        Inbound::Tap { from, id } => {
            let Some((request, press)) = super::render::read_button(&id) else {
                tracing::debug!(%channel, "ignored a tap on a button clarify did not write");
                return;
            };
            let Some(act) = press.act() else {
                return;
            };
            let done = desk
                .act(channel, &from, Target::Request(request), act)
                .await;
            (from, done)
        }
        Inbound::Text {
            from,
            text,
            context,
        } => {
            let answered = match context {
                Some(id) => match desk.find(channel, Target::Message(id)).await {
                    Ok(record) => Some(
                        desk.act(
                            channel,
                            &from,
                            Target::Request(record.id),
                            Act::Typed(text.clone()),
                        )
                        .await,
                    ),
                    // A reply to a message clarify did not record (another recipient's copy):
                    // read like any text.
                    Err(_) => None,
                },
                None => None,
            };
            let done = match answered {
                Some(done) => done,
                None => crate::texting::answer_text(desk, channel, &from, &text).await,
            };
            (from, done)
        }
    };
    let reply = match done {
        Ok(Done::Resolved(record)) => {
            vote_note(&record).unwrap_or_else(|| format!("Done. {}.", outcome_text(&record)))
        }
        Ok(Done::Nothing(_)) => return,
        Ok(Done::Open { record, .. }) => {
            format!("Answer it here: {}", desk.answer_url(&record.id))
        }
        Err(refusal) => refusal.message,
    };
    if let Err(e) = w.say(desk.http(), &from, &reply).await {
        tracing::warn!(%channel, error = %e, "telling a WhatsApp user what came of their message failed");
    }
}
