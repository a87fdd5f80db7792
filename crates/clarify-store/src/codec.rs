//! How records are laid out in the SQL backends, shared so SQLite and PostgreSQL agree.
//!
//! A request's validated body is stored as its canonical JSON (`spec`); an answered request's
//! answers as their canonical answer body. Both are read back through the core's own parsers, so
//! a stored request means exactly what it meant when it was accepted. Times are milliseconds since
//! the Unix epoch.

use chrono::{DateTime, Utc};
use clarify_core::{NewRequest, Resolution, Status, Submission, parse_submission};

use crate::error::StoreError;
use crate::record::{Actor, Event, EventKind, RequestRecord, StoredResolution};

/// A request row as read from SQL.
#[derive(Debug)]
pub(crate) struct RowParts {
    pub id: String,
    pub tenant: String,
    pub status: String,
    pub spec: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub resolved_at: Option<i64>,
    pub answered_by: Option<String>,
    pub channel: Option<String>,
    pub answers: Option<String>,
}

/// The columns of [`RowParts`], in order, for SELECT lists.
pub(crate) const COLUMNS: &str =
    "id, tenant, status, spec, created_at, expires_at, resolved_at, answered_by, channel, answers";

impl RowParts {
    pub(crate) fn decode(self) -> Result<RequestRecord, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("request {}: {what}", self.id));
        let request: NewRequest =
            serde_json::from_str(&self.spec).map_err(|e| corrupt(&format!("spec: {e}")))?;
        let status: Status = self.status.parse().map_err(|_| corrupt("status"))?;
        let created_at = from_millis(self.created_at).ok_or_else(|| corrupt("created_at"))?;
        let expires_at = match self.expires_at {
            None => None,
            Some(ms) => Some(from_millis(ms).ok_or_else(|| corrupt("expires_at"))?),
        };
        let resolution = if status.is_resolved() {
            let resolved_at = self
                .resolved_at
                .and_then(from_millis)
                .ok_or_else(|| corrupt("resolved_at"))?;
            let resolution = match status {
                Status::Answered => {
                    let answers: serde_json::Value = self
                        .answers
                        .as_deref()
                        .and_then(|a| serde_json::from_str(a).ok())
                        .ok_or_else(|| corrupt("answers"))?;
                    let body = serde_json::json!({ "answers": answers });
                    match parse_submission(&request, &body) {
                        Ok(Submission::Answered(a)) => Resolution::Answered(a),
                        _ => return Err(corrupt("answers do not fit the request")),
                    }
                }
                Status::Skipped => Resolution::Skipped,
                Status::Expired => Resolution::Expired,
                Status::Cancelled | Status::Pending => Resolution::Cancelled,
            };
            Some(StoredResolution {
                resolution,
                actor: Actor {
                    name: self.answered_by,
                    channel: self.channel.unwrap_or_default(),
                },
                resolved_at,
            })
        } else {
            None
        };
        Ok(RequestRecord {
            id: self.id,
            tenant: self.tenant,
            request: std::sync::Arc::new(request),
            status,
            created_at,
            expires_at,
            resolution,
        })
    }
}

/// An event row as read from SQL.
#[derive(Debug)]
pub(crate) struct EventParts {
    pub seq: i64,
    pub tenant: String,
    pub request_id: String,
    pub kind: String,
    pub actor: Option<String>,
    pub channel: Option<String>,
    pub at: i64,
}

/// The columns of [`EventParts`], in order, for SELECT lists.
pub(crate) const EVENT_COLUMNS: &str = "seq, tenant, request_id, kind, actor, channel, at";

impl EventParts {
    pub(crate) fn decode(self) -> Result<Event, StoreError> {
        let seq = self.seq;
        let corrupt = |what: String| StoreError::Corrupt(format!("event {seq}: {what}"));
        Ok(Event {
            seq: u64::try_from(seq).map_err(|_| corrupt("negative sequence".to_owned()))?,
            kind: EventKind::parse(&self.kind)
                .ok_or_else(|| corrupt(format!("{:?} is not an event kind", self.kind)))?,
            at: from_millis(self.at)
                .ok_or_else(|| corrupt(format!("time {} out of range", self.at)))?,
            tenant: self.tenant,
            request_id: self.request_id,
            actor: self.actor,
            channel: self.channel,
        })
    }
}

/// The canonical JSON of a validated request.
pub(crate) fn spec_json(request: &NewRequest) -> Result<String, StoreError> {
    serde_json::to_string(request).map_err(|e| StoreError::Backend(e.to_string()))
}

/// The canonical answer body of an answered resolution.
pub(crate) fn answers_json(resolution: &Resolution) -> Result<Option<String>, StoreError> {
    match resolution {
        Resolution::Answered(a) => serde_json::to_string(a)
            .map(Some)
            .map_err(|e| StoreError::Backend(e.to_string())),
        _ => Ok(None),
    }
}

pub(crate) fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_millis(ms: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms)
}

/// The schema version this binary writes; a database with a newer one is refused at open.
pub(crate) const SCHEMA_VERSION: i64 = 1;
