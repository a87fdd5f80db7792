//! The emitter: while a run streams through the proxy, the requests of its thread (created with
//! `session` equal to its `threadId`, by any path: `ask_human` over MCP, the HTTP API, an SDK)
//! go into its stream as `CUSTOM` events, `clarify.request` (the record, as the API renders it
//! for the caller) when created and `clarify.resolved` (the outcome) when resolved, so a
//! frontend shows the question inline while chat and the inbox have it too.
//!
//! It hears of them from the event hub's ring (every stream of this instance shares one reading
//! of the log), picking its tenant's events about its thread; when it has fallen behind the
//! ring it reads the log itself. It starts at the log's end when the run starts: earlier
//! requests are not the run's.

use serde_json::{Value, json};
use tokio::sync::watch;

use super::Party;
use crate::state::AppState;

/// How many events one reading takes.
const BATCH: usize = 100;

pub(crate) struct Emitter {
    tenant: String,
    thread: String,
    links: bool,
    /// The last event of the log looked at.
    after: u64,
    newest: watch::Receiver<u64>,
}

impl Emitter {
    /// An emitter for `thread` from the log's current end; `None` when the store cannot say
    /// where that is (the run streams without it).
    pub(crate) async fn start(state: &AppState, party: &Party, thread: &str) -> Option<Self> {
        let newest = state.hub.subscribe();
        let after = match state.store.last_event_seq().await {
            Ok(seq) => seq,
            Err(e) => {
                tracing::warn!(error = %e, "the AG-UI emitter cannot read the event log; the run streams without it");
                return None;
            }
        };
        Some(Self {
            tenant: party.tenant.clone(),
            thread: thread.to_owned(),
            links: party.links,
            after,
            newest,
        })
    }

    /// Waits until the log grows, then returns the events to send for it (often none). Safe to
    /// cancel: nothing is marked sent before it returns.
    pub(crate) async fn next(&mut self, state: &AppState) -> Vec<Value> {
        if *self.newest.borrow_and_update() <= self.after && self.newest.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
        let mut out = Vec::new();
        let mut after = self.after;
        loop {
            let (picked, seen, full) = match state.hub.after(&self.tenant, after, BATCH) {
                Some((frames, seen)) => {
                    let full = frames.len() == BATCH;
                    let picked: Vec<(String, clarify_store::EventKind)> = frames
                        .iter()
                        .filter_map(|f| f.subject.as_ref())
                        .filter(|s| s.session.as_deref() == Some(self.thread.as_str()))
                        .map(|s| (s.request_id.clone(), s.kind))
                        .collect();
                    (picked, seen, full)
                }
                // Behind the ring: the log itself.
                None => match state
                    .store
                    .events_after(Some(&self.tenant), after, BATCH)
                    .await
                {
                    Ok(events) => {
                        let full = events.len() == BATCH;
                        let seen = events.last().map_or(after, |e| e.seq);
                        let picked = events.into_iter().map(|e| (e.request_id, e.kind)).collect();
                        (picked, seen, full)
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the AG-UI emitter cannot read the event log");
                        return out;
                    }
                },
            };
            for (id, kind) in picked {
                if kind == clarify_store::EventKind::Unknown {
                    continue;
                }
                if let Some(event) = self.event(state, &id, kind).await {
                    out.push(event);
                }
            }
            after = seen.max(after);
            if !full {
                break;
            }
        }
        self.after = after;
        out
    }

    /// The `CUSTOM` event for `kind` happening to request `id`, when it is of this thread.
    async fn event(
        &self,
        state: &AppState,
        id: &str,
        kind: clarify_store::EventKind,
    ) -> Option<Value> {
        use clarify_store::EventKind;
        let resolved = match kind {
            EventKind::Created => false,
            EventKind::Answered
            | EventKind::Skipped
            | EventKind::Expired
            | EventKind::Cancelled => true,
            _ => return None,
        };
        let record = state.store.get(&self.tenant, id).await.ok().flatten()?;
        if record.request.session.as_deref() != Some(self.thread.as_str()) {
            return None;
        }
        if resolved {
            let outcome = record.outcome()?;
            let body = clarify_model::wire::OutcomeBody::from(&outcome);
            Some(json!({"type": "CUSTOM", "name": "clarify.resolved",
                        "value": serde_json::to_value(body).ok()?}))
        } else {
            let link = self.links.then(|| state.answer_url(&record.id));
            let body = clarify_model::wire::RecordBody::new(&record, link);
            Some(json!({"type": "CUSTOM", "name": "clarify.request",
                        "value": serde_json::to_value(body).ok()?}))
        }
    }
}
