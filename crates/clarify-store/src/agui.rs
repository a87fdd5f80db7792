//! AG-UI runs that ended waiting for people: what resuming them needs, kept so that any
//! instance can resume a run after a restart.
//!
//! The server's AG-UI proxy stores one [`AguiRun`] when a run it forwarded finished with
//! interrupts (after it made each interrupt a request). Its `data` is the proxy's own JSON (the
//! run's input, the interrupts and their requests); the store keeps it as text and reads
//! nothing in it. A run is resumed once: whoever resumes it (a caller's resume through the
//! proxy, or the server's resume worker when people answered elsewhere) first claims it with a
//! lease, one conditional update, so one instance wins; a resume that fails gives the run back
//! for a later try, and a finished resume records the events the resumed run streamed, which
//! `GET /agui/{name}/threads/{threadId}/events` replays.

use chrono::{DateTime, TimeDelta, Utc};

use crate::Store;
use crate::error::StoreError;

/// A stored run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AguiRun {
    /// The store's id of the run (the server chooses it).
    pub id: String,
    /// Its place in the order runs were stored (set by the store; 0 before).
    pub seq: u64,
    pub tenant: String,
    /// The `[[agui]]` entry the run went to.
    pub agent: String,
    pub thread_id: String,
    /// The proxy's JSON: what resuming the run needs.
    pub data: String,
    /// Waiting for its interrupts' answers, or resumed.
    pub done: bool,
    /// While claimed: until when the claim holds (a free run has none, or one in the past).
    pub lease_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// The resumed run's events, as a JSON array of events, once it was resumed.
    pub events: Option<String>,
}

/// How many waiting runs one look of the resume worker reads.
pub const AGUI_BATCH: usize = 100;

impl Store {
    /// Stores a run waiting for its interrupts' answers, free to claim. `created_at` is the
    /// store's clock.
    pub async fn agui_insert(
        &self,
        id: &str,
        tenant: &str,
        agent: &str,
        thread_id: &str,
        data: String,
    ) -> Result<AguiRun, StoreError> {
        let run = AguiRun {
            id: id.to_owned(),
            seq: 0,
            tenant: tenant.to_owned(),
            agent: agent.to_owned(),
            thread_id: thread_id.to_owned(),
            data,
            done: false,
            lease_until: None,
            created_at: self.now(),
            events: None,
        };
        let seq = self.inner.backend.agui_insert(run.clone()).await?;
        Ok(AguiRun { seq, ..run })
    }

    /// The runs of thread `thread_id` of agent `agent` in `tenant`, oldest first.
    pub async fn agui_runs(
        &self,
        tenant: &str,
        agent: &str,
        thread_id: &str,
    ) -> Result<Vec<AguiRun>, StoreError> {
        self.inner.backend.agui_runs(tenant, agent, thread_id).await
    }

    /// Up to [`AGUI_BATCH`] waiting runs no one holds now, stored after `after` (a run's `seq`;
    /// 0 for the first), oldest first: what the resume worker looks at, page by page.
    pub async fn agui_waiting(&self, after: u64) -> Result<Vec<AguiRun>, StoreError> {
        self.inner
            .backend
            .agui_waiting(self.now(), after, AGUI_BATCH)
            .await
    }

    /// Claims waiting run `id` for `lease`, when no one holds it: whether this call did. One
    /// conditional update, so of several instances one wins.
    pub async fn agui_claim(&self, id: &str, lease: TimeDelta) -> Result<bool, StoreError> {
        let now = self.now();
        self.inner.backend.agui_claim(id, now, now + lease).await
    }

    /// Gives claimed run `id` back: free at once (`None`), or after `retry_in`.
    pub async fn agui_release(
        &self,
        id: &str,
        retry_in: Option<TimeDelta>,
    ) -> Result<(), StoreError> {
        let at = retry_in.map(|d| self.now() + d);
        self.inner.backend.agui_release(id, at).await
    }

    /// Marks run `id` resumed, keeping `events` (a JSON array) when given.
    pub async fn agui_finish(&self, id: &str, events: Option<String>) -> Result<(), StoreError> {
        self.inner.backend.agui_finish(id, events).await
    }
}
