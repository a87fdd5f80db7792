//! The Prometheus registry and what is counted in it; `/metrics` (in `api`) renders it, the
//! `Track` middleware counts every HTTP request into it.
//!
//! - `clarify_http_requests_total{route,status}` and `clarify_http_request_duration_seconds{route}`:
//!   every HTTP request, by matched route (never the raw path, so ids do not explode the series);
//! - `clarify_requests_created_total`, `clarify_requests_resolved_total{status}`: what this
//!   instance created and resolved;
//! - `clarify_requests_pending`: pending requests in the whole store (all instances), counted
//!   once in a snapshot with the event log's position, then kept by the events after it
//!   (`created` adds one, each resolution takes one away): no scan of the requests per scrape;
//! - `clarify_wait_seconds{result}`: how long long-polls waited, `resolved` or `timeout`;
//! - `clarify_time_to_answer_seconds`: from creation to resolution, for resolutions made here;
//! - `clarify_webhook_failures_total`: failed delivery attempts;
//! - `clarify_waiters`: long-polls, event streams and `/mcp` requests open now, read at scrape
//!   time; `clarify_waiters_refused_total`: those refused past `--max-waiters`;
//! - `clarify_rate_limited_total`: requests refused by `--rate-limit`.

use std::time::Duration;

use clarify_store::RequestRecord;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteStatus {
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    http_requests: Family<RouteStatus, Counter>,
    http_duration: HistogramFamily<RouteLabel>,
    created: Counter,
    resolved: Family<StatusLabel, Counter>,
    pending: Gauge,
    /// The last event `pending` has counted: `None` until it is first counted.
    pending_seq: tokio::sync::Mutex<Option<u64>>,
    waits: HistogramFamily<ResultLabel>,
    time_to_answer: Histogram,
    webhook_failures: Counter,
    waiters: Gauge,
    waiters_refused: Counter,
    rate_limited: Counter,
}

fn latency_histogram() -> Histogram {
    // 0.5 ms to about 65 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 18))
}

impl Metrics {
    /// Brings `clarify_requests_pending` up to the event log: the events after the last one
    /// counted (the first time, a count in one snapshot with the log's position).
    pub(crate) async fn count_pending(
        &self,
        store: &clarify_store::Store,
    ) -> Result<(), clarify_store::StoreError> {
        const PAGE: usize = 1_000;
        let mut at = self.pending_seq.lock().await;
        let mut seq = match *at {
            Some(seq) => seq,
            None => {
                let (pending, seq) = store.pending_at().await?;
                self.pending.set(i64::try_from(pending).unwrap_or(i64::MAX));
                seq
            }
        };
        loop {
            let events = store.events_after(None, seq, PAGE).await?;
            for event in &events {
                if event.kind == clarify_store::EventKind::Created {
                    self.pending.inc();
                } else if event.kind.resolves() {
                    self.pending.dec();
                }
                seq = event.seq;
            }
            *at = Some(seq);
            if events.len() < PAGE {
                return Ok(());
            }
        }
    }

    pub fn new() -> Self {
        let mut registry = Registry::default();
        let http_requests = Family::<RouteStatus, Counter>::default();
        let http_duration: HistogramFamily<RouteLabel> =
            Family::new_with_constructor(latency_histogram);
        let created = Counter::default();
        let resolved = Family::<StatusLabel, Counter>::default();
        let pending = Gauge::default();
        let waits: HistogramFamily<ResultLabel> = Family::new_with_constructor(latency_histogram);
        let time_to_answer = Histogram::new(exponential_buckets(0.01, 2.0, 24));
        let webhook_failures = Counter::default();
        let waiters = Gauge::default();
        let waiters_refused = Counter::default();
        let rate_limited = Counter::default();
        registry.register(
            "clarify_http_requests",
            "HTTP requests by route and status code",
            http_requests.clone(),
        );
        registry.register(
            "clarify_http_request_duration_seconds",
            "HTTP request handling time by route",
            http_duration.clone(),
        );
        registry.register(
            "clarify_requests_created",
            "Requests created through this instance",
            created.clone(),
        );
        registry.register(
            "clarify_requests_resolved",
            "Requests resolved through this instance, by status",
            resolved.clone(),
        );
        registry.register(
            "clarify_requests_pending",
            "Pending requests in the store",
            pending.clone(),
        );
        registry.register(
            "clarify_wait_seconds",
            "How long long-polls waited, by result",
            waits.clone(),
        );
        registry.register(
            "clarify_time_to_answer_seconds",
            "From creation to resolution, for resolutions made here",
            time_to_answer.clone(),
        );
        registry.register(
            "clarify_webhook_failures",
            "Failed webhook delivery attempts",
            webhook_failures.clone(),
        );
        registry.register(
            "clarify_waiters",
            "Long-polls, event streams and /mcp requests open on this instance",
            waiters.clone(),
        );
        registry.register(
            "clarify_waiters_refused",
            "Long-polls, event streams and /mcp requests refused past --max-waiters",
            waiters_refused.clone(),
        );
        registry.register(
            "clarify_rate_limited",
            "Requests refused by the per-key --rate-limit",
            rate_limited.clone(),
        );
        Self {
            registry,
            http_requests,
            http_duration,
            created,
            resolved,
            pending,
            pending_seq: tokio::sync::Mutex::new(None),
            waits,
            time_to_answer,
            webhook_failures,
            waiters,
            waiters_refused,
            rate_limited,
        }
    }

    pub fn created(&self) {
        self.created.inc();
    }

    pub fn resolved(&self, record: &RequestRecord) {
        self.resolved
            .get_or_create(&StatusLabel {
                status: record.status.to_string(),
            })
            .inc();
        if let Some(at) = record.resolved_at() {
            let secs = (at - record.created_at).num_milliseconds().max(0) as f64 / 1000.0;
            self.time_to_answer.observe(secs);
        }
    }

    pub fn waited(&self, took: Duration, resolved: bool) {
        let result = if resolved { "resolved" } else { "timeout" };
        self.waits
            .get_or_create(&ResultLabel { result })
            .observe(took.as_secs_f64());
    }

    pub fn webhook_failed(&self) {
        self.webhook_failures.inc();
    }

    pub fn waiter_refused(&self) {
        self.waiters_refused.inc();
    }

    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }

    /// Counts one HTTP request to `route` (the matched route, never the raw path) that answered
    /// `status` after `took`.
    pub fn http_request(&self, route: String, status: u16, took: Duration) {
        self.http_requests
            .get_or_create(&RouteStatus {
                route: route.clone(),
                status,
            })
            .inc();
        self.http_duration
            .get_or_create(&RouteLabel { route })
            .observe(took.as_secs_f64());
    }

    /// The metrics in the OpenMetrics text format, with `waiters` the waiters open now.
    pub fn encode(&self, waiters: usize) -> Result<String, std::fmt::Error> {
        self.waiters.set(i64::try_from(waiters).unwrap_or(i64::MAX));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
