//! Mattermost's inbound side: `POST /hooks/mattermost/{name}`, the integration URL of the
//! buttons and dialogs clarify posts. Mattermost signs nothing, so each call's clarify-signed
//! token is checked before anything else is read (`401` otherwise); then the click is answered
//! in the HTTP response, well within Mattermost's integration timeout: the post updated to show
//! the request as it now is, a note only the clicker sees, or (for text) a dialog opened with
//! the click's trigger, which Mattermost honours for three seconds.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use clarify_channels::answer::{Act, Control, Focus};
use clarify_channels::mattermost::Mattermost;
use clarify_channels::mattermost::inbound::{Inbound, read};
use clarify_channels::mattermost::render::{dialog, dialog_error, ephemeral, update};
use clarify_channels::{Channel, Platform};
use serde_json::{Value, json};

use crate::chat::answer::{self, Done, Target};
use crate::state::AppState;

/// The configured Mattermost channel called `name`.
fn channel<'a>(state: &'a AppState, name: &str) -> Option<(&'a Channel, &'a Mattermost)> {
    answer::configured(state, name, |p| match p {
        Platform::Mattermost(x) => Some(x),
        _ => None,
    })
}

/// `POST /hooks/mattermost/{name}`: verified before anything else is read.
pub(crate) async fn hook(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let Some((channel, mattermost)) = channel(&state, &name) else {
        return error(StatusCode::NOT_FOUND, "no Mattermost channel has this name");
    };
    let inbound = match read(&state.secrets.chat, &body) {
        Ok(inbound) => inbound,
        Err(e) => {
            tracing::warn!(channel = %name, error = %e, "refused an unverified Mattermost call");
            return error(StatusCode::UNAUTHORIZED, &e.to_string());
        }
    };
    Json(respond(&state, channel, mattermost, inbound).await).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

async fn respond(
    state: &AppState,
    channel: &Channel,
    mattermost: &Mattermost,
    inbound: Inbound,
) -> Value {
    let hook_url = channel.hook_url(&state.config.public_url);
    let key = &state.secrets.chat;
    match inbound {
        Inbound::Cancelled => json!({}),
        Inbound::Submit {
            user,
            request,
            focus,
            inputs,
        } => {
            let act = Act::Submit { focus, inputs };
            match answer::act(state, channel, &user, Target::Request(request), act).await {
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
                        return ephemeral("This click cannot open a form; nothing was answered.");
                    }
                },
                Control::Unknown(id) => {
                    tracing::warn!(channel = %channel.name, action = %id, "a Mattermost action clarify did not make");
                    return ephemeral("clarify does not know this button; nothing was answered.");
                }
            };
            match answer::act(state, channel, &user, Target::Request(request), act).await {
                Ok(Done::Resolved(record)) => {
                    let answer_url = state.answer_url(&record.id);
                    let note = answer::vote_note(&record);
                    update(&record, &answer_url, key, &hook_url, note.as_deref())
                }
                Ok(Done::Open {
                    record,
                    focus,
                    trigger,
                }) => {
                    let Some(dialog) = dialog(&record, focus, &user, key, &hook_url) else {
                        return ephemeral("This form is not available for this request.");
                    };
                    // The trigger lasts three seconds: open the dialog now, then acknowledge.
                    match mattermost.open_dialog(&state.http, &trigger, &dialog).await {
                        Ok(()) => json!({}),
                        Err(e) => {
                            tracing::warn!(error = %e, "opening a Mattermost dialog failed");
                            ephemeral("clarify could not open the form; use Open in clarify.")
                        }
                    }
                }
                Ok(Done::Nothing(_)) => json!({}),
                Err(refusal) => ephemeral(&refusal.message),
            }
        }
    }
}
