//! API keys, login and session tokens, and server secrets.

use chrono::{DateTime, Utc};

use super::MemoryBackend;
use crate::audit::{AdminEvent, AdminKind};
use crate::error::StoreError;
use crate::keys::{ApiKey, KeyRow, TokenKind};
use crate::record::Actor;

impl MemoryBackend {
    pub(crate) async fn insert_key(&self, row: KeyRow, by: &Actor) -> Result<bool, StoreError> {
        let mut s = self.state();
        let taken = s
            .keys
            .iter()
            .any(|k| k.key.name == row.key.name && k.key.revoked_at.is_none());
        if !taken {
            let event = AdminEvent::new(&row.key.tenant, AdminKind::KeyCreated, &row.key.id, by);
            s.push_admin(&event, row.key.created_at);
            s.keys.push(row);
        }
        Ok(!taken)
    }

    pub(crate) async fn insert_key_once(
        &self,
        row: KeyRow,
        by: &Actor,
    ) -> Result<bool, StoreError> {
        let mut s = self.state();
        let taken = s.keys.iter().any(|k| {
            k.key.id == row.key.id || (k.key.name == row.key.name && k.key.revoked_at.is_none())
        });
        if !taken {
            let event = AdminEvent::new(&row.key.tenant, AdminKind::KeyCreated, &row.key.id, by);
            s.push_admin(&event, row.key.created_at);
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
        by: &Actor,
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
        let event = AdminEvent::new(&key.tenant, AdminKind::KeyRevoked, &key.id, by);
        s.push_admin(&event, at);
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

    pub(crate) async fn kept(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.state().secrets.get(name).cloned())
    }

    pub(crate) async fn keep(&self, name: &str, value: Vec<u8>) -> Result<(), StoreError> {
        self.state().secrets.insert(name.to_owned(), value);
        Ok(())
    }

    pub(crate) async fn kept_under(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        Ok(self
            .state()
            .secrets
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect())
    }

    pub(crate) async fn forget(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.state().secrets.remove(name).is_some())
    }
}
