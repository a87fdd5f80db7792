//! Who is calling: API keys, inbox sessions, and CSRF protection.
//!
//! Agents and scripts send `Authorization: Bearer <key>`. People in the inbox sign in through
//! OpenID Connect (`/auth/oidc/start`, when `[oidc]` is configured), a one-time link
//! (`/login/<token>`) or by pasting a key (`POST /v1/login`) and then carry a session cookie (`HttpOnly`, `SameSite=Strict`, and `Secure` when the public URL is HTTPS).
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
use serde::{Deserialize, Serialize};

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
    /// The caller's key; for a person signed in through OpenID Connect, who holds none, one made
    /// up from the sign-in (its id is the principal, its name the responder name).
    pub key: ApiKey,
    /// `api` for a bearer key, `inbox` for a session cookie.
    pub channel: &'static str,
    /// How the caller signed in: `key` (a bearer key, or a session opened with one), `link` (a
    /// one-time login link), `oidc` or `passkey`.
    pub via: &'static str,
    /// Who, as the event log names them: `key:<name>` or `oidc:<issuer>#<sub>`.
    pub principal: String,
    /// The groups the identity provider says the caller is in (empty for keys).
    pub groups: Vec<String>,
    /// The session token, for a caller signed in through OpenID Connect: its session is all
    /// there is to check later.
    session: Option<SessionToken>,
    /// What a session opened with a passkey of this person holds underneath: the key id, or
    /// the person as the identity provider described them ([`Holder::Oidc`] as JSON).
    pub(crate) person_holder: String,
}

/// A session token, kept out of `Debug` output.
#[derive(Clone)]
struct SessionToken(String);

impl std::fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionToken(..)")
    }
}

/// What an inbox session holds, as the store keeps it for the session token: a bare key id for
/// a session opened with a key, or one of these as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "via", rename_all = "snake_case")]
pub(crate) enum Holder {
    /// Opened with a one-time login link for this key.
    Link { key: String },
    /// A person signed in through OpenID Connect.
    Oidc(Person),
    /// A person signed in with a passkey (its credential id), standing for what `holder` holds
    /// (a key id, or an [`Holder::Oidc`] as JSON), as it was when the passkey was registered.
    Passkey { passkey: String, holder: String },
}

impl Holder {
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A person signed in through OpenID Connect, as the session remembers them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Person {
    /// `oidc:<issuer>#<sub>`.
    pub principal: String,
    /// The responder name (`name_claim`).
    pub name: String,
    pub role: String,
    pub tenant: String,
    /// The groups claim at sign-in.
    pub groups: Vec<String>,
}

impl Caller {
    fn with_key(key: ApiKey, channel: &'static str, via: &'static str) -> Self {
        Self {
            principal: format!("key:{}", key.name),
            person_holder: key.id.clone(),
            key,
            channel,
            via,
            groups: Vec::new(),
            session: None,
        }
    }

    /// Whether the caller may still do what it began: its key is not revoked, or its
    /// OpenID Connect session has not ended. A long-lived stream asks this as it goes on.
    pub async fn is_current(&self, state: &AppState) -> Result<bool, clarify_store::StoreError> {
        match &self.session {
            Some(token) => Ok(state.store.session_holder(&token.0).await?.is_some()),
            None => Ok(state.store.key(&self.key.id).await?.is_some()),
        }
    }

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
                    "{} cannot create, wait for or cancel requests; use an agent key",
                    a_key(self.key.role)
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
                    "{} cannot answer requests; use a responder key",
                    a_key(self.key.role)
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

    /// Whether the caller holds an admin key (a bearer key, or a session opened with one), which
    /// step-up lets answer a high-risk request without a passkey confirmation.
    pub fn is_admin_key(&self) -> bool {
        self.key.role == Role::Admin && matches!(self.via, "key" | "link")
    }

    pub fn actor(&self) -> clarify_store::Actor {
        let actor = clarify_store::Actor::new(self.key.name.clone(), self.channel)
            .in_groups(self.groups.clone())
            .as_principal(self.principal.clone());
        if self.is_admin_key() {
            actor.stepped_up(clarify_store::StepUp::AdminKey)
        } else {
            actor
        }
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
                    // Most often a key made against another store than this server's (a
                    // `clarify keys create` run beside another `clarify.db`): say so.
                    ApiError::unauthorized(
                        "this API key is not in this server's store, or was revoked; keys are \
                         made against the store the server uses: `clarify keys create --db \
                         <the server's --db or CLARIFY_DB>`, or ask an admin for a key",
                    )
                })?;
            admit(state, &key)?;
            return Ok(Caller::with_key(key, "api", "key"));
        }
        if let Some(session) = cookie(&parts.headers, SESSION_COOKIE) {
            let caller = session_caller(state, session).await?.ok_or_else(|| {
                ApiError::unauthorized("the inbox session has ended; log in again")
            })?;
            admit(state, &caller.key)?;
            if !matches!(parts.method, Method::GET | Method::HEAD) {
                check_csrf(&parts.headers, state, session)?;
            }
            return Ok(caller);
        }
        Err(ApiError::unauthorized(
            "no credentials: send `Authorization: Bearer <key>` (create one with `clarify keys create`)",
        ))
    }
}

