//! Passkeys people registered to sign in with and to confirm high-risk answers (step-up).
//!
//! A passkey is kept as one named value of its own, `passkey:<credential id>`, as linked chat
//! accounts are (see `identity`): registering on two instances at once never overwrites, and a
//! discoverable sign-in finds the passkey by the credential id the authenticator returns,
//! whichever instance registered it. The credential itself (public key, counter, backup state)
//! is the WebAuthn library's JSON, opaque here; the server updates it after each use. Each
//! registration and removal is an admin event of the audit chain (`passkey.registered`,
//! `passkey.removed`, subject the passkey's id), appended right after the change.

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use crate::Store;
use crate::audit::{AdminEvent, AdminKind};
use crate::error::StoreError;
use crate::record::Actor;

/// The prefix of a passkey's kept value.
const PREFIX: &str = "passkey:";

/// How long a passkey confirmation made for an answer stays good for that answer.
pub const STEP_UP_WINDOW: TimeDelta = TimeDelta::minutes(5);

/// A registered passkey.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPasskey {
    /// Its id in clarify (what the settings page removes it by).
    pub id: String,
    pub tenant: String,
    /// The responder name of the person it belongs to.
    pub name: String,
    /// Who registered it, as the event log names them (`key:<name>`, `oidc:<issuer>#<sub>`).
    pub principal: String,
    /// What a session opened with this passkey holds (the edge's own shape: the key id, or the
    /// person as the identity provider described them at registration).
    pub holder: String,
    /// The name the person gave it ("work laptop").
    pub label: String,
    /// The credential id, base64url without padding; unique among all passkeys.
    pub credential_id: String,
    /// The WebAuthn credential as the server's library keeps it (public key, counter, backup
    /// state).
    pub credential: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

impl Store {
    /// Registers `passkey`, recording `passkey.registered` by `by`; `false` (and nothing kept)
    /// when its credential id is already registered, to anyone.
    pub async fn add_passkey(
        &self,
        passkey: &StoredPasskey,
        by: &Actor,
    ) -> Result<bool, StoreError> {
        let name = format!("{PREFIX}{}", passkey.credential_id);
        if self.kept(&name).await?.is_some() {
            return Ok(false);
        }
        self.keep(&name, encode(passkey)?).await?;
        self.record_admin(AdminEvent::new(
            &passkey.tenant,
            AdminKind::PasskeyRegistered,
            &passkey.id,
            by,
        ))
        .await?;
        Ok(true)
    }

    /// The passkey with this credential id (base64url), if one is registered.
    pub async fn passkey_by_credential(
        &self,
        credential_id: &str,
    ) -> Result<Option<StoredPasskey>, StoreError> {
        match self.kept(&format!("{PREFIX}{credential_id}")).await? {
            Some(bytes) => decode(&bytes).map(Some),
            None => Ok(None),
        }
    }

    /// The passkeys of the person `name` of `tenant`, oldest first.
    pub async fn passkeys_of(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Vec<StoredPasskey>, StoreError> {
        let mut found = Vec::new();
        for (_, bytes) in self.kept_under(PREFIX).await? {
            let passkey = decode(&bytes)?;
            if passkey.tenant == tenant && passkey.name == name {
                found.push(passkey);
            }
        }
        found.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(found)
    }

    /// Removes the passkey `id` of the person `name` of `tenant`, recording `passkey.removed`
    /// by `by`; `None` when that person has no passkey of that id (another person's is not
    /// theirs to remove).
    pub async fn remove_passkey(
        &self,
        tenant: &str,
        name: &str,
        id: &str,
        by: &Actor,
    ) -> Result<Option<StoredPasskey>, StoreError> {
        let Some(passkey) = self
            .passkeys_of(tenant, name)
            .await?
            .into_iter()
            .find(|p| p.id == id)
        else {
            return Ok(None);
        };
        if !self
            .forget(&format!("{PREFIX}{}", passkey.credential_id))
            .await?
        {
            return Ok(None);
        }
        self.record_admin(AdminEvent::new(tenant, AdminKind::PasskeyRemoved, id, by))
            .await?;
        Ok(Some(passkey))
    }

    /// Records a use of the passkey: its credential as updated by the assertion (counter,
    /// backup state) and when. A passkey removed meanwhile stays removed.
    pub async fn passkey_used(
        &self,
        credential_id: &str,
        credential: serde_json::Value,
    ) -> Result<(), StoreError> {
        let Some(mut passkey) = self.passkey_by_credential(credential_id).await? else {
            return Ok(());
        };
        passkey.credential = credential;
        passkey.last_used_at = Some(self.now());
        self.keep(&format!("{PREFIX}{credential_id}"), encode(&passkey)?)
            .await
    }
}

fn encode(passkey: &StoredPasskey) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(passkey).map_err(|e| StoreError::Corrupt(format!("a passkey: {e}")))
}

fn decode(bytes: &[u8]) -> Result<StoredPasskey, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(format!("a passkey: {e}")))
}
