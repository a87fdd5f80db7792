//! The receipts' signing keys, kept beside the server's other secrets so that every instance
//! signs with the same one, and the record of spent receipts.
//!
//! The first key is made on first use through [`Store::secret`], whose insert-if-absent lets
//! two instances starting at once agree on it. A rotation (`clarify receipts rotate`, rare and
//! made by an operator) appends a key to a kept list; the key before it is retired at that
//! moment and stays published until its window ends (the server decides the window).

use chrono::{DateTime, Utc};
use clarify_model::receipt::{ReceiptError, ReceiptKey};
use serde::{Deserialize, Serialize};

use crate::Store;
use crate::audit::{AdminEvent, AdminKind};
use crate::error::StoreError;
use crate::keys::random_secret;
use crate::record::Actor;

/// The secret whose 32 bytes are the first key's seed.
const FIRST_KEY: &str = "receipts.signing_key";
/// The kept list of the keys made by rotations, oldest first.
const ROTATED_KEYS: &str = "receipts.rotated_keys";

/// A key made by a rotation, as kept.
#[derive(Debug, Serialize, Deserialize)]
struct KeptKey {
    /// The Ed25519 seed, base64url.
    seed: String,
    created_at: DateTime<Utc>,
}

impl Store {
    /// Every receipt signing key, oldest first: the last signs, the others are retired (each
    /// when the next was made).
    pub async fn receipt_keys(&self) -> Result<Vec<ReceiptKey>, StoreError> {
        let first = self.secret(FIRST_KEY).await?;
        let rotated = self.rotated_keys().await?;
        let mut seeds: Vec<([u8; 32], DateTime<Utc>)> = Vec::with_capacity(rotated.len() + 1);
        seeds.push((seed(&first)?, DateTime::<Utc>::UNIX_EPOCH));
        for kept in &rotated {
            seeds.push((decode_seed(&kept.seed)?, kept.created_at));
        }
        let mut keys = Vec::with_capacity(seeds.len());
        for (n, (seed, created_at)) in seeds.iter().enumerate() {
            let retired_at = seeds.get(n + 1).map(|(_, next)| *next);
            keys.push(ReceiptKey::from_seed(seed, *created_at, retired_at).map_err(corrupt)?);
        }
        Ok(keys)
    }

    /// Makes a new signing key, which signs from now on (on every instance once it reads the
    /// keys again); the one before is retired now. Returns the new key.
    pub async fn rotate_receipt_key(&self) -> Result<ReceiptKey, StoreError> {
        // The first key exists before any rotation, so the order of keys is well defined.
        self.secret(FIRST_KEY).await?;
        let mut rotated = self.rotated_keys().await?;
        let fresh = seed(&random_secret())?;
        let now = self.now();
        rotated.push(KeptKey {
            seed: base64url(&fresh),
            created_at: now,
        });
        let text = serde_json::to_vec(&rotated).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.keep(ROTATED_KEYS, text).await?;
        ReceiptKey::from_seed(&fresh, now, None).map_err(corrupt)
    }

    /// Spends the receipt `jti` (of request `request_id` in `tenant`) for `by`: `true` the first
    /// time on any instance sharing the store, `false` after. The spend is in the audit chain.
    pub async fn spend_receipt(
        &self,
        tenant: &str,
        jti: &str,
        request_id: &str,
        by: &Actor,
    ) -> Result<bool, StoreError> {
        let event = AdminEvent::new(tenant, AdminKind::ReceiptSpent, jti, by);
        self.inner
            .backend
            .spend_receipt(jti, request_id, event, self.now())
            .await
    }

    async fn rotated_keys(&self) -> Result<Vec<KeptKey>, StoreError> {
        match self.kept(ROTATED_KEYS).await? {
            None => Ok(Vec::new()),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| StoreError::Corrupt(format!("{ROTATED_KEYS}: {e}"))),
        }
    }
}

fn seed(bytes: &[u8]) -> Result<[u8; 32], StoreError> {
    bytes
        .get(..32)
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| StoreError::Corrupt(format!("{FIRST_KEY}: fewer than 32 bytes")))
}

fn decode_seed(text: &str) -> Result<[u8; 32], StoreError> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|e| StoreError::Corrupt(format!("{ROTATED_KEYS}: {e}")))?;
    seed(&bytes)
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn corrupt(e: ReceiptError) -> StoreError {
    StoreError::Corrupt(format!("a receipt signing key: {e}"))
}
