//! Chat accounts people linked to themselves: `slack:U012ABCDEF` answers as `alice`.
//!
//! A link is kept as one named value of its own (`identity:<platform>:<user id>`), so two
//! people linking at once on two instances never overwrite each other; listing reads the
//! values under that prefix. Each link and unlink is an admin event of the audit chain
//! (`identity.linked`, `identity.unlinked`), appended right after the change.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Store;
use crate::audit::{AdminEvent, AdminKind};
use crate::error::StoreError;
use crate::record::Actor;

/// The prefix of a linked account's kept value.
const PREFIX: &str = "identity:";

/// A chat account linked to a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkedIdentity {
    /// `<platform>:<user id>`, as the chat answer path names a clicker (`slack:U012ABCDEF`).
    pub id: String,
    /// The responder name the account answers as.
    pub name: String,
    /// The tenant of the person who linked it.
    pub tenant: String,
    /// The principal who opened the link (`oidc:<issuer>#<sub>`, `key:<name>`).
    pub linked_by: Option<String>,
    pub linked_at: DateTime<Utc>,
}

impl Store {
    /// Links the chat account `id` (`slack:U012ABCDEF`) to the responder `name` of `tenant`,
    /// replacing an earlier link of the same account; records `identity.linked` by `by`.
    pub async fn link_identity(
        &self,
        id: &str,
        name: &str,
        tenant: &str,
        by: &Actor,
    ) -> Result<LinkedIdentity, StoreError> {
        let link = LinkedIdentity {
            id: id.to_owned(),
            name: name.to_owned(),
            tenant: tenant.to_owned(),
            linked_by: by.principal.clone(),
            linked_at: self.now(),
        };
        let value = serde_json::to_vec(&link)
            .map_err(|e| StoreError::Corrupt(format!("a linked account: {e}")))?;
        self.keep(&format!("{PREFIX}{id}"), value).await?;
        self.record_admin(AdminEvent::new(tenant, AdminKind::IdentityLinked, id, by))
            .await?;
        Ok(link)
    }

    /// The link of the chat account `id`, if its owner made one.
    pub async fn linked_identity(&self, id: &str) -> Result<Option<LinkedIdentity>, StoreError> {
        match self.kept(&format!("{PREFIX}{id}")).await? {
            Some(bytes) => decode(&bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Every linked account of `tenant` (every tenant's with `None`), by id.
    pub async fn linked_identities(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<LinkedIdentity>, StoreError> {
        let mut links = Vec::new();
        for (_, bytes) in self.kept_under(PREFIX).await? {
            let link = decode(&bytes)?;
            if tenant.is_none_or(|t| t == link.tenant) {
                links.push(link);
            }
        }
        links.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(links)
    }

    /// Removes the link of the chat account `id` of `tenant`, recording `identity.unlinked` by
    /// `by`; the link removed, or `None` when there was none in that tenant.
    pub async fn unlink_identity(
        &self,
        id: &str,
        tenant: &str,
        by: &Actor,
    ) -> Result<Option<LinkedIdentity>, StoreError> {
        let Some(link) = self.linked_identity(id).await? else {
            return Ok(None);
        };
        if link.tenant != tenant || !self.forget(&format!("{PREFIX}{id}")).await? {
            return Ok(None);
        }
        self.record_admin(AdminEvent::new(tenant, AdminKind::IdentityUnlinked, id, by))
            .await?;
        Ok(Some(link))
    }
}

fn decode(bytes: &[u8]) -> Result<LinkedIdentity, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(format!("a linked account: {e}")))
}
