//! `/login/<token>`: a one-time login link (from `clarify serve`'s first start or `clarify
//! login-link`) opens an inbox session and goes to the inbox.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use clarify_store::TokenKind;

use crate::middleware::auth::start_session;
use crate::shared::error::ApiError;
use crate::state::AppState;
use crate::web::html::message_page;

/// Redeems a one-time login link: sets the session cookie and opens the inbox.
pub(crate) async fn login_link(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Response {
    match state.store.redeem_token(TokenKind::Login, &token).await {
        Ok(Some(key)) => start_session(&state, &key, |_| Redirect::to("/").into_response()).await,
        Ok(None) => message_page(
            StatusCode::NOT_FOUND,
            "This login link is not valid",
            "It was already used, has expired, or its key was revoked. Ask an admin for a new link, or log in with an API key.",
        ),
        Err(e) => ApiError::store(&e).into_response(),
    }
}
