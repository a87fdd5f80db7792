//! The in-memory backend: the in-process gateway. Nothing persists.
//!
//! To keep a long-running process bounded, it keeps at most [`MAX_RESOLVED`] resolved requests
//! (the oldest resolved are forgotten first) and the newest [`MAX_EVENTS`] events; pending
//! requests are never dropped.
//!
//! How it is laid out. Everything lives in one [`State`] behind one mutex, so each operation is
//! atomic as a transaction is in the SQL backends; this file holds that state. The operations
//! are in files named as the concerns of the SQL backends (`sqlite/`, `postgres/`): `requests`,
//! `votes`, `schedule`, `retention`, `feed`, `outbox`, `grants`, `keys`, `insights`, `agui`
//! and `push`, so each concern's three implementations can be read side by side. It has no `migrations`: nothing outlives
//! the process.

mod agui;
mod feed;
mod grants;
mod insights;
mod keys;
mod outbox;
mod push;
mod requests;
mod retention;
mod schedule;
mod votes;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::codec::EventParts;
use crate::error::StoreError;
use crate::grants::StoredGrant;
use crate::keys::{KeyRow, TokenKind};
use crate::outbox::Delivery;
use crate::record::{Event, RequestRecord};

/// Resolved requests kept; the oldest resolved go first (and so do finished deliveries).
const MAX_RESOLVED: usize = 100_000;
/// Events kept, newest; the audit chain keeps as many.
const MAX_EVENTS: usize = 100_000;

#[derive(Debug, Default)]
pub(crate) struct MemoryBackend {
    state: Mutex<State>,
}

/// Everything the backend holds; one lock around it makes each operation atomic.
#[derive(Debug, Default)]
struct State {
    next_seq: u64,
    /// The `jti`s of the receipts spent.
    spent_receipts: std::collections::HashSet<String>,
    rows: HashMap<String, Row>,
    /// Insertion sequence → id, for newest-first listing.
    order: BTreeMap<u64, String>,
    /// (tenant, idempotency key) → id.
    idempotency: HashMap<(String, String), String>,
    /// (tenant, session, dedupe key) → id, pending requests only.
    dedupe: HashMap<(String, Option<String>, String), String>,
    /// (deadline, seq) of pending requests that expire.
    deadlines: BTreeSet<(DateTime<Utc>, u64)>,
    /// (next reminder, seq) of pending requests with reminders.
    reminders: BTreeSet<(DateTime<Utc>, u64)>,
    /// (escalation time, seq) of pending requests not escalated yet.
    escalations: BTreeSet<(DateTime<Utc>, u64)>,
    /// (warning time, seq) of pending requests not warned yet of their deadline.
    warnings: BTreeSet<(DateTime<Utc>, u64)>,
    resolved_order: VecDeque<String>,
    events: VecDeque<Event>,
    /// The audit chain's view of the events (tombstones of purged ones included), bounded like
    /// `events`; `chain_base` is the hash of the last event it forgot, which the first one it
    /// keeps links to.
    chain: VecDeque<EventParts>,
    chain_base: String,
    next_event: u64,
    grants: Vec<(String, StoredGrant)>,
    keys: Vec<KeyRow>,
    /// Token digest → (kind, key id, expires at).
    tokens: HashMap<String, (TokenKind, String, DateTime<Utc>)>,
    secrets: HashMap<String, Vec<u8>>,
    cursors: HashMap<String, i64>,
    deliveries: BTreeMap<u64, Delivery>,
    next_delivery: u64,
    /// AG-UI runs waiting for people, and resumed ones, oldest first.
    agui_runs: Vec<crate::AguiRun>,
    /// Web Push subscriptions by id.
    push: HashMap<String, crate::outbox::push::PushSubscription>,
}

/// A stored request, with what the indexes of `State` need to find it again.
#[derive(Debug)]
struct Row {
    seq: u64,
    record: RequestRecord,
    dedupe_key: Option<String>,
    escalate_at: Option<DateTime<Utc>>,
    /// How long before its deadline it warns (seconds), and when it next does.
    warn_before: Option<u64>,
    warn_at: Option<DateTime<Utc>>,
    /// The channels the request was announced on.
    announced: Vec<String>,
}

impl MemoryBackend {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
}
