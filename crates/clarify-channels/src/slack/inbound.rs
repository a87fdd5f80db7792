//! What Slack sends: signed interactivity payloads and Events API callbacks over HTTP, or the
//! same payloads in Socket Mode envelopes, read into [`Inbound`].
//!
//! Over HTTP nothing is read before [`verify`] accepted the signature: `v0=` and the hex
//! HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the app's signing secret, compared in
//! constant time, with the timestamp at most five minutes from now (Slack's rule against
//! replays).
//!
//! Then `hook` (a call over HTTP) and `respond` (a payload from either way in) act through the
//! server's [`Desk`](crate::platform::Desk) and say what to acknowledge with.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use clarify_core::{Decision, Scope};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::Slack;
use super::render::modal;
use crate::act::{Act, Focus, Input, input_id};
use crate::layout::words::vote_note;
use crate::platform::{Call, Desk, Done, HookReply, Target};
use crate::text::cut;

/// How far a request's timestamp may be from now.
pub const MAX_SKEW_SECONDS: i64 = 5 * 60;

pub use crate::inbound::InboundError;
use crate::inbound::malformed;

/// Checks Slack's signature of `body` (headers `X-Slack-Request-Timestamp` and
/// `X-Slack-Signature`) at `now`.
pub fn verify(
    signing_secret: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), InboundError> {
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return Err(InboundError::Unauthorized(
            "X-Slack-Request-Timestamp and X-Slack-Signature are required",
        ));
    };
    let at: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| InboundError::Unauthorized("X-Slack-Request-Timestamp is not a number"))?;
    if (now.timestamp() - at).abs() > MAX_SKEW_SECONDS {
        return Err(InboundError::Unauthorized(
            "the request timestamp is more than five minutes from now",
        ));
    }
    let digest = signature
        .strip_prefix("v0=")
        .and_then(|hex| crate::text::decode_hex(hex.trim()))
        .ok_or(InboundError::Unauthorized("the signature is not v0=<hex>"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(signing_secret.as_bytes())
        .map_err(|_| InboundError::Unauthorized("the signing secret is unusable"))?;
    mac.update(b"v0:");
    mac.update(timestamp.trim().as_bytes());
    mac.update(b":");
    mac.update(body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&digest)
        .map_err(|_| InboundError::Unauthorized("the signature does not match"))
}

/// What a verified call asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// Slack checks the Events API URL: answer with this challenge.
    Challenge(String),
    /// A person acted on a request.
    Act(Interaction),
    /// Nothing to do: the bot's own message, an event of no interest, a link followed.
    Ignore(&'static str),
}

/// A person acting on a request from Slack.
#[derive(Debug, Clone, PartialEq)]
pub struct Interaction {
    /// The Slack user id (`U012ABCDEF`).
    pub user: String,
    pub on: On,
    pub act: Act,
    /// The conversation to answer the person privately in, and the thread.
    pub channel: Option<String>,
    pub thread_ts: Option<String>,
    /// The act is a modal's submission: a refusal is shown in the modal, not as a message.
    pub in_modal: bool,
}

/// Which request an interaction is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum On {
    /// Named by the message's block id or the modal's metadata.
    Request(String),
    /// A reply in the thread of this message (`<channel>:<ts>`, the announcement's reference).
    Thread(String),
}

/// Reads an HTTP body: a form-encoded interactivity payload, or an Events API JSON callback.
pub fn read(body: &[u8]) -> Result<Inbound, InboundError> {
    let text = std::str::from_utf8(body).map_err(|_| malformed("the body is not UTF-8"))?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        let json: Value = serde_json::from_str(trimmed)
            .map_err(|e| malformed(format!("the body is not JSON: {e}")))?;
        return read_event(&json);
    }
    let payload = url::form_urlencoded::parse(text.as_bytes())
        .find(|(k, _)| k == "payload")
        .map(|(_, v)| v.into_owned())
        .ok_or_else(|| malformed("the body has no `payload` field"))?;
    let json: Value = serde_json::from_str(&payload)
        .map_err(|e| malformed(format!("the payload is not JSON: {e}")))?;
    read_interaction(&json)
}

