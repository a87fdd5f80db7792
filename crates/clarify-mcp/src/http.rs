//! The tools over Streamable HTTP, for a host that authenticates its callers.
//!
//! The host (the clarify server at `/mcp`) checks each HTTP request's credentials and attaches
//! an [`HttpCaller`] to its extensions; every tool call then works in that caller's tenant, so
//! one session cannot reach another tenant's requests even with a guessed request id. Sessions
//! (for clients on protocol versions before 2026-07-28) live in this process; a client whose
//! session is gone gets `404` and starts a new one, as the protocol asks.
//!
//! Shutting down is ordered: when the host's shutdown token fires, waiting calls return the
//! pending request id, and only once they have answered (or after [`HttpOptions::drain`]) are
//! the sessions closed, which ends their open streams so the host's graceful shutdown can
//! complete.

use std::sync::{Arc, Once};
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::upstream::Embedded;
use crate::{ClarifyMcp, Options, Target};

/// Who made an HTTP request, as the host authenticated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCaller {
    /// Every call of this request works in this tenant.
    pub tenant: String,
    /// The key's name: recorded as the agent (when the client names none) and as who cancelled.
    pub name: String,
}

/// How the HTTP endpoint behaves.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub progress_interval: Duration,
    /// A session with no message either way for this long is closed. Waiting calls that report
    /// progress keep their session open.
    pub session_idle: Duration,
    /// The largest request body accepted (then `413`).
    pub max_body: usize,
    /// How long a shutdown waits for calls in flight to return before closing sessions.
    pub drain: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            progress_interval: crate::DEFAULT_PROGRESS_INTERVAL,
            session_idle: Duration::from_secs(3_600),
            max_body: 256 * 1024,
            drain: Duration::from_secs(5),
        }
    }
}

/// The endpoint, a tower service taking any HTTP request body.
pub type HttpService = StreamableHttpService<ClarifyMcp, LocalSessionManager>;

/// The Streamable HTTP endpoint over `store` (whose tenant is replaced by each caller's).
/// `shutdown` is the host's: once it fires, waiting calls return and then sessions close.
pub fn http_service(
    store: Embedded,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> HttpService {
    let handler = ClarifyMcp::build(
        Target::PerCaller(store),
        Options {
            progress_interval: options.progress_interval,
        },
        shutdown.clone(),
    );
    let sessions_end = CancellationToken::new();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(options.session_idle);
    // Every caller must present a bearer key (never a cookie), so a page on a rebinding
    // domain cannot call in: the Host allow-list, meant for unauthenticated local servers,
    // would only refuse the server's own public name.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(sessions_end.clone())
        .with_max_request_body_bytes(options.max_body);
    // The factory runs on the first request, inside the runtime, which is where the task that
    // orders the shutdown can be started.
    let watcher = Arc::new(Once::new());
    let drain = options.drain;
    StreamableHttpService::new(
        move || {
            watcher.call_once(|| {
                let (handler, shutdown, sessions_end) =
                    (handler.clone(), shutdown.clone(), sessions_end.clone());
                tokio::spawn(async move {
                    shutdown.cancelled().await;
                    handler.finish(drain).await;
                    sessions_end.cancel();
                });
            });
            Ok(handler.clone())
        },
        Arc::new(sessions),
        config,
    )
}
