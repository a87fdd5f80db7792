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

mod access;
mod agent;
mod agui;
mod audit;
mod backend;
mod backup;
mod clock;
mod codec;
mod error;
mod gate;
mod grant;
mod identity;
mod insights;
mod memory;
mod passkeys;
mod postgres;
mod push;
mod record;
mod sqlite;
mod suggest;
mod waiters;

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use clarify_core::policy::{Grant, canonical_json};
use clarify_core::quorum::Vote;
use clarify_core::{Action, Answers, NewRequest, Resolution, Status, Submission, parse_submission};
use serde_json::Value;

pub use access::{
    AfterAttempt, ApiKey, Attempt, Delivery, DeliveryStatus, KeyError, LOGIN_TTL, NewKey, Role,
    TokenKind,
};
pub use agent::{Asked, Clarify};
pub use agui::{AGUI_BATCH, AguiRun};
pub use audit::{AdminEvent, AdminKind, AuditEvent, ChainBreak};
pub use backup::{BackupError, BackupReport, backup};
pub use clock::{Clock, IdGenerator, ManualClock, RandomIds, SequentialIds, SystemClock};
pub use error::{AskError, ResolveError, StoreError};
pub use gate::{Gate, GateError, Gated, Proposal};
pub use grant::StoredGrant;
pub use identity::LinkedIdentity;
use insights::Grain;
pub use insights::{
    AGES as PENDING_AGES, AgeFigures, BOUNDS, DayFigures, FAST_APPROVAL_SECONDS, Insights,
    InsightsQuery, MAX_DAYS, ResponderFigures, SurfaceFigures, TimeToDecision, ToolFigures,
};
pub use passkeys::{STEP_UP_WINDOW, StoredPasskey};
pub use push::{NewPushSubscription, PUSH_CHANNEL_PREFIX, PushSubscription, push_subscription_of};
pub use record::{
    Actor, Created, Event, EventKind, ListQuery, Page, RequestRecord, StepUp, StoredResolution,
};
pub use suggest::{SCAN_LIMIT, Suggest, Suggestion};

use backend::{Backend, Ballot, Cast, NewRow, Resolved};
use waiters::Waiters;

/// How a store behaves beyond its URL.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    /// How often the event log is polled for resolutions made by other processes. `None` picks
    /// the backend's default: 100 ms on SQLite, 1 s on PostgreSQL (a backstop to LISTEN/NOTIFY),
    /// never for memory.
    pub poll_interval: Option<Duration>,
    /// How often overdue requests are expired; `None` disables the reaper (tests drive expiry
    /// through [`Store::expire_due`]).
    pub reaper_interval: Option<Duration>,
    /// Resolved requests older than this (by resolution time) are purged by the reaper, with
    /// their events, tags and webhook deliveries; `None` keeps them forever.
    pub retain_resolved: Option<TimeDelta>,
    /// The channels a new request is announced on (by configured name), given its tenant.
    pub announce: Option<Announce>,
    /// How a SQLite store makes its commits durable (PostgreSQL follows its own
    /// `synchronous_commit`).
    pub durability: Durability,
    /// The `[[rules]]` every new approval is decided by, whatever path created it (see
    /// [`Store::create`]).
    pub rules: Option<clarify_core::rules::Rules>,
    /// `[groups]`: each group's members by responder name. A request naming `group:NAME` among
    /// its responders (or `escalate_to`) lets them answer, on every path.
    pub groups: Arc<BTreeMap<String, Vec<String>>>,
    /// Four eyes (`[decisions] forbid_self_approval`): the person a request acts for
    /// (`on_behalf_of`) may not answer or vote on it, on any path.
    pub forbid_self_approval: bool,
    /// Step-up (`[decisions] step_up`): requests of this risk or above are answered only with
    /// a fresh passkey confirmation for that answer, or by an admin key, on every path; `None`
    /// asks for none.
    pub step_up: Option<clarify_core::Risk>,
}

/// How a SQLite store makes its commits durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// WAL with `synchronous=NORMAL`: a commit survives a crash of the process; a power loss or
    /// an operating-system crash may lose the last moments of commits.
    #[default]
    Normal,
    /// `synchronous=FULL`: each group commit reaches the disk (fsync) before it is acknowledged,
    /// so it survives a power loss too. The writer commits many agents' writes at once, so the
    /// cost is one fsync per batch, not per request.
    Full,
}

impl Durability {
    /// Parses `normal` or `full`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "normal" => Some(Self::Normal),
            "full" => Some(Self::Full),
            _ => None,
        }
    }
}

/// Picks the channels a new request is announced on: the routes of the channel configuration.
#[derive(Clone)]
pub struct Announce(pub Arc<PickChannels>);

