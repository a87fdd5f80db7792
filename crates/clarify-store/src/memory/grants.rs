//! Grants: recorded with the answer that gives them, listed, and revoked.

use super::{MemoryBackend, State};
use crate::error::StoreError;
use crate::grant::{GrantFilter, StoredGrant};

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
    ) -> Result<Option<StoredGrant>, StoreError> {
        let mut s = self.state();
        let Some(at) = s.grants.iter().position(|(t, g)| t == tenant && g.id == id) else {
            return Ok(None);
        };
        Ok(Some(s.grants.remove(at).1))
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
