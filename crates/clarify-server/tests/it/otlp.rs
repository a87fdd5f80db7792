//! OpenTelemetry over OTLP/HTTP, against a collector run by the test that decodes the protobuf
//! bodies with the OpenTelemetry protocol's own message types: a trace per request (created,
//! announced on Slack, delivered to a webhook, resolved) with its attributes, the metrics of
//! `/metrics`, and a collector that is down or never answers costing requests nothing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use chrono::TimeDelta;
use clarify_server::OtlpConfig;
use clarify_server::{Config, OutboundGuard};
use clarify_store::{ManualClock, StoreOptions};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{Value, json};

use crate::fake_slack::FakeSlack;
use crate::support::TestServer;

/// What the collector received, decoded.
#[derive(Debug, Default)]
struct Received {
    spans: Vec<(BTreeMap<String, String>, Span)>,
    metrics: Vec<ExportMetricsServiceRequest>,
    content_types: Vec<String>,
}

/// An OTLP/HTTP collector on 127.0.0.1; stops when dropped.
struct Collector {
    url: String,
    received: Arc<Mutex<Received>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(n)) => n.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::ArrayValue(a)) => {
            let items: Vec<String> = a.values.iter().map(|v| text(&Some(v.clone()))).collect();
            items.join(",")
        }
        other => format!("{other:?}"),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), text(&kv.value)))
        .collect()
}

async fn traces(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> AxumStatus {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return AxumStatus::BAD_REQUEST;
    };
    let mut received = received.lock().expect("lock");
    received.content_types.push(
        headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
    );
    for resource in request.resource_spans {
        let resource_attributes = resource
            .resource
            .map(|r| attributes(&r.attributes))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                received.spans.push((resource_attributes.clone(), span));
            }
        }
    }
    AxumStatus::OK
}

async fn metrics(State(received): State<Arc<Mutex<Received>>>, body: Bytes) -> AxumStatus {
    let Ok(request) = ExportMetricsServiceRequest::decode(body) else {
        return AxumStatus::BAD_REQUEST;
    };
    received.lock().expect("lock").metrics.push(request);
    AxumStatus::OK
}

impl Collector {
    async fn start() -> Self {
        let received = Arc::new(Mutex::new(Received::default()));
        let app = axum::Router::new()
            .route("/otlp/v1/traces", axum::routing::post(traces))
            .route("/otlp/v1/metrics", axum::routing::post(metrics))
            .with_state(Arc::clone(&received));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/otlp", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            received,
            task,
        }
    }

    /// The spans received so far for request `id`.
    fn spans_of(&self, id: &str) -> Vec<(BTreeMap<String, String>, Span)> {
        self.received
            .lock()
            .expect("lock")
            .spans
            .iter()
            .filter(|(_, s)| {
                attributes(&s.attributes)
                    .get("clarify.request.id")
                    .map(String::as_str)
                    == Some(id)
            })
            .cloned()
            .collect()
    }

    /// Waits until request `id` has spans named `names` (each at least once).
    async fn wait_for(&self, id: &str, names: &[&str]) -> Vec<Span> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let spans: Vec<Span> = self.spans_of(id).into_iter().map(|(_, s)| s).collect();
            if names.iter().all(|n| spans.iter().any(|s| s.name == *n)) {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "the collector did not get {names:?} for {id}; it has {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The latest cumulative value of the sum metric `name` with `attribute` (`key=value`,
    /// or any when empty), if it was sent.
    fn sum(&self, name: &str, attribute: &str) -> Option<f64> {
        let received = self.received.lock().expect("lock");
        let mut latest = None;
        for request in &received.metrics {
            for resource in &request.resource_metrics {
                for scope in &resource.scope_metrics {
                    for m in scope.metrics.iter().filter(|m| m.name == name) {
                        let points = match &m.data {
                            Some(metric::Data::Sum(sum)) => &sum.data_points,
                            Some(metric::Data::Gauge(gauge)) => &gauge.data_points,
                            _ => continue,
                        };
                        let mut total = 0.0;
                        for p in points {
                            let attrs = attributes(&p.attributes);
                            let matches = attribute.is_empty()
                                || attribute.split_once('=').is_some_and(|(k, v)| {
                                    attrs.get(k).map(String::as_str) == Some(v)
                                });
                            if !matches {
                                continue;
                            }
                            total += match p.value {
                                Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(n)) => n as f64,
                                Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsDouble(d)) => d,
                                None => 0.0,
                            };
                        }
                        latest = Some(total);
                    }
                }
            }
        }
        latest
    }

    /// The names of the histograms sent.
    fn histograms(&self) -> Vec<String> {
        let received = self.received.lock().expect("lock");
        let mut names: Vec<String> = received
            .metrics
            .iter()
            .flat_map(|r| &r.resource_metrics)
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics)
            .filter(|m| matches!(m.data, Some(metric::Data::Histogram(_))))
            .map(|m| m.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

fn otlp(endpoint: &str) -> OtlpConfig {
    let mut config = OtlpConfig::new(endpoint).expect("an OTLP endpoint");
    config.metrics_interval = Duration::from_millis(200);
    config.timeout = Duration::from_secs(2);
    config
}

fn approval(agent: &str) -> Value {
    json!({
        "agent": agent,
        "session": "s-otlp",
        "tags": ["deploys"],
        "questions": [{"kind": "approval", "text": "Deploy?",
                       "action": {"name": "deploy", "arguments": {"to": "prod"}}}],
    })
}

/// Asks `body` as the admin and answers it with `decision`; returns the request's id.
async fn decided(s: &TestServer, body: Value, decision: &str) -> String {
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (status, outcome) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"decision": decision}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{outcome}");
    id
}

