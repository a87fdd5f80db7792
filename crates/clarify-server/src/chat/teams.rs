//! Microsoft Teams' inbound side: `POST /hooks/teams/{name}`, the bot's messaging endpoint.
//! Every activity's Bot Framework JWT is verified against Microsoft's published keys (issuer,
//! audience, validity, `serviceurl`, endorsement) before the activity is acted on; anything
//! else gets `401` and changes nothing. A card's `Action.Execute` arrives as an
//! `adaptiveCard/action` invoke, answered in the HTTP response (one store write, well within
//! Teams' time limit) with the card as it now is, or a message only the clicker sees. The
//! activity Teams sends when the bot is added to a conversation is where requests go from then
//! on: it is kept in the store, so every instance and every restart posts there.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use clarify_channels::teams::inbound::{Inbound, read};
use clarify_channels::teams::render::{card, card_response, message_response};
use clarify_channels::teams::{Conversation, Teams};
use clarify_channels::{Channel, Platform};
use serde_json::json;

use crate::chat::answer::{self, Done, Target};
use crate::state::AppState;

/// The configured Teams channel called `name`.
fn channel<'a>(state: &'a AppState, name: &str) -> Option<(&'a Channel, &'a Teams)> {
    answer::configured(state, name, |p| match p {
        Platform::Teams(x) => Some(x),
        _ => None,
    })
}

/// The name under which the store keeps channel `name`'s captured conversation.
fn kept_as(name: &str) -> String {
    format!("teams:{name}:conversation")
}

/// `POST /hooks/teams/{name}`: verified before anything else is read.
pub(crate) async fn hook(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some((channel, teams)) = channel(&state, &name) else {
        return error(StatusCode::NOT_FOUND, "no Teams channel has this name");
    };
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let activity = match teams
        .verify(&state.http, authorization, &body, state.store.now())
        .await
    {
        Ok(activity) => activity,
        Err(e) => {
            tracing::warn!(channel = %name, error = %e, "refused an unverified Teams activity");
            return error(StatusCode::UNAUTHORIZED, &e.to_string());
        }
    };
    let inbound = match read(&activity) {
        Ok(inbound) => inbound,
        Err(e) => {
            tracing::warn!(channel = %name, error = %e, "refused a Teams activity clarify cannot read");
            return error(StatusCode::BAD_REQUEST, &e.to_string());
        }
    };
    let target = |request: String| Target::Request(request);
    let response = match inbound {
        Inbound::Ignore => return StatusCode::OK.into_response(),
        Inbound::Added(conversation) => {
            capture(&state, &name, teams, conversation).await;
            return StatusCode::OK.into_response();
        }
        Inbound::Unknown(verb) => {
            tracing::warn!(channel = %name, %verb, "a Teams action clarify did not make");
            message_response("clarify does not know this button; nothing was answered.")
        }
        Inbound::Refresh { request, .. } => {
            match answer::find(&state, channel, target(request)).await {
                Ok(record) => card_response(card(&record, &state.answer_url(&record.id))),
                Err(refusal) => message_response(&refusal.message),
            }
        }
        Inbound::Execute { user, request, act } => {
            match answer::act(&state, channel, &user, target(request), act).await {
                Ok(Done::Resolved(record) | Done::Nothing(record) | Done::Open { record, .. }) => {
                    card_response(card(&record, &state.answer_url(&record.id)))
                }
                Err(refusal) => message_response(&refusal.message),
            }
        }
    };
    Json(response).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

/// Posts to `conversation` from now on, on every instance, and wakes the channel worker for
/// what waited for it.
async fn capture(state: &AppState, name: &str, teams: &Teams, conversation: Conversation) {
    tracing::info!(channel = %name, conversation = %conversation.conversation_id, "the Teams bot was added to a conversation");
    match serde_json::to_vec(&conversation) {
        Ok(bytes) => {
            if let Err(e) = state.store.keep(&kept_as(name), bytes).await {
                tracing::warn!(error = %e, "keeping a Teams conversation failed");
            }
        }
        Err(e) => tracing::warn!(error = %e, "a Teams conversation could not be written"),
    }
    teams.capture(conversation);
    state.channels_due.notify_one();
}

/// Loads each Teams channel's captured conversation from the store.
pub(crate) async fn restore(state: &AppState) {
    for c in &state.config.channels {
        let Platform::Teams(teams) = &c.platform else {
            continue;
        };
        match state.store.kept(&kept_as(&c.name)).await {
            Ok(Some(bytes)) => match serde_json::from_slice::<Conversation>(&bytes) {
                Ok(conversation) => teams.capture(conversation),
                Err(e) => {
                    tracing::warn!(channel = %c.name, error = %e, "a kept Teams conversation cannot be read")
                }
            },
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(channel = %c.name, error = %e, "reading a kept Teams conversation failed")
            }
        }
    }
}