/// The name of the person this browser is signed in to the inbox as, if any.
pub(crate) async fn signed_in(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<String>, ApiError> {
    let Some(session) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    Ok(session_caller(state, session).await?.map(|c| c.key.name))
}

/// Whom this browser is signed in to the inbox as, for a page outside the API: the session
/// cookie's caller, or `None`.
pub(crate) async fn signed_in_caller(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<Caller>, ApiError> {
    match cookie(headers, SESSION_COOKIE) {
        Some(session) => session_caller(state, session).await,
        None => Ok(None),
    }
}

/// The caller an inbox session token stands for, or `None` when the session has ended (or its
/// key was revoked).
async fn session_caller(state: &AppState, token: &str) -> Result<Option<Caller>, ApiError> {
    let Some(holder) = state.store.session_holder(token).await? else {
        return Ok(None);
    };
    if let Ok(Holder::Passkey { passkey, holder }) = serde_json::from_str::<Holder>(&holder) {
        // A removed passkey ends the sessions it opened.
        if state.store.passkey_by_credential(&passkey).await?.is_none() {
            return Ok(None);
        }
        let caller = holder_caller(state, token, &holder).await?;
        return Ok(caller.map(|c| Caller {
            via: "passkey",
            ..c
        }));
    }
    holder_caller(state, token, &holder).await
}

/// Whether what a passkey stands for (a key id, or a [`Holder`] as JSON) still signs someone
/// in: its key is not revoked, its role still exists.
pub(crate) async fn holder_signs_in(state: &AppState, holder: &str) -> Result<bool, ApiError> {
    Ok(holder_caller(state, "", holder).await?.is_some())
}

/// The caller a session's holder stands for: a key id, or a [`Holder`] as JSON.
async fn holder_caller(
    state: &AppState,
    token: &str,
    holder: &str,
) -> Result<Option<Caller>, ApiError> {
    if !holder.starts_with('{') {
        let key = state.store.key(holder).await?;
        return Ok(key.map(|key| Caller::with_key(key, "inbox", "key")));
    }
    match serde_json::from_str::<Holder>(holder) {
        Ok(Holder::Passkey { .. }) => Ok(None),
        Ok(Holder::Link { key }) => {
            let key = state.store.key(&key).await?;
            Ok(key.map(|key| Caller::with_key(key, "inbox", "link")))
        }
        Ok(Holder::Oidc(person)) => {
            let Some(role) = Role::parse(&person.role) else {
                return Ok(None);
            };
            Ok(Some(Caller {
                person_holder: holder.to_owned(),
                key: ApiKey {
                    id: person.principal.clone(),
                    name: person.name,
                    role,
                    tenant: person.tenant,
                    created_at: state.store.now(),
                    revoked_at: None,
                },
                channel: "inbox",
                via: "oidc",
                principal: person.principal,
                groups: person.groups,
                session: Some(SessionToken(token.to_owned())),
            }))
        }
        Err(e) => {
            tracing::warn!(error = %e, "an inbox session holds what this build cannot read");
            Ok(None)
        }
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

/// Whether the request's `Origin` names this host: `None` without an `Origin` (a browser sends
/// one with every form post and script request that could be cross-site).
pub(crate) fn origin_is_host(headers: &HeaderMap) -> Option<bool> {
    let origin = headers.get(header::ORIGIN)?;
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest);
    Some(host.is_some() && origin_host == host)
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
    if origin_is_host(headers) == Some(false) {
        return Err(refused());
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

/// Issues a session for `holder` (a key id, or a [`Holder`] as JSON) and sets its cookie on the
/// response `respond` makes for the new session token.
pub(crate) async fn start_session(
    state: &AppState,
    holder: &str,
    respond: impl FnOnce(&str) -> Response,
) -> Response {
    let token = match state
        .store
        .issue_token(TokenKind::Session, holder, state.config.session_ttl)
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

/// A key of `role`, with its article, to begin a refusal: "an agent key", "a responder key".
pub(crate) fn a_key(role: Role) -> &'static str {
    match role {
        Role::Agent => "an agent key",
        Role::Responder => "a responder key",
        Role::Admin => "an admin key",
    }
}
