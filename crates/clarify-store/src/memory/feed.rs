//! The event feed and its audit chain: the newest events, each hashed onto the one before.

use chrono::{DateTime, Utc};

use super::{MAX_EVENTS, MemoryBackend, State};
use crate::audit::{self, AdminEvent};
use crate::codec::EventParts;
use crate::error::StoreError;
use crate::record::{Event, EventKind, RequestRecord};

impl MemoryBackend {
    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let s = self.state();
        let start = s.events.partition_point(|e| e.seq <= after);
        Ok(s.events
            .range(start..)
            .filter(|e| tenant.is_none_or(|t| e.tenant == t))
            .take(limit)
            .cloned()
            .collect())
    }

    pub(crate) async fn audit_events(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventParts>, StoreError> {
        let s = self.state();
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let start = s.chain.partition_point(|e| e.seq <= after);
        Ok(s.chain
            .range(start..)
            .filter(|e| tenant.is_none_or(|t| e.tenant == t))
            .take(limit)
            .cloned()
            .collect())
    }

    /// The hash the first event kept links to (the memory store forgets its oldest events).
    pub(crate) async fn audit_base(&self) -> Result<String, StoreError> {
        Ok(self.state().chain_base.clone())
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        Ok(self.state().next_event)
    }

    pub(crate) async fn tally_after(&self, after: u64) -> Result<crate::Tally, StoreError> {
        let s = self.state();
        let start = s.events.partition_point(|e| e.seq <= after);
        let mut tally = crate::Tally {
            last: after.max(s.next_event),
            ..crate::Tally::default()
        };
        for event in s.events.range(start..) {
            if event.kind == EventKind::Created {
                tally.created += 1;
            } else if event.kind.resolves() {
                tally.resolved += 1;
            }
        }
        Ok(tally)
    }

    pub(crate) async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        let s = self.state();
        Ok(((s.rows.len() - s.resolved_order.len()) as u64, s.next_event))
    }
}

impl MemoryBackend {
    pub(crate) async fn record_admin(
        &self,
        event: AdminEvent,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.state().push_admin(&event, at);
        Ok(())
    }

    pub(crate) async fn spend_receipt(
        &self,
        jti: &str,
        _request_id: &str,
        event: AdminEvent,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut s = self.state();
        if !s.spent_receipts.insert(jti.to_owned()) {
            return Ok(false);
        }
        s.push_admin(&event, at);
        Ok(true)
    }
}

impl State {
    /// Appends an admin event to the audit chain (the feed of requests' events leaves it out).
    pub(super) fn push_admin(&mut self, event: &AdminEvent, at: DateTime<Utc>) {
        self.next_event += 1;
        let mut parts = event.parts(crate::codec::millis(at));
        parts.seq = i64::try_from(self.next_event).unwrap_or(i64::MAX);
        let previous = self
            .chain
            .back()
            .and_then(|e| e.hash.as_deref())
            .unwrap_or(&self.chain_base);
        parts.hash = Some(audit::link(previous, &audit::canonical(&parts)));
        self.chain.push_back(parts);
        self.forget_oldest();
    }

    pub(super) fn push_event(
        &mut self,
        record: &RequestRecord,
        kind: EventKind,
        actor: Option<String>,
        channel: Option<String>,
        principal: Option<String>,
        at: DateTime<Utc>,
    ) {
        self.next_event += 1;
        let mut parts = EventParts {
            seq: i64::try_from(self.next_event).unwrap_or(i64::MAX),
            tenant: record.tenant.clone(),
            request_id: record.id.clone(),
            kind: kind.as_str().to_owned(),
            actor: actor.clone(),
            channel: channel.clone(),
            principal: principal.clone(),
            at: crate::codec::millis(at),
            hash: None,
        };
        let previous = self
            .chain
            .back()
            .and_then(|e| e.hash.as_deref())
            .unwrap_or(&self.chain_base);
        let hash = audit::link(previous, &audit::canonical(&parts));
        parts.hash = Some(hash.clone());
        self.chain.push_back(parts);
        self.events.push_back(Event {
            seq: self.next_event,
            tenant: record.tenant.clone(),
            request_id: record.id.clone(),
            kind,
            actor,
            channel,
            principal,
            at,
            hash,
        });
        self.forget_oldest();
    }

    /// Keeps the newest [`MAX_EVENTS`] of the feed and of the chain.
    fn forget_oldest(&mut self) {
        while self.events.len() > MAX_EVENTS {
            self.events.pop_front();
        }
        while self.chain.len() > MAX_EVENTS {
            if let Some(forgotten) = self.chain.pop_front() {
                self.chain_base = forgotten.hash.unwrap_or_default();
            }
        }
    }
}
