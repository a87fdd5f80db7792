//! What Teams sends to `POST /hooks/teams/{name}` once [`Teams::verify`](super::Teams::verify)
//! accepted its token: the bot added to a conversation, a card's `Action.Execute`, a refresh;
//! `hook` verifies, reads and acts on them through the server's
//! [`Desk`](crate::platform::Desk), and `restore` loads the conversation kept in the store.

use std::collections::BTreeMap;

use serde_json::Value;

use super::render::{card, card_response, private};
use super::{Conversation, Teams};
use crate::act::{Act, Control, Focus, Input, control, input_id};
use crate::inbound::{InboundError, malformed};
use crate::platform::{Call, Desk, Done, HookReply, Target};

/// What a verified activity asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// The bot was added to a conversation: where to post from now on.
    Added(Conversation),
    /// `user` (an Entra object id) used a control of request `request`'s card.
    Execute {
        user: String,
        request: String,
        act: Act,
    },
    /// Teams asks for the card as it is now (the card's `refresh` action).
    Refresh { user: String, request: String },
    /// A control clarify did not make.
    Unknown(String),
    /// An activity clarify does not act on.
    Ignore,
}

/// Reads a verified activity.
pub fn read(activity: &Value) -> Result<Inbound, InboundError> {
    let kind = activity["type"].as_str().unwrap_or_default();
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let bot = text(&activity["recipient"]["id"]);
    let added = match kind {
        "conversationUpdate" => activity["membersAdded"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| text(&m["id"]) == bot)),
        "installationUpdate" => activity["action"] == "add",
        _ => false,
    };
    if added {
        let (Some(service_url), Some(conversation_id)) = (
            text(&activity["serviceUrl"]),
            text(&activity["conversation"]["id"]),
        ) else {
            return Err(malformed(
                "an activity without serviceUrl or conversation.id",
            ));
        };
        return Ok(Inbound::Added(Conversation {
            service_url,
            conversation_id,
        }));
    }
    if kind != "invoke" || activity["name"] != "adaptiveCard/action" {
        return Ok(Inbound::Ignore);
    }
    let user = text(&activity["from"]["aadObjectId"]).ok_or_else(|| {
        malformed("an invoke without from.aadObjectId (a guest or anonymous user)")
    })?;
    let action = &activity["value"]["action"];
    let verb = action["verb"].as_str().unwrap_or_default();
    let data = &action["data"];
    let Some(request) = text(&data["request"]) else {
        return Ok(Inbound::Unknown(verb.to_owned()));
    };
    if verb == "refresh" {
        return Ok(Inbound::Refresh { user, request });
    }
    // A submitted form: `form:<focus>`, its inputs merged into `data` by their ids.
    if let Some(focus) = verb.strip_prefix("form:") {
        let Some(focus) = Focus::decode(focus) else {
            return Ok(Inbound::Unknown(verb.to_owned()));
        };
        let mut inputs = BTreeMap::new();
        if let Some(map) = data.as_object() {
            for (id, value) in map.iter().filter(|(id, _)| id.starts_with('q')) {
                let value = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                inputs.insert(id.clone(), Input::Text(value));
            }
        }
        return Ok(Inbound::Execute {
            user,
            request,
            act: Act::Submit { focus, inputs },
        });
    }
    let chosen: Vec<String> = data[input_id(0, None)]
        .as_str()
        .map(|v| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    match control(verb, &chosen) {
        Control::Act(act) => Ok(Inbound::Execute { user, request, act }),
        Control::Form(_) | Control::Unknown(_) => Ok(Inbound::Unknown(verb.to_owned())),
    }
}

/// The name under which the store keeps channel `channel`'s captured conversation.
fn kept_as(channel: &str) -> String {
    format!("teams:{channel}:conversation")
}

/// Answers a call to `/hooks/teams/{channel}`, the bot's messaging endpoint: every activity's
/// Bot Framework JWT verified against Microsoft's published keys (issuer, audience, validity,
/// `serviceurl`, endorsement) before it is acted on (`401` otherwise, nothing changed). A card's
/// `Action.Execute` arrives as an `adaptiveCard/action` invoke, answered in the response (one
/// store write, well within Teams' time limit) with the card as it now is, or a message only
/// the clicker sees. The activity Teams sends when the bot is added to a conversation is where
/// requests go from then on: it is kept in the store, so every instance and every restart posts
/// there.
pub(crate) async fn hook<D: Desk>(
    teams: &Teams,
    desk: &D,
    channel: &str,
    call: Call<'_>,
) -> HookReply {
    let authorization = call.header("authorization");
    let activity = match teams
        .verify(desk.http(), authorization, call.body, desk.now())
        .await
    {
        Ok(activity) => activity,
        Err(e) => {
            tracing::warn!(%channel, error = %e, "refused an unverified Teams activity");
            return HookReply::Unauthorized(e.to_string());
        }
    };
    let inbound = match read(&activity) {
        Ok(inbound) => inbound,
        Err(e) => {
            tracing::warn!(%channel, error = %e, "refused a Teams activity clarify cannot read");
            return HookReply::refused(e);
        }
    };
    HookReply::Json(match inbound {
        Inbound::Ignore => return HookReply::Ok,
        Inbound::Added(conversation) => {
            capture(desk, channel, teams, conversation).await;
            return HookReply::Ok;
        }
        Inbound::Unknown(verb) => {
            tracing::warn!(%channel, %verb, "a Teams action clarify did not make");
            private("clarify does not know this button; nothing was answered.")
        }
        Inbound::Refresh { request, .. } => {
            match desk.find(channel, Target::Request(request)).await {
                Ok(record) => card_response(card(&record, &desk.answer_url(&record.id))),
                Err(refusal) => private(&refusal.message),
            }
        }
        Inbound::Execute { user, request, act } => {
            match desk.act(channel, &user, Target::Request(request), act).await {
                Ok(Done::Resolved(record) | Done::Nothing(record) | Done::Open { record, .. }) => {
                    card_response(card(&record, &desk.answer_url(&record.id)))
                }
                Err(refusal) => private(&refusal.message),
            }
        }
    })
}

/// Posts to `conversation` from now on, on every instance, and wakes the channel worker for
/// what waited for it.
async fn capture<D: Desk>(desk: &D, channel: &str, teams: &Teams, conversation: Conversation) {
    tracing::info!(%channel, conversation = %conversation.conversation_id, "the Teams bot was added to a conversation");
    match serde_json::to_vec(&conversation) {
        Ok(bytes) => {
            if let Err(e) = desk.keep(&kept_as(channel), bytes).await {
                tracing::warn!(error = %e, "keeping a Teams conversation failed");
            }
        }
        Err(e) => tracing::warn!(error = %e, "a Teams conversation could not be written"),
    }
    teams.capture(conversation);
    desk.wake_channels();
}

/// Loads channel `channel`'s captured conversation from the store.
pub(crate) async fn restore<D: Desk>(teams: &Teams, desk: &D, channel: &str) {
    match desk.kept(&kept_as(channel)).await {
        Ok(Some(bytes)) => match serde_json::from_slice::<Conversation>(&bytes) {
            Ok(conversation) => teams.capture(conversation),
            Err(e) => {
                tracing::warn!(%channel, error = %e, "a kept Teams conversation cannot be read")
            }
        },
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(%channel, error = %e, "reading a kept Teams conversation failed")
        }
    }
}
