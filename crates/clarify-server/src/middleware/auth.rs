//! Who is calling: API keys, inbox sessions, and CSRF protection.
//!
//! Agents and scripts send `Authorization: Bearer <key>`. People in the inbox log in through a
//! one-time link (`/login/<token>`) or by pasting a key (`POST /v1/login`) and then carry a
//! session cookie (`HttpOnly`, `SameSite=Strict`, and `Secure` when the public URL is HTTPS).
//! A request authenticated by the cookie that changes something must also carry `X-CSRF-Token`
//! (from `GET /v1/session`), which a cross-site form cannot send, and an `Origin`, when
//! present, must be this server's.
//!
//! A bearer key is verified by the store, then trusted for half a second by the
//! [`KeyCache`](crate::state::key_cache::KeyCache): a revocation made anywhere takes effect
//! within a second, and one made through this instance's revoke route at once.
//!
//! A key belongs to one tenant; every handler reads and writes only the caller's tenant, so
//! another tenant's request is indistinguishable from a missing one (`404`). Once the key is
//! known, the request counts against its `--rate-limit`.
//!
//! The session cookie is made here too (`start_session`, `clear_session_cookie`), for the
//! routes that open and end sessions (`/v1/login` and `/v1/logout` in the API, `/login/<token>`
//! in the web room), so its attributes are written in one place, next to where it is read.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use clarify_store::{ApiKey, Role, TokenKind};

use crate::shared::error::ApiError;
use crate::shared::sign::{equal, hex, mac};
use crate::state::AppState;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "clarify_session";
/// The header carrying the CSRF token on cookie-authenticated writes.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub key: ApiKey,
    /// `api` for a bearer key, `inbox` for a session cookie.
    pub channel: &'static str,
}

impl Caller {
    pub fn tenant(&self) -> &str {
        &self.key.tenant
    }

    /// Refuses the call unless the caller's role may create, wait for and cancel requests.
    pub fn must_ask(&self) -> Result<(), ApiError> {
        if self.key.role.may_ask() {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "forbidden",
                format!(
                    "a {} key cannot create, wait for or cancel requests; use an agent key",
                    self.key.role
                ),
            ))
        }
    }

    /// Refuses the call unless the caller's role may answer requests.
    pub fn must_answer(&self) -> Result<(), ApiError> {
        if self.key.role.may_answer() {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "forbidden",
                format!(
                    "a {} key cannot answer requests; use a responder key",
                    self.key.role
                ),
            ))
        }
    }

    pub fn must_admin(&self) -> Result<(), ApiError> {
        if self.key.role == Role::Admin {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "forbidden",
                "only an admin key may do this",
            ))
        }
    }

    /// Whether the caller sees answer links (the creator's role, and admins).
    pub fn sees_links(&self) -> bool {
        self.key.role.may_ask()
    }

    pub fn actor(&self) -> clarify_store::Actor {
        clarify_store::Actor::new(self.key.name.clone(), self.channel)
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(value) = parts.headers.get(header::AUTHORIZATION) {
            let token = value
                .to_str()
                .ok()
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "))
                })
                .map(str::trim)
                .ok_or_else(|| {
                    ApiError::unauthorized("the Authorization header must be `Bearer <key>`")
                })?;
            let key = state
                .keys
                .authenticate(&state.store, token)
                .await?
                .ok_or_else(|| {
                    ApiError::unauthorized(
                        "this API key is unknown or revoked; ask an admin for a key",
                    )
                })?;
            admit(state, &key)?;
            return Ok(Caller {
                key,
                channel: "api",
            });
        }
        if let Some(session) = cookie(&parts.headers, SESSION_COOKIE) {
            let key = state
                .store
                .redeem_token(TokenKind::Session, session)
                .await?
                .ok_or_else(|| {
                    ApiError::unauthorized("the inbox session has ended; log in again")
                })?;
            admit(state, &key)?;
            if !matches!(parts.method, Method::GET | Method::HEAD) {
                check_csrf(&parts.headers, state, session)?;
            }
            return Ok(Caller {
                key,
                channel: "inbox",
            });
        }
        Err(ApiError::unauthorized(
            "no credentials: send `Authorization: Bearer <key>` (create one with `clarify keys create`)",
        ))
    }
}

/// Counts the request against its key's `--rate-limit`.
fn admit(state: &AppState, key: &ApiKey) -> Result<(), ApiError> {
    let Some(limit) = &state.rate_limit else {
        return Ok(());
    };
    limit.admit(&key.id).map_err(|retry_after| {
        state.metrics.rate_limited();
        crate::state::limits::rate_limited(retry_after)
    })
}

/// The value of cookie `name`, if the request carries it.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The CSRF token of a session: derived from it, so nothing more is stored.
pub fn csrf_token(state: &AppState, session: &str) -> String {
    hex(&mac(&state.secrets.csrf, session.as_bytes()))
}

fn check_csrf(headers: &HeaderMap, state: &AppState, session: &str) -> Result<(), ApiError> {
    let refused = || {
        ApiError::forbidden(
            "csrf_failed",
            "this form post did not come from the inbox; reload the inbox and try again",
        )
    };
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, rest)| rest);
        if host.is_none() || origin_host != host {
            return Err(refused());
        }
    }
    let sent = headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(refused)?;
    let expected = csrf_token(state, session);
    if equal(sent.as_bytes(), expected.as_bytes()) {
        Ok(())
    } else {
        Err(refused())
    }
}

/// Issues a session for `key` and sets its cookie on the response `respond` makes for the new
/// session token.
pub(crate) async fn start_session(
    state: &AppState,
    key: &ApiKey,
    respond: impl FnOnce(&str) -> Response,
) -> Response {
    let token = match state
        .store
        .issue_token(TokenKind::Session, &key.id, state.config.session_ttl)
        .await
    {
        Ok(t) => t,
        Err(e) => return ApiError::store(&e).into_response(),
    };
    let mut response = respond(&token);
    let cookie = format!(
        "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict{}; Max-Age={}",
        secure(state),
        state.config.session_ttl.num_seconds()
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// Clears the session cookie on `response`.
pub(crate) fn clear_session_cookie(state: &AppState, response: &mut Response) {
    let cleared = format!(
        "{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict{}; Max-Age=0",
        secure(state)
    );
    if let Ok(value) = HeaderValue::from_str(&cleared) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// `; Secure` when people reach this server over HTTPS, so the browser never sends the session
/// over plain HTTP; nothing otherwise, or a plain-HTTP inbox could not keep its session.
fn secure(state: &AppState) -> &'static str {
    if state.config.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    }
}
