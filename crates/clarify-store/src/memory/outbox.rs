//! The outbox: webhook deliveries and channel notifications, queued with the change they report
//! and claimed with a lease; and the channels' cursors, where reading a platform's updates
//! resumes.

use chrono::{DateTime, Utc};

use super::{MAX_RESOLVED, MemoryBackend, State};
use crate::error::StoreError;
use crate::outbox::{AfterAttempt, Attempt, Delivery, DeliveryStatus, Outbox};
use crate::record::{EventKind, RequestRecord};

impl MemoryBackend {
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
            let ours = outbox.holds(d.channel.as_deref());
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

    pub(crate) async fn announced_on(
        &self,
        channel: &str,
        limit: u32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let state = self.state();
        Ok(state
            .deliveries
            .values()
            .rev()
            .filter(|d| {
                d.event == Some(EventKind::Created) && d.channel.as_deref() == Some(channel)
            })
            .take(limit as usize)
            .map(|d| (d.tenant.clone(), d.request_id.clone()))
            .collect())
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
    /// Queues a notification of `kind` about `record` on every channel it was announced on: a
    /// reminder or escalation, a vote, or its resolution (which edits the announcement).
    pub(super) fn follow_up(&mut self, record: &RequestRecord, kind: EventKind, at: DateTime<Utc>) {
        let channels = match self.rows.get(&record.id) {
            Some(row) if !row.announced.is_empty() => row.announced.clone(),
            _ => return,
        };
        for channel in channels {
            self.queue(record, "", Some(channel), at, Some(kind));
        }
    }

    /// Queues a webhook delivery to `url`, or a notification to `channel`.
    pub(super) fn queue(
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
}
