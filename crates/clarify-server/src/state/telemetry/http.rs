//! The OTLP exporters' HTTP client: the workspace's reqwest (with its rustls), behind the
//! exporter's client trait. The exporter crate's own reqwest support is another major version of
//! reqwest, which would bring a second TLS stack into the binary for one connection.
//!
//! The metric exporter is driven by the SDK's periodic reader on a thread of its own, outside
//! the tokio runtime, so each post is spawned onto the runtime the client was made in and
//! awaited from wherever the exporter runs. Every post that fails is counted, by signal, and
//! logged at most once a minute per signal.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

use super::ExportCounters;

/// Posts the exporters' bodies; every call ends within the timeout.
#[derive(Debug, Clone)]
pub(super) struct ReqwestClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    counters: Arc<OnceLock<ExportCounters>>,
    /// When a failure was last logged, per signal (traces, metrics).
    logged: Arc<Mutex<[Option<Instant>; 2]>>,
}

/// The most of a collector's answer that is read (it is a small protobuf).
const MAX_RESPONSE: usize = 1024 * 1024;

impl ReqwestClient {
    /// A client posting on the current tokio runtime.
    pub(super) fn new(timeout: Duration) -> Result<Self, String> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            "the OTLP exporter must be set up inside the server's runtime".to_owned()
        })?;
        let client = clarify_client::http::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the OTLP HTTP client: {e}"))?;
        Ok(Self {
            client,
            runtime,
            counters: Arc::default(),
            logged: Arc::default(),
        })
    }

    /// Counts failed posts into `counters` from now on.
    pub(super) fn count_into(&self, counters: ExportCounters) {
        let _ = self.counters.set(counters);
    }

    fn failed(&self, uri: &str, error: &str) {
        let (signal, slot) = if uri.ends_with("/v1/metrics") {
            ("metrics", 1)
        } else {
            ("traces", 0)
        };
        if let Some(counters) = self.counters.get() {
            match slot {
                1 => counters.metric_failures.inc(),
                _ => counters.trace_failures.inc(),
            };
        }
        let Ok(mut logged) = self.logged.lock() else {
            return;
        };
        if logged[slot].is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
            logged[slot] = Some(Instant::now());
            tracing::warn!(%error, signal, "sending to the OTLP collector failed; what could not be sent is dropped (logged at most once a minute)");
        }
    }
}

async fn post(
    client: reqwest::Client,
    request: Request<Bytes>,
) -> Result<Response<Bytes>, HttpError> {
    let (parts, body) = request.into_parts();
    let mut sent = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let status = sent.status();
    let headers = std::mem::take(sent.headers_mut());
    let mut answer = Vec::new();
    while let Some(chunk) = sent.chunk().await? {
        if answer.len() + chunk.len() > MAX_RESPONSE {
            return Err("the collector's answer is larger than 1 MiB".into());
        }
        answer.extend_from_slice(&chunk);
    }
    let mut response = Response::new(Bytes::from(answer));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

#[async_trait::async_trait]
impl HttpClient for ReqwestClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let uri = request.uri().to_string();
        let result = match self.runtime.spawn(post(self.client.clone(), request)).await {
            Ok(result) => result,
            Err(e) => Err(format!("the post was stopped: {e}").into()),
        };
        match &result {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => self.failed(
                &uri,
                &format!("the collector answered {}", response.status()),
            ),
            Err(e) => self.failed(&uri, &e.to_string()),
        }
        result
    }
}
