//! Everything here talks to chat platforms only through `clarify-channels`, and reads an inbound
//! call only after verifying it.
//!
//! Each platform's inbound side ([`slack`], [`telegram`], [`discord`], [`mattermost`],
//! [`teams`], [`google_chat`]) verifies what the
//! platform sends (signature, timestamp window, secret, clarify's own token), reads it with `clarify-channels`, and hands it to
//! the answer path they share ([`answer`]), which resolves a request by the same rules as every
//! other door. A platform's wire format is `clarify-channels`' alone, so another platform is one
//! more file here (its routes and connections listed below) and a module there. What goes out
//! to the platforms (announcements and their follow-ups) is the outbox's channel worker
//! (`outbox::chat`).

pub mod answer;
pub mod discord;
pub mod google_chat;
pub mod mattermost;
pub mod slack;
pub mod teams;
pub mod telegram;

use axum::Router;
use axum::routing::post;

use crate::state::AppState;

/// Every route of this room: each platform's inbound calls, per configured channel.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/hooks/slack/{name}", post(slack::hook))
        .route("/hooks/telegram/{name}", post(telegram::hook))
        .route("/hooks/discord/{name}", post(discord::hook))
        .route("/hooks/mattermost/{name}", post(mattermost::hook))
        .route("/hooks/teams/{name}", post(teams::hook))
        .route("/hooks/google-chat/{name}", post(google_chat::hook))
}

/// Starts this room's background tasks until shutdown: Slack's Socket Mode connections and
/// Telegram's polling.
pub(crate) fn start(state: &AppState) {
    slack::spawn_sockets(state);
    telegram::spawn_pollers(state);
}
