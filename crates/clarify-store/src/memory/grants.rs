//! Grants: recorded with the answer that gives them, listed, and revoked.

use chrono::{DateTime, Utc};

use super::{MemoryBackend, State};
use crate::audit::{AdminEvent, AdminKind};
use crate::error::StoreError;
use crate::grant::{GrantFilter, StoredGrant};
use crate::record::Actor;

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

impl State {
    /// Records the grants an answer gave, each once: the first of equal grants is kept.
    pub(super) fn insert_grants(&mut self, tenant: &str, grants: &[StoredGrant]) {
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
}
