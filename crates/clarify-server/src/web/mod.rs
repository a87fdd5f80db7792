//! Everything here answers a person's browser, and any text a request brings reaches a page
//! only through [`escape`](clarify_render::html::escape) or clarify-render's sanitised HTML.
//!
//! The web inbox at `/` and its embedded assets ([`inbox`]; the page is a shell whose script
//! reads the JSON API), the Insights page `/insights`, whose charts are drawn here
//! ([`insights`]), the signed answer links `/a/<token>` that need no key ([`links`]), the
//! one-time login links `/login/<token>` ([`login`]), the links that link a chat account to a
//! person `/link/<token>` ([`accounts`]), OpenID Connect sign-in under `/auth/oidc`
//! ([`oidc`]), the server-rendered pages they show
//! ([`html`]), and a request's display blocks as a fragment those pages put above its questions
//! ([`display`]), all under one content security policy. The JSON the inbox's script reads is the
//! API's; only the link page answers its own JSON too, the record as a responder sees it.

pub mod accounts;
pub mod display;
pub mod html;
pub mod inbox;
pub mod insights;
pub mod links;
pub mod login;
pub mod oidc;

use axum::Router;
use axum::routing::{get, post};

use crate::state::AppState;

/// Every route of this room.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(inbox::page))
        .route("/assets/{version}/{name}", get(inbox::asset))
        .route("/manifest.webmanifest", get(inbox::manifest))
        .route("/sw.js", get(inbox::service_worker))
        .route("/offline", get(inbox::offline))
        .route("/display/{id}", get(display::fragment))
        .route("/insights", get(insights::page))
        .route("/settings", get(inbox::page))
        .route("/a/{token}", get(links::page).post(links::answer))
        .route("/a/{token}/display", get(links::display))
        .route("/a/{token}/step-up", post(links::start_step_up))
        .route("/a/{token}/step-up/finish", post(links::finish_step_up))
        .route("/a/{token}/display/{n}", get(links::image))
        .route("/login/{token}", get(login::login_link))
        .route("/link/{token}", get(accounts::page).post(accounts::link))
        .route("/auth/oidc/start", get(oidc::start))
        .route("/auth/oidc/callback", get(oidc::callback))
}
