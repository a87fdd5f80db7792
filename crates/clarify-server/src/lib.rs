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
pub mod audit;
mod auth;
mod channels;
mod chat;
mod discord;
pub mod events;
pub mod grants;
mod html;
mod inbox;
pub mod key_cache;
pub mod limits;
pub mod links;
mod logs;
pub mod mcp;
pub mod metrics;
pub mod openapi;
mod paths;
pub mod shared;
mod slack;
mod telegram;
pub mod webhooks;
pub mod wire;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use clarify_core::Limits;
use clarify_store::{LOGIN_TTL, NewKey, Role, Store, TokenKind};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::shared::error::ApiError;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct Config {
    /// The base URL people reach this server at, for answer and login links.
    pub public_url: String,
    pub limits: Limits,
    /// The largest request body accepted (then `413`).
    pub body_limit: usize,
    /// The most long-polls, event streams and `/mcp` requests at once (then
    /// `503 too_many_waiters`).
    pub max_waiters: usize,
    /// Requests per second per key (then `429 rate_limited`); `None`: no limit.
    pub rate_limit: Option<std::num::NonZeroU32>,
    /// How often the event log is checked for events written by other instances.
    pub event_poll: Duration,
    pub webhooks: webhooks::WebhookConfig,
    /// How long an inbox session lasts.
    pub session_ttl: chrono::TimeDelta,
    /// The `/mcp` endpoint (its body limit is `body_limit`).
    pub mcp: clarify_mcp::HttpOptions,
    /// The channels requests are announced on (the store's `announce` picks which).
    pub channels: Vec<clarify_channels::Channel>,
    /// Chat users (`slack:U012ABCDEF`) and the responder names they answer as.
    pub identities: std::collections::BTreeMap<String, String>,
}

impl Config {
    pub fn new(public_url: impl Into<String>) -> Self {
        Self {
            public_url: public_url.into().trim_end_matches('/').to_owned(),
            limits: Limits::default(),
            body_limit: 256 * 1024,
            max_waiters: 10_000,
            rate_limit: None,
            event_poll: Duration::from_millis(100),
            webhooks: webhooks::WebhookConfig::default(),
            session_ttl: chrono::TimeDelta::days(7),
            mcp: clarify_mcp::HttpOptions::default(),
            channels: Vec::new(),
            identities: std::collections::BTreeMap::new(),
        }
    }
}

/// Everything a handler needs; cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

#[derive(Debug)]
pub struct Shared {
    pub store: Store,
    pub config: Config,
    pub secrets: Secrets,
    pub hub: events::EventHub,
    pub metrics: metrics::Metrics,
    /// Wakes the webhook worker when this instance resolves a request.
    pub webhooks_due: Notify,
    /// Wakes the channel worker after a request was created here.
    pub channels_due: Notify,
    /// Cancelled when the server begins to shut down.
    pub shutdown: CancellationToken,
    /// Long-polls, event streams and `/mcp` requests in flight.
    pub waiters: limits::Waiters,
    pub rate_limit: Option<limits::RateLimit>,
    /// Bearer keys verified in the last half second.
    pub keys: key_cache::KeyCache,
    /// Calls chat platforms make on an inbound answer's behalf (a modal, a private notice).
    pub http: reqwest::Client,
}

/// Server secrets, read from the store at start so every instance shares them.
#[derive(Clone)]
pub struct Secrets {
    pub link: Vec<u8>,
    pub csrf: Vec<u8>,
    pub webhook: Vec<u8>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(..)")
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// Reads the server secrets from the store (creating them on first start).
    pub async fn new(store: Store, config: Config) -> Result<Self, clarify_store::StoreError> {
        let secrets = Secrets {
            link: store.secret("link").await?,
            csrf: store.secret("csrf").await?,
            webhook: store.secret("webhook").await?,
        };
        let hub = events::EventHub::new(store.last_event_seq().await?);
        let waiters = limits::Waiters::new(config.max_waiters);
        let rate_limit = config
            .rate_limit
            .map(|n| limits::RateLimit::new(n, store.clock()));
        Ok(Self(Arc::new(Shared {
            store,
            secrets,
            hub,
            metrics: metrics::Metrics::new(),
            webhooks_due: Notify::new(),
            channels_due: Notify::new(),
            shutdown: CancellationToken::new(),
            waiters,
            rate_limit,
            keys: key_cache::KeyCache::new(),
            http: reqwest::Client::builder()
                .timeout(config.webhooks.timeout)
                .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION")))
                .build()
                .unwrap_or_default(),
            config,
        })))
    }

    /// A permit to wait (a long-poll, a stream, an `/mcp` request), or `503 too_many_waiters`.
    pub(crate) fn waiter(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
        self.waiters
            .enter()
            .inspect_err(|_| self.metrics.waiter_refused())
    }

    /// Tells this instance's event streams and outbox workers that `record` changed. The
    /// webhook worker is woken only for a request with a callback URL: no other write made
    /// here queues a webhook, and each wake-up costs it a claiming write to the store.
    pub(crate) fn changed(&self, record: &clarify_store::RequestRecord) {
        self.hub.poke();
        if record.request.callback_url.is_some() {
            self.webhooks_due.notify_one();
        }
        self.channels_due.notify_one();
    }
}

/// The router: API, event stream, answer links, inbox, OpenAPI, health and metrics.
pub fn app(state: AppState) -> Router {
    let security_headers = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    let mut router = Router::new()
        .merge(api::routes())
        .merge(auth::routes())
        .merge(grants::routes())
        .merge(links::routes())
        .merge(mcp::routes(&state))
        .route("/v1/events", get(events::stream))
        .route("/v1/audit", get(audit::list))
        .route("/hooks/slack/{name}", axum::routing::post(slack::hook))
        .route(
            "/hooks/telegram/{name}",
            axum::routing::post(telegram::hook),
        )
        .route("/hooks/discord/{name}", axum::routing::post(discord::hook))
        .route("/openapi.json", get(openapi::document))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics::render))
        .merge(inbox::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(paths::Utf8Path)
        .layer(metrics::Track(state.clone()))
        .layer(DefaultBodyLimit::max(state.config.body_limit))
        .layer(CatchPanicLayer::custom(panicked));
    router = logs::layer(router);
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
    let tailer = tokio::spawn(events::tail(state.clone()));
    let worker = tokio::spawn(webhooks::run(state.clone()));
    let announcer = tokio::spawn(channels::run(state.clone()));
    slack::spawn_sockets(&state);
    telegram::spawn_pollers(&state);
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
    let _ = tailer.await;
    let _ = worker.await;
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

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is alive", content_type = "text/plain")))]
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: the store answers.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, description = "The store answers", content_type = "text/plain"),
    (status = 503, description = "The store is unreachable", body = crate::shared::error::ErrorBody)))]
pub async fn readyz(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    if state.shutdown.is_cancelled() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "this instance is shutting down",
        )
        .into_response();
    }
    match state.store.ping().await {
        Ok(()) => "ready\n".into_response(),
        Err(e) => ApiError::store(&e).into_response(),
    }
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
