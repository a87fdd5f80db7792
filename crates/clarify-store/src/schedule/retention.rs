//! Retention: with [`StoreOptions::retain_resolved`](crate::StoreOptions::retain_resolved),
//! requests resolved longer ago are purged, in batches of short transactions, by the reaper.
//! Their events stay in the audit chain as tombstones, so the chain still verifies.

use std::time::Duration;

use crate::Store;
use crate::error::StoreError;

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
}

/// Purges for one reaper interval (`every`) at most, batch after batch, until nothing is due.
pub(super) async fn purge_for(store: &Store, every: Duration) {
    // Resting twice as long as each batch took before the next, the purge takes at most a
    // third of the writer's time, so agents and people keep most of it (a backlog of a million
    // requests takes minutes, not hours). Stopping after one interval keeps expiry,
    // escalations and reminders on time during a long purge.
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
