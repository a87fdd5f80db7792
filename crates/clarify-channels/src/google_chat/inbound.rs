//! What Google Chat sends to `POST /hooks/google-chat/{name}` once
//! [`GoogleChat::verify`](super::GoogleChat::verify) accepted its token: a click on a card's
//! button, in the classic interaction format or the Workspace add-on one.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::answer::{Act, Control, Focus, Input, control, input_id};
use crate::inbound::{InboundError, malformed};

/// Which event format a call came in, to answer in the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Classic,
    AddOn,
}

/// What a verified event asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// `user` (`users/123`) clicked a button of request `request`'s card.
    Click {
        user: String,
        request: String,
        act: Act,
        format: Format,
    },
    /// A button clarify did not make.
    Unknown { action: String, format: Format },
    /// An event clarify does not act on (the app added to a space, a message).
    Ignore,
}

/// Reads a verified event, in either format.
pub fn read(event: &Value) -> Result<Inbound, InboundError> {
    let (format, user, common) = if event.get("chat").is_some() {
        let chat = &event["chat"];
        if chat.get("buttonClickedPayload").is_none() {
            return Ok(Inbound::Ignore);
        }
        (
            Format::AddOn,
            &chat["user"]["name"],
            &event["commonEventObject"],
        )
    } else {
        if event["type"] != "CARD_CLICKED" {
            return Ok(Inbound::Ignore);
        }
        (Format::Classic, &event["user"]["name"], &event["common"])
    };
    let user = user
        .as_str()
        .filter(|u| u.starts_with("users/"))
        .ok_or_else(|| malformed("a click without the user's name"))?
        .to_owned();
    let parameter = |k: &str| common["parameters"][k].as_str().map(str::to_owned);
    let (Some(request), Some(action)) = (parameter("request"), parameter("action")) else {
        return Ok(Inbound::Unknown {
            action: String::new(),
            format,
        });
    };
    let mut inputs = BTreeMap::new();
    if let Some(form) = common["formInputs"].as_object() {
        for (name, value) in form {
            let values: Vec<String> = value["stringInputs"]["value"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            inputs.insert(name.clone(), values);
        }
    }
    if let Some(focus) = action.strip_prefix("form:") {
        let Some(focus) = Focus::decode(focus) else {
            return Ok(Inbound::Unknown { action, format });
        };
        // A selection's values are joined as a typed list is: `eu,us`.
        let inputs = inputs
            .into_iter()
            .map(|(name, values)| (name, Input::Text(values.join(","))))
            .collect();
        return Ok(Inbound::Click {
            user,
            request,
            act: Act::Submit { focus, inputs },
            format,
        });
    }
    let chosen = inputs.remove(&input_id(0, None)).unwrap_or_default();
    match control(&action, &chosen) {
        Control::Act(act) => Ok(Inbound::Click {
            user,
            request,
            act,
            format,
        }),
        Control::Form(_) | Control::Unknown(_) => Ok(Inbound::Unknown { action, format }),
    }
}