/// Given a new request's tenant and the request, the names of the channels to announce it on.
pub type PickChannels = dyn Fn(&str, &NewRequest) -> Vec<String> + Send + Sync;

impl std::fmt::Debug for Announce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Announce(..)")
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
            poll_interval: None,
            reaper_interval: Some(Duration::from_millis(500)),
            retain_resolved: None,
            announce: None,
            durability: Durability::Normal,
            rules: None,
            groups: Arc::default(),
            forbid_self_approval: false,
            step_up: None,
        }
    }
}

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
    /// Told of the changes this process makes (see [`Store::observe`]).
    observer: std::sync::OnceLock<Arc<dyn Observer>>,
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

/// The rollup rows an insights reading read: day rows, or the coarser rollups' (see
/// [`insights::split`]).
enum Read {
    Days(Vec<(insights::Key, insights::Cell)>),
    Split {
        totals: Vec<(insights::Key, insights::Cell)>,
        sections: Vec<(insights::Key, insights::Cell)>,
    },
}

/// How many overdue requests one reaper pass expires.
const EXPIRE_BATCH: usize = 1_000;
/// How many resolved requests one purge transaction deletes: small enough that the write path
/// waits for at most one short transaction.
pub const PURGE_BATCH: usize = 500;
/// How many times as long as a purge batch took the reaper rests before the next one.
const PURGE_REST: u32 = 2;
/// How long [`Store::sync_feed`] waits for the sequencer: longer than a stalled sequencer takes
/// to be replaced.
pub const FEED_SYNC: Duration = Duration::from_secs(10);
/// How soon a waiter whose read failed reads again, unless woken sooner.
pub const WAIT_RETRY: Duration = Duration::from_secs(1);

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
                observer: std::sync::OnceLock::new(),
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
                tokio::spawn(poller(Arc::downgrade(&store.inner), every, from));
            }
        }
        Ok(store)
    }

    /// Tells `observer` of every change this process makes from now on (every clone of this
    /// handle included). The first observer set stays; `false` when one already was.
    pub fn observe(&self, observer: Arc<dyn Observer>) -> bool {
        self.inner.observer.set(observer).is_ok()
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

    /// Stores a new request for `tenant`. A repeated idempotency key returns the original request
    /// whatever its status; with `dedupe`, an identical pending request of the same session is
    /// returned instead of a new one.
    ///
    /// With [`StoreOptions::announce`], one notification per channel it names is queued in the
    /// same transaction, for channel workers to claim ([`Store::claim_notifications`]); a request
    /// returned by its idempotency key or by `dedupe` was announced when it was created. So is
    /// one push per Web Push subscription whose person may answer it (`push:<id>`, claimed by
    /// [`Store::claim_pushes`]).
    ///
    /// With [`StoreOptions::rules`], a one-question approval is decided here, so every path
    /// that creates one (HTTP, MCP, the hooks and the gate through either, the Rust API) shares
    /// the rules: an `ask` rule changes the request before it is stored (and before routes pick
    /// its channels); an `allow` or `deny` rule's request is stored, announced nowhere, and
    /// resolved at once by the rule, as `policy:<name>` through `policy`, so its events, webhook
    /// and audit entries are those of any decision.
    pub async fn create(
        &self,
        tenant: &str,
        mut request: NewRequest,
    ) -> Result<Created, StoreError> {
        if let Some(earlier) = &request.revises {
            self.check_revises(tenant, earlier).await?;
        }
        let id = self.inner.ids.request_id();
        let decided = self.apply_rules(&id, &mut request);
        let mut channels = match (&self.inner.announce, &decided) {
            (Some(Announce(pick)), None) => pick(tenant, &request),
            _ => Vec::new(),
        };
        if decided.is_none() {
            channels.extend(self.push_channels(tenant, &request).await?);
        }
        let created_at = self.now();
        let expires_at = request
            .timeout()
            .and_then(|s| i64::try_from(s).ok())
            .map(|s| created_at + TimeDelta::seconds(s));
        let dedupe_key = request.dedupe.then(|| dedupe_key(&request));
        let remind_at = backend::next_reminder(&request, created_at);
        let escalate_at = backend::after_seconds(created_at, request.escalate_after_seconds);
        let created = self
            .inner
            .backend
            .create(NewRow {
                id,
                tenant: tenant.to_owned(),
                request,
                created_at,
                expires_at,
                dedupe_key,
                remind_at,
                escalate_at,
                announce: channels,
            })
            .await?;
        if created.created {
            self.observed(|o| o.created(&created.record));
        }
        match decided {
            Some(rule) if created.created => self.resolve_by_rule(created, &rule).await,
            _ => Ok(created),
        }
    }

    /// What the rules make of `request` (about to be stored as `id`): an `ask` rule's settings
    /// are applied to it; an `allow` or `deny` rule is returned, to resolve it once stored.
    fn apply_rules(
        &self,
        id: &str,
        request: &mut NewRequest,
    ) -> Option<clarify_core::rules::Matched> {
        let rules = self.inner.rules.as_ref()?;
        let call = clarify_core::rules::Call::of(request)?;
        let verdict = rules.decide(&call);
        for failure in verdict.errors.iter().filter(|f| f.first) {
            tracing::warn!(
                rule = failure.rule.as_str(),
                request_id = id,
                error = failure.error.as_str(),
                "a rule's condition failed to evaluate, so the rule did not match; \
                 this is logged once per rule"
            );
        }
        let matched = verdict.matched?;
        if matched.decide == clarify_core::rules::Decide::Ask {
            matched.ask.apply(request);
            return None;
        }
        Some(matched)
    }

    /// Resolves a request just created as `rule` decided it.
    async fn resolve_by_rule(
        &self,
        mut created: Created,
        rule: &clarify_core::rules::Matched,
    ) -> Result<Created, StoreError> {
        let Some(body) = rule.answer() else {
            return Ok(created);
        };
        let record = &created.record;
        let submission = parse_submission(&record.request, &body).map_err(|e| {
            StoreError::Backend(format!("the rule's decision does not fit the request: {e}"))
        })?;
        let stored = StoredResolution {
            resolution: resolution_of(submission),
            actor: Actor::new(format!("policy:{}", rule.name), "policy"),
            resolved_at: self.now(),
        };
        match self.resolve_stored(&record.id, stored, &[]).await {
            Ok(resolved) => {
                created.record = resolved;
                Ok(created)
            }
            Err(ResolveError::AlreadyResolved(resolved)) => {
                created.record = *resolved;
                Ok(created)
            }
            Err(ResolveError::Store(e)) => Err(e),
            Err(other) => Err(StoreError::Backend(other.to_string())),
        }
    }

    /// What the rules would decide for `call`, without creating anything (`None` without
    /// rules).
    pub fn check_rules(
        &self,
        call: &clarify_core::rules::Call,
    ) -> Option<clarify_core::rules::Verdict> {
        let verdict = self.inner.rules.as_ref()?.decide(call);
        for failure in verdict.errors.iter().filter(|f| f.first) {
            tracing::warn!(
                rule = failure.rule.as_str(),
                error = failure.error.as_str(),
                "a rule's condition failed to evaluate on a policy check, so the rule did not \
                 match; this is logged once per rule"
            );
        }
        Some(verdict)
    }

    /// A revision follows a decision: `earlier` must be a resolved request of the same tenant.
    async fn check_revises(&self, tenant: &str, earlier: &str) -> Result<(), StoreError> {
        let reason = match self.get(tenant, earlier).await? {
            None => format!("there is no request {}", clarify_core::quoted(earlier)),
            Some(r) if !r.status.is_resolved() => format!(
                "request {} is still pending; a revision follows a decision",
                clarify_core::quoted(earlier)
            ),
            Some(_) => return Ok(()),
        };
        Err(StoreError::Rejected(
            clarify_core::ValidationError::InvalidRevises { reason },
        ))
    }

    /// The request, if it exists in `tenant`.
    pub async fn get(&self, tenant: &str, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        Ok(self
            .inner
            .backend
            .get(id)
            .await?
            .filter(|r| r.tenant == tenant))
    }

    /// The request with this id, whatever its tenant: only for callers that already hold a
    /// capability for it (a signed answer link).
    pub async fn get_by_id(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        self.inner.backend.get(id).await
    }

    /// How many requests are pending in the whole store, every tenant together.
    pub async fn count_pending(&self) -> Result<u64, StoreError> {
        Ok(self.pending_at().await?.0)
    }

    /// How many requests are pending in the whole store, and the sequence number of the last
    /// event, read in one snapshot: a count that events after that number keep up to date
    /// (`created` adds one, each resolution takes one away).
    pub async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        self.inner.backend.pending_at().await
    }

    /// A page of `tenant`'s requests, newest first.
    pub async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Page, StoreError> {
        let before = match &query.cursor {
            None => None,
            Some(c) => Some(record::decode_cursor(c).ok_or(StoreError::InvalidCursor)?),
        };
        self.inner.backend.list(tenant, query, before).await
    }

    /// What `tenant`'s decisions add up to over the query's days (see [`Insights`]): read from
    /// the rollup, so its cost grows with the days and the distinct combinations they saw,
    /// not with the number of requests; pending requests are read as they are now.
    pub async fn insights(
        &self,
        tenant: &str,
        query: &InsightsQuery,
    ) -> Result<Insights, StoreError> {
        let now = self.now();
        let (from, to) = query
            .days(now.date_naive())
            .map_err(StoreError::InvalidQuery)?;
        let (first, last) = insights::day_range(from, to);
        // PostgreSQL counts a resolution when its event is numbered: wait for what is
        // committed, so a reading after an answer includes it.
        self.sync_feed().await?;
        let backend = &self.inner.backend;
        // A broad reading over whole months reads the coarser rollups (see `insights`), as far
        // as they reach, after counting into them the days that ended since a reading last did.
        let through = match query.is_broad() {
            true => self.compacted_insights(tenant, now).await?,
            false => None,
        };
        let plan = through.and_then(|through| insights::split(first, last.min(through)));
        let rows = match (plan, through) {
            (Some(plan), Some(through)) => {
                let totals_to = last.min(through);
                let mut totals = backend
                    .insight_rows(tenant, query, Grain::Total, first, totals_to)
                    .await?;
                let (m0, m1) = plan.months;
                let mut sections = backend
                    .insight_rows(tenant, query, Grain::Month, m0, m1)
                    .await?;
                for (a, b) in &plan.edges {
                    sections.extend(
                        backend
                            .insight_rows(tenant, query, Grain::Day, *a, *b)
                            .await?,
                    );
                }
                // The days after the coarser rollups' last count in both, from the day rows.
                if totals_to < last {
                    let tail = backend
                        .insight_rows(tenant, query, Grain::Day, totals_to + 1, last)
                        .await?;
                    totals.extend(tail.iter().cloned());
                    sections.extend(tail);
                }
                Read::Split { totals, sections }
            }
            _ => Read::Days(
                backend
                    .insight_rows(tenant, query, Grain::Day, first, last)
                    .await?,
            ),
        };
        let pending: Vec<DateTime<Utc>> = backend
            .pending_of(tenant, query.agent.as_deref())
            .await?
            .iter()
            .filter(|r| query.keeps_pending(r))
            .map(|r| r.created_at)
            .collect();
        Ok(match rows {
            Read::Days(rows) => insights::summarize(from, to, rows, &pending, now),
            Read::Split { totals, sections } => {
                insights::summarize_split(from, to, totals, sections, &pending, now)
            }
        })
    }

    /// The last day `tenant`'s coarser insights rollups hold, after moving it on to two days ago (a
    /// resolution is counted under the day it was made, and on PostgreSQL by the sequencer's
    /// round just after: a day two days past gets no more rows); `None` for a backend without
    /// them.
    async fn compacted_insights(
        &self,
        tenant: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let backend = &self.inner.backend;
        let Some(done) = backend.insights_compacted_through(tenant).await? else {
            return Ok(None);
        };
        let due = insights::day_of(now) - 2;
        if due <= done {
            return Ok(Some(done));
        }
        Ok(Some(backend.compact_insights(tenant, due).await?))
    }

    /// Answers (or skips) the request with a raw answer body, checked against the live request.
    ///
    /// On a quorum request (`approvals_required` above 1) an answer is the responder's vote: the
    /// returned record is still pending, with the vote in its `votes`, until enough responders
    /// approved or one denied. A responder votes once ([`ResolveError::AlreadyVoted`]); an
    /// anonymous actor cannot vote ([`ResolveError::QuorumNeedsIdentity`]).
    pub async fn answer(
        &self,
        tenant: &str,
        id: &str,
        body: &Value,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.pending(tenant, id, actor).await?;
        let submission = parse_submission(&record.request, body)?;
        self.resolve_answer(&record, submission, actor).await
    }

    /// Resolves the request with an already-checked submission.
    pub async fn submit(
        &self,
        tenant: &str,
        id: &str,
        submission: Submission,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.pending(tenant, id, actor).await?;
        self.resolve_answer(&record, submission, actor).await
    }

    /// Skips the request, when it allows skipping.
    pub async fn skip(
        &self,
        tenant: &str,
        id: &str,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.pending(tenant, id, actor).await?;
        if !record.request.allow_skip {
            return Err(ResolveError::Invalid(
                clarify_core::AnswerError::SkipNotAllowed,
            ));
        }
        self.resolve(id, Resolution::Skipped, actor).await
    }

    /// Cancels the request: nobody answers it any more.
    pub async fn cancel(
        &self,
        tenant: &str,
        id: &str,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        match self.get(tenant, id).await? {
            None => Err(ResolveError::NotFound),
            Some(r) if r.status.is_resolved() => Err(ResolveError::AlreadyResolved(Box::new(r))),
            Some(_) => self.resolve(id, Resolution::Cancelled, actor).await,
        }
    }

    /// Purges one batch (at most [`PURGE_BATCH`]) of the requests resolved longer ago than
    /// [`StoreOptions::retain_resolved`], with their events, tags and webhook deliveries; returns
    /// how many. Does nothing without a retention period. Several instances may purge at once:
    /// each batch is one transaction, and a request is deleted once. Its events stay in the
    /// audit chain as tombstones, so the chain still verifies.
    pub async fn purge_resolved(&self) -> Result<usize, StoreError> {
        let Some(retain) = self.inner.retain_resolved else {
            return Ok(0);
        };
        let before = self.now() - retain;
        let ids = self
            .inner
            .backend
            .purge_resolved(before, PURGE_BATCH)
            .await?;
        Ok(ids.len())
    }

    /// Expires every pending request past its deadline; returns how many (at most one batch).
    pub async fn expire_due(&self) -> Result<usize, StoreError> {
        let ids = self
            .inner
            .backend
            .expire_due(self.now(), EXPIRE_BATCH)
            .await?;
        for id in &ids {
            self.inner.waiters.notify(id);
        }
        if !ids.is_empty() {
            self.observed(|o| o.expired(&ids));
        }
        Ok(ids.len())
    }

    /// Writes a `request.reminded` event (and queues its webhook) for every pending request
    /// whose reminder is due, and schedules its next one a period from now; returns how many
    /// (at most one batch). Safe on several instances: each reminder is written once.
    pub async fn remind_due(&self) -> Result<usize, StoreError> {
        let ids = self
            .inner
            .backend
            .remind_due(self.now(), EXPIRE_BATCH)
            .await?;
        Ok(ids.len())
    }

    /// Escalates every pending request whose escalation is due: from now on its `escalate_to`
    /// may answer, and a `request.escalated` event is written (and its webhook queued); returns
    /// how many (at most one batch). Each request escalates once, whatever the instances.
    pub async fn escalate_due(&self) -> Result<usize, StoreError> {
        let ids = self
            .inner
            .backend
            .escalate_due(self.now(), EXPIRE_BATCH)
            .await?;
        Ok(ids.len())
    }

    /// Waits up to `timeout` for the request to resolve and returns it: resolved, or still
    /// pending when the time ran out.
    ///
    /// The first read must succeed: an unknown request, or a store out of reach, is reported at
    /// once. After that a failed read (the database briefly out of reach) does not end the wait:
    /// the read is tried again on the next wake-up or after [`WAIT_RETRY`], and the failure is
    /// reported only if the time runs out before a read succeeds. So a long-poll rides out an
    /// outage shorter than its timeout and still sees a resolution made meanwhile.
    pub async fn wait(
        &self,
        tenant: &str,
        id: &str,
        timeout: Duration,
    ) -> Result<RequestRecord, ResolveError> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Registered before the first read, so a resolution in between still wakes us.
        let guard = self.inner.waiters.register(id);
        // Whether the request was found pending. The record itself is not kept: a waiter may
        // sleep for a minute, and thousands of them may, so it holds no copy of its request;
        // at the deadline it reads it once more.
        let mut seen = false;
        loop {
            let notified = guard.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Resolved here: the record that was committed, with no read.
            if let Some(record) = guard.resolved().filter(|r| r.tenant == tenant) {
                return Ok(record);
            }
            // Reads are boxed: inlined, the largest backend's read future would sit in every
            // sleeping waiter (over 2 KiB each); boxed, it exists only while a read runs.
            let failure = match Box::pin(self.get(tenant, id)).await {
                Ok(Some(record)) if record.status.is_resolved() => return Ok(record),
                Ok(Some(record)) if record.expires_at.is_some_and(|at| at <= self.now()) => {
                    match Box::pin(self.expire_one(id)).await {
                        Ok(_) => continue,
                        Err(e) if seen => Some(e),
                        Err(e) => return Err(e.into()),
                    }
                }
                Ok(Some(_)) => {
                    seen = true;
                    None
                }
                Ok(None) => return Err(ResolveError::NotFound),
                Err(e) if seen => Some(e),
                Err(e) => return Err(e.into()),
            };
            let until = match failure {
                Some(_) => deadline.min(tokio::time::Instant::now() + WAIT_RETRY),
                None => deadline,
            };
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(until) => if until == deadline {
                    if let Some(e) = failure {
                        return Err(e.into());
                    }
                    return match Box::pin(self.get(tenant, id)).await {
                        Ok(Some(record)) => Ok(record),
                        Ok(None) => Err(ResolveError::NotFound),
                        Err(e) => Err(e.into()),
                    };
                }
            }
        }
    }

    /// Events of `tenant` (or of every tenant) after sequence `after`, oldest first.
    pub async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.inner.backend.events_after(tenant, after, limit).await
    }

    /// Waits until every event committed before the call has its sequence number, so
    /// [`Store::events_after`] and the audit chain show it. PostgreSQL numbers events a few
    /// milliseconds after they commit (one sequencer per database does, in rounds); SQLite and
    /// memory stores number them as they commit, so this returns at once. Fails with
    /// [`StoreError::Unavailable`] when no sequencer makes progress within [`FEED_SYNC`].
    pub async fn sync_feed(&self) -> Result<(), StoreError> {
        self.inner.backend.sync_feed(FEED_SYNC).await
    }

    /// Follows the newest event-log sequence this process has heard of from other processes
    /// (PostgreSQL's per-batch notification, the event-log poller): a hint that
    /// [`Store::events_after`] has more, which saves a follower polling. Writes of this process
    /// are not announced here on SQLite and memory stores; whoever makes them knows.
    pub fn watch_feed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.waiters.watch_feed()
    }

    /// The sequence of the newest event (0 when there is none).
    pub async fn last_event_seq(&self) -> Result<u64, StoreError> {
        self.inner.backend.last_event_seq().await
    }

    /// The grants of `tenant` for `tool`.
    pub async fn grants(&self, tenant: &str, tool: &str) -> Result<Vec<Grant>, StoreError> {
        let tool = tool.trim().to_lowercase();
        let filter = grant::GrantFilter {
            tool: Some(&tool),
            session: None,
        };
        let stored = self.inner.backend.grants(tenant, filter).await?;
        let now = self.now();
        Ok(stored
            .into_iter()
            .filter(|g| g.live(now))
            .map(|g| g.grant)
            .collect())
    }

    /// The grants of `tenant`, oldest first; with `session`, only that session's grants.
    pub async fn list_grants(
        &self,
        tenant: &str,
        session: Option<&str>,
    ) -> Result<Vec<StoredGrant>, StoreError> {
        let filter = grant::GrantFilter {
            tool: None,
            session,
        };
        self.inner.backend.grants(tenant, filter).await
    }

    /// The grant that lets `action` run in `session` without asking, if any: an `always`
    /// grant before a `session` one. A grant past its `expires_at` or its `max_uses` no longer
    /// matches; finding one counts a use of it, atomically, so of several instances using the
    /// last use of a grant at once exactly one gets it (the others get the next grant that
    /// covers the call, or none).
    pub async fn check_grant(
        &self,
        tenant: &str,
        action: &Action,
        session: Option<&str>,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let tool = action.name.trim().to_lowercase();
        let filter = grant::GrantFilter {
            tool: Some(&tool),
            session: None,
        };
        let mut covering: Vec<StoredGrant> = self
            .inner
            .backend
            .grants(tenant, filter)
            .await?
            .into_iter()
            .filter(|g| g.grant.covers(&action.name, &action.arguments, session))
            .collect();
        covering.sort_by_key(|g| std::cmp::Reverse(g.grant.scope));
        let now = self.now();
        for grant in covering.into_iter().filter(|g| g.live(now)) {
            if let Some(used) = self.inner.backend.use_grant(tenant, &grant.id, now).await? {
                return Ok(Some(used));
            }
        }
        Ok(None)
    }

    /// Revokes grant `id` of `tenant`, recording `grant.revoked` by `by` in the audit chain in
    /// the same transaction; returns it, or `None` when there is no such grant.
    pub async fn revoke_grant(
        &self,
        tenant: &str,
        id: &str,
        by: &Actor,
    ) -> Result<Option<StoredGrant>, StoreError> {
        self.inner
            .backend
            .revoke_grant(tenant, id, self.now(), by)
            .await
    }

    /// Whether the store answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.inner.backend.ping().await
    }

    /// How many requests have waiters in this process.
    pub fn waiting_requests(&self) -> usize {
        self.inner.waiters.len()
    }

    /// The pending request, checked for tenant and responder.
    async fn pending(
        &self,
        tenant: &str,
        id: &str,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.get(tenant, id).await?.ok_or(ResolveError::NotFound)?;
        if record.status.is_resolved() {
            return Err(ResolveError::AlreadyResolved(Box::new(record)));
        }
        if self.needs_step_up(&record.request) {
            let vouched = match &actor.step_up {
                StepUp::None => false,
                StepUp::AdminKey => true,
                StepUp::Confirmed { request_id } => *request_id == record.id,
            };
            if !vouched {
                return Err(ResolveError::StepUpRequired);
            }
        }
        match &actor.name {
            Some(name) => {
                if !record.allows_responder(name, &self.groups_of(name, &actor.groups)) {
                    return Err(ResolveError::NotAllowed {
                        responder: name.clone(),
                    });
                }
                if self.inner.forbid_self_approval && record.request.acts_for(name) {
                    return Err(ResolveError::SelfApproval {
                        responder: name.clone(),
                    });
                }
            }
            None => {
                if let (true, Some(person)) = (
                    self.inner.forbid_self_approval,
                    &record.request.on_behalf_of,
                ) {
                    return Err(ResolveError::SelfApprovalNeedsIdentity {
                        person: person.clone(),
                    });
                }
            }
        }
        Ok(record)
    }

    /// The groups `name` is in: those the identity provider gave (`claimed`) and those the
    /// configuration's `[groups]` list them in.
    pub fn groups_of(&self, name: &str, claimed: &[String]) -> Vec<String> {
        let mut groups: Vec<String> = claimed.to_vec();
        for (group, members) in self.inner.groups.iter() {
            if members.iter().any(|m| m == name) && !groups.contains(group) {
                groups.push(group.clone());
            }
        }
        groups
    }

    /// The configured members of `group` (`[groups]`); a provider's claim may add others, who
    /// cannot be listed.
    pub fn members_of(&self, group: &str) -> Vec<String> {
        self.inner.groups.get(group).cloned().unwrap_or_default()
    }

    /// Whether answering `request` needs a passkey confirmation (`[decisions] step_up`): chat,
    /// e-mail and push offer only "Open in clarify" for it.
    pub fn needs_step_up(&self, request: &clarify_core::NewRequest) -> bool {
        self.inner
            .step_up
            .is_some_and(|threshold| request.risk >= threshold)
    }

    /// Whether the store refuses answers from the person a request acts for.
    pub fn forbids_self_approval(&self) -> bool {
        self.inner.forbid_self_approval
    }

    /// Resolves the pending `record` with a checked submission (or, on a quorum request, casts
    /// it as a vote), with the grants the answer gives.
    async fn resolve_answer(
        &self,
        record: &RequestRecord,
        submission: Submission,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        if let (true, Submission::Answered(answers)) = (record.request.is_quorum(), &submission) {
            return self.vote(record, answers.clone(), actor).await;
        }
        let resolved_at = self.now();
        let grants = match &submission {
            Submission::Answered(answers) => self.grants_for(record, answers, actor, resolved_at),
            Submission::Skipped => Vec::new(),
        };
        let stored = StoredResolution {
            resolution: resolution_of(submission),
            actor: actor.clone(),
            resolved_at,
        };
        self.resolve_stored(&record.id, stored, &grants).await
    }

    /// The grants `answers` to `record` give, made by `actor`: the one place grants are made.
    fn grants_for(
        &self,
        record: &RequestRecord,
        answers: &Answers,
        actor: &Actor,
        at: DateTime<Utc>,
    ) -> Vec<StoredGrant> {
        grant_rows(
            &*self.inner.ids,
            &record.request,
            &record.id,
            answers,
            actor,
            at,
        )
    }

    /// Casts `actor`'s vote on the quorum request `record`.
    async fn vote(
        &self,
        record: &RequestRecord,
        answers: Answers,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let Some(name) = &actor.name else {
            return Err(ResolveError::QuorumNeedsIdentity {
                required: record.request.approvals_required,
            });
        };
        let at = self.now();
        let ids = Arc::clone(&self.inner.ids);
        let decider = actor.clone();
        let ballot = Ballot {
            vote: Vote::new(name.clone(), answers, at),
            channel: actor.channel.clone(),
            principal: actor.principal.clone(),
            grants: Box::new(move |record, answers| {
                grant_rows(&*ids, &record.request, &record.id, answers, &decider, at)
            }),
        };
        match self.inner.backend.vote(&record.id, ballot).await? {
            Cast::Counted(record) => {
                if record.status.is_resolved() {
                    self.inner.waiters.resolved(&record);
                    self.observed(|o| o.resolved(&record));
                }
                Ok(record)
            }
            Cast::AlreadyVoted(record) => Err(ResolveError::AlreadyVoted {
                responder: name.clone(),
                record: Box::new(record),
            }),
            Cast::Lost(record) if record.status == Status::Pending => {
                let record = self.expire_one(&record.id).await?.unwrap_or(record);
                Err(ResolveError::AlreadyResolved(Box::new(record)))
            }
            Cast::Lost(record) => Err(ResolveError::AlreadyResolved(Box::new(record))),
            Cast::NotFound => Err(ResolveError::NotFound),
        }
    }

    async fn resolve(
        &self,
        id: &str,
        resolution: Resolution,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let stored = StoredResolution {
            resolution,
            actor: actor.clone(),
            resolved_at: self.now(),
        };
        self.resolve_stored(id, stored, &[]).await
    }

    async fn resolve_stored(
        &self,
        id: &str,
        stored: StoredResolution,
        grants: &[StoredGrant],
    ) -> Result<RequestRecord, ResolveError> {
        match self.inner.backend.resolve(id, stored, grants).await? {
            Resolved::Won(record) => {
                self.inner.waiters.resolved(&record);
                self.observed(|o| o.resolved(&record));
                Ok(record)
            }
            Resolved::Lost(record) if record.status == Status::Pending => {
                // Past its deadline: it expires rather than accept a late resolution.
                let record = self.expire_one(id).await?.unwrap_or(record);
                Err(ResolveError::AlreadyResolved(Box::new(record)))
            }
            Resolved::Lost(record) => Err(ResolveError::AlreadyResolved(Box::new(record))),
            Resolved::NotFound => Err(ResolveError::NotFound),
        }
    }

    /// Expires one overdue request; returns its final record.
    async fn expire_one(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        let expired = StoredResolution::expired(self.now());
        Ok(match self.inner.backend.resolve(id, expired, &[]).await? {
            Resolved::Won(record) => {
                self.inner.waiters.resolved(&record);
                self.observed(|o| o.resolved(&record));
                Some(record)
            }
            Resolved::Lost(record) => Some(record),
            Resolved::NotFound => None,
        })
    }
}

