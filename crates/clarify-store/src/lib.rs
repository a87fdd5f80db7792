//! Durable clarify requests, and waiting for them.
//!
//! A [`Store`] persists requests in one of three backends, chosen by URL: `memory:` (in-process,
//! nothing persists), `sqlite://PATH` (the embedded default) or `postgres://...` (shared by
//! several instances). All three pass one conformance suite.
//!
//! What the store guarantees:
//! - a created request is stored before `create` returns, and survives a restart (SQLite,
//!   PostgreSQL);
//! - a request is resolved at most once: resolution is one conditional update, so of many
//!   concurrent answers exactly one wins and the others get [`ResolveError::AlreadyResolved`];
//! - an answer that does not fit the request changes nothing;
//! - [`Store::wait`] returns as soon as the request resolves: at once for a resolution in this
//!   process; through LISTEN/NOTIFY (with a polling backstop) on PostgreSQL; through polling of
//!   the event log every [`StoreOptions::poll_interval`] (100 ms by default) for another process
//!   sharing a SQLite file;
//! - overdue requests are expired by a reaper (safe on several instances at once) and when the
//!   store opens; the same reaper writes reminders and escalations, each once whatever the
//!   number of instances;
//! - a quorum request's votes are counted one per responder, each in one transaction that
//!   locks the request, so two votes cast at the same instant decide it once; with [`StoreOptions::retain_resolved`] the reaper also purges old resolved
//!   requests, in batches of short transactions;
//! - every creation and resolution appends to an event log with a monotonic sequence, each
//!   event hashed into one audit chain per store (see [`Store::verify_audit`]);
//! - resolving a request with a `callback_url` queues its webhook delivery in the same
//!   transaction (see [`Store::claim_deliveries`]);
//! - [`backup`] copies a SQLite store consistently while it serves.
//!
//! [`Clarify`] is the API agents use on top: ask and await an outcome, or submit and come back
//! later. [`Gate`] runs a model's tool calls through an approval policy, asking a human when the
//! policy and the remembered grants do not settle a call.
//!
//! Where it lives: this file opens a store and holds the handle; each concern is a module with
//! its types and its [`Store`] methods. `requests/` creates, reads, lists and answers requests
//! (who may answer in `requests/who_may_answer.rs`, quorum votes in `requests/votes.rs`);
//! `schedule/` expires, reminds and escalates, and purges (`schedule/retention.rs`); `feed/`
//! waits for resolutions and follows the event log; `grants/` (with suggestions), `keys/` (with
//! passkeys, linked chat accounts and the receipts' keys), `outbox/` (with Web Push),
//! `insights/`, `audit.rs` and `agui.rs` hold the rest; `agent/` is the Rust API agents call,
//! with approval gating. Below every concern, importing none: `record.rs`, `error.rs`,
//! `clock.rs`, `options.rs` and `codec.rs` (how request and event rows are laid out). Each
//! backend (`memory/`, `sqlite/`, `postgres/`) keeps one file per concern, named as at the top
//! and the same in each; `backend/` dispatches to them, and `backend/writes.rs` holds what they
//! share. No two modules import each other, even around a circle:
//! `crates/clarify/tests/it/modules.rs` fails naming one.

mod agent;
mod agui;
mod audit;
mod backend;
mod backup;
mod clock;
mod codec;
mod error;
mod feed;
mod grants;
mod insights;
mod keys;
mod memory;
#[cfg(test)]
mod migration_rule;
mod options;
mod outbox;
mod postgres;
mod record;
mod requests;
mod schedule;
mod sqlite;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

