//! Grants: recorded with the answer that gives them, listed, and revoked.

use chrono::{DateTime, Utc};

use super::{MemoryBackend, State};
use crate::audit::{AdminEvent, AdminKind};
use crate::error::StoreError;
use crate::grants::{GrantFilter, StoredGrant};
use crate::record::{Actor, EventKind};

impl MemoryBackend {
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
        at: DateTime<Utc>,
        by: &Actor,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let mut s = self.state();
        let Some(i) = s.grants.iter().position(|(t, g)| t == tenant && g.id == id) else {
            return Ok(None);
        };
        let grant = s.grants.remove(i).1;
        s.push_admin(
            &AdminEvent::new(tenant, AdminKind::GrantRevoked, &grant.id, by),
            at,
        );
        Ok(Some(grant))
    }
}

impl MemoryBackend {
    /// Counts a use of grant `id` if it is still live at `now`, under the state's lock.
    pub(crate) async fn use_grant(
        &self,
        tenant: &str,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let mut s = self.state();
        let Some((_, grant)) = s
            .grants
            .iter_mut()
            .find(|(t, g)| t == tenant && g.id == id && g.live(now))
        else {
            return Ok(None);
        };
        grant.uses = grant.uses.saturating_add(1);
        Ok(Some(grant.clone()))
    }
}

impl MemoryBackend {
    /// Records a grant a person gave by accepting a suggestion, with its event on `request_id`.
    pub(crate) async fn grant_suggested(
        &self,
        tenant: &str,
        request_id: &str,
        grant: &StoredGrant,
        actor: &Actor,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut s = self.state();
        let Some(record) = s
            .rows
            .get(request_id)
            .filter(|r| r.record.tenant == tenant)
            .map(|r| r.record.clone())
        else {
            return Err(StoreError::Backend(format!(
                "request {request_id} is not in the store"
            )));
        };
        s.insert_grants(tenant, std::slice::from_ref(grant));
        s.push_event(
            &record,
            EventKind::GrantSuggestedAccepted,
            actor.name.clone(),
            Some(actor.channel.clone()),
            actor.principal.clone(),
            at,
        );
        Ok(())
    }
}

impl State {
    /// Records the grants an answer gave, each once: an equal grant already stored keeps its id
    /// and takes the new answer's bounds, its uses counted afresh.
    pub(super) fn insert_grants(&mut self, tenant: &str, grants: &[StoredGrant]) {
        for grant in grants {
            let known = self
                .grants
                .iter_mut()
                .find(|(t, g)| t == tenant && g.grant == grant.grant);
            match known {
                Some((_, g)) => {
                    g.expires_at = grant.expires_at;
                    g.max_uses = grant.max_uses;
                    g.uses = 0;
                }
                None => self.grants.push((tenant.to_owned(), grant.clone())),
            }
        }
    }
}