/// The grants `answers` to a request give, each with a fresh id.
fn grant_rows(
    ids: &dyn IdGenerator,
    request: &NewRequest,
    request_id: &str,
    answers: &Answers,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Vec<StoredGrant> {
    clarify_core::policy::bounded_grants_of(request, answers)
        .into_iter()
        .map(|(grant, bounds)| StoredGrant {
            id: ids.grant_id(),
            grant,
            request_id: Some(request_id.to_owned()),
            granted_by: actor.name.clone(),
            created_at: at,
            expires_at: bounds
                .ttl_seconds
                .and_then(|s| i64::try_from(s).ok())
                .and_then(TimeDelta::try_seconds)
                .and_then(|ttl| at.checked_add_signed(ttl)),
            max_uses: bounds.max_uses,
            uses: 0,
        })
        .collect()
}

fn resolution_of(submission: Submission) -> Resolution {
    match submission {
        Submission::Answered(answers) => Resolution::Answered(answers),
        Submission::Skipped => Resolution::Skipped,
    }
}

/// What makes two requests "identical" for `dedupe`: everything the human is shown.
fn dedupe_key(request: &NewRequest) -> String {
    let shown = serde_json::json!({
        "questions": request.questions,
        "context": request.context,
        "agent": request.agent,
        "tags": request.tags,
        "allow_skip": request.allow_skip,
    });
    codec::sha256_hex(&canonical_json(&shown))
}

/// Expires overdue requests every `every`, until the store is dropped.
async fn reaper(inner: Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let store = Store { inner };
        if let Err(e) = store.expire_due().await {
            tracing::warn!(error = %e, "expiring overdue requests failed; retrying");
        }
        if let Err(e) = store.escalate_due().await {
            tracing::warn!(error = %e, "escalating requests failed; retrying");
        }
        if let Err(e) = store.remind_due().await {
            tracing::warn!(error = %e, "reminding of requests failed; retrying");
        }
        // Batch after batch until nothing is due, resting twice as long as each batch took
        // before the next: the purge takes at most a third of the writer's time, so agents and
        // people keep most of it (a backlog of a million requests takes minutes, not hours).
        // A pass purges for one reaper interval at most, so expiry, escalations and reminders
        // stay on time during a long purge.
        let until = tokio::time::Instant::now() + every;
        while tokio::time::Instant::now() < until {
            let started = tokio::time::Instant::now();
            match store.purge_resolved().await {
                Ok(n) if n == PURGE_BATCH => {
                    tokio::time::sleep(started.elapsed() * PURGE_REST).await;
                }
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "purging resolved requests failed; retrying");
                    break;
                }
            }
        }
    }
}

