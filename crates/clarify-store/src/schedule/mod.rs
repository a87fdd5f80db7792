//! The schedule: the reaper, the store's background task that keeps time. It expires overdue
//! requests, writes reminders, warnings before expiry and escalations (here), and purges old
//! resolved requests ([`retention`]). Extending a request's deadline lives here too, since it
//! moves what the reaper keeps.
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

use chrono::TimeDelta;
use clarify_core::text::humanize_seconds;

use crate::backend::writes::Resolved;
use crate::error::{ExtendError, ResolveError, StoreError};
use crate::record::{Actor, RequestRecord, StoredResolution};
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

    /// Writes a `request.warned` event (and queues its webhook and a notification on each
    /// channel the request was announced on) for every pending request whose warning before
    /// expiry is due; returns how many (at most one batch). Each request is warned once for
    /// each deadline, whatever the instances.
    pub async fn warn_due(&self) -> Result<usize, StoreError> {
        let ids = self
            .inner
            .backend
            .warn_due(self.now(), EXPIRE_BATCH)
            .await?;
        Ok(ids.len())
    }

    /// Moves the deadline of a pending request `seconds` later, for `actor`, who must be allowed
    /// to answer it (the rules of [`Store::pending`]): at most as far as
    /// [`Deadlines::max_extension`](crate::Deadlines) past its first deadline (its creation plus
    /// `timeout_seconds`), in all. Its responders are warned again before the new deadline, and
    /// an `extended` event records who extended it. Returns the record with its new `expires_at`.
    pub async fn extend(
        &self,
        tenant: &str,
        id: &str,
        seconds: u64,
        actor: &Actor,
    ) -> Result<RequestRecord, ExtendError> {
        let record = self.pending(tenant, id, actor).await?;
        let (Some(deadline), Some(timeout)) = (record.expires_at, record.request.timeout()) else {
            return Err(ExtendError::NoDeadline);
        };
        if seconds == 0 {
            return Err(ExtendError::Empty);
        }
        let now = self.now();
        if deadline <= now {
            let expired = self.expire_one(id).await.map_err(ResolveError::from)?;
            return Err(match expired {
                Some(r) => ResolveError::AlreadyResolved(Box::new(r)),
                None => ResolveError::NotFound,
            }
            .into());
        }
        let max = self.deadlines().max_extension;
        let latest = i64::try_from(timeout)
            .ok()
            .and_then(TimeDelta::try_seconds)
            .and_then(|t| record.created_at.checked_add_signed(t))
            .and_then(|first| first.checked_add_signed(max))
            .unwrap_or(deadline);
        let to = i64::try_from(seconds)
            .ok()
            .and_then(TimeDelta::try_seconds)
            .and_then(|by| deadline.checked_add_signed(by))
            .filter(|to| *to <= latest);
        let Some(to) = to else {
            let left = (latest - deadline).num_seconds().max(0).unsigned_abs();
            return Err(ExtendError::TooFar {
                by: humanize_seconds(seconds),
                latest: latest.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                max: humanize_seconds(max.num_seconds().max(0).unsigned_abs()),
                left: humanize_seconds(left),
            });
        };
        match self
            .inner
            .backend
            .extend(id, deadline, to, actor, now)
            .await
        {
            Ok(Some(extended)) => Ok(extended),
            // Resolved, expired or extended meanwhile: what it is now says which.
            Ok(None) => match self.get(tenant, id).await.map_err(ResolveError::from)? {
                Some(r) if r.status.is_resolved() => {
                    Err(ResolveError::AlreadyResolved(Box::new(r)).into())
                }
                Some(_) => Err(ResolveError::Store(StoreError::Backend(
                    "the request's deadline changed meanwhile; try again".to_owned(),
                ))
                .into()),
                None => Err(ResolveError::NotFound.into()),
            },
            Err(e) => Err(ResolveError::from(e).into()),
        }
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
        if let Err(e) = store.warn_due().await {
            tracing::warn!(error = %e, "warning of requests about to expire failed; retrying");
        }
        retention::purge_for(&store, every).await;
    }
}
