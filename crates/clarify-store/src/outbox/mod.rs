//! What a store owes the outside world: webhook deliveries and channel notifications (the
//! outbox), and the channels' cursors, where reading a platform's updates resumes.
//!
//! A webhook delivery is queued in the same transaction that resolves its request, so a crash
//! between the two cannot lose it; a worker claims due deliveries with a lease, so several
//! instances can run workers at once.
//!
//! Web Push subscriptions, whose pushes are queued here like any channel's, are in [`push`]. Each
//! backend keeps the same concerns in its `outbox.rs` and `push.rs`.

pub(crate) mod push;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::Store;
use crate::codec::{from_millis, millis};
use crate::error::StoreError;
use crate::record::EventKind;

/// Whether a webhook delivery is still being tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Not delivered yet; tried again at `next_attempt_at`.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Every attempt failed and the retry window is over.
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Pending, Self::Delivered, Self::Failed]
            .into_iter()
            .find(|d| d.as_str() == s)
    }
}

/// The channel name a push to subscription `id` is queued under: here, below `push`, because
/// the outbox tells pushes from other channels by it.
pub const PUSH_CHANNEL_PREFIX: &str = "push:";

/// Which outbox a worker claims from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outbox {
    /// Deliveries to a request's `callback_url`.
    Webhooks,
    /// Notifications to configured channels.
    Channels,
    /// Web Push notifications: the channels named `push:<subscription id>`.
    Push,
}

impl Outbox {
    /// Whether a delivery to `channel` (none for a webhook) is this outbox's.
    pub(crate) fn holds(self, channel: Option<&str>) -> bool {
        match (self, channel) {
            (Self::Webhooks, None) => true,
            (Self::Channels, Some(c)) => !c.starts_with(PUSH_CHANNEL_PREFIX),
            (Self::Push, Some(c)) => c.starts_with(PUSH_CHANNEL_PREFIX),
            _ => false,
        }
    }

    /// The SQL condition on a delivery's `channel` that picks this outbox's (both SQL backends).
    pub(crate) fn condition(self) -> &'static str {
        match self {
            Self::Webhooks => "channel IS NULL",
            Self::Channels => "channel IS NOT NULL AND channel NOT LIKE 'push:%'",
            Self::Push => "channel LIKE 'push:%'",
        }
    }
}

/// Something on its way out: the outcome of a resolved request (or a reminder or escalation) to
/// the request's `callback_url`, or a notification to a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delivery {
    pub id: u64,
    pub request_id: String,
    pub tenant: String,
    pub url: String,
    pub status: DeliveryStatus,
    /// When the request was resolved and the delivery queued.
    pub created_at: DateTime<Utc>,
    /// When the next attempt is due (while pending).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The event a pending request's delivery announces (`created` for a channel's
    /// announcement, `reminded`, `escalated`); `None` for the delivery of the resolution, which
    /// announces how the request ended.
    pub event: Option<EventKind>,
    /// The channel (by its configured name) a notification goes to; `None` for a webhook, which
    /// goes to `url`.
    pub channel: Option<String>,
    /// The platform's reference to the message a notification posted (to edit it later).
    pub message_ref: Option<String>,
    /// Every attempt so far, oldest first.
    pub attempts: Vec<Attempt>,
}

/// One try at delivering a webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    pub at: DateTime<Utc>,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<u16>,
    /// What went wrong, when the attempt failed.
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// What happens to a delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterAttempt {
    Delivered,
    RetryAt(DateTime<Utc>),
    GiveUp,
}

impl Store {
    /// The cursor `name`: a channel's place in a platform's feed of updates (Telegram's offset),
    /// shared by every instance on this store; `None` until first set.
    pub async fn cursor(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.inner.backend.cursor(name).await
    }

    /// Moves the cursor `name` to `value`: call it only once everything before `value` is
    /// committed, so a restart resumes there and nothing is acted on twice.
    pub async fn set_cursor(&self, name: &str, value: i64) -> Result<(), StoreError> {
        self.inner.backend.set_cursor(name, value).await
    }

    /// Claims up to `limit` webhook deliveries due now: each is leased until `lease_until`, so
    /// another worker does not try it meanwhile.
    pub async fn claim_deliveries(
        &self,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        self.inner
            .backend
            .claim_deliveries(self.now(), lease_until, limit, Outbox::Webhooks)
            .await
    }

    /// Claims up to `limit` channel notifications due now, leased like webhook deliveries.
    pub async fn claim_notifications(
        &self,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        self.inner
            .backend
            .claim_deliveries(self.now(), lease_until, limit, Outbox::Channels)
            .await
    }

    /// Records an attempt at delivery `id` and what happens next.
    pub async fn finish_attempt(
        &self,
        id: u64,
        attempt: Attempt,
        after: AfterAttempt,
    ) -> Result<(), StoreError> {
        self.inner
            .backend
            .finish_attempt(id, attempt, after, None)
            .await
    }

    /// Records an attempt at notification `id`, what happens next, and the reference of the
    /// message it posted, if it posted one.
    pub async fn finish_notification(
        &self,
        id: u64,
        attempt: Attempt,
        after: AfterAttempt,
        message_ref: Option<String>,
    ) -> Result<(), StoreError> {
        self.inner
            .backend
            .finish_attempt(id, attempt, after, message_ref)
            .await
    }

    /// The webhook deliveries of a request of `tenant`, with their attempts.
    pub async fn deliveries(
        &self,
        tenant: &str,
        request_id: &str,
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut all = self.inner.backend.deliveries(request_id).await?;
        all.retain(|d| d.tenant == tenant && d.channel.is_none());
        Ok(all)
    }

