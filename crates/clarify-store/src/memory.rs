//! The in-memory backend: the in-process gateway. Nothing persists.
//!
//! To keep a long-running process bounded, it keeps at most [`MAX_RESOLVED`] resolved requests
//! (the oldest resolved are forgotten first) and the newest [`MAX_EVENTS`] events; pending
//! requests are never dropped.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use clarify_core::{Resolution, Status};

use crate::access::{
    AfterAttempt, ApiKey, Attempt, Delivery, DeliveryStatus, KeyRow, Outbox, TokenKind,
};
use crate::audit;
use crate::backend::{Ballot, Cast, NewRow, Resolved, Tally, next_reminder, tally};
use crate::codec::EventParts;
use crate::error::StoreError;
use crate::grant::{GrantFilter, StoredGrant};
use crate::record::{
    Actor, Created, Event, EventKind, ListQuery, Page, RequestRecord, StoredResolution,
    encode_cursor,
};

pub(crate) const MAX_RESOLVED: usize = 100_000;
pub(crate) const MAX_EVENTS: usize = 100_000;

#[derive(Debug, Default)]
pub(crate) struct MemoryBackend {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next_seq: u64,
    rows: HashMap<String, Row>,
    /// Insertion sequence → id, for newest-first listing.
    order: BTreeMap<u64, String>,
    /// (tenant, idempotency key) → id.
    idempotency: HashMap<(String, String), String>,
    /// (tenant, session, dedupe key) → id, pending requests only.
    dedupe: HashMap<(String, Option<String>, String), String>,
    /// (deadline, seq) of pending requests that expire.
    deadlines: BTreeSet<(DateTime<Utc>, u64)>,
    /// (next reminder, seq) of pending requests with reminders.
    reminders: BTreeSet<(DateTime<Utc>, u64)>,
    /// (escalation time, seq) of pending requests not escalated yet.
    escalations: BTreeSet<(DateTime<Utc>, u64)>,
    resolved_order: VecDeque<String>,
    events: VecDeque<Event>,
    /// The audit chain's view of the events (tombstones of purged ones included), bounded like
    /// `events`; `chain_base` is the hash of the last event it forgot, which the first one it
    /// keeps links to.
    chain: VecDeque<EventParts>,
    chain_base: String,
    next_event: u64,
    grants: Vec<(String, StoredGrant)>,
    keys: Vec<KeyRow>,
    /// Token digest → (kind, key id, expires at).
    tokens: HashMap<String, (TokenKind, String, DateTime<Utc>)>,
    secrets: HashMap<String, Vec<u8>>,
    cursors: HashMap<String, i64>,
    deliveries: BTreeMap<u64, Delivery>,
    next_delivery: u64,
}

#[derive(Debug)]
struct Row {
    seq: u64,
    record: RequestRecord,
    dedupe_key: Option<String>,
    escalate_at: Option<DateTime<Utc>>,
    /// The channels the request was announced on.
    announced: Vec<String>,
}

impl MemoryBackend {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

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
        s.order.insert(seq, record.id.clone());
        s.push_event(&record, EventKind::Created, None, None, record.created_at);
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