/// Reads an Events API body (`url_verification`, or an `event_callback` with a message).
pub fn read_event(body: &Value) -> Result<Inbound, InboundError> {
    match body["type"].as_str() {
        Some("url_verification") => Ok(Inbound::Challenge(
            body["challenge"]
                .as_str()
                .ok_or_else(|| malformed("url_verification without a challenge"))?
                .to_owned(),
        )),
        Some("event_callback") => {
            let event = &body["event"];
            if event["type"] != "message" {
                return Ok(Inbound::Ignore("not a message event"));
            }
            if event.get("bot_id").is_some_and(|b| !b.is_null()) || event.get("subtype").is_some() {
                // The bot's own posts, edits, joins: only people's plain messages answer.
                return Ok(Inbound::Ignore("not a person's message"));
            }
            let (Some(thread_ts), Some(ts)) = (event["thread_ts"].as_str(), event["ts"].as_str())
            else {
                return Ok(Inbound::Ignore("not a reply in a thread"));
            };
            if thread_ts == ts {
                return Ok(Inbound::Ignore("a thread's parent, not a reply"));
            }
            let channel = text_field(event, "channel")?;
            Ok(Inbound::Act(Interaction {
                user: text_field(event, "user")?,
                on: On::Thread(format!("{channel}:{thread_ts}")),
                act: Act::Typed(event["text"].as_str().unwrap_or_default().to_owned()),
                channel: Some(channel),
                thread_ts: Some(thread_ts.to_owned()),
                in_modal: false,
            }))
        }
        Some(_) => Ok(Inbound::Ignore("an event type clarify does not use")),
        None => Err(malformed("the event has no type")),
    }
}

fn text_field(v: &Value, key: &str) -> Result<String, InboundError> {
    v[key]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| malformed(format!("`{key}` is missing")))
}

