//! Google Chat's inbound side: `POST /hooks/google-chat/{name}`, the Chat app's HTTP endpoint.
//! Each call's bearer token (Google's, for the Chat system account, audience the project
//! number) is verified against Google's published certificates before the event is read;
//! anything else gets `401` and changes nothing. A click is answered in the HTTP response, in
//! the event's own format: the message updated to show the request as it now is, or a private
//! message only the clicker sees.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use clarify_channels::google_chat::GoogleChat;
use clarify_channels::google_chat::inbound::{Inbound, read};
use clarify_channels::google_chat::render::{private, update};
use clarify_channels::{Channel, Platform};
use serde_json::json;

use crate::chat::answer::{self, Done, Target};
use crate::state::AppState;

/// The configured Google Chat channel called `name`.
fn channel<'a>(state: &'a AppState, name: &str) -> Option<(&'a Channel, &'a GoogleChat)> {
    answer::configured(state, name, |p| match p {
        Platform::GoogleChat(x) => Some(x),
        _ => None,
    })
}

/// `POST /hooks/google-chat/{name}`: verified before anything else is read.
pub(crate) async fn hook(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some((channel, chat)) = channel(&state, &name) else {
        return error(
            StatusCode::NOT_FOUND,
            "no Google Chat channel has this name",
        );
    };
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let event = match chat
        .verify(&state.http, authorization, &body, state.store.now())
        .await
    {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!(channel = %name, error = %e, "refused an unverified Google Chat call");
            return error(StatusCode::UNAUTHORIZED, &e.to_string());
        }
    };
    let inbound = match read(&event) {
        Ok(inbound) => inbound,
        Err(e) => {
            tracing::warn!(channel = %name, error = %e, "refused a Google Chat event clarify cannot read");
            return error(StatusCode::BAD_REQUEST, &e.to_string());
        }
    };
    let response = match inbound {
        Inbound::Ignore => json!({}),
        Inbound::Unknown { action, format } => {
            tracing::warn!(channel = %name, %action, "a Google Chat button clarify did not make");
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
        } => match answer::act(&state, channel, &user, Target::Request(request), act).await {
            Ok(Done::Resolved(record) | Done::Nothing(record) | Done::Open { record, .. }) => {
                update(&record, &state.answer_url(&record.id), format)
            }
            Err(refusal) => private(&user, &refusal.message, format),
        },
    };
    Json(response).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}
