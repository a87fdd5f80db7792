//! The clarify HTTP server.
//!
//! [`app`] builds the axum router for an [`AppState`]; [`serve`] runs it on a bound listener
//! until a shutdown future completes, then lets in-flight requests finish and ends event streams
//! and long-polls cleanly. The `clarify` binary only parses flags and calls these.
//!
//! What lives where:
//! - [`api`]: the `/v1` routes over the store: requests, answers, long-poll, keys;
//! - [`auth`]: API keys, inbox sessions and CSRF; roles and tenants; [`key_cache`]: keys verified
//!   in the last half second, so most requests skip the store read;
//! - [`events`]: the `/v1/events` stream, fed from the store's event log;
//! - [`grants`]: `/v1/grants`: list, check and revoke the grants approvals gave;
//! - [`links`]: signed single-use answer links `/a/<token>`;
//! - `inbox`: the web inbox at `/` and its embedded assets;
//! - [`mcp`]: the MCP tools over Streamable HTTP at `/mcp`, behind the API's keys;
//! - [`webhooks`]: the delivery worker and its signatures;
//! - `channels`: the worker that announces requests on configured channels, and edits or
//!   follows up their announcements;
//! - `chat`: the answer path chat channels share; `slack`: Slack's signed interactivity and
//!   events at `/hooks/slack/{name}`, and its Socket Mode connections; `telegram`: updates
//!   polled from `getUpdates` or pushed to `/hooks/telegram/{name}`; `discord`: the signed
//!   interactions endpoint at `/hooks/discord/{name}`;
//! - [`audit`]: `GET /v1/audit`, a tenant's events with their audit-chain hashes;
//! - [`limits`]: `--max-waiters` and the per-key `--rate-limit`;
//! - `logs`: each request's id, route and outcome in the log;
//! - [`metrics`], [`openapi`], [`wire`] (the JSON types), [`error`] (every error response).
//!
//! This is the only crate that knows HTTP status codes.

pub mod api;
pub mod chat;
pub mod middleware;
pub mod protocols;
pub mod shared;
pub mod state;
pub mod web;

use std::future::Future;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clarify_store::{LOGIN_TTL, NewKey, Role, Store, TokenKind};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::shared::error::ApiError;

pub use crate::state::{AppState, Config};

/// The router: API, event stream, answer links, inbox, OpenAPI, health and metrics.
pub fn app(state: AppState) -> Router {
    let security_headers = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    let mut router = Router::new()
        .merge(api::routes())
        .merge(web::routes())
        .merge(protocols::routes(&state))
        .merge(chat::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::paths::Utf8Path)
        .layer(middleware::track::Track(state.clone()))
        .layer(DefaultBodyLimit::max(state.config.body_limit))
        .layer(CatchPanicLayer::custom(panicked));
    router = middleware::logs::layer(router);
    for (name, value) in security_headers {
        router = router.layer(SetResponseHeaderLayer::if_not_present(
            name,
            HeaderValue::from_static(value),
        ));
    }
    router.with_state(state)
}

/// Serves `state` on `listener` until `shutdown` completes; then stops accepting, ends event
/// streams and long-polls, and waits for in-flight requests. The webhook and channel workers run
/// meanwhile.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let token = state.shutdown.clone();
    let api_tasks = api::start(&state);
    let announcer = chat::start(&state);
    let signal = {
        let token = token.clone();
        async move {
            tokio::select! {
                () = shutdown => {}
                () = token.cancelled() => {}
            }
            token.cancel();
        }
    };
    let result = axum::serve(listener, app(state))
        .with_graceful_shutdown(signal)
        .await;
    token.cancel();
    for task in api_tasks {
        let _ = task.await;
    }
    let _ = announcer.await;
    result
}

/// On first start with an empty store: creates an admin key and a one-time inbox login link.
/// Returns `None` when the store already has keys (or another instance won the race).
pub async fn bootstrap(
    store: &Store,
    public_url: &str,
) -> Result<Option<(NewKey, String)>, clarify_store::KeyError> {
    if store.has_keys().await? {
        return Ok(None);
    }
    let key = match store.create_key("admin", Role::Admin, "default").await {
        Ok(key) => key,
        Err(clarify_store::KeyError::NameTaken(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let login = login_link(store, public_url, &key.key.id).await?;
    Ok(Some((key, login)))
}

/// A one-time inbox login link for the key `key_id`, valid for a day.
pub async fn login_link(
    store: &Store,
    public_url: &str,
    key_id: &str,
) -> Result<String, clarify_store::StoreError> {
    let token = store
        .issue_token(TokenKind::Login, key_id, LOGIN_TTL)
        .await?;
    Ok(format!(
        "{}/login/{token}",
        public_url.trim_end_matches('/')
    ))
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such route; see /openapi.json",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method; see /openapi.json",
    )
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "the server failed on this request; it has been logged",
    )
    .into_response()
}
