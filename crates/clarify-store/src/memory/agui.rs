//! AG-UI runs waiting for people (see the store's `agui` module).

use chrono::{DateTime, Utc};

use super::MemoryBackend;
use crate::AguiRun;
use crate::error::StoreError;

impl MemoryBackend {
    pub(crate) async fn agui_insert(&self, mut run: AguiRun) -> Result<u64, StoreError> {
        let mut state = self.state();
        if state.agui_runs.iter().any(|r| r.id == run.id) {
            return Err(StoreError::Backend(format!(
                "an AG-UI run {:?} is stored already",
                run.id
            )));
        }
        // Bounded like the requests: the oldest resumed runs are forgotten first.
        if state.agui_runs.len() >= super::MAX_RESOLVED
            && let Some(oldest) = state.agui_runs.iter().position(|r| r.done)
        {
            state.agui_runs.remove(oldest);
        }
        run.seq = state.agui_runs.last().map_or(1, |r| r.seq + 1);
        let seq = run.seq;
        state.agui_runs.push(run);
        Ok(seq)
    }

    pub(crate) async fn agui_runs(
        &self,
        tenant: &str,
        agent: &str,
        thread_id: &str,
    ) -> Result<Vec<AguiRun>, StoreError> {
        Ok(self
            .state()
            .agui_runs
            .iter()
            .filter(|r| r.tenant == tenant && r.agent == agent && r.thread_id == thread_id)
            .cloned()
            .collect())
    }

    pub(crate) async fn agui_waiting(
        &self,
        now: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<AguiRun>, StoreError> {
        Ok(self
            .state()
            .agui_runs
            .iter()
            .filter(|r| r.seq > after && !r.done && r.lease_until.is_none_or(|at| at <= now))
            .take(limit)
            .cloned()
            .collect())
    }

    pub(crate) async fn agui_claim(
        &self,
        id: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut state = self.state();
        let Some(run) = state.agui_runs.iter_mut().find(|r| r.id == id) else {
            return Ok(false);
        };
        if run.done || run.lease_until.is_some_and(|at| at > now) {
            return Ok(false);
        }
        run.lease_until = Some(until);
        Ok(true)
    }

    pub(crate) async fn agui_release(
        &self,
        id: &str,
        at: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        if let Some(run) = self.state().agui_runs.iter_mut().find(|r| r.id == id) {
            run.lease_until = at;
        }
        Ok(())
    }

    pub(crate) async fn agui_finish(
        &self,
        id: &str,
        events: Option<String>,
    ) -> Result<(), StoreError> {
        if let Some(run) = self.state().agui_runs.iter_mut().find(|r| r.id == id) {
            run.done = true;
            run.lease_until = None;
            if events.is_some() {
                run.events = events;
            }
        }
        Ok(())
    }
}
