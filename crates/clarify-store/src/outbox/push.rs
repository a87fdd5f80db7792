//! Web Push subscriptions: a person's browser, where new requests they may answer are pushed.
//!
//! A subscription is the browser's `PushSubscription` (endpoint, `p256dh`, `auth`) with whom it
//! is for: the tenant, the responder name the store compares with a request's responders, the
//! groups the identity provider gave at subscription time (the configured `[groups]` are added
//! when they are read, as for answers) and the principal who subscribed. An endpoint is one
//! browser's: subscribing it again replaces the earlier subscription. Each subscription and
//! removal is an admin event of the audit chain (`push.subscribed`, `push.unsubscribed`),
//! appended right after the change.
//!
//! Pushes go through the outbox: a new request is "announced" on the channel
//! `push:<subscription id>` of every subscription whose person may answer it, queued in the
//! creating transaction like every channel's announcement ([`Store::create`]), so reminders and
//! escalations follow up there too; the server's push worker claims them
//! ([`Store::claim_pushes`]).
//!
//! A tenant's subscriptions are read once a second at most for that ([`PushCache`]): creating a
//! request does not read them every time, and the server wakes its push worker only for a
//! tenant that has some ([`Store::may_push`]). A subscription made or removed through this
//! store is seen at once; one made through another instance on the same database is pushed to
//! for requests created here at most [`PUSH_FRESH_FOR`] later.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use clarify_core::NewRequest;
use serde::Serialize;

use crate::Store;
use crate::audit::{AdminEvent, AdminKind};
use crate::clock::{IdGenerator, RandomIds};
use crate::error::StoreError;
use crate::outbox::{Delivery, Outbox, PUSH_CHANNEL_PREFIX};
use crate::record::Actor;

/// A browser subscribed to Web Push for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PushSubscription {
    /// Unguessable, URL-safe; names the subscription in its `DELETE` route and its pushes'
    /// channel (`push:<id>`).
    pub id: String,
    pub tenant: String,
    /// The responder name requests are matched against.
    pub person: String,
    /// The groups the identity provider said the person is in when subscribing.
    pub groups: Vec<String>,
    /// Who subscribed (`oidc:<issuer>#<sub>`, `key:<name>`).
    pub principal: Option<String>,
    /// The push service's URL for this browser; unique.
    pub endpoint: String,
    /// The browser's P-256 public key, URL-safe base64 as the browser gives it.
    pub p256dh: String,
    /// The browser's 16-byte authentication secret, URL-safe base64.
    pub auth: String,
    pub created_at: DateTime<Utc>,
}

impl PushSubscription {
    /// The outbox channel its pushes are queued under.
    pub fn channel(&self) -> String {
        format!("{PUSH_CHANNEL_PREFIX}{}", self.id)
    }
}

/// The subscription id a push channel names, if `channel` is one.
pub fn push_subscription_of(channel: &str) -> Option<&str> {
    channel.strip_prefix(PUSH_CHANNEL_PREFIX)
}

/// How long a tenant's subscriptions, once read, are used without reading them again.
pub const PUSH_FRESH_FOR: Duration = Duration::from_secs(1);

/// The most tenants whose subscriptions are kept at once.
const PUSH_CACHE_TENANTS: usize = 4_096;

/// Each tenant's push subscriptions as last read, and when. Freshness is real time (tokio's
/// monotonic clock), not the store's injected clock: it bounds how late another instance's new
/// subscription is seen, which is real time whatever the store's clock says.
#[derive(Debug, Default)]
pub(crate) struct PushCache {
    inner: Mutex<PushCacheInner>,
}

#[derive(Debug, Default)]
struct PushCacheInner {
    tenants: HashMap<String, (tokio::time::Instant, Arc<Vec<PushSubscription>>)>,
    /// Counts the changes made through this store, so a read that overlapped one is not kept.
    changes: u64,
}

impl PushCache {
    /// `tenant`'s subscriptions when read less than [`PUSH_FRESH_FOR`] ago.
    fn fresh(&self, tenant: &str) -> Option<Arc<Vec<PushSubscription>>> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner
            .tenants
            .get(tenant)
            .filter(|(read_at, _)| read_at.elapsed() < PUSH_FRESH_FOR)
            .map(|(_, subscriptions)| Arc::clone(subscriptions))
    }

    /// The count of changes, taken before a read.
    fn changes(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).changes
    }

    /// Keeps what a read begun at `read_at` found, unless a change was made here since
    /// `changes` was taken.
    fn keep(
        &self,
        tenant: &str,
        read_at: tokio::time::Instant,
        changes: u64,
        found: Arc<Vec<PushSubscription>>,
    ) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.changes != changes {
            return;
        }
        if inner.tenants.len() >= PUSH_CACHE_TENANTS && !inner.tenants.contains_key(tenant) {
            inner
                .tenants
                .retain(|_, (at, _)| at.elapsed() < PUSH_FRESH_FOR);
            if inner.tenants.len() >= PUSH_CACHE_TENANTS {
                return;
            }
        }
        inner.tenants.insert(tenant.to_owned(), (read_at, found));
    }

    /// Forgets every tenant's subscriptions after a change made here (a browser subscribing
    /// again replaces its subscription, whichever tenant that was in).
    fn changed(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.changes = inner.changes.wrapping_add(1);
        inner.tenants.clear();
    }

    /// Whether `tenant` is known to have no subscriptions (read less than
    /// [`PUSH_FRESH_FOR`] ago).
    fn known_empty(&self, tenant: &str) -> bool {
        self.fresh(tenant).is_some_and(|s| s.is_empty())
    }
}

