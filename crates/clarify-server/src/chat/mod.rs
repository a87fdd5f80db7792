//! Everything here talks to chat platforms only through `clarify-channels`, and reads an inbound
//! call only after verifying it.
//!
//! The channel worker announces requests and follows their announcements up ([`worker`]); each
//! platform's inbound side ([`slack`], [`telegram`], [`discord`]) verifies what the platform
//! sends (signature, timestamp window, secret), reads it with `clarify-channels`, and hands it to
//! the answer path they share ([`answer`]), which resolves a request by the same rules as every
//! other door. A platform's wire format is `clarify-channels`' alone, so another platform is one
//! more file here (its routes and connections listed below) and a module there.

pub mod answer;
pub mod discord;
pub mod slack;
pub mod telegram;
pub mod worker;

use axum::Router;
use axum::routing::post;
use tokio::task::JoinHandle;

use crate::state::AppState;

/// Every route of this room: each platform's inbound calls, per configured channel.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/hooks/slack/{name}", post(slack::hook))
        .route("/hooks/telegram/{name}", post(telegram::hook))
        .route("/hooks/discord/{name}", post(discord::hook))
}

/// Starts this room's background tasks until shutdown: the channel worker (its handle is
/// returned, to wait for at shutdown), Slack's Socket Mode connections and Telegram's polling.
pub(crate) fn start(state: &AppState) -> JoinHandle<()> {
    let worker = tokio::spawn(worker::run(state.clone()));
    slack::spawn_sockets(state);
    telegram::spawn_pollers(state);
    worker
}
