//! A request's changes as OpenTelemetry spans.
//!
//! The ids are derived from the request id (SHA-256, the first 16 bytes for the trace, the
//! next 8 for the root span), so every process that touches a request puts its spans in the
//! same trace under the same root, with nothing shared but the id. Child span ids are random.

use std::borrow::Cow;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use clarify_store::{RequestRecord, Store};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use sha2::{Digest as _, Sha256};

use super::Change;

/// What an outbox worker tried: one post to a channel, or one webhook delivery.
#[derive(Debug, Clone)]
pub(crate) struct Attempted {
    pub request_id: String,
    pub tenant: String,
    /// `clarify.announce` or `clarify.webhook`.
    pub name: &'static str,
    pub started: SystemTime,
    pub ended: SystemTime,
    /// The channel's configured name, for a post.
    pub channel: Option<String>,
    /// What was announced: `created`, `reminded`, `escalated`, or the resolution.
    pub event: String,
    pub attempt: u32,
    pub http_status: Option<u16>,
    /// Why it did not go out; `None` when it did.
    pub error: Option<String>,
}

/// The instrumentation scope of every span.
pub(crate) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("clarify")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// The trace id and root span id of request `id`.
pub fn ids(id: &str) -> (TraceId, SpanId) {
    let digest = Sha256::digest(format!("clarify.request:{id}").as_bytes());
    let mut trace = [0u8; 16];
    let mut root = [0u8; 8];
    trace.copy_from_slice(&digest[..16]);
    root.copy_from_slice(&digest[16..24]);
    (TraceId::from_bytes(trace), SpanId::from_bytes(root))
}

fn random_span_id() -> SpanId {
    loop {
        let id = SpanId::from_bytes(rand::random::<[u8; 8]>());
        if id != SpanId::INVALID {
            return id;
        }
    }
}

fn time(at: DateTime<Utc>) -> SystemTime {
    SystemTime::from(at)
}

/// The attributes every span of `record` carries.
fn request_attributes(record: &RequestRecord) -> Vec<KeyValue> {
    let request = &record.request;
    let mut attributes = vec![
        KeyValue::new("clarify.request.id", record.id.clone()),
        KeyValue::new("clarify.tenant", record.tenant.clone()),
    ];
    if let Some(agent) = &request.agent {
        attributes.push(KeyValue::new("clarify.agent", agent.clone()));
    }
    if let Some(session) = &request.session {
        attributes.push(KeyValue::new("clarify.session", session.clone()));
    }
    if let Some(tool) = request.tool() {
        attributes.push(KeyValue::new("clarify.tool", tool.to_owned()));
    }
    if !request.tags.is_empty() {
        attributes.push(KeyValue::new(
            "clarify.tags",
            opentelemetry::Value::Array(opentelemetry::Array::String(
                request.tags.iter().map(|t| t.clone().into()).collect(),
            )),
        ));
    }
    attributes
}

/// The status, responder and surface of a resolved `record`.
fn outcome_attributes(record: &RequestRecord) -> Vec<KeyValue> {
    let mut attributes = vec![KeyValue::new("clarify.status", record.status.to_string())];
    if let Some(outcome) = record.outcome() {
        if let Some(by) = outcome.answered_by {
            attributes.push(KeyValue::new("clarify.responder", by));
        }
        if let Some(via) = outcome.answered_via {
            attributes.push(KeyValue::new("clarify.surface", via));
        }
        if let Some(decision) = outcome.questions.iter().find_map(|q| q.decision) {
            attributes.push(KeyValue::new("clarify.decision", decision.as_str()));
        }
        if outcome.default_applied {
            attributes.push(KeyValue::new("clarify.default_applied", true));
        }
    }
    attributes
}

struct Span {
    request_id: String,
    name: &'static str,
    start: SystemTime,
    end: SystemTime,
    attributes: Vec<KeyValue>,
    status: Status,
    /// The root span itself rather than a child of it.
    root: bool,
}

