//! What Slack sends: signed interactivity payloads and Events API callbacks over HTTP, or the
//! same payloads in Socket Mode envelopes, read into [`Inbound`].
//!
//! Over HTTP nothing is read before [`verify`] accepted the signature: `v0=` and the hex
//! HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the app's signing secret, compared in
//! constant time, with the timestamp at most five minutes from now (Slack's rule against
//! replays).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use clarify_core::{Decision, Scope};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::answer::{Act, Focus, Input};

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
        .and_then(|hex| crate::decode_hex(hex.trim()))
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Slack's documented example: this secret, timestamp and body have this signature.
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap_or_default()
    }

    #[test]
    fn slacks_own_example_verifies() {
        let now = at(1_531_420_618 + 10);
        assert_eq!(
            verify(
                SECRET,
                Some("1531420618"),
                Some(SIGNATURE),
                BODY.as_bytes(),
                now
            ),
            Ok(())
        );
    }

    #[test]
    fn a_changed_body_a_stale_timestamp_or_no_signature_is_refused() {
        let now = at(1_531_420_618);
        let changed = BODY.replace("roadrunner", "coyote");
        assert!(
            verify(
                SECRET,
                Some("1531420618"),
                Some(SIGNATURE),
                changed.as_bytes(),
                now
            )
            .is_err()
        );
        let later = at(1_531_420_618 + MAX_SKEW_SECONDS + 1);
        assert!(
            verify(
                SECRET,
                Some("1531420618"),
                Some(SIGNATURE),
                BODY.as_bytes(),
                later
            )
            .is_err()
        );
        assert!(verify(SECRET, None, Some(SIGNATURE), BODY.as_bytes(), now).is_err());
        assert!(
            verify(
                SECRET,
                Some("1531420618"),
                Some("v0=zz"),
                BODY.as_bytes(),
                now
            )
            .is_err()
        );
        assert!(
            verify(
                "other",
                Some("1531420618"),
                Some(SIGNATURE),
                BODY.as_bytes(),
                now
            )
            .is_err()
        );
    }

    #[test]
    fn a_button_names_the_request_question_and_option() {
        let payload = json!({
            "type": "block_actions",
            "user": {"id": "U1"},
            "trigger_id": "t1",
            "channel": {"id": "C1"},
            "actions": [{"action_id": "option:2", "block_id": "clarify:req_9:0", "value": "2"}],
        });
        let Ok(Inbound::Act(i)) = read_interaction(&payload) else {
            panic!("an act");
        };
        assert_eq!(i.on, On::Request("req_9".to_owned()));
        assert_eq!(
            i.act,
            Act::Option {
                question: 0,
                index: 2
            }
        );
        assert_eq!(i.channel.as_deref(), Some("C1"));
    }

    #[test]
    fn unknown_actions_and_foreign_blocks_are_malformed() {
        for (action, block) in [
            ("explode", "clarify:req_9:0"),
            ("option:1", "someone-else"),
            ("option:x", "clarify:req_9:0"),
        ] {
            let payload = json!({
                "type": "block_actions", "user": {"id": "U1"},
                "actions": [{"action_id": action, "block_id": block}],
            });
            assert!(
                matches!(read_interaction(&payload), Err(InboundError::Malformed(_))),
                "{action} {block}"
            );
        }
        assert!(read(b"payload=%7Bnot-json").is_err());
        assert!(read(b"nothing=here").is_err());
    }

    #[test]
    fn thread_replies_answer_and_the_bots_own_messages_do_not() {
        let reply = json!({"type": "event_callback", "event": {
            "type": "message", "channel": "C1", "user": "U1", "text": "2",
            "ts": "2.0", "thread_ts": "1.0"}});
        let Ok(Inbound::Act(i)) = read_event(&reply) else {
            panic!("an act")
        };
        assert_eq!(i.on, On::Thread("C1:1.0".to_owned()));
        assert_eq!(i.act, Act::Typed("2".to_owned()));
        let mut bot = reply.clone();
        bot["event"]["bot_id"] = json!("B1");
        assert!(matches!(read_event(&bot), Ok(Inbound::Ignore(_))));
        let challenge = json!({"type": "url_verification", "challenge": "abc"});
        assert_eq!(
            read_event(&challenge),
            Ok(Inbound::Challenge("abc".to_owned()))
        );
    }
}
