//! Requests: create, read, list, and the checked resolution every path to an outcome takes.

use clarify_core::Status;

use super::{MAX_RESOLVED, MemoryBackend, Row, State};
use crate::backend::writes::{NewRow, Resolved};
use crate::error::StoreError;
use crate::grants::StoredGrant;
use crate::record::{
    Created, EventKind, ListQuery, OnCallShift, Page, RequestRecord, StoredResolution,
    encode_cursor,
};

impl MemoryBackend {
    pub(crate) async fn create(&self, mut row: NewRow) -> Result<Created, StoreError> {
        let mut s = self.state();
        if let Some(key) = &row.request.idempotency_key {
            let k = (row.tenant.clone(), key.clone());
            if let Some(existing) = s.idempotency.get(&k).and_then(|id| s.rows.get(id)) {
                return Ok(Created {
                    record: existing.record.clone(),
                    created: false,
                });
            }
        }
        let dedupe = row
            .dedupe_key
            .as_ref()
            .map(|k| (row.tenant.clone(), row.request.session.clone(), k.clone()));
        if let Some(existing) = dedupe
            .as_ref()
            .and_then(|k| s.dedupe.get(k))
            .and_then(|id| s.rows.get(id))
        {
            return Ok(Created {
                record: existing.record.clone(),
                created: false,
            });
        }

        s.next_seq += 1;
        let seq = s.next_seq;
        let escalate_at = row.escalate_at;
        let (warn_before, warn_at) = (row.warn_before, row.warn_at);
        let announce = std::mem::take(&mut row.announce);
        let record = row.into_record();
        if let Some(key) = &record.request.idempotency_key {
            s.idempotency
                .insert((record.tenant.clone(), key.clone()), record.id.clone());
        }
        if let Some(k) = dedupe.clone() {
            s.dedupe.insert(k, record.id.clone());
        }
        if let Some(at) = record.expires_at {
            s.deadlines.insert((at, seq));
        }
        if let Some(at) = record.remind_at {
            s.reminders.insert((at, seq));
        }
        if let Some(at) = escalate_at {
            s.escalations.insert((at, seq));
        }
        if let Some(at) = warn_at {
            s.warnings.insert((at, seq));
        }
        s.order.insert(seq, record.id.clone());
        s.push_event(
            &record,
            EventKind::Created,
            None,
            None,
            None,
            record.created_at,
        );
        for channel in &announce {
            s.queue(
                &record,
                "",
                Some(channel.clone()),
                record.created_at,
                Some(EventKind::Created),
            );
        }
        s.rows.insert(
            record.id.clone(),
            Row {
                seq,
                record: record.clone(),
                dedupe_key: dedupe.map(|(_, _, k)| k),
                escalate_at,
                warn_before,
                warn_at,
                announced: announce,
            },
        );
        Ok(Created {
            record,
            created: true,
        })
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        Ok(self.state().rows.get(id).map(|r| r.record.clone()))
    }

    pub(crate) async fn set_on_call(
        &self,
        id: &str,
        shifts: &[OnCallShift],
    ) -> Result<bool, StoreError> {
        let mut s = self.state();
        match s.rows.get_mut(id) {
            Some(row) if row.record.status == Status::Pending => {
                row.record.on_call = shifts.to_vec();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    pub(crate) async fn list(
        &self,
        tenant: &str,
        q: &ListQuery,
        before: Option<u64>,
    ) -> Result<Page, StoreError> {
        let s = self.state();
        let limit = q.effective_limit();
        let mut records = Vec::new();
        let mut last_seq = None;
        let upper = before.unwrap_or(u64::MAX);
        for (&seq, id) in s.order.range(..upper).rev() {
            let Some(row) = s.rows.get(id) else { continue };
            let r = &row.record;
            let matches = r.tenant == tenant
                && q.status.is_none_or(|st| r.status == st)
                && q.session
                    .as_ref()
                    .is_none_or(|x| r.request.session.as_ref() == Some(x))
                && q.agent
                    .as_ref()
                    .is_none_or(|x| r.request.agent.as_ref() == Some(x))
                && q.tag.as_ref().is_none_or(|t| r.request.tags.contains(t));
            if !matches {
                continue;
            }
            if records.len() == limit {
                return Ok(Page {
                    records,
                    next_cursor: last_seq.map(encode_cursor),
                });
            }
            records.push(r.clone());
            last_seq = Some(seq);
        }
        Ok(Page {
            records,
            next_cursor: None,
        })
    }

    pub(crate) async fn resolve(
        &self,
        id: &str,
        res: StoredResolution,
        grants: &[StoredGrant],
    ) -> Result<Resolved, StoreError> {
        let mut s = self.state();
        let Some(row) = s.rows.get(id) else {
            return Ok(Resolved::NotFound);
        };
        let r = &row.record;
        let expiring = res.resolution.status() == Status::Expired;
        let overdue = r.expires_at.is_some_and(|at| at <= res.resolved_at);
        if r.status.is_resolved() || expiring != overdue {
            return Ok(Resolved::Lost(r.clone()));
        }
        let Some(record) = s.resolve_row(id, res) else {
            return Ok(Resolved::NotFound);
        };
        s.insert_grants(&record.tenant, grants);
        Ok(Resolved::Won(record))
    }
}

impl State {
    /// Applies a resolution the caller has checked; returns the new record.
    pub(super) fn resolve_row(&mut self, id: &str, res: StoredResolution) -> Option<RequestRecord> {
        let row = self.rows.get_mut(id)?;
        let seq = row.seq;
        let status = res.resolution.status();
        let kind = EventKind::for_status(status);
        let at = res.resolved_at;
        let (actor, channel, principal) = (
            res.actor.name.clone(),
            res.actor.channel.clone(),
            res.actor.principal.clone(),
        );
        row.record.status = status;
        // The event pushed below is the next one: its `seq` is the one the receipt names.
        row.record.resolution = Some(StoredResolution {
            seq: Some(self.next_event + 1),
            ..res
        });
        let reminder = row.record.remind_at.take();
        let escalation = row.escalate_at.take();
        let warning = row.warn_at.take();
        let record = row.record.clone();
        if let Some(key) = row.dedupe_key.take() {
            self.dedupe
                .remove(&(record.tenant.clone(), record.request.session.clone(), key));
        }
        if let Some(deadline) = record.expires_at {
            self.deadlines.remove(&(deadline, seq));
        }
        if let Some(at) = reminder {
            self.reminders.remove(&(at, seq));
        }
        if let Some(at) = escalation {
            self.escalations.remove(&(at, seq));
        }
        if let Some(at) = warning {
            self.warnings.remove(&(at, seq));
        }
        self.push_event(&record, kind, actor, Some(channel), principal, at);
        for url in record.request.outcome_urls() {
            self.queue(&record, &url, None, at, None);
        }
        // Every announcement of it is edited to show the outcome.
        self.follow_up(&record, kind, at);
        self.resolved_order.push_back(record.id.clone());
        while self.resolved_order.len() > MAX_RESOLVED {
            if let Some(old) = self.resolved_order.pop_front() {
                if let Some(row) = self.rows.remove(&old) {
                    self.order.remove(&row.seq);
                    if let Some(key) = &row.record.request.idempotency_key {
                        self.idempotency
                            .remove(&(row.record.tenant.clone(), key.clone()));
                    }
                }
            }
        }
        Some(record)
    }
}
