//! What Mattermost sends to `POST /hooks/mattermost/{name}`: clicks on clarify's buttons and
//! menus, and dialog submissions. Mattermost signs nothing, so [`read`] checks the token clarify
//! put in each button's context or dialog's state before it reads anything else; `hook` acts on
//! them through the server's [`Desk`](crate::platform::Desk) and answers in the response.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Mattermost;
use super::render::{dialog, dialog_error, private, update};
use super::token::genuine;
use crate::act::{Act, Control, Focus, Input, control};
use crate::inbound::InboundError;
use crate::layout::words::vote_note;
use crate::platform::{Call, Desk, Done, HookReply, Target};

/// What a verified call from Mattermost asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// `user` pressed a button (or chose in a menu) of request `request`'s post; `trigger` opens
    /// a dialog.
    Click {
        user: String,
        request: String,
        control: Control,
        trigger: Option<String>,
    },
    /// `user` submitted the dialog for `focus` of request `request`.
    Submit {
        user: String,
        request: String,
        focus: Focus,
        inputs: BTreeMap<String, Input>,
    },
    /// `user` closed a dialog without submitting it.
    Cancelled,
}

/// Verifies a call to `/hooks/mattermost/{name}` (its token, under `key`), then reads it.
pub fn read(key: &[u8], body: &[u8]) -> Result<Inbound, InboundError> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|_| InboundError::Unauthorized("the body is not JSON"))?;
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let user = text(&body["user_id"]);
    if body["type"] == "dialog_submission" {
        // state: `<request id> <focus> <token>`.
        let state = body["state"].as_str().unwrap_or_default();
        let mut parts = state.split(' ');
        let (Some(request), Some(focus), Some(token), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(InboundError::Unauthorized(
                "a dialog submission without clarify's state",
            ));
        };
        let Some(focus) = Focus::decode(focus) else {
            return Err(InboundError::Unauthorized(
                "a dialog submission without clarify's state",
            ));
        };
        let user = user.ok_or(InboundError::Unauthorized(
            "a dialog submission without user_id",
        ))?;
        if !genuine(
            key,
            &format!("mattermost-dialog:{request}:{}:{user}", focus.encode()),
            token,
        ) {
            return Err(InboundError::Unauthorized(
                "the dialog's token does not match",
            ));
        }
        if body["cancelled"] == true {
            return Ok(Inbound::Cancelled);
        }
        let mut inputs = BTreeMap::new();
        let mut many: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if let Some(submission) = body["submission"].as_object() {
            for (name, value) in submission {
                // A `multi` question's options are one checkbox each: `q0.o3`.
                if let Some((question, index)) = name.split_once(".o")
                    && index.parse::<usize>().is_ok()
                {
                    let chosen = many.entry(question.to_owned()).or_default();
                    if value == true || value == "true" {
                        chosen.push(index.to_owned());
                    }
                    continue;
                }
                let input = match value {
                    Value::String(s) => Input::Text(s.clone()),
                    Value::Bool(b) => Input::One(Some(b.to_string())),
                    Value::Null => Input::One(None),
                    other => Input::Text(other.to_string()),
                };
                inputs.insert(name.clone(), input);
            }
        }
        for (question, chosen) in many {
            inputs.insert(question, Input::Many(chosen));
        }
        return Ok(Inbound::Submit {
            user,
            request: request.to_owned(),
            focus,
            inputs,
        });
    }
    let context = &body["context"];
    let (Some(request), Some(action), Some(token)) = (
        text(&context["request"]),
        text(&context["action"]),
        text(&context["token"]),
    ) else {
        return Err(InboundError::Unauthorized(
            "a call without the context of a button clarify made",
        ));
    };
    if !genuine(
        key,
        &format!("mattermost-button:{request}:{action}"),
        &token,
    ) {
        return Err(InboundError::Unauthorized(
            "the button's token does not match",
        ));
    }
    let user = user.ok_or(InboundError::Unauthorized("an action without user_id"))?;
    // A menu adds the chosen option's value to the context.
    let values: Vec<String> = text(&context["selected_option"]).into_iter().collect();
    Ok(Inbound::Click {
        user,
        request,
        control: control(&action, &values),
        trigger: text(&body["trigger_id"]),
    })
}

/// Answers a call to `/hooks/mattermost/{channel}`, the integration URL of clarify's buttons and
/// dialogs: the token checked before anything else is read (`401` otherwise), then the click
/// answered in the response, well within Mattermost's integration timeout: the post updated to
/// show the request as it now is, a note only the clicker sees, or (for text) a dialog opened
/// with the click's trigger, which Mattermost honours for three seconds.
pub(crate) async fn hook<D: Desk>(
    mattermost: &Mattermost,
    desk: &D,
    channel: &str,
    call: Call<'_>,
) -> HookReply {
    match read(desk.action_key(), call.body) {
        Ok(inbound) => HookReply::Json(respond(desk, channel, mattermost, inbound).await),
        Err(e) => {
            tracing::warn!(%channel, error = %e, "refused an unverified Mattermost call");
            HookReply::refused(e)
        }
    }
}

async fn respond<D: Desk>(
    desk: &D,
    channel: &str,
    mattermost: &Mattermost,
    inbound: Inbound,
) -> Value {
    let hook_url = desk.hook_url(channel);
    let key = desk.action_key();
    match inbound {
        Inbound::Cancelled => json!({}),
        Inbound::Submit {
            user,
            request,
            focus,
            inputs,
        } => {
            let act = Act::Submit { focus, inputs };
            match desk.act(channel, &user, Target::Request(request), act).await {
                Ok(_) => json!({}),
                // Choosing several options is one checkbox per option: no one element to name.
                Err(refusal) if focus == Focus::Request => dialog_error(None, &refusal.message),
                Err(refusal) => dialog_error(refusal.input.as_deref(), &refusal.message),
            }
        }
        Inbound::Click {
            user,
            request,
            control,
            trigger,
        } => {
            let act = match control {
                Control::Act(act) => act,
                Control::Form(focus) => match trigger {
                    Some(trigger) => Act::Open { focus, trigger },
                    None => {
                        return private("This click cannot open a form; nothing was answered.");
                    }
                },
                Control::Unknown(id) => {
                    tracing::warn!(%channel, action = %id, "a Mattermost action clarify did not make");
                    return private("clarify does not know this button; nothing was answered.");
                }
            };
            match desk.act(channel, &user, Target::Request(request), act).await {
                Ok(Done::Resolved(record)) => {
                    let answer_url = desk.answer_url(&record.id);
                    let note = vote_note(&record);
                    update(&record, &answer_url, key, &hook_url, note.as_deref())
                }
                Ok(Done::Open {
                    record,
                    focus,
                    trigger,
                }) => {
                    let Some(dialog) = dialog(&record, focus, &user, key, &hook_url) else {
                        return private("This form is not available for this request.");
                    };
                    // The trigger lasts three seconds: open the dialog now, then acknowledge.
                    match mattermost.open_dialog(desk.http(), &trigger, &dialog).await {
                        Ok(()) => json!({}),
                        Err(e) => {
                            tracing::warn!(error = %e, "opening a Mattermost dialog failed");
                            private("clarify could not open the form; use Open in clarify.")
                        }
                    }
                }
                Ok(Done::Nothing(_)) => json!({}),
                Err(refusal) => private(&refusal.message),
            }
        }
    }
}
