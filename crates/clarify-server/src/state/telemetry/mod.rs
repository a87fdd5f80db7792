//! OpenTelemetry over OTLP/HTTP (`--otlp-endpoint`): a trace per request and the metrics of
//! `/metrics`, sent to a collector. Nothing of it exists unless the endpoint is configured.
//!
//! **Traces.** A request's trace is made of spans sent by whichever process made each change,
//! so several instances (or a restart in between) still give one trace: its id is derived from
//! the request id ([`spans::ids`]), not kept anywhere.
//! - `clarify.request`, the root: from creation to resolution, sent when the request resolves,
//!   with its agent, tool, status, responder and surface;
//! - `clarify.create`: the creation, sent by the process that stored it;
//! - `clarify.announce`: each attempt to post (or edit, remind, escalate) it on a channel;
//! - `clarify.webhook`: each attempt to deliver its webhook;
//! - `clarify.resolve`: the resolution itself.
//!
//! The store tells this module of creations and resolutions ([`clarify_store::Observer`]), so
//! every path (HTTP, MCP, A2A, chat, links, rules, expiry) is covered without each one calling
//! it; the outbox workers tell it of their attempts.
//!
//! **Never in the way.** Handing a change over is a `try_send` into a bounded queue (drops are
//! counted in `clarify_otlp_dropped_total{signal="traces"}`); one worker turns changes into
//! spans and exports them in batches (at most [`BATCH`] spans or [`LINGER`] apart), each export
//! given up after the timeout (failures counted in `clarify_otlp_export_failures_total` and
//! logged at most once a minute). After a failed export the worker leaves the collector, and its
//! queue, alone for a second (doubling up to [`MAX_PAUSE`]), so while the collector is down the
//! queue stays full and a change costs the request path one failed `try_send`. A collector that
//! is down or slow costs a request nothing.
//!
//! **Metrics.** The instruments of `/metrics` are mirrored into the OpenTelemetry SDK's
//! (`state::metrics`) and exported by the SDK's periodic reader (on its own thread) every
//! `OTEL_METRIC_EXPORT_INTERVAL` milliseconds (default 60 s), cumulatively as Prometheus counts.
//! At shutdown what is queued is sent once more, and the metrics a last time, within [`FLUSH`].
//!
//! Both exporters post through [`http::ReqwestClient`], which counts every post that fails in
//! `clarify_otlp_export_failures_total{signal}` and logs at most once a minute per signal.

mod http;
pub(crate) mod spans;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use clarify_store::{Attempt, Delivery, RequestRecord};
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;

use crate::state::AppState;

/// The most spans sent in one export.
pub const BATCH: usize = 512;
/// The longest a span waits for its batch to fill before it is sent.
pub const LINGER: Duration = Duration::from_secs(1);
/// How long the last export at shutdown may take.
pub const FLUSH: Duration = Duration::from_secs(3);
/// How long the worker leaves a collector alone after a failed export, doubled after each
/// failure in a row up to [`MAX_PAUSE`].
pub const PAUSE: Duration = Duration::from_secs(1);
pub const MAX_PAUSE: Duration = Duration::from_secs(30);

/// `--otlp-endpoint` and what goes with it.
#[derive(Debug, Clone)]
pub struct OtlpConfig {
    /// The collector's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` is: traces go to
    /// `/v1/traces` under it and metrics to `/v1/metrics`.
    pub endpoint: url::Url,
    /// How often the metrics are sent.
    pub metrics_interval: Duration,
    /// How long one export (with its retries) may take before it is given up.
    pub timeout: Duration,
    /// How many changes may wait for the worker; more are dropped and counted.
    pub queue: usize,
}

impl OtlpConfig {
    /// The defaults for a collector at `endpoint` (`http://collector:4318`), with
    /// `OTEL_METRIC_EXPORT_INTERVAL` and `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds) read from
    /// the environment as the OpenTelemetry SDKs read them.
    pub fn new(endpoint: &str) -> Result<Self, String> {
        let url = url::Url::parse(endpoint.trim())
            .map_err(|e| format!("{endpoint:?} is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "{endpoint:?} is not an http:// or https:// address of an OTLP/HTTP collector \
                 (e.g. http://127.0.0.1:4318)"
            ));
        }
        let millis = |name: &str, default: u64| -> Result<Duration, String> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|&ms| ms > 0)
                    .map(Duration::from_millis)
                    .ok_or_else(|| {
                        format!("{name}={v:?} is not a positive number of milliseconds")
                    }),
                Err(_) => Ok(Duration::from_millis(default)),
            }
        };
        Ok(Self {
            endpoint: url,
            metrics_interval: millis("OTEL_METRIC_EXPORT_INTERVAL", 60_000)?,
            timeout: millis("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)?,
            queue: 4_096,
        })
    }

    /// The URL a signal is posted to: `v1/traces` or `v1/metrics` under the endpoint's path.
    fn signal_url(&self, signal: &str) -> String {
        let base = self.endpoint.as_str().trim_end_matches('/');
        format!("{base}/v1/{signal}")
    }
}

