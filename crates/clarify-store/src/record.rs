//! What the store keeps: request records, resolutions and events (plain data of
//! `clarify-model`, re-exported here), list queries and pages.

use clarify_core::Status;

pub use clarify_model::record::{
    Actor, Event, EventKind, OnCallShift, RequestRecord, StepUp, StoredResolution,
};

/// Filters and position of a list call. Results are newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    pub status: Option<Status>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub tag: Option<String>,
    /// At most this many records (clamped to 1..=500; default 50).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl ListQuery {
    pub const DEFAULT_LIMIT: usize = 50;
    pub const MAX_LIMIT: usize = 500;

    pub(crate) fn effective_limit(&self) -> usize {
        self.limit
            .unwrap_or(Self::DEFAULT_LIMIT)
            .clamp(1, Self::MAX_LIMIT)
    }
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub records: Vec<RequestRecord>,
    /// Pass back as `cursor` for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// Cursors are opaque to clients; inside they are the insertion sequence of the last record.
pub(crate) fn encode_cursor(seq: u64) -> String {
    format!("c{seq}")
}

pub(crate) fn decode_cursor(cursor: &str) -> Option<u64> {
    cursor.strip_prefix('c')?.parse().ok()
}

/// The result of creating a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    pub record: RequestRecord,
    /// False when an idempotency key or `dedupe` returned an existing request.
    pub created: bool,
}