pub use agent::gate::{Gate, GateError, Gated, Proposal};
pub use agent::{Asked, Clarify};
pub use agui::{AGUI_BATCH, AguiRun};
pub use audit::{AdminEvent, AdminKind, AuditEvent, ChainBreak, KeyNamed};
pub use backup::{BackupError, BackupReport, backup};
pub use clock::{Clock, IdGenerator, ManualClock, RandomIds, SequentialIds, SystemClock};
pub use error::{AskError, ExtendError, ResolveError, StoreError};
pub use feed::{FEED_SYNC, Tally, WAIT_RETRY};
pub use grants::StoredGrant;
pub use grants::suggest::{SCAN_LIMIT, Suggest, Suggestion};
pub use insights::{
    AGES as PENDING_AGES, AgeFigures, BOUNDS, DayFigures, FAST_APPROVAL_SECONDS, Insights,
    InsightsQuery, MAX_DAYS, ResponderFigures, SurfaceFigures, TimeToDecision, ToolFigures,
};
pub use keys::identity::LinkedIdentity;
pub use keys::passkeys::{STEP_UP_WINDOW, StoredPasskey};
pub use keys::{
    AdminKeyError, ApiKey, Ensured, KeyError, LOGIN_TTL, NewKey, Role, TokenKind, generate_key,
};
pub use options::{
    Announce, DEFAULT_MAX_EXTENSION, DEFAULT_WARN_BEFORE, Deadlines, Durability, OnCall,
    PickChannels, PickWarnBefore, ReadOnCall, StoreOptions, WarnBefore,
};
pub use outbox::push::{
    NewPushSubscription, PUSH_FRESH_FOR, PushSubscription, push_subscription_of,
};
pub use outbox::{AfterAttempt, Attempt, Delivery, DeliveryStatus, PUSH_CHANNEL_PREFIX};
pub use postgres::redact as redacted_url;
pub use record::{
    Actor, Created, Event, EventKind, ListQuery, OnCallShift, Page, RequestRecord, StepUp,
    StoredResolution,
};
pub use schedule::retention::PURGE_BATCH;

use backend::Backend;
use feed::waiters::Waiters;
use schedule::{EXPIRE_BATCH, reaper};

/// A handle to a store; cheap to clone. Background tasks stop when the last handle is dropped.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    backend: Backend,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    waiters: Arc<Waiters>,
    retain_resolved: Option<TimeDelta>,
    announce: Option<Announce>,
    rules: Option<clarify_core::rules::Rules>,
    groups: Arc<BTreeMap<String, Vec<String>>>,
    forbid_self_approval: bool,
    step_up: Option<clarify_core::Risk>,
    on_call: Option<OnCall>,
    /// Told of the changes this process makes (see [`Store::observe`]).
    observer: std::sync::OnceLock<Arc<dyn Observer>>,
    /// Warnings and extensions as configured (see [`Store::set_deadlines`]).
    deadlines: std::sync::OnceLock<options::Deadlines>,
    /// Each tenant's push subscriptions as last read (see [`outbox::push::PushCache`]).
    push_cache: outbox::push::PushCache,
}

/// Told of each change this process makes to a request, once it is stored: what the server's
/// OpenTelemetry export turns into spans. Called inline on the write path (and only for writes
/// made here, so each change is told once whatever the instances), so it must not block or
/// fail: hand the change on and return.
pub trait Observer: Send + Sync + std::fmt::Debug {
    /// A request was created (not one an idempotency key or `dedupe` returned).
    fn created(&self, record: &RequestRecord);
    /// A request was resolved here: answered, skipped, cancelled, expired, or decided by a rule.
    fn resolved(&self, record: &RequestRecord);
    /// The reaper expired these requests; their records are not read back here.
    fn expired(&self, ids: &[String]);
}

