//! The schedule: the reaper, the store's background task that keeps time. It expires overdue
//! requests, writes reminders and escalations (here), and purges old resolved requests
//! ([`retention`]).
//!
//! Each runs in batches of short transactions that several instances may run on the same
//! store at once: a request expires, is reminded of, escalates or is purged once whatever the
//! number of instances. The methods run one batch each; [`reaper`] calls them on a timer (and
//! [`Store::open`] expires what fell due while no process ran), and tests call them directly
//! with a manual clock. Each backend keeps the same concerns in its `schedule.rs` and
//! `retention.rs`.

pub(crate) mod retention;

use std::sync::Weak;
use std::time::Duration;

use crate::backend::writes::Resolved;
use crate::error::StoreError;
use crate::record::{RequestRecord, StoredResolution};
use crate::{Inner, Store};

/// How many overdue requests one reaper pass expires.
pub(crate) const EXPIRE_BATCH: usize = 1_000;

impl Store {
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
    /// The on-call schedules an escalated request names are read again, by the instance that
    /// escalated it.
    pub async fn escalate_due(&self) -> Result<usize, StoreError> {
        let ids = self
            .inner
            .backend
            .escalate_due(self.now(), EXPIRE_BATCH)
            .await?;
        for id in &ids {
            let Some(record) = self.inner.backend.get(id).await? else {
                continue;
            };
            if let Err(e) = self.reread_on_call(&record).await {
                tracing::warn!(request = id.as_str(), error = %e, "keeping the on-call reading of an escalation failed");
            }
        }
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
        retention::purge_for(&store, every).await;
    }
}
