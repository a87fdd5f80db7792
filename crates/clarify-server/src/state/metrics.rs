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
//! - `clarify_rate_limited_total`: requests refused by `--rate-limit`;
//! - `clarify_otlp_dropped_total`: changes not sent to the OTLP collector because its queue was
//!   full; `clarify_otlp_export_failures_total{signal}`: exports that failed (`traces`,
//!   `metrics`). Both stay 0 without `--otlp-endpoint`.
//!
//! With `--otlp-endpoint` every instrument is mirrored into OpenTelemetry's under the same name
//! (the registry's base name: `clarify_http_requests` for `clarify_http_requests_total`), with
//! the same labels as attributes and the same histogram buckets, for the telemetry worker to
//! export.

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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SignalLabel {
    signal: &'static str,
}

/// The registry's instruments in OpenTelemetry's, when `--otlp-endpoint` is set.
#[derive(Debug)]
struct Mirror {
    http_requests: opentelemetry::metrics::Counter<u64>,
    http_duration: opentelemetry::metrics::Histogram<f64>,
    created: opentelemetry::metrics::Counter<u64>,
    resolved: opentelemetry::metrics::Counter<u64>,
    waits: opentelemetry::metrics::Histogram<f64>,
    time_to_answer: opentelemetry::metrics::Histogram<f64>,
    webhook_failures: opentelemetry::metrics::Counter<u64>,
    waiters_refused: opentelemetry::metrics::Counter<u64>,
    rate_limited: opentelemetry::metrics::Counter<u64>,
    /// Read at collection: `clarify_requests_pending`, `clarify_waiters` and the export's own
    /// counters. Kept so their callbacks stay registered.
    _observed: Vec<opentelemetry::metrics::ObservableGauge<i64>>,
    _counted: Vec<opentelemetry::metrics::ObservableCounter<u64>>,
}

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
    export: crate::state::telemetry::ExportCounters,
    mirror: Option<Mirror>,
}

fn latency_histogram() -> Histogram {
    // 0.5 ms to about 65 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 18))
}

