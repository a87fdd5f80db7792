//! Recently verified API keys, so that a busy agent's requests cost one SHA-256 each instead of
//! a store read and a digest check.
//!
//! What it may hold, and for how long, is set by revocation: a key revoked anywhere (through
//! this instance's `/v1/keys/{name}/revoke`, another instance on the same database, or
//! `clarify keys revoke` on the store) must stop working everywhere within a second.
//! - Only keys the store has just verified are kept (never a refusal), each for
//!   [`FRESH_FOR`], counted from before the store read that verified it, so an entry never
//!   outlives a revocation committed elsewhere by more than that.
//! - An entry is found by the key id in the token but holds the digest of the whole token: a
//!   token with a cached key's id and a wrong secret is compared (in constant time) against that
//!   digest, misses, and goes to the store, which refuses it.
//! - A revocation made here removes the key's entry, and a verification that was in flight while
//!   it happened is not cached, so the key is refused here at once.
//! - At most [`CAPACITY`] keys are kept; past that, stale entries are dropped, and a new key is
//!   not cached while every entry is fresh.
//!
//! Freshness is read from the monotonic wall clock, not the store's injected clock: it bounds
//! how long a revocation takes to be seen, which is real time whatever the store's clock says.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

// Tokio's clock, so tests can pause and advance it.
use tokio::time::Instant;

use clarify_store::{ApiKey, Store, StoreError};

/// How long a verified key is trusted without asking the store again: half of the second a
/// revocation may take to reach every instance, leaving the rest for the request in flight.
pub const FRESH_FOR: Duration = Duration::from_millis(500);

/// The most keys kept at once.
pub const CAPACITY: usize = 4_096;

/// Recently verified keys by key id.
#[derive(Debug, Default)]
pub struct KeyCache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    /// Counts the revocations made through this instance, so a verification that overlapped
    /// one is not cached.
    revocations: u64,
}

#[derive(Debug)]
struct Entry {
    /// SHA-256 of the whole token the store verified.
    digest: [u8; 32],
    key: ApiKey,
    /// When the store read that verified it began.
    verified_at: Instant,
}