/// The attribute `key` of `span`.
fn attribute(span: &Span, key: &str) -> Option<String> {
    attributes(&span.attributes).get(key).cloned()
}

#[tokio::test]
async fn a_request_is_one_trace_from_creation_through_its_announcement_and_webhook_to_its_answer() {
    let collector = Collector::start().await;
    let slack = FakeSlack::start().await;
    let channel = crate::slack::slack_channel(&slack, false);
    let hooks = crate::webhooks::Receiver::start(0).await;
    let endpoint = collector.url.clone();
    let s = TestServer::build(
        "memory:",
        crate::support::announcing(&["ops"]),
        move |c: &mut Config| {
            c.channels = vec![channel];
            c.webhooks.poll = Duration::from_millis(50);
            c.outbound = OutboundGuard::allowing(&["127.0.0.1".to_owned()]).expect("guard");
            c.otlp = Some(otlp(&endpoint));
        },
    )
    .await;
    let mut body = approval("release-bot");
    body["callback_url"] = json!(hooks.url);
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id");
    slack.wait_for("chat.postMessage", 1).await;
    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);

    let spans = collector
        .wait_for(
            id,
            &[
                "clarify.create",
                "clarify.announce",
                "clarify.webhook",
                "clarify.resolve",
                "clarify.request",
            ],
        )
        .await;
    let root = spans
        .iter()
        .find(|s| s.name == "clarify.request")
        .expect("the root span");
    assert!(root.parent_span_id.is_empty(), "the root has no parent");
    assert_eq!(root.trace_id.len(), 16);
    for span in &spans {
        assert_eq!(
            span.trace_id, root.trace_id,
            "{} is in the request's trace",
            span.name
        );
        if span.name != "clarify.request" {
            assert_eq!(
                span.parent_span_id, root.span_id,
                "{} is a child of the root",
                span.name
            );
        }
    }
    // The root spans creation to resolution, with what a person looks for.
    assert!(root.end_time_unix_nano >= root.start_time_unix_nano);
    assert_eq!(
        attribute(root, "clarify.agent").as_deref(),
        Some("release-bot")
    );
    assert_eq!(attribute(root, "clarify.tool").as_deref(), Some("deploy"));
    assert_eq!(
        attribute(root, "clarify.status").as_deref(),
        Some("answered")
    );
    assert_eq!(
        attribute(root, "clarify.decision").as_deref(),
        Some("approve")
    );
    assert_eq!(attribute(root, "clarify.surface").as_deref(), Some("api"));
    assert!(attribute(root, "clarify.responder").is_some());
    assert_eq!(attribute(root, "clarify.tags").as_deref(), Some("deploys"));
    let announce = spans
        .iter()
        .find(|s| {
            s.name == "clarify.announce"
                && attribute(s, "clarify.event").as_deref() == Some("created")
        })
        .expect("the announcement's span");
    assert_eq!(
        attribute(announce, "clarify.channel").as_deref(),
        Some("ops")
    );
    let webhook = spans
        .iter()
        .find(|s| s.name == "clarify.webhook")
        .expect("webhook span");
    assert_eq!(
        attribute(webhook, "http.response.status_code").as_deref(),
        Some("200")
    );
    // The service is named, and the bodies are OTLP's binary protobuf.
    let received = collector.received.lock().expect("lock");
    let (resource, _) = received.spans.first().expect("a span");
    assert_eq!(
        resource.get("service.name").map(String::as_str),
        Some("clarify")
    );
    assert!(
        received
            .content_types
            .iter()
            .all(|t| t == "application/x-protobuf")
    );
}

