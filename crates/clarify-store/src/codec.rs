//! How records are laid out in the SQL backends, shared so SQLite and PostgreSQL agree.
//!
//! A request's validated body is stored as its canonical JSON (`spec`); an answered request's
//! answers as their canonical answer body. Both are read back through the core's own parsers, so
//! a stored request means exactly what it meant when it was accepted. Times are milliseconds since
//! the Unix epoch.
//!
//! What a row holds is checked again when read (a status, a time in range), so a damaged row is
//! reported as corrupt instead of being misread. The rows of keys, grants and deliveries are laid
//! out beside their concern (`keys`, `grants`, `outbox`), which this file, below them all, does
//! not import.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use clarify_core::quorum::Vote;
use clarify_core::{Answers, NewRequest, Resolution, Status, Submission, parse_submission};

use crate::error::StoreError;
use crate::record::{Actor, Event, EventKind, OnCallShift, RequestRecord, StoredResolution};

/// A request row as read from SQL.
#[derive(Debug, Clone)]
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
    /// A quorum request's votes, as [`votes_json`] wrote them.
    pub votes: Option<String>,
    pub remind_at: Option<i64>,
    pub escalated_at: Option<i64>,
    /// The resolution's place in the audit chain, once numbered.
    pub resolved_seq: Option<i64>,
    /// Who was authenticated when it was resolved, as the audit chain records it.
    pub resolved_principal: Option<String>,
    /// The readings of its on-call schedules, as [`on_call_json`] wrote them.
    pub on_call: Option<String>,
}

/// The columns of [`RowParts`], in order, for SELECT lists.
pub(crate) const COLUMNS: &str = "id, tenant, status, spec, created_at, expires_at, resolved_at, \
     answered_by, channel, answers, votes, remind_at, escalated_at, resolved_seq, \
     resolved_principal, on_call";

/// [`COLUMNS`] for a schema that has no `resolved_seq` yet: what migrations before it read.
pub(crate) const COLUMNS_BEFORE_RESOLVED_SEQ: &str = "id, tenant, status, spec, created_at, \
     expires_at, resolved_at, answered_by, channel, answers, votes, remind_at, escalated_at, \
     CAST(NULL AS BIGINT) AS resolved_seq, CAST(NULL AS TEXT) AS resolved_principal, \
     CAST(NULL AS TEXT) AS on_call";

impl RowParts {
    pub(crate) fn decode(self) -> Result<RequestRecord, StoreError> {
        self.decode_reusing(None, None)
    }

    /// As [`RowParts::decode`], given what this row's `spec` (and an answered row's `answers`)
    /// decode to, where the caller already knows: those are not parsed again.
    pub(crate) fn decode_reusing(
        self,
        request: Option<Arc<NewRequest>>,
        answers: Option<Answers>,
    ) -> Result<RequestRecord, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("request {}: {what}", self.id));
        let request = match request {
            Some(request) => request,
            None => {
                let mut request = serde_json::from_str::<NewRequest>(&self.spec)
                    .map_err(|e| corrupt(&format!("spec: {e}")))?;
                // A request stored before display blocks existed gets them as it would now.
                if request.summary.is_empty() {
                    clarify_core::display::complete(&mut request);
                }
                Arc::new(request)
            }
        };
        let status: Status = self.status.parse().map_err(|_| corrupt("status"))?;
        let created_at = from_millis(self.created_at).ok_or_else(|| corrupt("created_at"))?;
        let expires_at = match self.expires_at {
            None => None,
            Some(ms) => Some(from_millis(ms).ok_or_else(|| corrupt("expires_at"))?),
        };
        let remind_at = match self.remind_at {
            None => None,
            Some(ms) => Some(from_millis(ms).ok_or_else(|| corrupt("remind_at"))?),
        };
        let escalated_at = match self.escalated_at {
            None => None,
            Some(ms) => Some(from_millis(ms).ok_or_else(|| corrupt("escalated_at"))?),
        };
        let on_call = match self.on_call.as_deref() {
            None => Vec::new(),
            Some(json) => {
                serde_json::from_str(json).map_err(|e| corrupt(&format!("on_call: {e}")))?
            }
        };
        let votes = match self.votes.as_deref() {
            None => Vec::new(),
            Some(json) => decode_votes(&request, json).map_err(|e| corrupt(&e))?,
        };
        let resolution = if status.is_resolved() {
            let resolved_at = self
                .resolved_at
                .and_then(from_millis)
                .ok_or_else(|| corrupt("resolved_at"))?;
            let resolution = match (status, answers) {
                (Status::Answered, Some(answers)) => Resolution::Answered(answers),
                (Status::Answered, None) => {
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
                (Status::Skipped, _) => Resolution::Skipped,
                (Status::Expired, _) => Resolution::Expired,
                (Status::Cancelled | Status::Pending, _) => Resolution::Cancelled,
            };
            Some(StoredResolution {
                resolution,
                actor: Actor {
                    name: self.answered_by,
                    channel: self.channel.unwrap_or_default(),
                    principal: self.resolved_principal,
                    ..Actor::default()
                },
                resolved_at,
                seq: self.resolved_seq.and_then(|s| u64::try_from(s).ok()),
            })
        } else {
            None
        };
        Ok(RequestRecord {
            id: self.id,
            tenant: self.tenant,
            request,
            status,
            created_at,
            expires_at,
            resolution,
            votes,
            remind_at,
            escalated_at,
            on_call,
        })
    }
}

