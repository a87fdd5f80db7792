//! What falls due with time: expiry at a request's deadline, reminders and escalation.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::{MemoryBackend, State};
use crate::backend::writes::next_reminder;
use crate::error::StoreError;
use crate::record::{EventKind, RequestRecord, StoredResolution};

impl MemoryBackend {
    pub(crate) async fn expire_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut s = self.state();
        let due: Vec<u64> = s
            .deadlines
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .map(|&(_, seq)| seq)
            .collect();
        let mut ids = Vec::with_capacity(due.len());
        for seq in due {
            let Some(id) = s.order.get(&seq).cloned() else {
                continue;
            };
            if s.resolve_row(&id, StoredResolution::expired(now)).is_some() {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    pub(crate) async fn remind_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        Ok(self.state().fall_due(EventKind::Reminded, now, limit))
    }

    pub(crate) async fn escalate_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        Ok(self.state().fall_due(EventKind::Escalated, now, limit))
    }
}

impl State {
    /// Reminds (`kind` `Reminded`) or escalates (`Escalated`) up to `limit` pending requests due
    /// by `now`, and announces each; returns their ids.
    fn fall_due(&mut self, kind: EventKind, now: DateTime<Utc>, limit: usize) -> Vec<String> {
        let due: Vec<(DateTime<Utc>, u64)> = self
            .schedule(kind)
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .copied()
            .collect();
        let mut ids = Vec::with_capacity(due.len());
        for key in due {
            self.schedule(kind).remove(&key);
            let Some(row) = self.order.get(&key.1).and_then(|id| self.rows.get_mut(id)) else {
                continue;
            };
            let mut next = None;
            if kind == EventKind::Reminded {
                next = next_reminder(&row.record.request, now);
                row.record.remind_at = next;
            } else {
                row.escalate_at = None;
                row.record.escalated_at = Some(now);
            }
            let record = row.record.clone();
            if let Some(at) = next {
                self.schedule(kind).insert((at, key.1));
            }
            self.announce(&record, kind, now);
            ids.push(record.id);
        }
        ids
    }

    /// The requests waiting for their next reminder, or for their escalation.
    fn schedule(&mut self, kind: EventKind) -> &mut BTreeSet<(DateTime<Utc>, u64)> {
        match kind {
            EventKind::Reminded => &mut self.reminders,
            _ => &mut self.escalations,
        }
    }

    /// Writes a system event about a pending request, and queues its webhook and a notification
    /// on each channel it was announced on.
    fn announce(&mut self, record: &RequestRecord, kind: EventKind, at: DateTime<Utc>) {
        self.push_event(record, kind, None, Some("system".to_owned()), None, at);
        if let Some(url) = &record.request.callback_url {
            self.queue(record, url, None, at, Some(kind));
        }
        self.follow_up(record, kind, at);
    }
}
