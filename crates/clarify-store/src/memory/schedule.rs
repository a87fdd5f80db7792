//! What falls due with time: expiry at a request's deadline, reminders, warnings before expiry
//! (and extensions, which move both) and escalation.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::{MemoryBackend, State};
use clarify_core::Status;

use crate::backend::writes::{next_reminder, warning_at};
use crate::error::StoreError;
use crate::record::{Actor, EventKind, RequestRecord, StoredResolution};

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

    pub(crate) async fn warn_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        Ok(self.state().fall_due(EventKind::Warned, now, limit))
    }

    /// Moves a pending request's deadline from `deadline` to `to` (and its warning to
    /// `warn_before` ahead of `to`, if that is after `now`), with an `extended` event by `by`;
    /// `None` when the request is no longer pending with that deadline still ahead.
    pub(crate) async fn extend(
        &self,
        id: &str,
        deadline: DateTime<Utc>,
        to: DateTime<Utc>,
        by: &Actor,
        now: DateTime<Utc>,
    ) -> Result<Option<RequestRecord>, StoreError> {
        let mut s = self.state();
        let Some(row) = s.rows.get_mut(id) else {
            return Ok(None);
        };
        if row.record.status != Status::Pending
            || row.record.expires_at != Some(deadline)
            || deadline <= now
        {
            return Ok(None);
        }
        let seq = row.seq;
        let old_warning = row.warn_at.take();
        row.record.expires_at = Some(to);
        row.warn_at = warning_at(Some(to), row.warn_before, now);
        let (record, new_warning) = (row.record.clone(), row.warn_at);
        s.deadlines.remove(&(deadline, seq));
        s.deadlines.insert((to, seq));
        if let Some(at) = old_warning {
            s.warnings.remove(&(at, seq));
        }
        if let Some(at) = new_warning {
            s.warnings.insert((at, seq));
        }
        s.push_event(
            &record,
            EventKind::Extended,
            by.name.clone(),
            Some(by.channel.clone()),
            by.principal.clone(),
            now,
        );
        Ok(Some(record))
    }

    /// Appends a `refused` event by `by` to request `id` of `tenant`, if there is one.
    pub(crate) async fn refused(
        &self,
        tenant: &str,
        id: &str,
        by: &Actor,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut s = self.state();
        let Some(record) = s
            .rows
            .get(id)
            .filter(|row| row.record.tenant == tenant)
            .map(|row| row.record.clone())
        else {
            return Ok(false);
        };
        s.push_event(
            &record,
            EventKind::Refused,
            by.name.clone(),
            Some(by.channel.clone()),
            by.principal.clone(),
            now,
        );
        Ok(true)
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
    /// Reminds (`kind` `Reminded`), warns (`Warned`) or escalates (`Escalated`) up to `limit` pending requests due
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
            if kind == EventKind::Warned {
                row.warn_at = None;
            } else if kind == EventKind::Reminded {
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

    /// The requests waiting for their next reminder, their warning, or their escalation.
    fn schedule(&mut self, kind: EventKind) -> &mut BTreeSet<(DateTime<Utc>, u64)> {
        match kind {
            EventKind::Reminded => &mut self.reminders,
            EventKind::Warned => &mut self.warnings,
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