/// A request's on-call readings as stored in its row: a JSON array, `None` when there are none.
pub(crate) fn on_call_json(shifts: &[OnCallShift]) -> Result<Option<String>, StoreError> {
    if shifts.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(shifts)
        .map(Some)
        .map_err(|e| StoreError::Backend(format!("on-call readings do not serialize: {e}")))
}

/// One vote as stored: who, when, and the answer body it was cast with. Decision, scope and
/// reason are derived again from the answers when read, so they cannot disagree with them.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredVote {
    by: String,
    at: i64,
    answers: serde_json::Value,
}

/// A request's votes as stored in its row: a JSON array, in the order cast.
pub(crate) fn votes_json(votes: &[Vote]) -> Result<String, StoreError> {
    let stored = votes
        .iter()
        .map(|v| {
            Ok(StoredVote {
                by: v.by.clone(),
                at: millis(v.at),
                answers: serde_json::to_value(&v.answers)
                    .map_err(|e| StoreError::Backend(e.to_string()))?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    serde_json::to_string(&stored).map_err(|e| StoreError::Backend(e.to_string()))
}

/// Reads [`votes_json`] back, checking each vote's answers against the request.
fn decode_votes(request: &NewRequest, json: &str) -> Result<Vec<Vote>, String> {
    let stored: Vec<StoredVote> = serde_json::from_str(json).map_err(|e| format!("votes: {e}"))?;
    stored
        .into_iter()
        .map(|v| {
            let at = from_millis(v.at).ok_or_else(|| format!("vote time {} out of range", v.at))?;
            let body = serde_json::json!({ "answers": v.answers });
            match parse_submission(request, &body) {
                Ok(Submission::Answered(answers)) => Ok(Vote::new(v.by, answers, at)),
                _ => Err(format!("the vote of {} does not fit the request", v.by)),
            }
        })
        .collect()
}

/// An event row as read from SQL.
#[derive(Debug, Clone)]
pub(crate) struct EventParts {
    pub seq: i64,
    pub tenant: String,
    pub request_id: String,
    pub kind: String,
    pub actor: Option<String>,
    pub channel: Option<String>,
    /// The authenticated principal (schema 13 on SQLite, 12 on PostgreSQL); `None` before.
    pub principal: Option<String>,
    pub at: i64,
    /// The audit chain's hash (see `audit`); `None` only for an event of an older schema that
    /// was never hashed.
    pub hash: Option<String>,
}

/// The columns of [`EventParts`], in order, for SELECT lists.
pub(crate) const EVENT_COLUMNS: &str =
    "seq, tenant, request_id, kind, actor, channel, at, hash, principal";

/// [`EVENT_COLUMNS`] for a schema that has no `principal` yet: what migrations before it read.
pub(crate) const EVENT_COLUMNS_BEFORE_PRINCIPAL: &str =
    "seq, tenant, request_id, kind, actor, channel, at, hash, NULL AS principal";

impl EventParts {
    pub(crate) fn decode(self) -> Result<Event, StoreError> {
        let seq = self.seq;
        let corrupt = |what: String| StoreError::Corrupt(format!("event {seq}: {what}"));
        Ok(Event {
            seq: u64::try_from(seq).map_err(|_| corrupt("negative sequence".to_owned()))?,
            // A kind a newer release added, written by one of its instances sharing the
            // database during a rolling upgrade: readers step past it rather than stop there.
            kind: EventKind::parse(&self.kind).unwrap_or(EventKind::Unknown),
            at: from_millis(self.at)
                .ok_or_else(|| corrupt(format!("time {} out of range", self.at)))?,
            tenant: self.tenant,
            request_id: self.request_id,
            actor: self.actor,
            channel: self.channel,
            principal: self.principal,
            hash: self.hash.unwrap_or_default(),
        })
    }
}

/// What a reading of the event log is for: the feed skips tombstones, the audit chain keeps
/// them. Each backend reads either for one tenant or for all with a statement of each form (see
/// their `feed`): one statement for both, `(tenant IS NULL OR tenant = ...)`, is planned for
/// either and walks every tenant's events to find one tenant's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Log {
    Feed,
    Chain,
}

/// The `callback_url` of a request the reaper expired, read from its `spec` without decoding the
/// rest: the reaper needs only this of every request it expires.
///
/// A spec too damaged to read must not stop the reaper, which would otherwise fail on the same
/// row at every pass and expire nothing more: the request still expires, and its webhook (which
/// could not be rendered from such a spec anyway) is not queued, with a warning.
pub(crate) fn reaped_callback_url(id: &str, spec: &str) -> Option<String> {
    /// The one field of the canonical request shape (see [`NewRequest`]) a delivery needs.
    #[derive(serde::Deserialize)]
    struct Callback {
        #[serde(default)]
        callback_url: Option<String>,
    }
    match serde_json::from_str::<Callback>(spec) {
        Ok(c) => c.callback_url,
        Err(e) => {
            tracing::warn!(
                request = %id, error = %e,
                "stored request is unreadable; its webhook is not queued"
            );
            None
        }
    }
}

/// Where the outcome of a request the reaper expired goes (its `callback_url`, the workflow it
/// resumes), read from its `spec` like [`reaped_callback_url`].
pub(crate) fn reaped_outcome_urls(id: &str, spec: &str) -> Vec<String> {
    /// The fields of the canonical request shape (see [`NewRequest`]) its deliveries need.
    #[derive(serde::Deserialize)]
    struct Targets {
        #[serde(default)]
        callback_url: Option<String>,
        #[serde(default)]
        resume: Option<clarify_core::Resume>,
    }
    match serde_json::from_str::<Targets>(spec) {
        Ok(t) => t
            .callback_url
            .into_iter()
            .chain(t.resume.as_ref().map(clarify_core::Resume::url))
            .collect(),
        Err(e) => {
            tracing::warn!(
                request = %id, error = %e,
                "stored request is unreadable; its webhook is not queued"
            );
            Vec::new()
        }
    }
}

/// When the reminder after one sent at `now` (milliseconds) is due: a period later, read from the
/// request's `spec` like [`reaped_callback_url`]; `None` when it has no reminders or the spec
/// cannot be read (then its reminders stop rather than stall the reaper).
pub(crate) fn next_reminder_at(id: &str, spec: &str, now: i64) -> Option<i64> {
    reminder_period(id, spec).map(|period| now.saturating_add(period))
}

/// The reminder period of a request, in milliseconds (see [`next_reminder_at`]).
fn reminder_period(id: &str, spec: &str) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Reminders {
        #[serde(default)]
        remind_every_seconds: Option<u64>,
    }
    match serde_json::from_str::<Reminders>(spec) {
        Ok(r) => r
            .remind_every_seconds
            .and_then(|s| i64::try_from(s).ok())
            .map(|s| s.saturating_mul(1000)),
        Err(e) => {
            tracing::warn!(request = %id, error = %e, "stored request is unreadable; its reminders stop");
            None
        }
    }
}

/// The request column holding when `kind` (`Reminded`, `Warned` or `Escalated`) next falls due.
pub(crate) fn due_column(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Reminded => "remind_at",
        EventKind::Warned => "warn_at",
        _ => "escalate_at",
    }
}

/// `columns` (a list such as [`COLUMNS`]) each qualified by the table alias `alias`.
pub(crate) fn qualified(columns: &str, alias: &str) -> String {
    columns
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
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

/// Lowercase hex, by the one rule every crate writes it with.
pub(crate) use clarify_core::text::hex;

/// The stored names of the event kinds that resolve a request, quoted for SQL's `IN (...)`.
pub(crate) fn resolving_kinds() -> String {
    resolving_kind_names()
        .map(|k| format!("'{k}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The stored names of the event kinds that resolve a request.
pub(crate) fn resolving_kind_names() -> impl Iterator<Item = &'static str> {
    EventKind::ALL
        .into_iter()
        .filter(|k| k.resolves())
        .map(|k| k.as_str())
}

/// Lowercase hex of the SHA-256 digest of `text`.
pub(crate) fn sha256_hex(text: &str) -> String {
    hex(&clarify_model::sign::sha256(&[text.as_bytes()]))
}