impl Store {
    /// Opens (creating or migrating as needed) the store at `url`.
    pub async fn open(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let waiters = Arc::new(Waiters::default());
        let trimmed = url.trim();
        let backend = if trimmed == "memory:" || trimmed == "memory://" {
            Backend::Memory(Box::new(memory::MemoryBackend::new()))
        } else if let Some(path) = trimmed
            .strip_prefix("sqlite://")
            .or_else(|| trimmed.strip_prefix("sqlite:"))
        {
            if path.is_empty() {
                return Err(StoreError::InvalidUrl {
                    url: url.to_owned(),
                    reason: "the path is empty".to_owned(),
                });
            }
            Backend::Sqlite(sqlite::SqliteBackend::open(path, options.durability).await?)
        } else if trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://") {
            Backend::Postgres(postgres::PgBackend::open(trimmed, Arc::clone(&waiters)).await?)
        } else {
            return Err(StoreError::InvalidUrl {
                url: url.to_owned(),
                reason: "unknown scheme".to_owned(),
            });
        };
        let poll_interval = options.poll_interval.or(match backend {
            Backend::Memory(_) => None,
            Backend::Sqlite(_) => Some(Duration::from_millis(100)),
            Backend::Postgres(_) => Some(Duration::from_secs(1)),
        });
        let store = Store {
            inner: Arc::new(Inner {
                backend,
                clock: options.clock,
                ids: options.ids,
                waiters,
                retain_resolved: options.retain_resolved,
                announce: options.announce,
                rules: options.rules.filter(|r| !r.is_empty()),
                groups: options.groups,
                forbid_self_approval: options.forbid_self_approval,
                step_up: options.step_up,
                on_call: options.on_call,
                observer: std::sync::OnceLock::new(),
                deadlines: std::sync::OnceLock::new(),
                push_cache: outbox::push::PushCache::default(),
            }),
        };
        // Requests that fell due while no process was running are expired now.
        while store.expire_due().await? == EXPIRE_BATCH {}
        if tokio::runtime::Handle::try_current().is_ok() {
            if let Some(every) = options.reaper_interval {
                tokio::spawn(reaper(Arc::downgrade(&store.inner), every));
            }
            if let Some(every) = poll_interval {
                let from = store.inner.backend.last_event_seq().await?;
                tokio::spawn(feed::poller(Arc::downgrade(&store.inner), every, from));
            }
        }
        Ok(store)
    }

    /// Tells `observer` of every change this process makes from now on (every clone of this
    /// handle included). The first observer set stays; `false` when one already was.
    pub fn observe(&self, observer: Arc<dyn Observer>) -> bool {
        self.inner.observer.set(observer).is_ok()
    }

    /// Sets how requests are warned before they expire and how far they may be extended, for
    /// every clone of this handle; the first setting stays (`false` when one already was).
    /// Without it the defaults apply ([`Deadlines::default`]).
    pub fn set_deadlines(&self, deadlines: options::Deadlines) -> bool {
        self.inner.deadlines.set(deadlines).is_ok()
    }

    /// Warnings and extensions as set, or the defaults.
    pub(crate) fn deadlines(&self) -> std::borrow::Cow<'_, options::Deadlines> {
        match self.inner.deadlines.get() {
            Some(d) => std::borrow::Cow::Borrowed(d),
            None => std::borrow::Cow::Owned(options::Deadlines::default()),
        }
    }

    fn observed(&self, tell: impl FnOnce(&dyn Observer)) {
        if let Some(observer) = self.inner.observer.get() {
            tell(observer.as_ref());
        }
    }

    /// The backend's name: `memory`, `sqlite` or `postgres`.
    pub fn backend_name(&self) -> &'static str {
        self.inner.backend.name()
    }

    /// The value of the SQLite pragma `name` (letters and underscores) on the store's writer
    /// connection, such as `synchronous` (1 `NORMAL`, 2 `FULL`), for checking what
    /// [`StoreOptions::durability`] set; `None` on other backends.
    pub async fn sqlite_pragma(&self, name: &str) -> Result<Option<i64>, StoreError> {
        if !name.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
            return Err(StoreError::Backend(format!(
                "{name:?} is not a pragma name"
            )));
        }
        match &self.inner.backend {
            backend::Backend::Sqlite(b) => b.pragma(name).await.map(Some),
            _ => Ok(None),
        }
    }

    /// The clock this store reads, for edges that keep time-dependent state of their own (rate
    /// limits), so one injected clock drives them all.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.inner.clock)
    }

    /// Now, at the millisecond precision the SQL backends store, so a record read back equals
    /// the one returned when it was written.
    pub fn now(&self) -> DateTime<Utc> {
        let now = self.inner.clock.now();
        DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
    }

    /// Whether the store answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.inner.backend.ping().await
    }

    /// How many requests have waiters in this process.
    pub fn waiting_requests(&self) -> usize {
        self.inner.waiters.len()
    }
}