/// A change handed to the worker.
#[derive(Debug)]
pub(crate) enum Change {
    Created(Box<RequestRecord>),
    Resolved(Box<RequestRecord>),
    /// Expired by the reaper: the worker reads the records back.
    Expired(Vec<String>),
    /// One attempt of an outbox worker.
    Attempt(Box<spans::Attempted>),
}

/// The counters of the export itself, in the Prometheus registry.
#[derive(Debug, Clone, Default)]
pub struct ExportCounters {
    /// Changes dropped because the queue was full.
    pub dropped: Counter,
    /// Posts of spans that failed (refused, unreachable, timed out, or not `2xx`).
    pub trace_failures: Counter,
    /// Posts of metrics that failed.
    pub metric_failures: Counter,
}

/// The handle the rest of the server tells changes to.
#[derive(Debug)]
pub struct Telemetry {
    queue: mpsc::Sender<Change>,
    counters: ExportCounters,
    /// Taken by the worker when the server starts.
    parts: Mutex<Option<Parts>>,
}

/// What the worker owns.
struct Parts {
    changes: mpsc::Receiver<Change>,
    traces: opentelemetry_otlp::SpanExporter,
    /// Its periodic reader exports the metrics; shut down last, which exports them once more.
    provider: SdkMeterProvider,
    config: OtlpConfig,
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Parts(..)")
    }
}

/// The exporters of one collector: the meter the metrics are mirrored into, and the rest, to
/// finish once the metrics (which hold the export's own counters) exist.
pub struct Setup {
    pub meter: opentelemetry::metrics::Meter,
    client: http::ReqwestClient,
    traces: opentelemetry_otlp::SpanExporter,
    provider: SdkMeterProvider,
    config: OtlpConfig,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Setup(..)")
    }
}

impl Setup {
    /// The telemetry handle, counting into `counters`.
    pub fn finish(self, counters: ExportCounters) -> Arc<Telemetry> {
        self.client.count_into(counters.clone());
        let (queue, changes) = mpsc::channel(self.config.queue.max(1));
        Arc::new(Telemetry {
            queue,
            counters,
            parts: Mutex::new(Some(Parts {
                changes,
                traces: self.traces,
                provider: self.provider,
                config: self.config,
            })),
        })
    }
}

/// Sets up the exporters for `config`. Must run inside the tokio runtime, which the exporters'
/// posts run on.
pub fn setup(config: &OtlpConfig) -> Result<Setup, String> {
    let resource = Resource::builder()
        .with_service_name("clarify")
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let client = http::ReqwestClient::new(config.timeout)?;
    let mut traces = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client.clone())
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(config.signal_url("traces"))
        .with_timeout(config.timeout)
        .build()
        .map_err(|e| format!("cannot set up the OTLP trace exporter: {e}"))?;
    traces.set_resource(&resource);
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_http_client(client.clone())
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(config.signal_url("metrics"))
        .with_timeout(config.timeout)
        .with_temporality(Temporality::Cumulative)
        .build()
        .map_err(|e| format!("cannot set up the OTLP metric exporter: {e}"))?;
    let reader = PeriodicReader::builder(metrics)
        .with_interval(config.metrics_interval)
        .build();
    let provider = SdkMeterProvider::builder()
        .with_reader(reader)
        .with_resource(resource)
        .build();
    let meter = opentelemetry::metrics::MeterProvider::meter(&provider, "clarify");
    Ok(Setup {
        meter,
        client,
        traces,
        provider,
        config: config.clone(),
    })
}

impl Telemetry {
    /// Queues the change `make` makes, or counts it dropped without making it when the queue is
    /// full (the worker pauses on a failing collector with the queue full).
    fn hand_over(&self, make: impl FnOnce() -> Change) {
        if self.queue.capacity() == 0 || self.queue.try_send(make()).is_err() {
            self.counters.dropped.inc();
        }
    }