    pub(crate) async fn vote(&self, id: &str, ballot: Ballot) -> Result<Cast, StoreError> {
        let mut s = self.state();
        let Some(row) = s.rows.get_mut(id) else {
            return Ok(Cast::NotFound);
        };
        let Ballot {
            vote,
            channel,
            grants,
        } = ballot;
        let (votes, decided) = match tally(&row.record, &vote) {
            Tally::Closed => return Ok(Cast::Lost(row.record.clone())),
            Tally::AlreadyVoted => return Ok(Cast::AlreadyVoted(row.record.clone())),
            Tally::Counted { votes, decided } => (votes, decided),
        };
        row.record.votes = votes;
        let record = row.record.clone();
        let actor = Actor {
            name: Some(vote.by.clone()),
            channel,
        };
        s.push_event(
            &record,
            EventKind::Voted,
            actor.name.clone(),
            Some(actor.channel.clone()),
            vote.at,
        );
        let Some(answers) = decided else {
            // The announcements show the votes so far.
            s.follow_up(&record, EventKind::Voted, vote.at);
            return Ok(Cast::Counted(record));
        };
        let made = grants(&record, &answers);
        let resolution = StoredResolution {
            resolution: Resolution::Answered(answers),
            actor,
            resolved_at: vote.at,
        };
        let Some(record) = s.resolve_row(id, resolution) else {
            return Ok(Cast::NotFound);
        };
        s.insert_grants(&record.tenant, &made);
        Ok(Cast::Counted(record))
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

    pub(crate) async fn purge_resolved(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut s = self.state();
        let delivering: std::collections::HashSet<&str> = s
            .deliveries
            .values()
            .filter(|d| d.status == DeliveryStatus::Pending)
            .map(|d| d.request_id.as_str())
            .collect();
        // Resolution order is age order: stop at the first one too young.
        let ids: Vec<String> = s
            .resolved_order
            .iter()
            .map_while(|id| {
                let at = s.rows.get(id).and_then(|r| r.record.resolved_at());
                at.is_none_or(|at| at < before).then_some(id)
            })
            .filter(|id| !delivering.contains(id.as_str()))
            .take(limit)
            .cloned()
            .collect();
        if ids.is_empty() {
            return Ok(ids);
        }
        let gone: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        let State {
            rows,
            order,
            idempotency,
            resolved_order,
            events,
            chain,
            deliveries,
            ..
        } = &mut *s;
        for id in &ids {
            if let Some(row) = rows.remove(id) {
                order.remove(&row.seq);
                if let Some(key) = &row.record.request.idempotency_key {
                    idempotency.remove(&(row.record.tenant.clone(), key.clone()));
                }
            }
        }
        resolved_order.retain(|id| !gone.contains(id.as_str()));
        events.retain(|e| !gone.contains(e.request_id.as_str()));
        // The audit chain keeps tombstones, as the other backends do.
        for e in chain
            .iter_mut()
            .filter(|e| gone.contains(e.request_id.as_str()))
        {
            e.tenant.clear();
            e.request_id.clear();
            e.kind = audit::PURGED.to_owned();
            e.actor = None;
            e.channel = None;
        }
        deliveries.retain(|_, d| !gone.contains(d.request_id.as_str()));
        Ok(ids)
    }

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

    pub(crate) async fn grants(
        &self,
        tenant: &str,
        filter: GrantFilter<'_>,
    ) -> Result<Vec<StoredGrant>, StoreError> {
        Ok(self
            .state()
            .grants
            .iter()
            .filter(|(t, g)| t == tenant && filter.matches(&g.grant))
            .map(|(_, g)| g.clone())
            .collect())
    }

    pub(crate) async fn revoke_grant(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let mut s = self.state();
        let Some(at) = s.grants.iter().position(|(t, g)| t == tenant && g.id == id) else {
            return Ok(None);
        };
        Ok(Some(s.grants.remove(at).1))
    }

    pub(crate) async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        let s = self.state();
        Ok(((s.rows.len() - s.resolved_order.len()) as u64, s.next_event))
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }

    pub(crate) async fn insert_key(&self, row: KeyRow) -> Result<bool, StoreError> {
        let mut s = self.state();
        let taken = s
            .keys
            .iter()
            .any(|k| k.key.name == row.key.name && k.key.revoked_at.is_none());
        if !taken {
            s.keys.push(row);
        }
        Ok(!taken)
    }

    pub(crate) async fn key(&self, id: &str) -> Result<Option<KeyRow>, StoreError> {
        Ok(self.state().keys.iter().find(|k| k.key.id == id).cloned())
    }

    pub(crate) async fn keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        Ok(self.state().keys.iter().map(|k| k.key.clone()).collect())
    }

    pub(crate) async fn revoke_key(
        &self,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<ApiKey>, StoreError> {
        let mut s = self.state();
        let Some(row) = s
            .keys
            .iter_mut()
            .find(|k| k.key.name == name && k.key.revoked_at.is_none())
        else {
            return Ok(None);
        };
        row.key.revoked_at = Some(at);
        let key = row.key.clone();
        s.tokens.retain(|_, (_, key_id, _)| *key_id != key.id);
        Ok(Some(key))
    }

    pub(crate) async fn key_count(&self) -> Result<u64, StoreError> {
        Ok(self.state().keys.len() as u64)
    }

    pub(crate) async fn insert_token(
        &self,
        kind: TokenKind,
        digest: &str,
        key_id: &str,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut s = self.state();
        s.tokens.retain(|_, (_, _, at)| *at > now);
        s.tokens
            .insert(digest.to_owned(), (kind, key_id.to_owned(), expires_at));
        Ok(())
    }

    pub(crate) async fn redeem_token(
        &self,
        kind: TokenKind,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        let mut s = self.state();
        let Some((k, key_id, expires_at)) = s.tokens.get(digest).cloned() else {
            return Ok(None);
        };
        if k != kind || expires_at <= now {
            return Ok(None);
        }
        if matches!(kind, TokenKind::Login | TokenKind::Once) {
            s.tokens.remove(digest);
        }
        Ok(Some(key_id))
    }

    pub(crate) async fn delete_token(&self, digest: &str) -> Result<(), StoreError> {
        self.state().tokens.remove(digest);
        Ok(())
    }

    pub(crate) async fn secret(
        &self,
        name: &str,
        candidate: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        Ok(self
            .state()
            .secrets
            .entry(name.to_owned())
            .or_insert(candidate)
            .clone())
    }

    pub(crate) async fn cursor(&self, name: &str) -> Result<Option<i64>, StoreError> {
        Ok(self.state().cursors.get(name).copied())
    }

    pub(crate) async fn set_cursor(&self, name: &str, value: i64) -> Result<(), StoreError> {
        self.state().cursors.insert(name.to_owned(), value);
        Ok(())
    }

    pub(crate) async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
        outbox: Outbox,
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut s = self.state();
        let mut claimed = Vec::new();
        for d in s.deliveries.values_mut() {
            if claimed.len() == limit {
                break;
            }
            let ours = d.channel.is_some() == (outbox == Outbox::Channels);
            if ours
                && d.status == DeliveryStatus::Pending
                && d.next_attempt_at.is_some_and(|at| at <= now)
            {
                d.next_attempt_at = Some(lease_until);
                claimed.push(d.clone());
            }
        }
        Ok(claimed)
    }

    pub(crate) async fn finish_attempt(
        &self,
        id: u64,
        attempt: Attempt,
        after: AfterAttempt,
        message_ref: Option<String>,
    ) -> Result<(), StoreError> {
        let mut s = self.state();
        if let Some(d) = s.deliveries.get_mut(&id) {
            d.attempts.push(attempt);
            if message_ref.is_some() {
                d.message_ref = message_ref;
            }
            (d.status, d.next_attempt_at) = match after {
                AfterAttempt::Delivered => (DeliveryStatus::Delivered, None),
                AfterAttempt::RetryAt(at) => (DeliveryStatus::Pending, Some(at)),
                AfterAttempt::GiveUp => (DeliveryStatus::Failed, None),
            };
        }
        Ok(())
    }

    pub(crate) async fn announced_as(
        &self,
        channel: &str,
        message_ref: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        Ok(self
            .state()
            .deliveries
            .values()
            .find(|d| {
                d.event == Some(EventKind::Created)
                    && d.channel.as_deref() == Some(channel)
                    && d.message_ref.as_deref() == Some(message_ref)
            })
            .map(|d| (d.tenant.clone(), d.request_id.clone())))
    }

    pub(crate) async fn deliveries(&self, request_id: &str) -> Result<Vec<Delivery>, StoreError> {
        Ok(self
            .state()
            .deliveries
            .values()
            .filter(|d| d.request_id == request_id)
            .cloned()
            .collect())
    }
}