    /// The request whose announcement on `channel` posted the message `message_ref` (the
    /// platform's reference, as [`Store::finish_notification`] recorded it): its tenant and id.
    pub async fn announced_as(
        &self,
        channel: &str,
        message_ref: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        self.inner.backend.announced_as(channel, message_ref).await
    }

    /// The requests announced on `channel`, newest first, at most `limit`: their tenant and
    /// id. For a reply that names no announcement (a text message).
    pub async fn announced_on(
        &self,
        channel: &str,
        limit: u32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        self.inner.backend.announced_on(channel, limit).await
    }

    /// The channel notifications of a request, whatever its tenant: for a channel's answer path,
    /// which learns the request from the platform and checks it was announced there.
    pub async fn notifications_of(&self, request_id: &str) -> Result<Vec<Delivery>, StoreError> {
        let mut all = self.inner.backend.deliveries(request_id).await?;
        all.retain(|d| d.channel.is_some());
        Ok(all)
    }

    /// The channel notifications of a request of `tenant`, with their attempts.
    pub async fn notifications(
        &self,
        tenant: &str,
        request_id: &str,
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut all = self.inner.backend.deliveries(request_id).await?;
        all.retain(|d| d.tenant == tenant && d.channel.is_some());
        Ok(all)
    }
}

/// A delivery row as read from SQL, without its attempts.
#[derive(Debug)]
pub(crate) struct DeliveryParts {
    pub id: i64,
    pub request_id: String,
    pub tenant: String,
    pub url: String,
    pub status: String,
    pub created_at: i64,
    pub next_attempt_at: Option<i64>,
    /// `NULL` for the resolution's delivery, else the event it announces.
    pub event: Option<String>,
    /// The channel a notification goes to; `NULL` for a webhook.
    pub channel: Option<String>,
    pub message_ref: Option<String>,
}

/// The columns of [`DeliveryParts`], in order, for SELECT and RETURNING lists.
pub(crate) const DELIVERY_COLUMNS: &str =
    "id, request_id, tenant, url, status, created_at, next_attempt_at, event, channel, message_ref";

impl DeliveryParts {
    pub(crate) fn decode(self, attempts: Vec<Attempt>) -> Result<Delivery, StoreError> {
        let id = self.id;
        let corrupt = |what: String| StoreError::Corrupt(format!("delivery {id}: {what}"));
        let time =
            |ms: i64| from_millis(ms).ok_or_else(|| corrupt(format!("time {ms} out of range")));
        Ok(Delivery {
            id: u64::try_from(id).map_err(|_| corrupt("negative id".to_owned()))?,
            status: DeliveryStatus::parse(&self.status)
                .ok_or_else(|| corrupt(format!("{:?} is not a delivery status", self.status)))?,
            created_at: time(self.created_at)?,
            next_attempt_at: self.next_attempt_at.map(time).transpose()?,
            event: match self.event.as_deref() {
                None => None,
                Some(kind) => Some(
                    EventKind::parse(kind)
                        .ok_or_else(|| corrupt(format!("{kind:?} is not an event kind")))?,
                ),
            },
            request_id: self.request_id,
            tenant: self.tenant,
            url: self.url,
            channel: self.channel,
            message_ref: self.message_ref,
            attempts,
        })
    }
}

/// A delivery attempt row as read from SQL.
#[derive(Debug)]
pub(crate) struct AttemptParts {
    pub delivery_id: i64,
    pub number: i64,
    pub at: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

/// The columns of [`AttemptParts`], in order, for SELECT lists.
pub(crate) const ATTEMPT_COLUMNS: &str = "delivery_id, number, at, status_code, error, duration_ms";

impl AttemptParts {
    pub(crate) fn decode(self) -> Result<Attempt, StoreError> {
        let (delivery, number) = (self.delivery_id, self.number);
        let corrupt = |what: String| {
            StoreError::Corrupt(format!("delivery {delivery} attempt {number}: {what}"))
        };
        Ok(Attempt {
            number: u32::try_from(number).map_err(|_| corrupt("number out of range".to_owned()))?,
            at: from_millis(self.at)
                .ok_or_else(|| corrupt(format!("time {} out of range", self.at)))?,
            status_code: self
                .status_code
                .map(|code| u16::try_from(code).map_err(|_| corrupt(format!("status code {code}"))))
                .transpose()?,
            error: self.error,
            duration_ms: u64::try_from(self.duration_ms)
                .map_err(|_| corrupt(format!("duration {} ms", self.duration_ms)))?,
        })
    }
}

/// An attempt as bound to SQL parameters: `(number, at, status_code, error, duration_ms)`.
/// Durations too long for the column are stored as the longest one.
pub(crate) fn attempt_values(attempt: &Attempt) -> (i64, i64, Option<i32>, Option<&str>, i64) {
    (
        i64::from(attempt.number),
        millis(attempt.at),
        attempt.status_code.map(i32::from),
        attempt.error.as_deref(),
        i64::try_from(attempt.duration_ms).unwrap_or(i64::MAX),
    )
}

/// What a delivery becomes after an attempt: its status and next attempt time.
pub(crate) fn after_attempt(after: AfterAttempt) -> (&'static str, Option<i64>) {
    match after {
        AfterAttempt::Delivered => (DeliveryStatus::Delivered.as_str(), None),
        AfterAttempt::RetryAt(at) => (DeliveryStatus::Pending.as_str(), Some(millis(at))),
        AfterAttempt::GiveUp => (DeliveryStatus::Failed.as_str(), None),
    }
}
