//! The three storage backends behind one set of operations.
//!
//! Each backend implements the same inherent methods; [`Backend`] dispatches to them without
//! boxing. Backends only persist and read: they know nothing of answer validation, waiting or
//! clocks, which live in [`crate::Store`]. Every resolution is one conditional update
//! (`... WHERE status = 'pending'`), so exactly one writer wins. What the backends share (the
//! values a write takes and returns) is in [`writes`], below both this dispatch and them.

pub(crate) mod writes;

use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::grants::{GrantFilter, StoredGrant};
use crate::insights::{Cell, Grain, InsightsQuery, Key};
use crate::keys::{ApiKey, KeyRow, TokenKind};
use crate::memory::MemoryBackend;
use crate::outbox::push::PushSubscription;
use crate::outbox::{AfterAttempt, Attempt, Delivery, Outbox};
use crate::postgres::PgBackend;
use crate::record::{
    Actor, Created, Event, ListQuery, OnCallShift, Page, RequestRecord, StoredResolution,
};
use crate::sqlite::SqliteBackend;
use writes::{Ballot, Cast, NewRow, Resolved};

#[derive(Debug)]
pub(crate) enum Backend {
    /// Boxed: its maps make it twice the size of the others, and every store carries a backend.
    Memory(Box<MemoryBackend>),
    Sqlite(SqliteBackend),
    Postgres(PgBackend),
}

macro_rules! dispatch {
    ($self:expr, $b:ident => $call:expr) => {
        match $self {
            Backend::Memory($b) => $call,
            Backend::Sqlite($b) => $call,
            Backend::Postgres($b) => $call,
        }
    };
}

impl Backend {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Memory(_) => "memory",
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// Inserts the request, or returns the existing one with the same idempotency key or, when
    /// `dedupe_key` is set, an identical pending one of the same tenant and session.
    pub(crate) async fn create(&self, row: NewRow) -> Result<Created, StoreError> {
        dispatch!(self, b => b.create(row).await)
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        dispatch!(self, b => b.get(id).await)
    }

