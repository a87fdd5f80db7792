//! `/login/<token>`: a one-time login link (from `clarify serve`'s first start or `clarify
//! login-link`) opens an inbox session and goes to the inbox.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use clarify_store::TokenKind;

use crate::middleware::auth::{Holder, start_session};
use crate::shared::error::ApiError;
use crate::state::AppState;
use crate::web::html::message_page;

/// Redeems a one-time login link: sets the session cookie and opens the inbox.
pub(crate) async fn login_link(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Response {
    if !state.config.key_login() {
        return key_login_off(&state);
    }
    match state.store.redeem_token(TokenKind::Login, &token).await {
        Ok(Some(key)) => {
            let holder = Holder::Link { key: key.id }.to_json();
            start_session(&state, &holder, |_| Redirect::to("/").into_response()).await
        }
        Ok(None) => message_page(
            StatusCode::NOT_FOUND,
            "This login link is not valid",
            "It was already used, has expired, or its key was revoked. Ask an admin for a new link, or log in with an API key.",
        ),
        Err(e) => ApiError::store(&e).into_response(),
    }
}

/// The page a login link shows when people sign in only through the identity provider.
pub(crate) fn key_login_off(state: &AppState) -> Response {
    let with = state
        .config
        .oidc
        .as_ref()
        .map_or("single sign-on", |o| o.display_name.as_str());
    message_page(
        StatusCode::FORBIDDEN,
        "Login links are turned off",
        &format!(
            "This server signs people in with {with} only. Open the inbox and choose \"Sign in with {with}\"."
        ),
    )
}
