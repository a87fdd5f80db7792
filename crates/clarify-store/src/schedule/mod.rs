//! The reaper: the store's background task that keeps time. It expires overdue requests,
//! writes reminders and escalations, and purges old resolved requests.
//!
//! Each runs in batches of short transactions that several instances may run on the same
//! store at once: a request expires, is reminded of, escalates or is purged once whatever the
//! number of instances. The methods run one batch each; [`reaper`] calls them on a timer (and
//! [`Store::open`] expires what fell due while no process ran), and tests call them directly
//! with a manual clock.

use std::sync::Weak;
use std::time::Duration;

use crate::backend::Resolved;
use crate::error::StoreError;
use crate::record::{RequestRecord, StoredResolution};
use crate::{Inner, Store};

/// How many overdue requests one reaper pass expires.
pub(crate) const EXPIRE_BATCH: usize = 1_000;
/// How many resolved requests one purge transaction deletes: small enough that the write path
/// waits for at most one short transaction.
pub const PURGE_BATCH: usize = 500;
/// How many times as long as a purge batch took the reaper rests before the next one.
const PURGE_REST: u32 = 2;

impl Store {
    /// Purges one batch (at most [`PURGE_BATCH`]) of the requests resolved longer ago than
    /// [`StoreOptions::retain_resolved`](crate::StoreOptions::retain_resolved), with their
    /// events, tags and webhook deliveries; returns how many. Does nothing without a retention
    /// period. Several instances may purge at once: each batch is one transaction, and a
    /// request is deleted once. Its events stay in the audit chain as tombstones, so the chain
    /// still verifies.
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

    /// Expires one overdue request; returns its final record.
    pub(crate) async fn expire_one(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
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

/// Expires overdue requests every `every`, until the store is dropped.
pub(crate) async fn reaper(inner: Weak<Inner>, every: Duration) {
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