    /// Keeps `shifts` as the pending request's on-call readings (all of them, the earlier
    /// ones included); a resolved request keeps those it had. Returns whether it was pending.
    pub(crate) async fn set_on_call(
        &self,
        id: &str,
        shifts: &[OnCallShift],
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.set_on_call(id, shifts).await)
    }

    pub(crate) async fn list(
        &self,
        tenant: &str,
        query: &ListQuery,
        before: Option<u64>,
    ) -> Result<Page, StoreError> {
        dispatch!(self, b => b.list(tenant, query, before).await)
    }

    /// Resolves a pending request that is not past its deadline at `now` (expiry itself is
    /// allowed only once the deadline has passed), recording `grants` with it when it wins.
    pub(crate) async fn resolve(
        &self,
        id: &str,
        resolution: StoredResolution,
        grants: &[StoredGrant],
    ) -> Result<Resolved, StoreError> {
        dispatch!(self, b => b.resolve(id, resolution, grants).await)
    }

    /// Reads request `id` of `tenant`, has `decide` decide an answer on it and resolves it as
    /// decided. SQLite does all three in the writer's transaction (one read of the row, which
    /// then stands for the row as resolved); the others read, then resolve as
    /// [`Backend::resolve`] does, whose conditional update refuses a request resolved meanwhile.
    pub(crate) async fn resolve_decided(
        &self,
        tenant: &str,
        id: &str,
        decide: writes::Decide,
    ) -> Result<writes::Decided, StoreError> {
        use writes::{Decided, Decision};
        if let Backend::Sqlite(b) = self {
            return b.resolve_decided(tenant, id, decide).await;
        }
        let Some(record) = self.get(id).await?.filter(|r| r.tenant == tenant) else {
            return Ok(Decided::Refused(crate::error::ResolveError::NotFound));
        };
        Ok(match decide(&record) {
            Err(e) => Decided::Refused(e),
            Ok(Decision::Vote(answers)) => Decided::Vote(Box::new(record), answers),
            Ok(Decision::Resolve(stored, grants)) => {
                Decided::Resolved(Box::new(self.resolve(id, stored, &grants).await?))
            }
        })
    }

    /// Expires up to `limit` pending requests whose deadline is at or before `now`; returns
    /// their ids.
    pub(crate) async fn expire_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        dispatch!(self, b => b.expire_due(now, limit).await)
    }

    /// Casts a vote on a quorum request: counts it, and resolves the request in the same
    /// transaction when it decides it. The request is locked meanwhile, so of two votes cast at
    /// once each sees the other or neither; a request is decided once.
    pub(crate) async fn vote(&self, id: &str, ballot: Ballot) -> Result<Cast, StoreError> {
        dispatch!(self, b => b.vote(id, ballot).await)
    }

    /// Writes a `reminded` event (and queues its webhook) for up to `limit` pending requests
    /// whose reminder is due at `now`, and moves each one's next reminder a period past `now`;
    /// returns their ids. Of several instances doing this at once, each request is reminded once.
    pub(crate) async fn remind_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        dispatch!(self, b => b.remind_due(now, limit).await)
    }

    /// Writes a `warned` event (and queues its webhook and channel notifications) for up to
    /// `limit` pending requests whose warning before expiry is due at `now`, and clears it;
    /// returns their ids. Of several instances doing this at once, each request is warned once.
    pub(crate) async fn warn_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        dispatch!(self, b => b.warn_due(now, limit).await)
    }

    /// Moves the deadline of the pending request `id` from `deadline` (still ahead at `now`) to
    /// `to`, warns again `warn_before` ahead of it where that is after `now`, and writes an
    /// `extended` event by `by`, in one transaction; `None` (nothing written) when the request
    /// is no longer pending with that deadline, which a concurrent resolution, expiry or
    /// extension changed.
    pub(crate) async fn extend(
        &self,
        id: &str,
        deadline: DateTime<Utc>,
        to: DateTime<Utc>,
        by: &Actor,
        now: DateTime<Utc>,
    ) -> Result<Option<RequestRecord>, StoreError> {
        dispatch!(self, b => b.extend(id, deadline, to, by, now).await)
    }

    /// Appends a `refused` event by `by` to request `id` of `tenant`; `false` (nothing written)
    /// when there is no such request.
    pub(crate) async fn refused(
        &self,
        tenant: &str,
        id: &str,
        by: &Actor,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.refused(tenant, id, by, now).await)
    }

    /// Escalates up to `limit` pending requests whose escalation is due at `now`: records when,
    /// writes an `escalated` event and queues its webhook; returns their ids. Each request
    /// escalates once.
    pub(crate) async fn escalate_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        dispatch!(self, b => b.escalate_due(now, limit).await)
    }

    /// Deletes up to `limit` requests resolved before `before` (oldest resolution first), with
    /// their tags, events, deliveries and delivery attempts, in one transaction; a request whose
    /// webhook is still being delivered is kept until it is done. Returns their ids.
    pub(crate) async fn purge_resolved(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        dispatch!(self, b => b.purge_resolved(before, limit).await)
    }

    /// The insights rollup rows of `grain` of `tenant` that `query` counts (its tag's, days
    /// `from..=to` (months starting in it, for the month grain), matching its filters).
    pub(crate) async fn insight_rows(
        &self,
        tenant: &str,
        query: &InsightsQuery,
        grain: Grain,
        from: i64,
        to: i64,
    ) -> Result<Vec<(Key, Cell)>, StoreError> {
        dispatch!(self, b => b.insight_rows(tenant, query, grain, from, to).await)
    }

    /// The last day `tenant`'s coarser insights rollups hold; `None` when the backend keeps
    /// none.
    pub(crate) async fn insights_compacted_through(
        &self,
        tenant: &str,
    ) -> Result<Option<i64>, StoreError> {
        dispatch!(self, b => b.insights_compacted_through(tenant).await)
    }

    /// Counts `tenant`'s day rows up to day `through` into the coarser rollups; the last day
    /// they hold.
    pub(crate) async fn compact_insights(
        &self,
        tenant: &str,
        through: i64,
    ) -> Result<i64, StoreError> {
        dispatch!(self, b => b.compact_insights(tenant, through).await)
    }

    /// `tenant`'s pending requests (of `agent`, when given), oldest first.
    pub(crate) async fn pending_of(
        &self,
        tenant: &str,
        agent: Option<&str>,
    ) -> Result<Vec<RequestRecord>, StoreError> {
        dispatch!(self, b => b.pending_of(tenant, agent).await)
    }

    /// Events with a sequence above `after`, oldest first, of one tenant or of all.
    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        dispatch!(self, b => b.events_after(tenant, after, limit).await)
    }

    /// The audit chain's stored events after `after`, tombstones included.
    pub(crate) async fn audit_events(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<crate::codec::EventParts>, StoreError> {
        dispatch!(self, b => b.audit_events(tenant, after, limit).await)
    }

    /// The hash the first stored event links to.
    pub(crate) async fn audit_base(&self) -> Result<String, StoreError> {
        match self {
            Backend::Memory(b) => b.audit_base().await,
            // They keep every event (retention leaves tombstones): the first links to nothing.
            Backend::Sqlite(_) | Backend::Postgres(_) => Ok(String::new()),
        }
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        dispatch!(self, b => b.last_event_seq().await)
    }

    pub(crate) async fn tally_after(&self, after: u64) -> Result<crate::Tally, StoreError> {
        dispatch!(self, b => b.tally_after(after).await)
    }

    /// Waits until every event committed before the call is numbered (see
    /// [`crate::Store::sync_feed`]).
    pub(crate) async fn sync_feed(&self, within: std::time::Duration) -> Result<(), StoreError> {
        match self {
            // Their writers number events as they commit them.
            Backend::Memory(_) | Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(b) => b.sync_feed(within).await,
        }
    }

    /// See [`crate::Store::place_resolution`].
    pub(crate) async fn place_resolution(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
        match self {
            // Their writers keep it with every resolution.
            Backend::Memory(_) | Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(b) => b.place_resolution(tenant, id).await,
        }
    }

    /// The grants of `tenant` that `filter` lets through, oldest first.
    pub(crate) async fn grants(
        &self,
        tenant: &str,
        filter: GrantFilter<'_>,
    ) -> Result<Vec<StoredGrant>, StoreError> {
        dispatch!(self, b => b.grants(tenant, filter).await)
    }

    /// Counts a use of grant `id` of `tenant` if it is live at `now` (not expired, not used
    /// up), atomically; returns it as used, or `None`.
    pub(crate) async fn use_grant(
        &self,
        tenant: &str,
        id: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<StoredGrant>, StoreError> {
        dispatch!(self, b => b.use_grant(tenant, id, now).await)
    }

    /// Records `grant`, given by `actor` accepting a suggestion, with a
    /// `grant.suggested_accepted` event on `request_id`, in one transaction.
    pub(crate) async fn grant_suggested(
        &self,
        tenant: &str,
        request_id: &str,
        grant: &StoredGrant,
        actor: &crate::record::Actor,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.grant_suggested(tenant, request_id, grant, actor, at).await)
    }

    /// Deletes grant `id` of `tenant`, with its `grant.revoked` event by `by`; returns it, or
    /// `None` when there is none.
    pub(crate) async fn revoke_grant(
        &self,
        tenant: &str,
        id: &str,
        at: DateTime<Utc>,
        by: &crate::Actor,
    ) -> Result<Option<StoredGrant>, StoreError> {
        dispatch!(self, b => b.revoke_grant(tenant, id, at, by).await)
    }

    /// Appends an admin event to the audit chain, in a transaction of its own.
    pub(crate) async fn record_admin(
        &self,
        event: crate::AdminEvent,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.record_admin(event, at).await)
    }

    /// Records receipt `jti` as spent, with its audit event, unless it already is: whether
    /// this call spent it.
    pub(crate) async fn spend_receipt(
        &self,
        jti: &str,
        request_id: &str,
        event: crate::AdminEvent,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.spend_receipt(jti, request_id, event, at).await)
    }

    pub(crate) async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        dispatch!(self, b => b.pending_at().await)
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        dispatch!(self, b => b.ping().await)
    }

    /// Inserts a key, with its `key.created` event by `by`; false when an active key already
    /// has its name.
    pub(crate) async fn insert_key(
        &self,
        row: KeyRow,
        by: &crate::Actor,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.insert_key(row, by).await)
    }

    /// Inserts a key, with its `key.created` event by `by`, unless a key has its id or an
    /// active key its name: then nothing, and false. Of several instances inserting the same
    /// key at once, exactly one does.
    pub(crate) async fn insert_key_once(
        &self,
        row: KeyRow,
        by: &crate::Actor,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.insert_key_once(row, by).await)
    }

    /// The key with this id, revoked or not.
    pub(crate) async fn key(&self, id: &str) -> Result<Option<KeyRow>, StoreError> {
        dispatch!(self, b => b.key(id).await)
    }

    pub(crate) async fn keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        dispatch!(self, b => b.keys().await)
    }

    /// Revokes the active key named `name`, with its `key.revoked` event by `by`; `None` when
    /// there is none.
    pub(crate) async fn revoke_key(
        &self,
        name: &str,
        at: DateTime<Utc>,
        by: &crate::Actor,
    ) -> Result<Option<ApiKey>, StoreError> {
        dispatch!(self, b => b.revoke_key(name, at, by).await)
    }

    /// How many keys were ever created.
    pub(crate) async fn key_count(&self) -> Result<u64, StoreError> {
        dispatch!(self, b => b.key_count().await)
    }

    pub(crate) async fn insert_token(
        &self,
        kind: TokenKind,
        digest: &str,
        key_id: &str,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.insert_token(kind, digest, key_id, expires_at, now).await)
    }

    /// The key id of an unexpired token of `kind`; a login token is used up by this call, in one
    /// conditional update, so of two concurrent redemptions one wins.
    pub(crate) async fn redeem_token(
        &self,
        kind: TokenKind,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        dispatch!(self, b => b.redeem_token(kind, digest, now).await)
    }

    pub(crate) async fn delete_token(&self, digest: &str) -> Result<(), StoreError> {
        dispatch!(self, b => b.delete_token(digest).await)
    }

    /// The secret `name`; stores `candidate` first when there is none yet. Of two instances
    /// racing to create it, both get the one stored first.
    pub(crate) async fn secret(
        &self,
        name: &str,
        candidate: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        dispatch!(self, b => b.secret(name, candidate).await)
    }

    /// Stores `run`; its `seq`.
    pub(crate) async fn agui_insert(&self, run: crate::AguiRun) -> Result<u64, StoreError> {
        dispatch!(self, b => b.agui_insert(run).await)
    }

    pub(crate) async fn agui_runs(
        &self,
        tenant: &str,
        agent: &str,
        thread_id: &str,
    ) -> Result<Vec<crate::AguiRun>, StoreError> {
        dispatch!(self, b => b.agui_runs(tenant, agent, thread_id).await)
    }

    /// Waiting runs whose lease is free at `now`, stored after `after`, oldest first, at most
    /// `limit`.
    pub(crate) async fn agui_waiting(
        &self,
        now: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<crate::AguiRun>, StoreError> {
        dispatch!(self, b => b.agui_waiting(now, after, limit).await)
    }

    /// Leases waiting run `id` until `until` when its lease is free at `now`.
    pub(crate) async fn agui_claim(
        &self,
        id: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.agui_claim(id, now, until).await)
    }

    pub(crate) async fn agui_release(
        &self,
        id: &str,
        at: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.agui_release(id, at).await)
    }

    pub(crate) async fn agui_finish(
        &self,
        id: &str,
        events: Option<String>,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.agui_finish(id, events).await)
    }

    pub(crate) async fn kept(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        dispatch!(self, b => b.kept(name).await)
    }

    pub(crate) async fn keep(&self, name: &str, value: Vec<u8>) -> Result<(), StoreError> {
        dispatch!(self, b => b.keep(name, value).await)
    }

    pub(crate) async fn kept_under(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        dispatch!(self, b => b.kept_under(prefix).await)
    }

    pub(crate) async fn forget(&self, name: &str) -> Result<bool, StoreError> {
        dispatch!(self, b => b.forget(name).await)
    }

    /// Stores a push subscription, replacing any of the same endpoint (whatever its id).
    pub(crate) async fn push_save(&self, subscription: PushSubscription) -> Result<(), StoreError> {
        dispatch!(self, b => b.push_save(subscription).await)
    }

    pub(crate) async fn push_subscription(
        &self,
        id: &str,
    ) -> Result<Option<PushSubscription>, StoreError> {
        dispatch!(self, b => b.push_subscription(id).await)
    }

    /// A tenant's subscriptions, oldest first.
    pub(crate) async fn push_subscriptions(
        &self,
        tenant: &str,
    ) -> Result<Vec<PushSubscription>, StoreError> {
        dispatch!(self, b => b.push_subscriptions(tenant).await)
    }

    /// Deletes subscription `id`; whether there was one.
    pub(crate) async fn push_delete(&self, id: &str) -> Result<bool, StoreError> {
        dispatch!(self, b => b.push_delete(id).await)
    }

    /// The cursor `name`, if one was set.
    pub(crate) async fn cursor(&self, name: &str) -> Result<Option<i64>, StoreError> {
        dispatch!(self, b => b.cursor(name).await)
    }

    /// Sets the cursor `name` to `value`.
    pub(crate) async fn set_cursor(&self, name: &str, value: i64) -> Result<(), StoreError> {
        dispatch!(self, b => b.set_cursor(name, value).await)
    }

    /// Pending deliveries due at `now` (oldest first), leased until `lease_until`.
    pub(crate) async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
        outbox: Outbox,
    ) -> Result<Vec<Delivery>, StoreError> {
        dispatch!(self, b => b.claim_deliveries(now, lease_until, limit, outbox).await)
    }

    /// Appends the attempt and moves the delivery on: delivered, due again, or failed.
    pub(crate) async fn finish_attempt(
        &self,
        id: u64,
        attempt: Attempt,
        after: AfterAttempt,
        message_ref: Option<String>,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.finish_attempt(id, attempt, after, message_ref).await)
    }

    /// The `(tenant, request id)` whose announcement on `channel` posted the message
    /// `message_ref`.
    pub(crate) async fn announced_as(
        &self,
        channel: &str,
        message_ref: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        dispatch!(self, b => b.announced_as(channel, message_ref).await)
    }

    pub(crate) async fn announced_on(
        &self,
        channel: &str,
        limit: u32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        dispatch!(self, b => b.announced_on(channel, limit).await)
    }

    /// The deliveries of a request, oldest first, with their attempts.
    pub(crate) async fn deliveries(&self, request_id: &str) -> Result<Vec<Delivery>, StoreError> {
        dispatch!(self, b => b.deliveries(request_id).await)
    }
}