impl Span {
    fn data(self, scope: &opentelemetry::InstrumentationScope) -> SpanData {
        let (trace_id, root_id) = ids(&self.request_id);
        let (span_id, parent) = if self.root {
            (root_id, SpanId::INVALID)
        } else {
            (random_span_id(), root_id)
        };
        SpanData {
            span_context: SpanContext::new(
                trace_id,
                span_id,
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: parent,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(self.name),
            start_time: self.start,
            end_time: self.end.max(self.start),
            attributes: self.attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: self.status,
            instrumentation_scope: scope.clone(),
        }
    }
}

/// The spans of `change`, added to `out`. An expiry's records are read back from `store`; one
/// that cannot be read is left out (its request may have been purged).
pub(crate) async fn of(
    change: Change,
    store: &Store,
    scope: &InstrumentationScope,
    out: &mut Vec<SpanData>,
) {
    match change {
        Change::Created(record) => {
            let at = time(record.created_at);
            out.push(
                Span {
                    request_id: record.id.clone(),
                    name: "clarify.create",
                    start: at,
                    end: at,
                    attributes: request_attributes(&record),
                    status: Status::Unset,
                    root: false,
                }
                .data(scope),
            );
        }
        Change::Resolved(record) => resolved(&record, scope, out),
        Change::Expired(ids) => {
            for id in ids {
                match store.get_by_id(&id).await {
                    Ok(Some(record)) => resolved(&record, scope, out),
                    Ok(None) => {}
                    Err(e) => {
                        tracing::debug!(error = %e, request_id = id, "reading an expired request for its trace failed")
                    }
                }
            }
        }
        Change::Attempt(a) => {
            let mut attributes = vec![
                KeyValue::new("clarify.request.id", a.request_id.clone()),
                KeyValue::new("clarify.tenant", a.tenant),
                KeyValue::new("clarify.event", a.event),
                KeyValue::new("clarify.attempt", i64::from(a.attempt)),
            ];
            if let Some(channel) = a.channel {
                attributes.push(KeyValue::new("clarify.channel", channel));
            }
            if let Some(status) = a.http_status {
                attributes.push(KeyValue::new(
                    "http.response.status_code",
                    i64::from(status),
                ));
            }
            let status = match a.error {
                Some(error) => Status::error(error),
                None => Status::Ok,
            };
            out.push(
                Span {
                    request_id: a.request_id,
                    name: a.name,
                    start: a.started,
                    end: a.ended,
                    attributes,
                    status,
                    root: false,
                }
                .data(scope),
            );
        }
    }
}

/// A resolution's spans: the root (creation to resolution) and `clarify.resolve`.
fn resolved(record: &RequestRecord, scope: &InstrumentationScope, out: &mut Vec<SpanData>) {
    let Some(resolved_at) = record.resolution.as_ref().map(|r| r.resolved_at) else {
        return;
    };
    let mut attributes = request_attributes(record);
    attributes.extend(outcome_attributes(record));
    let at = time(resolved_at);
    out.push(
        Span {
            request_id: record.id.clone(),
            name: "clarify.resolve",
            start: at,
            end: at,
            attributes: attributes.clone(),
            status: Status::Unset,
            root: false,
        }
        .data(scope),
    );
    out.push(
        Span {
            request_id: record.id.clone(),
            name: "clarify.request",
            start: time(record.created_at),
            end: at,
            attributes,
            status: Status::Unset,
            root: true,
        }
        .data(scope),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requests_ids_are_the_same_in_every_process_and_differ_between_requests() {
        let (trace, root) = ids("req_01");
        assert_eq!(ids("req_01"), (trace, root));
        assert_ne!(ids("req_02").0, trace);
        assert_ne!(trace, TraceId::INVALID);
        assert_ne!(root, SpanId::INVALID);
    }
}
