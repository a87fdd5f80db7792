//! What Google Chat sends to `POST /hooks/google-chat/{name}` once
//! [`GoogleChat::verify`](super::GoogleChat::verify) accepted its token: a click on a card's
//! button, in the classic interaction format or the Workspace add-on one; `hook` verifies, reads
//! and acts on it through the server's [`Desk`](crate::platform::Desk).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::GoogleChat;
use super::render::{Format, private, update};
use crate::act::{Act, Control, Focus, Input, control, input_id};
use crate::inbound::{InboundError, malformed};
use crate::platform::{Call, Desk, Done, HookReply, Target};

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

/// Answers a call to `/hooks/google-chat/{channel}`, the Chat app's HTTP endpoint: its bearer
/// token (Google's, for the Chat system account, audience the project number) verified against
/// Google's published certificates before the event is read (`401` otherwise, nothing changed);
/// a click answered in the response, in the event's own format: the message updated to show the
/// request as it now is, or a private message only the clicker sees.
pub(crate) async fn hook<D: Desk>(
    chat: &GoogleChat,
    desk: &D,
    channel: &str,
    call: Call<'_>,
) -> HookReply {
    let authorization = call.header("authorization");
    let event = match chat
        .verify(desk.http(), authorization, call.body, desk.now())
        .await
    {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!(%channel, error = %e, "refused an unverified Google Chat call");
            return HookReply::Unauthorized(e.to_string());
        }
    };
    let inbound = match read(&event) {
        Ok(inbound) => inbound,
        Err(e) => {
            tracing::warn!(%channel, error = %e, "refused a Google Chat event clarify cannot read");
            return HookReply::refused(e);
        }
    };
    HookReply::Json(match inbound {
        Inbound::Ignore => json!({}),
        Inbound::Unknown { action, format } => {
            tracing::warn!(%channel, %action, "a Google Chat button clarify did not make");
            let user = event["user"]["name"]
                .as_str()
                .or(event["chat"]["user"]["name"].as_str())
                .unwrap_or_default();
            private(
                user,
                "clarify does not know this button; nothing was answered.",
                format,
            )
        }
        Inbound::Click {
            user,
            request,
            act,
            format,
        } => match desk.act(channel, &user, Target::Request(request), act).await {
            Ok(Done::Resolved(record) | Done::Nothing(record) | Done::Open { record, .. }) => {
                update(&record, &desk.answer_url(&record.id), format)
            }
            Err(refusal) => private(&user, &refusal.message, format),
        },
    })
}
