//! What Teams sends to `POST /hooks/teams/{name}` once [`Teams::verify`](super::Teams::verify)
//! accepted its token: the bot added to a conversation, a card's `Action.Execute`, a refresh.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Conversation;
use crate::answer::{Act, Control, Focus, Input, control, input_id};
use crate::inbound::{InboundError, malformed};

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