#[tokio::test]
async fn an_expiry_by_the_reaper_is_traced_too_since_the_store_tells_of_every_change() {
    let collector = Collector::start().await;
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let endpoint = collector.url.clone();
    let options = StoreOptions {
        clock: clock.clone(),
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let s = TestServer::build("memory:", options, move |c: &mut Config| {
        c.otlp = Some(otlp(&endpoint));
    })
    .await;
    let mut body = approval("nightly");
    body["timeout_seconds"] = json!(60);
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.expire_due().await.expect("expired"), 1);
    let spans = collector
        .wait_for(
            &id,
            &["clarify.create", "clarify.resolve", "clarify.request"],
        )
        .await;
    let root = spans
        .iter()
        .find(|s| s.name == "clarify.request")
        .expect("root");
    assert_eq!(
        attribute(root, "clarify.status").as_deref(),
        Some("expired")
    );
    assert_eq!(
        attribute(root, "clarify.responder"),
        None,
        "nobody answered"
    );
    // The root lasts the 61 s the store's clock moved.
    let lasted = root.end_time_unix_nano - root.start_time_unix_nano;
    assert!(
        (61_000_000_000..62_000_000_000).contains(&lasted),
        "{lasted} ns"
    );
}

#[tokio::test]
async fn the_metrics_of_the_metrics_page_are_sent_with_their_labels() {
    let collector = Collector::start().await;
    let endpoint = collector.url.clone();
    let s = TestServer::build("memory:", StoreOptions::default(), move |c: &mut Config| {
        c.otlp = Some(otlp(&endpoint));
    })
    .await;
    decided(&s, approval("metrics-bot"), "deny").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while collector.sum("clarify_requests_resolved", "status=answered") != Some(1.0) {
        assert!(
            Instant::now() < deadline,
            "no resolution counted: {:?}",
            collector.received.lock().expect("lock").metrics.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(collector.sum("clarify_requests_created", ""), Some(1.0));
    assert!(
        collector
            .sum("clarify_http_requests", "route=/v1/requests")
            .is_some_and(|n| n >= 1.0),
        "HTTP requests are counted by route"
    );
    assert_eq!(collector.sum("clarify_otlp_dropped", ""), Some(0.0));
    let histograms = collector.histograms();
    for name in [
        "clarify_http_request_duration_seconds",
        "clarify_time_to_answer_seconds",
    ] {
        assert!(
            histograms.iter().any(|h| h == name),
            "{name} in {histograms:?}"
        );
    }
    // What /metrics says is what was sent.
    assert_eq!(s.metric("clarify_requests_created_total").await, 1.0);
    s.stop().await;
}

/// A collector that accepts connections and never answers.
async fn black_hole() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    (url, task)
}

#[tokio::test]
async fn a_collector_that_never_answers_or_is_down_costs_requests_nothing_and_drops_are_counted() {
    let (silent, hole) = black_hole().await;
    let s = TestServer::build("memory:", StoreOptions::default(), move |c: &mut Config| {
        let mut config = otlp(&silent);
        config.timeout = Duration::from_secs(30);
        config.queue = 8;
        c.otlp = Some(config);
    })
    .await;
    // A first change, sent once its batch has waited a second: the worker is then stuck on
    // the collector, and what follows queues up behind it.
    s.ask(&s.admin, approval("first")).await;
    tokio::time::sleep(clarify_server::state::telemetry::LINGER + Duration::from_millis(500)).await;
    let started = Instant::now();
    for n in 0..60 {
        decided(&s, approval(&format!("bot-{n}")), "approve").await;
    }
    // 120 calls against a collector that holds every export for 30 s.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the requests waited for the collector: {:?}",
        started.elapsed()
    );
    assert!(
        s.metric("clarify_otlp_dropped_total").await > 0.0,
        "what did not fit the queue is counted as dropped"
    );
    drop(s);
    hole.abort();

    // Nothing listens there: every export fails, is counted, and nothing else notices.
    let down = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", listener.local_addr().expect("addr"))
    };
    let s = TestServer::build("memory:", StoreOptions::default(), move |c: &mut Config| {
        c.otlp = Some(otlp(&down));
    })
    .await;
    decided(&s, approval("lonely"), "approve").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = s
            .client
            .get(format!("{}/metrics", s.url))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        let failed = |signal: &str| {
            text.lines().any(|l| {
                l.starts_with(&format!(
                    "clarify_otlp_export_failures_total{{signal=\"{signal}\"}}"
                )) && !l.ends_with(" 0")
            })
        };
        if failed("traces") && failed("metrics") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no failed export counted:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn an_endpoint_that_is_not_an_http_address_is_refused_naming_it() {
    for bad in ["collector:4318", "ftp://collector", "http://", "not a url"] {
        let error = OtlpConfig::new(bad).expect_err(bad);
        assert!(error.contains(bad.trim()), "{error}");
    }
    let config = OtlpConfig::new("https://otel.example.com:4318/").expect("https");
    assert_eq!(config.endpoint.as_str(), "https://otel.example.com:4318/");
}
