//! What Discord sends to `POST /hooks/discord/{name}`: interactions, signed with Ed25519 over
//! the timestamp and the raw body, checked by [`verify`] before [`read`] looks at them; `hook`
//! acts on them through the server's [`Desk`](crate::platform::Desk) and answers in the response.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::Discord;
use super::render::{acknowledge, modal, private, update};
use crate::act::{Act, Control, Focus, Input, control};
use crate::inbound::{InboundError, malformed};
use crate::platform::{Call, Desk, Done, HookReply, Target};

/// How far a call's timestamp may be from now. Discord names no window; five minutes, as
/// Slack's, keeps a captured call from being replayed later.
const MAX_SKEW_SECONDS: i64 = 300;

/// Checks Discord's Ed25519 signature (`X-Signature-Ed25519`, hex) over `X-Signature-Timestamp`
/// and the raw `body`, against `public_key` (hex), at `now`.
pub fn verify(
    public_key: &str,
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), InboundError> {
    check(public_key, signature, timestamp, body, now).map_err(InboundError::Unauthorized)
}

fn check(
    public_key: &str,
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), &'static str> {
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};
    let (Some(signature), Some(timestamp)) = (signature, timestamp) else {
        return Err("X-Signature-Ed25519 and X-Signature-Timestamp are required");
    };
    let at: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| "X-Signature-Timestamp is not a number")?;
    if (now.timestamp() - at).abs() > MAX_SKEW_SECONDS {
        return Err("the call's timestamp is more than five minutes from now");
    }
    let key: [u8; 32] = crate::text::decode_hex(public_key)
        .and_then(|k| k.try_into().ok())
        .ok_or("the configured public key is not 32 bytes of hex")?;
    let key =
        VerifyingKey::from_bytes(&key).map_err(|_| "the configured public key is not a key")?;
    let signature: [u8; 64] = crate::text::decode_hex(signature.trim())
        .and_then(|s| s.try_into().ok())
        .ok_or("X-Signature-Ed25519 is not 64 bytes of hex")?;
    let mut message = timestamp.as_bytes().to_vec();
    message.extend_from_slice(body);
    key.verify(&message, &Signature::from_bytes(&signature))
        .map_err(|_| "the signature does not match")
}

/// What an interaction asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// Discord checks the endpoint: answer PONG.
    Ping,
    /// `user` used a control of message `message_ref`.
    Use {
        user: String,
        message_ref: String,
        /// The message's id alone, for a modal's `custom_id`.
        message_id: String,
        control: Control,
    },
    /// Something clarify does not act on, and why (told to the user).
    Ignore(&'static str),
}

