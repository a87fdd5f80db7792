//! The tools over Streamable HTTP, for a host that authenticates its callers.
//!
//! The host (the clarify server at `/mcp`) checks each HTTP request's credentials and attaches
//! an [`HttpCaller`] to its extensions; every tool call then works in that caller's tenant, so
//! one session cannot reach another tenant's requests even with a guessed request id. Sessions
//! (for clients on protocol versions before 2026-07-28) live in this process; a client whose
//! session is gone gets `404` and starts a new one, as the protocol asks.
//!
//! Shutting down is ordered: when the host's shutdown token fires, waiting calls return the
//! pending request id; once every POST response has been written to its end (or after
//! [`HttpOptions::drain`]), the sessions close, which ends their open event streams so the
//! host's graceful shutdown can complete.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Once};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::upstream::Embedded;
use crate::{ClarifyMcp, Options, Target};

/// Who made an HTTP request, as the host authenticated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCaller {
    /// Every call of this request works in this tenant.
    pub tenant: String,
    /// The key's name: recorded as the agent (when the client names none), as who cancelled,
    /// and as who answered in the client.
    pub name: String,
    /// The key's id: a `requestState` handed to this caller opens only for the same key.
    pub key_id: String,
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
    /// How long a shutdown waits for responses in flight before closing sessions.
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

/// The endpoint: a tower service taking any HTTP request body.
#[derive(Clone)]
pub struct HttpService {
    inner: StreamableHttpService<ClarifyMcp, LocalSessionManager>,
    /// Every POST response until its body has been written (or dropped).
    responses: TaskTracker,
    shutdown: CancellationToken,
    sessions_end: CancellationToken,
    drain: Duration,
    watcher: Arc<Once>,
}

impl fmt::Debug for HttpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpService")
            .field("responses", &self.responses.len())
            .finish_non_exhaustive()
    }
}

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
            ..Options::default()
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
    HttpService {
        inner: StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(sessions), config),
        responses: TaskTracker::new(),
        shutdown,
        sessions_end,
        drain: options.drain,
        watcher: Arc::new(Once::new()),
    }
}

impl HttpService {
    /// Starts, once and inside the runtime, the task that closes the sessions after shutdown.
    fn watch_shutdown(&self) {
        self.watcher.call_once(|| {
            let (responses, shutdown, sessions_end, drain) = (
                self.responses.clone(),
                self.shutdown.clone(),
                self.sessions_end.clone(),
                self.drain,
            );
            tokio::spawn(async move {
                shutdown.cancelled().await;
                responses.close();
                if tokio::time::timeout(drain, responses.wait()).await.is_err() {
                    tracing::warn!("MCP responses still open at shutdown; closing their sessions");
                }
                sessions_end.cancel();
            });
        });
    }
}

type Response = http::Response<BoxBody<Bytes, Infallible>>;

impl<B> tower::Service<http::Request<B>> for HttpService
where
    B: http_body::Body + Send + 'static,
    B::Error: fmt::Display,
    B::Data: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.watch_shutdown();
        let in_flight = (request.method() == http::Method::POST).then(|| self.responses.token());
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(match in_flight {
                None => response,
                Some(token) => response.map(|body| {
                    body.map_frame(move |frame| {
                        let _held_until_the_body_ends = &token;
                        frame
                    })
                    .boxed()
                }),
            })
        })
    }
}
