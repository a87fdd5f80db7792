//! Waiting for a request to resolve, and following the event log.
//!
//! A waiter registers with [`waiters`] before it reads, then sleeps until woken: at once by a
//! resolution in this process, by PostgreSQL's LISTEN/NOTIFY, or by the [`poller`] that
//! reads the event log for resolutions made by other processes sharing the store. Every
//! wake-up is a hint to read the store again, so a lost one costs latency, never correctness.
//! Followers of the feed (the server's event streams) read [`Store::events_after`] and are
//! told by [`Store::watch_feed`] when there is more. Each backend keeps the same concern in its
//! `feed.rs`.

pub(crate) mod waiters;

use std::sync::Weak;
use std::time::Duration;

use crate::error::{ResolveError, StoreError};
use crate::record::{Event, RequestRecord};
use crate::{Inner, Store};

/// How long [`Store::sync_feed`] waits for the sequencer: longer than a stalled sequencer takes
/// to be replaced.
pub const FEED_SYNC: Duration = Duration::from_secs(10);
/// How soon a waiter whose read failed reads again, unless woken sooner.
pub const WAIT_RETRY: Duration = Duration::from_secs(1);

impl Store {
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

    /// What the events after sequence `after` (every tenant's) did to the number of pending
    /// requests, counted by the database rather than read event by event: how many created a
    /// request, how many resolved one, and the newest event's sequence (`after` when there is
    /// none). The pending gauge catches up with it.
    pub async fn tally_after(&self, after: u64) -> Result<Tally, StoreError> {
        self.inner.backend.tally_after(after).await
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

    /// Keeps on request `id` of `tenant` the place of its resolution in the event log, found
    /// there, when what numbered the resolution did not keep it: on PostgreSQL, the sequencer of
    /// an instance of a release before receipts (schema 17), still serving the same database
    /// during a rolling upgrade, numbers events without it. Nothing to do on SQLite and memory
    /// stores, whose writer keeps it always. Call after [`Store::sync_feed`].
    pub async fn place_resolution(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
        self.inner.backend.place_resolution(tenant, id).await
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
}

/// What [`Store::tally_after`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    /// Events that created a request.
    pub created: u64,
    /// Events that resolved one (answered, skipped, expired, cancelled).
    pub resolved: u64,
    /// The newest event's sequence.
    pub last: u64,
}

/// Watches the event log for resolutions made by other processes and wakes local waiters.
///
/// When nothing in this process waits, it only keeps its place: the log's end is read first,
/// then the waiters are looked at, and a waiter registering after that reads the store itself
/// (see [`waiters`]), so it finds every resolution up to the place kept.
pub(crate) async fn poller(inner: Weak<Inner>, every: Duration, mut after: u64) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let last = match inner.backend.last_event_seq().await {
            Ok(last) => last,
            Err(e) => {
                tracing::warn!(error = %e, "polling the event log failed; retrying");
                continue;
            }
        };
        if last <= after || inner.waiters.len() == 0 {
            after = after.max(last);
            inner.waiters.feed_reached(after);
            continue;
        }
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