/// Reads an interaction (already verified, and read as JSON).
pub fn read(body: &Value) -> Result<Inbound, InboundError> {
    let kind = body["type"]
        .as_u64()
        .ok_or_else(|| malformed("an interaction must have a numeric type"))?;
    if kind == 1 {
        return Ok(Inbound::Ping);
    }
    if kind != 3 && kind != 5 {
        return Ok(Inbound::Ignore(
            "clarify answers only its own buttons and forms",
        ));
    }
    let user = text_of(&body["member"]["user"]["id"])
        .or_else(|| text_of(&body["user"]["id"]))
        .ok_or_else(|| malformed("an interaction without member.user.id or user.id"))?;
    let data = &body["data"];
    let custom_id = data["custom_id"]
        .as_str()
        .ok_or_else(|| malformed("an interaction without data.custom_id"))?;
    let channel = text_of(&body["channel_id"])
        .or_else(|| text_of(&body["message"]["channel_id"]))
        .ok_or_else(|| malformed("an interaction without channel_id"))?;
    let (message_id, control) = if kind == 3 {
        let message_id = text_of(&body["message"]["id"])
            .ok_or_else(|| malformed("a component without its message"))?;
        let values: Vec<String> = data["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        (message_id, control(custom_id, &values))
    } else {
        // A modal names its focus and the message it was opened from: `deny:0@<message id>`.
        let Some((focus, message_id)) = custom_id.split_once('@') else {
            return Ok(Inbound::Use {
                user,
                message_ref: String::new(),
                message_id: String::new(),
                control: Control::Unknown(custom_id.to_owned()),
            });
        };
        let Some(focus) = Focus::decode(focus) else {
            return Ok(Inbound::Use {
                user,
                message_ref: String::new(),
                message_id: String::new(),
                control: Control::Unknown(custom_id.to_owned()),
            });
        };
        let mut inputs = BTreeMap::new();
        collect_inputs(&data["components"], &mut inputs);
        (
            message_id.to_owned(),
            Control::Act(Act::Submit { focus, inputs }),
        )
    };
    Ok(Inbound::Use {
        user,
        message_ref: format!("{channel}:{message_id}"),
        message_id,
        control,
    })
}

/// Every text input's value in a submitted modal, wherever it sits (in action rows, or in the
/// newer label components).
fn collect_inputs(v: &Value, into: &mut BTreeMap<String, Input>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| collect_inputs(i, into)),
        Value::Object(map) => {
            if let (Some(Value::String(id)), Some(Value::String(value))) =
                (map.get("custom_id"), map.get("value"))
            {
                into.insert(id.clone(), Input::Text(value.clone()));
            }
            for key in ["components", "component"] {
                if let Some(inner) = map.get(key) {
                    collect_inputs(inner, into);
                }
            }
        }
        _ => {}
    }
}

pub(super) fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Answers a call to `/hooks/discord/{channel}`, the application's interactions endpoint:
/// verified (Ed25519 over the timestamp and the raw body) before it is read, then answered in
/// the response, within Discord's three seconds: a PONG, the clicked message updated to show
/// the request as it now is, a modal, or a note only the clicker sees.
pub(crate) async fn hook<D: Desk>(
    discord: &Discord,
    desk: &D,
    channel: &str,
    call: Call<'_>,
) -> HookReply {
    if let Err(e) = verify(
        &discord.public_key,
        call.header("x-signature-ed25519"),
        call.header("x-signature-timestamp"),
        call.body,
        desk.now(),
    ) {
        tracing::warn!(%channel, error = %e, "refused an unverified Discord call");
        return HookReply::refused(e);
    }
    match crate::inbound::json(call.body).and_then(|v| read(&v)) {
        Ok(interaction) => HookReply::Json(respond(desk, channel, interaction).await),
        Err(e) => {
            tracing::warn!(%channel, error = %e, "refused a Discord interaction clarify cannot read");
            HookReply::refused(e)
        }
    }
}

/// The interaction response for `interaction`.
async fn respond<D: Desk>(desk: &D, channel: &str, interaction: Inbound) -> Value {
    let (user, message_ref, message_id, control) = match interaction {
        Inbound::Ping => return json!({"type": 1}),
        Inbound::Ignore(why) => return private(&format!("Nothing was done: {why}.")),
        Inbound::Use {
            user,
            message_ref,
            message_id,
            control,
        } => (user, message_ref, message_id, control),
    };
    let target = Target::Message(message_ref);
    match control {
        Control::Unknown(id) => {
            tracing::warn!(%channel, custom_id = %id, "a Discord control clarify did not make");
            private("clarify does not know this control; nothing was answered.")
        }
        Control::Form(focus) => {
            // Only someone who may answer gets the form.
            match desk.act(channel, &user, target, Act::Nothing).await {
                Ok(Done::Nothing(record)) => modal(&record, focus, &message_id)
                    .unwrap_or_else(|| private("This form is not available for this request.")),
                Ok(_) => acknowledge(),
                Err(refusal) => private(&refusal.message),
            }
        }
        Control::Act(act) => match desk.act(channel, &user, target, act).await {
            Ok(Done::Resolved(record)) => update(&record, &desk.answer_url(&record.id)),
            Ok(Done::Nothing(_) | Done::Open { .. }) => acknowledge(),
            Err(refusal) => private(&refusal.message),
        },
    }
}