impl KeyCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The active key `token` belongs to: from the cache when it was verified within
    /// [`FRESH_FOR`], otherwise from the store (and then cached).
    pub async fn authenticate(
        &self,
        store: &Store,
        token: &str,
    ) -> Result<Option<ApiKey>, StoreError> {
        let Some(id) = key_id(token) else {
            return store.authenticate(token).await;
        };
        let digest = clarify_model::sign::sha256(&[token.as_bytes()]);
        let (started, revocations) = {
            let inner = self.lock();
            if let Some(entry) = inner.entries.get(id)
                && entry.verified_at.elapsed() < FRESH_FOR
                && crate::shared::sign::equal(&entry.digest, &digest)
            {
                return Ok(Some(entry.key.clone()));
            }
            (Instant::now(), inner.revocations)
        };
        let key = store.authenticate(token).await?;
        if let Some(key) = &key {
            self.insert(id, digest, key, started, revocations);
        }
        Ok(key)
    }

    /// Forgets the key `id` after it was revoked through this instance, and keeps any
    /// verification of it still in flight from being cached.
    pub fn forget(&self, id: &str) {
        let mut inner = self.lock();
        inner.revocations += 1;
        inner.entries.remove(id);
    }

    fn insert(
        &self,
        id: &str,
        digest: [u8; 32],
        key: &ApiKey,
        verified_at: Instant,
        revocations: u64,
    ) {
        let mut inner = self.lock();
        if inner.revocations != revocations {
            return;
        }
        if inner.entries.len() >= CAPACITY && !inner.entries.contains_key(id) {
            inner
                .entries
                .retain(|_, e| e.verified_at.elapsed() < FRESH_FOR);
            if inner.entries.len() >= CAPACITY {
                return;
            }
        }
        inner.entries.insert(
            id.to_owned(),
            Entry {
                digest,
                key: key.clone(),
                verified_at,
            },
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The map is consistent after every statement, so a panic elsewhere cannot leave it
        // half-changed.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The key id of a `ck_<id>_<secret>` token. Any other shape is left to the store, uncached.
fn key_id(token: &str) -> Option<&str> {
    let (id, secret) = token.strip_prefix("ck_")?.split_once('_')?;
    (!id.is_empty() && !secret.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clarify_store::{Role, StoreOptions};

    async fn store_with_key() -> (Store, String) {
        let store = Store::open("memory:", StoreOptions::default())
            .await
            .expect("store");
        let token = store
            .create_key(
                "bot",
                Role::Agent,
                "default",
                &clarify_store::Actor::system(),
            )
            .await
            .expect("key")
            .token;
        (store, token)
    }

    /// Whether `cache` lets `token` in.
    async fn admitted(cache: &KeyCache, store: &Store, token: &str) -> bool {
        cache
            .authenticate(store, token)
            .await
            .expect("read")
            .is_some()
    }

    #[tokio::test]
    async fn a_wrong_secret_for_a_cached_key_is_refused() {
        let (store, token) = store_with_key().await;
        let cache = KeyCache::new();
        assert!(admitted(&cache, &store, &token).await);
        let (prefix, _) = token.rsplit_once('_').expect("token shape");
        let forged = format!("{prefix}_wrongsecretwrongsecretwrongsecre");
        assert!(!admitted(&cache, &store, &forged).await);
        assert!(
            admitted(&cache, &store, &token).await,
            "the right secret still works"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_revoked_here_is_refused_at_once_and_elsewhere_once_stale() {
        let (store, token) = store_with_key().await;
        let cache = KeyCache::new();
        assert!(admitted(&cache, &store, &token).await);
        // Revoked on the store, as another process would: still trusted while fresh.
        store
            .revoke_key("bot", &clarify_store::Actor::system())
            .await
            .expect("revoked");
        assert!(admitted(&cache, &store, &token).await);
        tokio::time::advance(FRESH_FOR).await;
        assert!(!admitted(&cache, &store, &token).await);

        let token = store
            .create_key(
                "bot",
                Role::Agent,
                "default",
                &clarify_store::Actor::system(),
            )
            .await
            .expect("key")
            .token;
        let key = cache
            .authenticate(&store, &token)
            .await
            .expect("read")
            .expect("active");
        store
            .revoke_key("bot", &clarify_store::Actor::system())
            .await
            .expect("revoked");
        cache.forget(&key.id);
        assert!(!admitted(&cache, &store, &token).await);
    }

    #[test]
    fn a_verification_overlapping_a_revocation_here_is_not_cached() {
        let cache = KeyCache::new();
        let key = ApiKey {
            id: "k".repeat(16),
            name: "bot".to_owned(),
            role: Role::Agent,
            tenant: "default".to_owned(),
            created_at: chrono::Utc::now(),
            revoked_at: None,
        };
        let before = cache.lock().revocations;
        cache.forget(&key.id);
        cache.insert(&key.id, [0; 32], &key, Instant::now(), before);
        assert!(cache.lock().entries.is_empty());
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = KeyCache::new();
        for n in 0..CAPACITY + 10 {
            let key = ApiKey {
                id: format!("{n:016}"),
                name: format!("bot{n}"),
                role: Role::Agent,
                tenant: "default".to_owned(),
                created_at: chrono::Utc::now(),
                revoked_at: None,
            };
            cache.insert(&key.id, [0; 32], &key, Instant::now(), 0);
        }
        assert_eq!(cache.lock().entries.len(), CAPACITY);
        let stale = Instant::now() - FRESH_FOR;
        for entry in cache.lock().entries.values_mut() {
            entry.verified_at = stale;
        }
        let key = ApiKey {
            id: "z".repeat(16),
            name: "late".to_owned(),
            role: Role::Agent,
            tenant: "default".to_owned(),
            created_at: chrono::Utc::now(),
            revoked_at: None,
        };
        cache.insert(&key.id, [0; 32], &key, Instant::now(), 0);
        assert_eq!(
            cache.lock().entries.len(),
            1,
            "stale entries make room for a new key"
        );
    }
}