/// What a browser gives when it subscribes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPushSubscription {
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
}

impl Store {
    /// Subscribes a browser for `by` (whose name is the person, whose claimed groups are kept)
    /// in `tenant`, replacing any subscription of the same endpoint; records `push.subscribed`.
    pub async fn subscribe_push(
        &self,
        tenant: &str,
        by: &Actor,
        new: NewPushSubscription,
    ) -> Result<PushSubscription, StoreError> {
        let person = by.name.clone().ok_or_else(|| {
            StoreError::Backend("a push subscription needs a person's name".to_owned())
        })?;
        let subscription = PushSubscription {
            id: RandomIds.request_id(),
            tenant: tenant.to_owned(),
            person,
            groups: by.groups.clone(),
            principal: by.principal.clone(),
            endpoint: new.endpoint,
            p256dh: new.p256dh,
            auth: new.auth,
            created_at: self.now(),
        };
        let saved = self.inner.backend.push_save(subscription.clone()).await;
        // After the write, whether it failed or not: a read that overlapped it is not kept.
        self.inner.push_cache.changed();
        saved?;
        self.record_admin(AdminEvent::new(
            tenant,
            AdminKind::PushSubscribed,
            &subscription.id,
            by,
        ))
        .await?;
        Ok(subscription)
    }

    /// The subscription `id`, whatever its tenant.
    pub async fn push_subscription(
        &self,
        id: &str,
    ) -> Result<Option<PushSubscription>, StoreError> {
        self.inner.backend.push_subscription(id).await
    }

    /// Every subscription of `tenant`, oldest first.
    pub async fn push_subscriptions(
        &self,
        tenant: &str,
    ) -> Result<Vec<PushSubscription>, StoreError> {
        self.inner.backend.push_subscriptions(tenant).await
    }

    /// Whether a request of `tenant` may have queued a push or a push follow-up: false only when
    /// the tenant's subscriptions, read less than [`PUSH_FRESH_FOR`] ago, were none. The server
    /// wakes its push worker after a write only when this holds (its poll finds the rest).
    pub fn may_push(&self, tenant: &str) -> bool {
        !self.inner.push_cache.known_empty(tenant)
    }

    /// `tenant`'s subscriptions, read from the store at most every [`PUSH_FRESH_FOR`].
    async fn recent_push_subscriptions(
        &self,
        tenant: &str,
    ) -> Result<Arc<Vec<PushSubscription>>, StoreError> {
        let cache = &self.inner.push_cache;
        if let Some(found) = cache.fresh(tenant) {
            return Ok(found);
        }
        let (changes, read_at) = (cache.changes(), tokio::time::Instant::now());
        let found = Arc::new(self.inner.backend.push_subscriptions(tenant).await?);
        cache.keep(tenant, read_at, changes, Arc::clone(&found));
        Ok(found)
    }

    /// Removes subscription `id` of `tenant` when it is `by`'s own (a subscription is its
    /// person's alone), recording `push.unsubscribed`; `None` when there is no such one.
    pub async fn unsubscribe_push(
        &self,
        tenant: &str,
        id: &str,
        by: &Actor,
    ) -> Result<Option<PushSubscription>, StoreError> {
        let Some(found) = self.push_subscription(id).await? else {
            return Ok(None);
        };
        if found.tenant != tenant || by.name.as_deref() != Some(found.person.as_str()) {
            return Ok(None);
        }
        self.remove_push(found, by).await
    }

    /// Removes subscription `id` because its push service said it is gone (`404`, `410`),
    /// recording `push.unsubscribed` by the system's push worker.
    pub async fn drop_push_subscription(
        &self,
        id: &str,
    ) -> Result<Option<PushSubscription>, StoreError> {
        let Some(found) = self.push_subscription(id).await? else {
            return Ok(None);
        };
        let by = Actor {
            channel: "push".to_owned(),
            ..Actor::system()
        };
        self.remove_push(found, &by).await
    }

    async fn remove_push(
        &self,
        found: PushSubscription,
        by: &Actor,
    ) -> Result<Option<PushSubscription>, StoreError> {
        let deleted = self.inner.backend.push_delete(&found.id).await;
        self.inner.push_cache.changed();
        if !deleted? {
            return Ok(None);
        }
        self.record_admin(AdminEvent::new(
            &found.tenant,
            AdminKind::PushUnsubscribed,
            &found.id,
            by,
        ))
        .await?;
        Ok(Some(found))
    }

    /// Claims up to `limit` pushes due now, leased like webhook deliveries.
    pub async fn claim_pushes(
        &self,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        self.inner
            .backend
            .claim_deliveries(self.now(), lease_until, limit, Outbox::Push)
            .await
    }

    /// The push channels a new request of `tenant` is announced on: the subscriptions of every
    /// person who may answer it (its responders, `group:NAME` by the subscription's claimed
    /// groups and the configured ones; everyone when it names none), less the person it acts
    /// for under four eyes.
    pub(crate) async fn push_channels(
        &self,
        tenant: &str,
        request: &NewRequest,
    ) -> Result<Vec<String>, StoreError> {
        let subscriptions = self.recent_push_subscriptions(tenant).await?;
        Ok(subscriptions
            .iter()
            .filter(|s| {
                let groups = self.groups_of(&s.person, &s.groups);
                request.allows_responder(&s.person, &groups, false)
                    && !(self.forbids_self_approval() && request.acts_for(&s.person))
            })
            .map(PushSubscription::channel)
            .collect())
    }
}