/// Reads an interactivity payload: `block_actions` or `view_submission`.
pub fn read_interaction(payload: &Value) -> Result<Inbound, InboundError> {
    let user = payload["user"]["id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| malformed("the payload names no user"))?
        .to_owned();
    match payload["type"].as_str() {
        Some("block_actions") => block_action(payload, user),
        Some("view_submission") => {
            let view = &payload["view"];
            let (request, focus) = view["private_metadata"]
                .as_str()
                .and_then(super::render::read_metadata)
                .ok_or_else(|| malformed("the view is not one of clarify's"))?;
            Ok(Inbound::Act(Interaction {
                user,
                on: On::Request(request),
                act: Act::Submit {
                    focus,
                    inputs: inputs(&view["state"]["values"]),
                },
                channel: None,
                thread_ts: None,
                in_modal: true,
            }))
        }
        Some("view_closed")
        | Some("block_suggestion")
        | Some("message_action")
        | Some("shortcut") => Ok(Inbound::Ignore("an interaction clarify does not use")),
        Some(other) => Err(malformed(format!("unknown interaction type {other:?}"))),
        None => Err(malformed("the payload has no type")),
    }
}

fn block_action(payload: &Value, user: String) -> Result<Inbound, InboundError> {
    let action = payload["actions"]
        .get(0)
        .ok_or_else(|| malformed("block_actions without an action"))?;
    let action_id = action["action_id"].as_str().unwrap_or_default();
    let block_id = action["block_id"].as_str().unwrap_or_default();
    // `clarify:<request id>:<question index or "request">`.
    let mut parts = block_id.splitn(3, ':');
    let (Some("clarify"), Some(request), Some(place)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed(format!(
            "the block {block_id:?} is not one of clarify's"
        )));
    };
    let question: usize = if place == "request" {
        0
    } else {
        place
            .parse()
            .map_err(|_| malformed(format!("the block {block_id:?} names no question")))?
    };
    let trigger = || {
        payload["trigger_id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| malformed("the action has no trigger_id to open a form with"))
    };
    let index = |v: Option<&str>| -> Result<usize, InboundError> {
        v.and_then(|v| v.parse().ok())
            .ok_or_else(|| malformed(format!("the action {action_id:?} carries no option")))
    };
    let act = match action_id {
        "view" => Act::Nothing,
        "link_account" => Act::LinkAccount,
        // A checkbox toggled: the choice is read when Submit is clicked.
        "checks" => Act::Nothing,
        "skip" => Act::Skip,
        "select" => Act::Option {
            question,
            index: index(action["selected_option"]["value"].as_str())?,
        },
        "submit" => {
            let chosen = &payload["state"]["values"][block_id]["checks"]["selected_options"];
            let indexes = chosen
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|o| index(o["value"].as_str()))
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()?
                .unwrap_or_default();
            Act::Options { question, indexes }
        }
        "deny" => Act::Decide {
            question,
            decision: Decision::Deny,
            scope: Scope::Once,
        },
        "form_request" => Act::Open {
            focus: Focus::Request,
            trigger: trigger()?,
        },
        "form_other" => open(Focus::Other(question), trigger()?),
        "form_open" => open(Focus::Open(question), trigger()?),
        "form_deny" => open(Focus::Deny(question), trigger()?),
        "form_revise" => open(Focus::Revise(question), trigger()?),
        "form_edit" => open(Focus::Edit(question), trigger()?),
        "form_form" => open(Focus::Form(question), trigger()?),
        other => {
            if let Some(i) = other.strip_prefix("option:") {
                Act::Option {
                    question,
                    index: index(Some(i))?,
                }
            } else if let Some(seconds) = other.strip_prefix("extend:") {
                match seconds.parse::<u64>() {
                    Ok(seconds) if seconds > 0 => Act::Extend { seconds },
                    _ => return Err(malformed(format!("unknown action {other:?}"))),
                }
            } else if let Some(scope) = other.strip_prefix("approve:") {
                Act::Decide {
                    question,
                    decision: Decision::Approve,
                    scope: Scope::parse(scope)
                        .ok_or_else(|| malformed(format!("unknown scope {scope:?}")))?,
                }
            } else {
                return Err(malformed(format!("unknown action {other:?}")));
            }
        }
    };
    Ok(Inbound::Act(Interaction {
        user,
        on: On::Request(request.to_owned()),
        act,
        channel: payload["channel"]["id"]
            .as_str()
            .or_else(|| payload["container"]["channel_id"].as_str())
            .map(str::to_owned),
        thread_ts: None,
        in_modal: false,
    }))
}

fn open(focus: Focus, trigger: String) -> Act {
    Act::Open { focus, trigger }
}

