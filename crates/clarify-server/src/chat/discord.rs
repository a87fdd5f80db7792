//! Discord's inbound side: `POST /hooks/discord/{name}`, the application's interactions
//! endpoint. Each call is verified (Ed25519 over the timestamp and the raw body) before it is
//! read, then answered in the HTTP response, within Discord's three seconds: a PONG, the clicked
//! message updated to show the request as it now is, a modal, or a note only the clicker sees.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use clarify_channels::answer::Act;
use clarify_channels::discord::inbound::{Inbound, read, verify};
use clarify_channels::discord::render::{acknowledge, ephemeral, modal, update_message};
use clarify_channels::discord::{Control, Discord};
use clarify_channels::{Channel, Platform};
use serde_json::{Value, json};

use crate::chat::answer::{self, Done, Target};
use crate::state::AppState;

/// The configured Discord channel called `name`.
fn channel<'a>(state: &'a AppState, name: &str) -> Option<(&'a Channel, &'a Discord)> {
    answer::configured(state, name, |p| match p {
        Platform::Discord(x) => Some(x),
        _ => None,
    })
}

/// `POST /hooks/discord/{name}`: verified before anything else is read.
pub(crate) async fn hook(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some((channel, discord)) = channel(&state, &name) else {
        return error(StatusCode::NOT_FOUND, "no Discord channel has this name");
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(e) = verify(
        &discord.public_key,
        header("x-signature-ed25519"),
        header("x-signature-timestamp"),
        &body,
        state.store.now(),
    ) {
        tracing::warn!(channel = %name, error = %e, "refused an unverified Discord call");
        return error(StatusCode::UNAUTHORIZED, &e.to_string());
    }
    let interaction = clarify_channels::inbound::json(&body).and_then(|v| read(&v));
    match interaction {
        Ok(interaction) => Json(respond(&state, channel, interaction).await).into_response(),
        Err(e) => {
            tracing::warn!(channel = %name, error = %e, "refused a Discord interaction clarify cannot read");
            error(StatusCode::BAD_REQUEST, &e.to_string())
        }
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

/// The interaction response for `interaction`.
async fn respond(state: &AppState, channel: &Channel, interaction: Inbound) -> Value {
    let (user, message_ref, message_id, control) = match interaction {
        Inbound::Ping => return json!({"type": 1}),
        Inbound::Ignore(why) => return ephemeral(&format!("Nothing was done: {why}.")),
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
            tracing::warn!(channel = %channel.name, custom_id = %id, "a Discord control clarify did not make");
            ephemeral("clarify does not know this control; nothing was answered.")
        }
        Control::Form(focus) => {
            // Only someone who may answer gets the form.
            match answer::act(state, channel, &user, target, Act::Nothing).await {
                Ok(Done::Nothing(record)) => modal(&record, focus, &message_id)
                    .unwrap_or_else(|| ephemeral("This form is not available for this request.")),
                Ok(_) => acknowledge(),
                Err(refusal) => ephemeral(&refusal.message),
            }
        }
        Control::Act(act) => match answer::act(state, channel, &user, target, act).await {
            Ok(Done::Resolved(record)) => {
                let answer_url = state.answer_url(&record.id);
                update_message(&record, &answer_url)
            }
            Ok(Done::Nothing(_) | Done::Open { .. }) => acknowledge(),
            Err(refusal) => ephemeral(&refusal.message),
        },
    }
}