/// Watches the event log for resolutions made by other processes and wakes local waiters.
async fn poller(inner: Weak<Inner>, every: Duration, mut after: u64) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        match inner.backend.events_after(None, after, 1_000).await {
            Ok(events) => {
                for event in &events {
                    if event.kind.resolves() {
                        inner.waiters.notify(&event.request_id);
                    }
                    after = after.max(event.seq);
                }
                inner.waiters.feed_reached(after);
            }
            Err(e) => tracing::warn!(error = %e, "polling the event log failed; retrying"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids come from the injected generator, so tests and embedders can predict them.
    #[tokio::test]
    async fn ids_come_from_the_injected_generator() {
        let options = StoreOptions {
            ids: Arc::new(SequentialIds::default()),
            reaper_interval: None,
            ..StoreOptions::default()
        };
        let store = Store::open("memory:", options)
            .await
            .expect("memory store opens");
        let raw = serde_json::json!({"question": "Proceed?"});
        let request = clarify_core::parse_request(&raw, &clarify_core::Limits::default())
            .expect("valid request");
        let first = store.create("t", request.clone()).await.expect("created");
        let second = store.create("t", request).await.expect("created");
        assert_eq!(first.record.id, "r000001");
        assert_eq!(second.record.id, "r000002");
    }
}
