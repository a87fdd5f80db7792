//! The chat platforms' way in: one route, `POST /hooks/{platform}/{name}`, for every platform's
//! calls (and `GET` on it for a platform's webhook handshake, Meta's `hub.challenge`), and each
//! channel's background task (Slack's Socket Mode, Telegram's polling).
//!
//! The platform verifies what it is sent (signature, timestamp window, secret, clarify's own
//! token) before it reads anything, reads it, and acts through [`desk::ChatDesk`], the answer
//! path every other door shares; all of that is `clarify-channels`', which knows every
//! platform's wire format. This room only finds the channel, hands the call over and writes the
//! platform's reply as HTTP, so a new platform changes nothing here. What goes out to the
//! platforms (announcements and their follow-ups) is the outbox's channel worker
//! (`outbox::chat`).

pub(crate) mod desk;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use clarify_channels::platform::{Call, HookReply};
use serde_json::json;

use crate::shared::json::Json;
use crate::state::AppState;
use desk::ChatDesk;

/// Every route of this room.
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/hooks/{platform}/{name}", post(hook).get(handshake))
}

/// The channel `name` of `platform` (spelt as in a URL: `google-chat`).
fn channel_of<'a>(
    state: &'a AppState,
    platform: &str,
    name: &str,
) -> Option<&'a clarify_channels::Channel> {
    state
        .config
        .channels
        .iter()
        .find(|c| c.name == name && c.url_platform() == platform)
}

/// The `404` of a channel that does not exist.
fn no_channel(platform: &str, name: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!("no {platform} channel is called {name:?}"),
    )
}

/// `GET /hooks/{platform}/{name}`: the channel's webhook handshake, if its platform makes one.
async fn handshake(
    State(state): State<AppState>,
    Path((platform, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    match channel_of(&state, &platform, &name) {
        Some(channel) => {
            let reply = channel
                .platform
                .handshake(&channel.name, query.as_deref().unwrap_or_default());
            respond(reply)
        }
        None => no_channel(&platform, &name),
    }
}

/// `POST /hooks/{platform}/{name}`: the channel `name`, if it is of `platform` (spelt as in a
/// URL: `google-chat`), verifies the call before anything else is read.
async fn hook(
    State(state): State<AppState>,
    Path((platform, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(channel) = channel_of(&state, &platform, &name) else {
        return no_channel(&platform, &name);
    };
    let call = Call {
        headers: &headers,
        body: &body,
        query: query.as_deref(),
    };
    let reply = channel
        .platform
        .hook(&ChatDesk(state.clone()), &channel.name, call)
        .await;
    respond(reply)
}

/// The platform's reply as HTTP.
fn respond(reply: HookReply) -> Response {
    match reply {
        HookReply::Json(value) => Json(value).into_response(),
        HookReply::Ok => StatusCode::OK.into_response(),
        HookReply::Text(text) => text.into_response(),
        HookReply::Xml(document) => (
            [(axum::http::header::CONTENT_TYPE, "text/xml; charset=utf-8")],
            document,
        )
            .into_response(),
        HookReply::NotFound(message) => error(StatusCode::NOT_FOUND, &message),
        HookReply::Unauthorized(message) => error(StatusCode::UNAUTHORIZED, &message),
        HookReply::Malformed(message) => error(StatusCode::BAD_REQUEST, &message),
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

/// Loads what each channel needs before it sends (Teams' captured conversations): the channel
/// worker awaits it before its first message.
pub(crate) async fn prepare(state: &AppState) {
    let desk = ChatDesk(state.clone());
    for c in &state.config.channels {
        c.platform.prepare(&desk, &c.name).await;
    }
}

/// Starts each channel's background task until shutdown.
pub(crate) fn start(state: &AppState) {
    for c in &state.config.channels {
        let Some(task) = c
            .platform
            .background(ChatDesk(state.clone()), c.name.clone())
        else {
            continue;
        };
        let shutdown = state.shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = shutdown.cancelled() => {}
                () = task => {}
            }
        });
    }
}