impl State {
    /// Applies a resolution the caller has checked; returns the new record.
    /// Records the grants an answer gave, each once: the first of equal grants is kept.
    fn insert_grants(&mut self, tenant: &str, grants: &[StoredGrant]) {
        for grant in grants {
            let known = self
                .grants
                .iter()
                .any(|(t, g)| t == tenant && g.grant == grant.grant);
            if !known {
                self.grants.push((tenant.to_owned(), grant.clone()));
            }
        }
    }

    fn resolve_row(&mut self, id: &str, res: StoredResolution) -> Option<RequestRecord> {
        let row = self.rows.get_mut(id)?;
        let seq = row.seq;
        let status = res.resolution.status();
        let kind = EventKind::for_status(status);
        let at = res.resolved_at;
        let (actor, channel) = (res.actor.name.clone(), res.actor.channel.clone());
        row.record.status = status;
        row.record.resolution = Some(res);
        let reminder = row.record.remind_at.take();
        let escalation = row.escalate_at.take();
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
        self.push_event(&record, kind, actor, Some(channel), at);
        if let Some(url) = &record.request.callback_url {
            self.queue(&record, url, None, at, None);
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
        self.push_event(record, kind, None, Some("system".to_owned()), at);
        if let Some(url) = &record.request.callback_url {
            self.queue(record, url, None, at, Some(kind));
        }
        self.follow_up(record, kind, at);
    }

    /// Queues a notification of `kind` about `record` on every channel it was announced on: a
    /// reminder or escalation, a vote, or its resolution (which edits the announcement).
    fn follow_up(&mut self, record: &RequestRecord, kind: EventKind, at: DateTime<Utc>) {
        let channels = match self.rows.get(&record.id) {
            Some(row) if !row.announced.is_empty() => row.announced.clone(),
            _ => return,
        };
        for channel in channels {
            self.queue(record, "", Some(channel), at, Some(kind));
        }
    }

    /// Queues a webhook delivery to `url`, or a notification to `channel`.
    fn queue(
        &mut self,
        record: &RequestRecord,
        url: &str,
        channel: Option<String>,
        at: DateTime<Utc>,
        event: Option<EventKind>,
    ) {
        self.next_delivery += 1;
        let id = self.next_delivery;
        self.deliveries.insert(
            id,
            Delivery {
                id,
                request_id: record.id.clone(),
                tenant: record.tenant.clone(),
                url: url.to_owned(),
                status: DeliveryStatus::Pending,
                created_at: at,
                next_attempt_at: Some(at),
                event,
                channel,
                message_ref: None,
                attempts: Vec::new(),
            },
        );
        // Finished deliveries are forgotten first, like resolved requests.
        while self.deliveries.len() > MAX_RESOLVED
            && self
                .deliveries
                .first_key_value()
                .is_some_and(|(_, d)| d.status != DeliveryStatus::Pending)
        {
            self.deliveries.pop_first();
        }
    }

    fn push_event(
        &mut self,
        record: &RequestRecord,
        kind: EventKind,
        actor: Option<String>,
        channel: Option<String>,
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
            at,
            hash,
        });
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