impl Metrics {
    /// Brings `clarify_requests_pending` up to the event log: what the events after the last
    /// one counted created and resolved, counted by the store (the first time, a count in one
    /// snapshot with the log's position).
    pub(crate) async fn count_pending(
        &self,
        store: &clarify_store::Store,
    ) -> Result<(), clarify_store::StoreError> {
        let mut at = self.pending_seq.lock().await;
        let seq = match *at {
            Some(seq) => seq,
            None => {
                let (pending, seq) = store.pending_at().await?;
                self.pending.set(i64::try_from(pending).unwrap_or(i64::MAX));
                seq
            }
        };
        let tally = store.tally_after(seq).await?;
        let change = i64::try_from(tally.created)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(tally.resolved).unwrap_or(i64::MAX));
        self.pending.inc_by(change);
        *at = Some(tally.last.max(seq));
        Ok(())
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
        let failures = Family::<SignalLabel, Counter>::default();
        // One at a time: a family's guard holds its lock until dropped.
        let trace_failures = failures
            .get_or_create(&SignalLabel { signal: "traces" })
            .clone();
        let metric_failures = failures
            .get_or_create(&SignalLabel { signal: "metrics" })
            .clone();
        let export = crate::state::telemetry::ExportCounters {
            dropped: Counter::default(),
            trace_failures,
            metric_failures,
        };
        registry.register(
            "clarify_otlp_dropped",
            "Changes not sent to the OTLP collector because its queue was full",
            export.dropped.clone(),
        );
        registry.register(
            "clarify_otlp_export_failures",
            "Exports to the OTLP collector that failed, by signal",
            failures,
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
            export,
            mirror: None,
        }
    }

    /// The counters of the OTLP export itself.
    pub fn export_counters(&self) -> crate::state::telemetry::ExportCounters {
        self.export.clone()
    }

    /// Mirrors every instrument into `meter` from now on; `waiters` reads how many wait now.
    pub fn mirror(
        &mut self,
        meter: &opentelemetry::metrics::Meter,
        waiters: impl Fn() -> usize + Send + Sync + 'static,
    ) {
        let gauge = |value: Gauge| {
            move |o: &dyn opentelemetry::metrics::AsyncInstrument<i64>| o.observe(value.get(), &[])
        };
        let count = |value: Counter| {
            move |o: &dyn opentelemetry::metrics::AsyncInstrument<u64>| o.observe(value.get(), &[])
        };
        let latency: Vec<f64> = exponential_buckets(0.0005, 2.0, 18).collect();
        self.mirror = Some(Mirror {
            http_requests: meter
                .u64_counter("clarify_http_requests")
                .with_description("HTTP requests by route and status code")
                .build(),
            http_duration: meter
                .f64_histogram("clarify_http_request_duration_seconds")
                .with_unit("s")
                .with_description("HTTP request handling time by route")
                .with_boundaries(latency.clone())
                .build(),
            created: meter
                .u64_counter("clarify_requests_created")
                .with_description("Requests created through this instance")
                .build(),
            resolved: meter
                .u64_counter("clarify_requests_resolved")
                .with_description("Requests resolved through this instance, by status")
                .build(),
            waits: meter
                .f64_histogram("clarify_wait_seconds")
                .with_unit("s")
                .with_description("How long long-polls waited, by result")
                .with_boundaries(latency)
                .build(),
            time_to_answer: meter
                .f64_histogram("clarify_time_to_answer_seconds")
                .with_unit("s")
                .with_description("From creation to resolution, for resolutions made here")
                .with_boundaries(exponential_buckets(0.01, 2.0, 24).collect())
                .build(),
            webhook_failures: meter
                .u64_counter("clarify_webhook_failures")
                .with_description("Failed webhook delivery attempts")
                .build(),
            waiters_refused: meter
                .u64_counter("clarify_waiters_refused")
                .with_description(
                    "Long-polls, event streams and /mcp requests refused past --max-waiters",
                )
                .build(),
            rate_limited: meter
                .u64_counter("clarify_rate_limited")
                .with_description("Requests refused by the per-key --rate-limit")
                .build(),
            _observed: vec![
                meter
                    .i64_observable_gauge("clarify_requests_pending")
                    .with_description("Pending requests in the store")
                    .with_callback(gauge(self.pending.clone()))
                    .build(),
                meter
                    .i64_observable_gauge("clarify_waiters")
                    .with_description(
                        "Long-polls, event streams and /mcp requests open on this instance",
                    )
                    .with_callback(move |o| {
                        o.observe(i64::try_from(waiters()).unwrap_or(i64::MAX), &[])
                    })
                    .build(),
            ],
            _counted: vec![
                meter
                    .u64_observable_counter("clarify_otlp_dropped")
                    .with_description(
                        "Changes not sent to the OTLP collector because its queue was full",
                    )
                    .with_callback(count(self.export.dropped.clone()))
                    .build(),
                {
                    let traces = self.export.trace_failures.clone();
                    let metrics = self.export.metric_failures.clone();
                    meter
                        .u64_observable_counter("clarify_otlp_export_failures")
                        .with_description("Exports to the OTLP collector that failed, by signal")
                        .with_callback(move |o| {
                            o.observe(
                                traces.get(),
                                &[opentelemetry::KeyValue::new("signal", "traces")],
                            );
                            o.observe(
                                metrics.get(),
                                &[opentelemetry::KeyValue::new("signal", "metrics")],
                            );
                        })
                        .build()
                },
            ],
        });
    }

    pub fn created(&self) {
        self.created.inc();
        if let Some(m) = &self.mirror {
            m.created.add(1, &[]);
        }
    }

    pub fn resolved(&self, record: &RequestRecord) {
        self.resolved
            .get_or_create(&StatusLabel {
                status: record.status.to_string(),
            })
            .inc();
        let secs = record
            .resolved_at()
            .map(|at| (at - record.created_at).num_milliseconds().max(0) as f64 / 1000.0);
        if let Some(secs) = secs {
            self.time_to_answer.observe(secs);
        }
        if let Some(m) = &self.mirror {
            let status = [opentelemetry::KeyValue::new(
                "status",
                record.status.to_string(),
            )];
            m.resolved.add(1, &status);
            if let Some(secs) = secs {
                m.time_to_answer.record(secs, &[]);
            }
        }
    }

    pub fn waited(&self, took: Duration, resolved: bool) {
        let result = if resolved { "resolved" } else { "timeout" };
        self.waits
            .get_or_create(&ResultLabel { result })
            .observe(took.as_secs_f64());
        if let Some(m) = &self.mirror {
            m.waits.record(
                took.as_secs_f64(),
                &[opentelemetry::KeyValue::new("result", result)],
            );
        }
    }

    pub fn webhook_failed(&self) {
        self.webhook_failures.inc();
        if let Some(m) = &self.mirror {
            m.webhook_failures.add(1, &[]);
        }
    }

    pub fn waiter_refused(&self) {
        self.waiters_refused.inc();
        if let Some(m) = &self.mirror {
            m.waiters_refused.add(1, &[]);
        }
    }

    pub fn rate_limited(&self) {
        self.rate_limited.inc();
        if let Some(m) = &self.mirror {
            m.rate_limited.add(1, &[]);
        }
    }

    /// Counts one HTTP request to `route` (the matched route, never the raw path) that answered
    /// `status` after `took`.
    pub fn http_request(&self, route: String, status: u16, took: Duration) {
        if let Some(m) = &self.mirror {
            m.http_requests.add(
                1,
                &[
                    opentelemetry::KeyValue::new("route", route.clone()),
                    opentelemetry::KeyValue::new("status", i64::from(status)),
                ],
            );
            m.http_duration.record(
                took.as_secs_f64(),
                &[opentelemetry::KeyValue::new("route", route.clone())],
            );
        }
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
