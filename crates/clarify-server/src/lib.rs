//! The clarify HTTP server.
//!
//! [`app`] builds the axum router for an [`AppState`]; [`serve`] runs it on a bound listener
//! until a shutdown future completes, then lets in-flight requests finish and ends event streams
//! and long-polls cleanly. The `clarify` binary only parses flags and calls these.
//!
//! One folder a door; each folder's `mod.rs` opens with the one rule of its room:
//! - [`api`]: `/v1` and the machine endpoints (OpenAPI, health, metrics), in JSON; the event
//!   tailer;
//! - [`web`]: what a browser opens: the inbox and its assets, answer links, login links, and
//!   the HTML they render;
//! - [`chat`]: each chat platform's inbound routes and connections;
//! - [`outbox`]: the workers that send what the store queued (webhooks, channel notifications,
//!   Web Push), their one drain loop and their one retry rule;
//! - [`protocols`]: agent protocols (MCP, A2A, the AG-UI proxy) behind the API's keys; the AG-UI
//!   resume worker;
//! - [`middleware`]: what runs around every handler: who is calling, logs, metrics, path checks.
//!
//! Below the rooms, used by all of them and using none:
//! - [`state`]: what an instance holds between requests ([`AppState`], [`Config`], the event
//!   hub, the metrics registry, the limits, the key cache);
//! - [`shared`]: every error response, the record's JSON, body extraction, signatures, HTML
//!   escaping; it imports nothing else of the crate.
//!
//! Rooms may use `state` and `shared`, and a room may use another only while the import graph
//! between folders stays free of circles (today `api`, `web` and `protocols` use `middleware`,
//! `chat` uses `web` for account links, and `outbox`'s channel worker uses `chat` to restore
//! Teams' conversations). `tests/it/structure.rs` reads the source and fails, naming the path,
//! on a circle or on `shared` reaching outside itself. This crate root only assembles the rooms:
//! nothing refers back to it.
//!
//! This is the only crate that knows HTTP status codes.

pub mod api;
pub mod chat;
pub mod middleware;
pub mod outbox;
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
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::shared::error::ApiError;

pub use crate::shared::outbound::OutboundGuard;
pub use crate::state::telemetry::OtlpConfig;
pub use crate::state::{AppState, Config};

/// The router: every room's routes, the fallbacks, and the middleware around them.
///
/// The middleware is one stack applied once: `Router::layer` boxes each layer it is given around
/// every route, and a route's boxed service is cloned for each request at every level it was
/// boxed at, so ten layers applied one by one cost 55 boxed clones a request where one stack
/// costs one.
pub fn app(state: AppState) -> Router {
    // Outermost first: the security headers, the request id and the log span, then the panic
    // guard, the body limit, the metrics and the UTF-8 path check around the route.
    let middleware = ServiceBuilder::new()
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(middleware::logs::layer())
        .layer(CatchPanicLayer::custom(panicked))
        .layer(DefaultBodyLimit::max(state.config.body_limit))
        .layer(middleware::track::Track(state.clone()))
        .layer(middleware::paths::Utf8Path);
    Router::new()
        .merge(api::routes())
        .merge(web::routes())
        .merge(protocols::routes(&state))
        .merge(chat::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware)
        .with_state(state)
}

/// Serves `state` on `listener` until `shutdown` completes; then stops accepting, ends event
/// streams and long-polls, and waits for in-flight requests. The outbox workers run meanwhile.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let token = state.shutdown.clone();
    let api_tasks = api::start(&state);
    let workers = outbox::start(&state);
    chat::start(&state);
    let resumer = protocols::start(&state);
    let exporter = state
        .telemetry
        .as_ref()
        .and_then(|t| t.start(state.clone()));
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
    tokio::spawn(signal);
    let result = accept(listener, app(state), &token).await;
    token.cancel();
    for task in api_tasks.into_iter().chain(workers) {
        let _ = task.await;
    }
    if let Some(resumer) = resumer {
        let _ = resumer.await;
    }
    // Last: what the workers did while stopping is exported too.
    if let Some(exporter) = exporter {
        let _ = exporter.await;
    }
    result
}

/// Accepts connections on `listener` until `token` is cancelled, each served by hyper-util's
/// connection builder restricted to HTTP/1 (with upgrades, as `axum::serve` serves them: plain
/// hyper HTTP/1 left a browser's answer unanswered about one time in three in the quorum
/// browser test); then has each finish its request in flight and close, and waits for them.
///
/// Hand-written instead of `axum::serve`, whose HTTP/1 + HTTP/2 connection holds about 86 KiB
/// per open connection before any request, against 2.4 KiB restricted to HTTP/1 (a waiting
/// agent: 107 KiB against 23 KiB; `cargo bench -p clarify --bench http -- fleet`): a fleet of
/// waiting agents is mostly open connections. The loop also gives each connection the token
/// that closes it alone (the event streams' stall rule). Clients speak HTTP/1.1 to clarify (a
/// TLS proxy in front speaks it too).
async fn accept(
    listener: TcpListener,
    app: axum::Router,
    token: &tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    let connections = tokio_util::task::TaskTracker::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // the listener itself is fine; wait a little rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = token.cancelled() => break,
        };
        // Small responses and event-stream frames go out at once rather than after Nagle's
        // wait for an acknowledgement (up to 40 ms on a busy stream).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "setting TCP_NODELAY failed");
        }
        // Cancelled at shutdown (with the server's token) or alone, by the event streams'
        // stall rule: then the connection is dropped at once.
        let kill = token.child_token();
        let service = {
            let (app, connection) = (app.clone(), state::hub::Connection(kill.clone()));
            hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(connection.clone());
                tower::ServiceExt::oneshot(app.clone(), request)
            })
        };
        let token = token.clone();
        connections.spawn(async move {
            let builder =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .http1_only();
            let connection = builder
                .serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = kill.cancelled() => if token.is_cancelled() {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    drop(listener);
    connections.close();
    connections.wait().await;
    Ok(())
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
    let key = match store
        .create_key(
            "admin",
            Role::Admin,
            "default",
            &clarify_store::Actor::system(),
        )
        .await
    {
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
