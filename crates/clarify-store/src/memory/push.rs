//! Web Push subscriptions, by id; an endpoint is held by one subscription at a time.

use super::MemoryBackend;
use crate::error::StoreError;
use crate::outbox::push::PushSubscription;

impl MemoryBackend {
    pub(crate) async fn push_save(&self, subscription: PushSubscription) -> Result<(), StoreError> {
        let mut s = self.state();
        s.push.retain(|_, p| p.endpoint != subscription.endpoint);
        s.push.insert(subscription.id.clone(), subscription);
        Ok(())
    }

    pub(crate) async fn push_subscription(
        &self,
        id: &str,
    ) -> Result<Option<PushSubscription>, StoreError> {
        Ok(self.state().push.get(id).cloned())
    }

    pub(crate) async fn push_subscriptions(
        &self,
        tenant: &str,
    ) -> Result<Vec<PushSubscription>, StoreError> {
        let mut found: Vec<PushSubscription> = self
            .state()
            .push
            .values()
            .filter(|p| p.tenant == tenant)
            .cloned()
            .collect();
        found.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(found)
    }

    pub(crate) async fn push_delete(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.state().push.remove(id).is_some())
    }
}