/// A view's `state.values` as inputs by block id (each input's action id is `v`).
fn inputs(values: &Value) -> BTreeMap<String, Input> {
    let Some(blocks) = values.as_object() else {
        return BTreeMap::new();
    };
    blocks
        .iter()
        .filter_map(|(block, actions)| {
            let v = &actions["v"];
            let input = match v["type"].as_str()? {
                "plain_text_input" => {
                    Input::Text(v["value"].as_str().unwrap_or_default().to_owned())
                }
                "static_select" | "radio_buttons" => {
                    Input::One(v["selected_option"]["value"].as_str().map(str::to_owned))
                }
                "checkboxes" | "multi_static_select" => Input::Many(
                    v["selected_options"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|o| o["value"].as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                _ => return None,
            };
            Some((block.clone(), input))
        })
        .collect()
}


/// Answers a call to `/hooks/slack/{channel}` (interactivity payloads and Events API
/// callbacks): the signature verified before anything else is read (`401` otherwise, nothing
/// changed). A channel in Socket Mode has no signing secret and takes no calls.
pub(crate) async fn hook<D: Desk>(
    slack: &Slack,
    desk: &D,
    channel: &str,
    call: Call<'_>,
) -> HookReply {
    let Some(secret) = slack.signing_secret.as_deref() else {
        return HookReply::NotFound(
            "this Slack channel is answered over Socket Mode; it has no signing secret".to_owned(),
        );
    };
    if let Err(e) = verify(
        secret,
        call.header("x-slack-request-timestamp"),
        call.header("x-slack-signature"),
        call.body,
        desk.now(),
    ) {
        tracing::warn!(%channel, error = %e, "refused an unverified Slack call");
        return HookReply::refused(e);
    }
    let inbound = read(call.body);
    if let Err(InboundError::Malformed(e)) = &inbound {
        tracing::warn!(%channel, error = %e, "refused a Slack call clarify cannot read");
        return HookReply::Malformed(e.clone());
    }
    match respond(desk, channel, slack, inbound).await {
        Some(payload) => HookReply::Json(payload),
        None => HookReply::Ok,
    }
}

/// Acts on what Slack sent; the acknowledgement's payload, if it needs one. Slack wants the
/// acknowledgement within three seconds: resolving a request is one store write, and opening a
/// modal or telling a person something privately are Web API calls made after it, in a task of
/// their own.
pub(crate) async fn respond<D: Desk>(
    desk: &D,
    channel: &str,
    slack: &Slack,
    inbound: Result<Inbound, InboundError>,
) -> Option<Value> {
    let interaction = match inbound {
        Ok(Inbound::Act(i)) => i,
        Ok(Inbound::Challenge(challenge)) => return Some(json!({"challenge": challenge})),
        Ok(Inbound::Ignore(_)) => return None,
        Err(e) => {
            tracing::warn!(%channel, error = %e, "ignored a Slack payload clarify cannot read");
            return None;
        }
    };
    let target = match interaction.on {
        On::Request(id) => Target::Request(id),
        On::Thread(message_ref) => Target::Message(message_ref),
    };
    let focus = match &interaction.act {
        Act::Submit { focus, .. } => Some(*focus),
        _ => None,
    };
    let extending = matches!(interaction.act, Act::Extend { .. });
    let done = desk
        .act(channel, &interaction.user, target, interaction.act)
        .await;
    let client = desk.http().clone();
    let for_modal = slack.clone();
    let slack = slack.clone();
    let user = interaction.user;
    let (place, thread) = (interaction.channel, interaction.thread_ts);
    let tell = move |text: String| {
        tokio::spawn(async move {
            if let Err(e) = slack
                .tell(&client, place.as_deref(), thread.as_deref(), &user, &text)
                .await
            {
                tracing::warn!(error = %e, "telling a Slack user failed");
            }
        });
    };
    match done {
        Ok(Done::Resolved(record)) if extending => {
            tell(crate::layout::words::extended_note(&record));
            None
        }
        Ok(Done::Resolved(record)) => {
            if let Some(note) = vote_note(&record) {
                tell(note);
            }
            None
        }
        Ok(Done::Open {
            record,
            focus,
            trigger,
        }) => {
            let Some(view) = modal(&record, focus) else {
                tell("This form is not available for this request any more.".to_owned());
                return None;
            };
            let client = desk.http().clone();
            tokio::spawn(async move {
                if let Err(e) = for_modal.open_modal(&client, &trigger, &view).await {
                    tracing::warn!(error = %e, "opening a Slack modal failed");
                }
            });
            None
        }
        Ok(Done::Nothing(_)) => None,
        Err(refusal) => match focus {
            Some(_) => {
                // In a modal the refusal shows beside the input it concerns (or the first).
                let input = refusal.input.unwrap_or_else(|| input_id(0, None));
                Some(json!({
                    "response_action": "errors",
                    "errors": {input: cut(&refusal.message, 2_000)},
                }))
            }
            None => {
                tell(refusal.message);
                None
            }
        },
    }
}