    /// An outbox worker's `attempt` at `delivery` (a channel post or a webhook), just made, as
    /// a span of its request.
    pub(crate) fn attempted(&self, delivery: &Delivery, attempt: &Attempt) {
        let ended = SystemTime::now();
        let started = ended
            .checked_sub(Duration::from_millis(attempt.duration_ms))
            .unwrap_or(ended);
        self.hand_over(|| {
            Change::Attempt(Box::new(spans::Attempted {
                request_id: delivery.request_id.clone(),
                tenant: delivery.tenant.clone(),
                name: if delivery.channel.is_some() {
                    "clarify.announce"
                } else {
                    "clarify.webhook"
                },
                started,
                ended,
                channel: delivery.channel.clone(),
                event: delivery
                    .event
                    .map_or("resolution", |e| e.as_str())
                    .to_owned(),
                attempt: attempt.number,
                http_status: attempt.status_code,
                error: attempt.error.clone(),
            }))
        });
    }

    /// Starts the worker (once; `None` after the first call), which runs until the server
    /// shuts down and then sends what is left within [`FLUSH`].
    pub(crate) fn start(&self, state: AppState) -> Option<tokio::task::JoinHandle<()>> {
        let parts = self.parts.lock().ok()?.take()?;
        Some(tokio::spawn(run(parts, state)))
    }
}

impl clarify_store::Observer for Telemetry {
    fn created(&self, record: &RequestRecord) {
        self.hand_over(|| Change::Created(Box::new(record.clone())));
    }
    fn resolved(&self, record: &RequestRecord) {
        self.hand_over(|| Change::Resolved(Box::new(record.clone())));
    }
    fn expired(&self, ids: &[String]) {
        self.hand_over(|| Change::Expired(ids.to_vec()));
    }
}

async fn run(mut parts: Parts, state: AppState) {
    let store = &state.store;
    let scope = spans::scope();
    let mut batch: Vec<SpanData> = Vec::new();
    let mut oldest: Option<tokio::time::Instant> = None;
    let mut pause = Duration::ZERO;
    // `clarify_requests_pending` is brought up to the event log as often as the metrics are
    // sent, as a scrape of /metrics brings it.
    let mut pending_due = tokio::time::interval(parts.config.metrics_interval);
    pending_due.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let linger = async {
            match oldest {
                Some(at) => tokio::time::sleep_until(at + LINGER).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = state.shutdown.cancelled() => break,
            change = parts.changes.recv() => {
                let Some(change) = change else { break };
                spans::of(change, store, &scope, &mut batch).await;
                if !batch.is_empty() && oldest.is_none() {
                    oldest = Some(tokio::time::Instant::now());
                }
                if batch.len() < BATCH {
                    continue;
                }
            }
            () = linger => {}
            _ = pending_due.tick() => {
                count_pending(&state).await;
                continue;
            }
        }
        oldest = None;
        // A collector that holds the export does not hold up the shutdown.
        let sent = tokio::select! {
            sent = export(&parts, std::mem::take(&mut batch)) => sent,
            () = state.shutdown.cancelled() => break,
        };
        // A collector that refuses or fails is left alone for a while, and so is the queue:
        // what the server does meanwhile finds it full and is dropped (and counted) at the
        // cost of a failed `try_send`, instead of being made into spans that cannot be sent.
        pause = match sent {
            true => Duration::ZERO,
            false => (pause * 2).clamp(PAUSE, MAX_PAUSE),
        };
        if !pause.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = state.shutdown.cancelled() => break,
            }
        }
    }
    // Shutdown: what is queued, then the metrics once more, within FLUSH.
    let last = async {
        while let Ok(change) = parts.changes.try_recv() {
            spans::of(change, store, &scope, &mut batch).await;
        }
        for chunk in std::mem::take(&mut batch).chunks(BATCH) {
            if !export(&parts, chunk.to_vec()).await {
                break;
            }
        }
        count_pending(&state).await;
        let provider = parts.provider.clone();
        // The reader's own thread exports; this waits for it without holding a runtime thread.
        let _ = tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(FLUSH)).await;
    };
    if tokio::time::timeout(FLUSH + FLUSH, last).await.is_err() {
        tracing::warn!("the last OTLP export did not finish in time; it is dropped");
    }
}

async fn count_pending(state: &AppState) {
    if let Err(e) = state.metrics.count_pending(&state.store).await {
        tracing::debug!(error = %e, "counting pending requests for the OTLP export failed");
    }
}

/// Sends one batch of spans; whether it went. A failure is counted and logged by the HTTP
/// client, and the batch is dropped.
async fn export(parts: &Parts, batch: Vec<SpanData>) -> bool {
    if batch.is_empty() {
        return true;
    }
    match tokio::time::timeout(parts.config.timeout, parts.traces.export(batch)).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "an OTLP span export failed");
            false
        }
        Err(_) => false,
    }
}
