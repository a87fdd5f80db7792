//! `/v1/login`, `/v1/logout` and `/v1/session`: the inbox's sessions, opened with an API key
//! (a one-time login link and an OpenID Connect sign-in open one too, in the web room). The cookie and its CSRF token are
//! made and checked by the `auth` middleware.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::middleware::auth::{
    Caller, SESSION_COOKIE, clear_session_cookie, cookie, csrf_token, start_session,
};
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::{Drained, JsonBody};
use crate::shared::json::Json;
use crate::state::AppState;

/// The body of `POST /v1/login`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LoginBody {
    /// An API key to open an inbox session with.
    pub key: String,
}

/// Who the caller is, and the CSRF token the inbox sends with its writes.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionBody {
    pub name: String,
    pub role: String,
    pub tenant: String,
    /// How the caller signed in: `key`, `link` (a one-time login link) or `oidc`.
    pub via: String,
    /// The groups the caller is in: from the identity provider's groups claim and `[groups]`.
    pub groups: Vec<String>,
    /// Send as `X-CSRF-Token` on writes authenticated by the session cookie; `null` for keys.
    pub csrf_token: Option<String>,
}

/// Opens an inbox session with an API key.
#[utoipa::path(post, path = "/v1/login", tag = "inbox", request_body = LoginBody, responses(
    (status = 200, description = "Session cookie set", body = SessionBody),
    (status = 401, description = "Unknown or revoked key", body = ErrorBody),
    (status = 403, description = "People sign in through the identity provider only (`[oidc] key_login = false`)", body = ErrorBody),
    (status = 415, description = "The body is not sent as application/json", body = ErrorBody)))]
pub async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<LoginBody>,
) -> Response {
    // Only JSON: a cross-site form cannot send it, so no other site can log a visitor in
    // under a key of its choosing.
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !state.config.key_login() {
        return ApiError::forbidden(
            "key_login_disabled",
            "this server signs people in through its identity provider only; open the inbox and sign in there (keys still work as `Authorization: Bearer`)",
        )
        .into_response();
    }
    if !is_json {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "json_required",
            "send the key as JSON with Content-Type: application/json",
        )
        .into_response();
    }
    match state.store.authenticate(body.key.trim()).await {
        Ok(Some(key)) => {
            let session = |token: &str| SessionBody {
                name: key.name.clone(),
                role: key.role.as_str().to_owned(),
                tenant: key.tenant.clone(),
                via: "key".to_owned(),
                groups: state.store.groups_of(&key.name, &[]),
                csrf_token: Some(csrf_token(&state, token)),
            };
            start_session(&state, &key.id, |token| {
                Json(session(token)).into_response()
            })
            .await
        }
        Ok(None) => ApiError::unauthorized("this API key is unknown or revoked").into_response(),
        Err(e) => ApiError::store(&e).into_response(),
    }
}

/// Ends the inbox session.
#[utoipa::path(post, path = "/v1/logout", tag = "inbox", responses(
    (status = 204, description = "Session ended and cookie cleared")),
    security(("bearer" = [])))]
pub async fn logout(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    _: Drained,
) -> Response {
    let _ = caller;
    if let Some(session) = cookie(&headers, SESSION_COOKIE)
        && let Err(e) = state.store.revoke_token(session).await
    {
        return ApiError::store(&e).into_response();
    }
    state.hub.keys_changed();
    let mut response = StatusCode::NO_CONTENT.into_response();
    clear_session_cookie(&state, &mut response);
    response
}

/// Who the caller is; for a session, the CSRF token its writes need.
#[utoipa::path(get, path = "/v1/session", tag = "inbox", responses(
    (status = 200, description = "The caller", body = SessionBody),
    (status = 401, description = "Not logged in", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn session(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> Json<SessionBody> {
    let csrf = (caller.channel == "inbox")
        .then(|| cookie(&headers, SESSION_COOKIE).map(|s| csrf_token(&state, s)))
        .flatten();
    Json(SessionBody {
        name: caller.key.name.clone(),
        role: caller.key.role.as_str().to_owned(),
        tenant: caller.key.tenant.clone(),
        via: caller.via.to_owned(),
        groups: state.store.groups_of(&caller.key.name, &caller.groups),
        csrf_token: csrf,
    })
}
