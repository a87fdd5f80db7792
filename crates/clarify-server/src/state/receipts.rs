//! The keys this instance signs receipts with and publishes at `/.well-known/jwks.json`.
//!
//! The keys live in the store (or the signing key comes from `[receipts] signing_key`), so
//! every instance signs with the same one; each instance reads them at start and again every
//! [`RELOAD`], so a rotation made elsewhere (`clarify receipts rotate`) is picked up without a
//! restart. A receipt is made from the stored record alone ([`ReceiptClaims::of`]) and Ed25519
//! signatures are deterministic, so it is made when a record is rendered, not stored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use clarify_core::Outcome;
use clarify_model::receipt::{ReceiptClaims, ReceiptError, ReceiptKey, verify};
use clarify_store::{RequestRecord, Store, StoreError};
use jsonwebtoken::jwk::JwkSet;

/// How often the keys are read again from the store.
pub const RELOAD: Duration = Duration::from_secs(30);

/// How many receipts [`Receipts::sign`] remembers. A round trip renders a resolved record at
/// least twice (the answer's response, the waiting agent's), so remembering the last few
/// thousand saves most signatures; the map is emptied when full, which is cheaper than keeping
/// an order and costs one signature per entry at worst.
const REMEMBERED: usize = 4_096;

/// `[receipts]`.
#[derive(Debug, Clone)]
pub struct ReceiptsConfig {
    /// The Ed25519 seed (32 bytes) that signs, from `signing_key`, `_env` or `_file`; `None`:
    /// the key kept in the store.
    pub signing_key: Option<[u8; 32]>,
    /// How long a retired key stays published after the key that replaced it was made.
    pub retired_published_for: TimeDelta,
}

impl Default for ReceiptsConfig {
    fn default() -> Self {
        Self {
            signing_key: None,
            retired_published_for: TimeDelta::days(365),
        }
    }
}

/// The signing key and the published set, swapped whole on each reload.
#[derive(Debug)]
pub struct Receipts {
    issuer: String,
    config: ReceiptsConfig,
    keys: RwLock<Arc<Keys>>,
    /// Receipts made lately, by `jti` and the key's `kid`.
    made: Mutex<HashMap<(String, String), String>>,
}

#[derive(Debug)]
struct Keys {
    signing: ReceiptKey,
    /// The signing key and every retired key still inside its window.
    published: JwkSet,
}

impl Receipts {
    /// Reads the keys from the store (making the first on first use).
    pub async fn load(
        store: &Store,
        issuer: &str,
        config: ReceiptsConfig,
    ) -> Result<Self, StoreError> {
        let keys = Self::read(store, &config).await?;
        Ok(Self {
            issuer: issuer.to_owned(),
            config,
            keys: RwLock::new(Arc::new(keys)),
            made: Mutex::new(HashMap::new()),
        })
    }

    /// Reads the keys again (after a rotation made by another process).
    pub async fn reload(&self, store: &Store) -> Result<(), StoreError> {
        let keys = Self::read(store, &self.config).await?;
        if let Ok(mut slot) = self.keys.write() {
            *slot = Arc::new(keys);
        }
        Ok(())
    }

    async fn read(store: &Store, config: &ReceiptsConfig) -> Result<Keys, StoreError> {
        let stored = store.receipt_keys().await?;
        let now = store.now();
        let corrupt = |e: ReceiptError| StoreError::Corrupt(e.to_string());
        let configured = config
            .signing_key
            .map(|seed| ReceiptKey::from_seed(&seed, now, None))
            .transpose()
            .map_err(corrupt)?;
        let in_window = |retired: Option<DateTime<Utc>>| {
            retired.is_none_or(|at| at + config.retired_published_for > now)
        };
        let mut published: Vec<jsonwebtoken::jwk::Jwk> = Vec::new();
        if let Some(key) = &configured {
            published.push(key.jwk().clone());
        }
        // With a configured key the stored ones only verify what they signed before.
        for key in stored.iter().rev() {
            let retired = if configured.is_some() {
                key.retired_at.or(Some(now))
            } else {
                key.retired_at
            };
            if in_window(retired)
                && !published
                    .iter()
                    .any(|j| j.common.key_id.as_deref() == Some(key.kid()))
            {
                published.push(key.jwk().clone());
            }
        }
        let signing = match configured {
            Some(key) => key,
            None => stored
                .last()
                .cloned()
                .ok_or_else(|| StoreError::Corrupt("no receipt signing key".to_owned()))?,
        };
        Ok(Keys {
            signing,
            published: JwkSet { keys: published },
        })
    }

    fn keys(&self) -> Arc<Keys> {
        match self.keys.read() {
            Ok(keys) => Arc::clone(&keys),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// `record`'s receipt: `None` while it is pending or before the audit chain has numbered
    /// its resolution.
    pub fn sign(&self, record: &RequestRecord) -> Option<String> {
        self.sign_outcome(record, &record.outcome()?)
    }

    /// [`Receipts::sign`], given `record`'s outcome where the caller has it already.
    pub fn sign_outcome(&self, record: &RequestRecord, outcome: &Outcome) -> Option<String> {
        let claims = ReceiptClaims::of_outcome(record, outcome, &self.issuer)?;
        let keys = self.keys();
        let key = (claims.jti.clone(), keys.signing.kid().to_owned());
        let remembered = self
            .made
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if remembered.is_some() {
            return remembered;
        }
        match keys.signing.sign(&claims) {
            Ok(receipt) => {
                let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
                if made.len() >= REMEMBERED {
                    made.clear();
                }
                made.insert(key, receipt.clone());
                Some(receipt)
            }
            Err(e) => {
                tracing::error!(id = %record.id, error = %e, "a receipt could not be signed");
                None
            }
        }
    }

    /// The published keys (`/.well-known/jwks.json`).
    pub fn jwks(&self) -> JwkSet {
        self.keys().published.clone()
    }

    /// The kid of the key that signs now.
    pub fn signing_kid(&self) -> String {
        self.keys().signing.kid().to_owned()
    }

    /// Checks a receipt against the published keys.
    pub fn verify(&self, receipt: &str) -> Result<ReceiptClaims, ReceiptError> {
        verify(receipt, &self.keys().published)
    }
}
