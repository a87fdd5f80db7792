//! Who may use a store: API keys, login, session and single-use tokens, server secrets, and
//! the values the server keeps (a chat channel's conversation).
//!
//! Secrets never rest in the store in the clear: keys and tokens are kept as SHA-256 digests
//! (they are long random strings, so a fast digest suffices) and compared in constant time.
//! Server secrets (for signing answer links and webhooks) are random bytes created on first use;
//! every instance sharing the store reads the same ones.
//!
//! Beside them, each kept as named values with an admin event of the audit chain per change:
//! passkeys ([`passkeys`]), chat accounts linked to people ([`identity`]) and the receipts'
//! signing keys ([`receipts`]). Each backend keeps the same concern in its `keys.rs`.

pub(crate) mod identity;
pub(crate) mod passkeys;
mod receipts;

use std::fmt;

use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::Serialize;
use subtle::ConstantTimeEq;

use crate::Store;
use crate::codec::from_millis;
use crate::error::StoreError;

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Create, read, wait for and cancel requests.
    Agent,
    /// Read and answer requests.
    Responder,
    /// Everything, including key management.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Agent, Role::Responder, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Responder => "responder",
            Self::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether this role may create, wait for and cancel requests.
    pub fn may_ask(self) -> bool {
        matches!(self, Self::Agent | Self::Admin)
    }

    /// Whether this role may answer requests.
    pub fn may_answer(self) -> bool {
        matches!(self, Self::Responder | Self::Admin)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API key as stored: everything but the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiKey {
    /// Public part of the key, also its primary key in the store.
    pub id: String,
    /// Unique among active keys; recorded as `answered_by`.
    pub name: String,
    pub role: Role,
    pub tenant: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A key just created: the only time its secret is known.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub key: ApiKey,
    /// `ck_<id>_<secret>`: what a client sends as `Authorization: Bearer ...`.
    pub token: String,
}

/// Why a key could not be created or revoked.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{what} {value:?} is not allowed: use 1 to 64 letters, digits, '.', '_', '-' or '@'")]
    InvalidName { what: &'static str, value: String },
    #[error("an active key named {0:?} already exists; revoke it first or pick another name")]
    NameTaken(String),
    #[error("no active key is named {0:?}")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why the admin key given at start could not be stored: each message reads after the name of
/// the file that holds the key.
#[derive(Debug, thiserror::Error)]
pub enum AdminKeyError {
    #[error(
        "is not a clarify key: expected ck_ followed by 16 and 32 characters of 0-9 a-z \
         (as `clarify keys generate` prints)"
    )]
    Malformed,
    #[error("holds a key whose id {0:?} another key has, with a different secret")]
    IdTaken(String),
    #[error("names the {role} key {name:?}, not an admin key")]
    NotAdmin { role: Role, name: String },
    #[error("cannot be stored: active keys hold both the names admin and {0:?}")]
    NamesTaken(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What [`Store::ensure_admin_key`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ensured {
    /// The key was stored now, with its `key.created` event.
    Created(ApiKey),
    /// The key was already stored (by an earlier start or another instance).
    Present(ApiKey),
    /// The key was stored and later revoked; it stays revoked.
    Revoked(ApiKey),
}

/// What a token stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// A one-time inbox login link: redeemed once, then dead.
    Login,
    /// An inbox session (the cookie): valid until it expires or is revoked.
    Session,
    /// A single-use handle an edge hands out and takes back once (the nonce sealed into an MCP
    /// `requestState`): redeemed once, like a login token, by whoever holds it.
    Once,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Login => "login",
            Self::Session => "session",
            Self::Once => "once",
        }
    }
}

/// How long a login link stays valid.
pub const LOGIN_TTL: chrono::TimeDelta = chrono::TimeDelta::hours(24);

impl Store {
    /// Creates a key, recording `key.created` by `by` in the audit chain in the same
    /// transaction. The returned token is the only copy of its secret.
    pub async fn create_key(
        &self,
        name: &str,
        role: Role,
        tenant: &str,
        by: &crate::Actor,
    ) -> Result<NewKey, KeyError> {
        check_name("key name", name)?;
        check_name("tenant", tenant)?;
        let (id, token) = new_key_token();
        let key = ApiKey {
            id,
            name: name.to_owned(),
            role,
            tenant: tenant.to_owned(),
            created_at: self.now(),
            revoked_at: None,
        };
        let row = KeyRow {
            key: key.clone(),
            digest: digest(&token),
        };
        if !self.inner.backend.insert_key(row, by).await? {
            return Err(KeyError::NameTaken(name.to_owned()));
        }
        Ok(NewKey { key, token })
    }

    /// Makes sure the admin key `token` (as [`generate_key`] makes one) is stored in the tenant
    /// `default`: stored with its `key.created` event by the system when absent, left as it is
    /// when present. Idempotent, also when several instances call it at once: the key's id and
    /// digest come from the token, and one insert of them wins. Its name is `admin`, or
    /// `admin-<id>` when an active key already holds that name. A key revoked since stays
    /// revoked ([`Ensured::Revoked`]).
    pub async fn ensure_admin_key(&self, token: &str) -> Result<Ensured, AdminKeyError> {
        let id = parse_key(token).ok_or(AdminKeyError::Malformed)?;
        let digest = digest(token);
        let found = |row: KeyRow| {
            if !digests_match(&row.digest, &digest) {
                return Err(AdminKeyError::IdTaken(row.key.id));
            }
            if row.key.role != Role::Admin {
                return Err(AdminKeyError::NotAdmin {
                    role: row.key.role,
                    name: row.key.name,
                });
            }
            Ok(match row.key.revoked_at {
                Some(_) => Ensured::Revoked(row.key),
                None => Ensured::Present(row.key),
            })
        };
        if let Some(row) = self.inner.backend.key(id).await? {
            return found(row);
        }
        for name in ["admin".to_owned(), format!("admin-{id}")] {
            let key = ApiKey {
                id: id.to_owned(),
                name,
                role: Role::Admin,
                tenant: "default".to_owned(),
                created_at: self.now(),
                revoked_at: None,
            };
            let row = KeyRow {
                key: key.clone(),
                digest: digest.clone(),
            };
            if self
                .inner
                .backend
                .insert_key_once(row, &crate::Actor::system())
                .await?
            {
                return Ok(Ensured::Created(key));
            }
            // Another instance stored it first, or the name is held by another key.
            if let Some(row) = self.inner.backend.key(id).await? {
                return found(row);
            }
        }
        Err(AdminKeyError::NamesTaken(format!("admin-{id}")))
    }

    /// The active key `token` belongs to, if any.
    pub async fn authenticate(&self, token: &str) -> Result<Option<ApiKey>, StoreError> {
        let Some(id) = key_id_of(token) else {
            return Ok(None);
        };
        let Some(row) = self.inner.backend.key(id).await? else {
            return Ok(None);
        };
        let matches = digests_match(&row.digest, &digest(token));
        Ok((matches && row.key.revoked_at.is_none()).then_some(row.key))
    }

    /// The active key with this id.
    pub async fn key(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        Ok(self
            .inner
            .backend
            .key(id)
            .await?
            .map(|row| row.key)
            .filter(|k| k.revoked_at.is_none()))
    }

    /// Every key, revoked ones included, oldest first.
    pub async fn keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        self.inner.backend.keys().await
    }

    /// Revokes the active key named `name`: every later [`Store::authenticate`] refuses it, on
    /// every instance (a server that caches verified keys refuses it within its cache's time).
    /// `key.revoked` by `by` is recorded in the audit chain in the same transaction.
    pub async fn revoke_key(&self, name: &str, by: &crate::Actor) -> Result<ApiKey, KeyError> {
        self.inner
            .backend
            .revoke_key(name, self.now(), by)
            .await?
            .ok_or_else(|| KeyError::NotFound(name.to_owned()))
    }

    /// Whether any key, even a revoked one, was ever created.
    pub async fn has_keys(&self) -> Result<bool, StoreError> {
        Ok(self.inner.backend.key_count().await? > 0)
    }

    /// Issues a login or session token for the key `key_id`, valid for `ttl`.
    pub async fn issue_token(
        &self,
        kind: TokenKind,
        key_id: &str,
        ttl: chrono::TimeDelta,
    ) -> Result<String, StoreError> {
        let token = new_token();
        let now = self.now();
        self.inner
            .backend
            .insert_token(kind, &digest(&token), key_id, now + ttl, now)
            .await?;
        Ok(token)
    }

    /// The active key a token stands for. A login token works once; a session token until it
    /// expires or is revoked.
    pub async fn redeem_token(
        &self,
        kind: TokenKind,
        token: &str,
    ) -> Result<Option<ApiKey>, StoreError> {
        if !token.starts_with("ct_") {
            return Ok(None);
        }
        let key_id = self
            .inner
            .backend
            .redeem_token(kind, &digest(token), self.now())
            .await?;
        match key_id {
            Some(id) => self.key(&id).await,
            None => Ok(None),
        }
    }

    /// What a session token stands for, as its issuer wrote it: the key id of a session opened
    /// with a key, or whatever else an edge chose to hold (a person signed in another way).
    /// Valid until it expires or is revoked.
    pub async fn session_holder(&self, token: &str) -> Result<Option<String>, StoreError> {
        if !token.starts_with("ct_") {
            return Ok(None);
        }
        self.inner
            .backend
            .redeem_token(TokenKind::Session, &digest(token), self.now())
            .await
    }

    /// Issues a single-use token held by `holder` (a key id, or any name the caller chooses),
    /// valid for `ttl`. Revoking the key `holder` names ends its tokens too.
    pub async fn issue_once(
        &self,
        holder: &str,
        ttl: chrono::TimeDelta,
    ) -> Result<String, StoreError> {
        self.issue_token(TokenKind::Once, holder, ttl).await
    }

    /// Uses up a token from [`Store::issue_once`]: its holder the first time, on every instance
    /// sharing the store; `None` when it is unknown, expired or already used.
    pub async fn redeem_once(&self, token: &str) -> Result<Option<String>, StoreError> {
        if !token.starts_with("ct_") {
            return Ok(None);
        }
        self.inner
            .backend
            .redeem_token(TokenKind::Once, &digest(token), self.now())
            .await
    }

    /// Ends a session (logout). Unknown tokens are ignored.
    pub async fn revoke_token(&self, token: &str) -> Result<(), StoreError> {
        self.inner.backend.delete_token(&digest(token)).await
    }

    /// The server secret called `name`, created on first use and shared by every instance.
    pub async fn secret(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        self.inner.backend.secret(name, random_secret()).await
    }

    /// The value the server kept as `name` (a chat channel's conversation, captured when its
    /// bot was added to one), shared by every instance; `None` until one is kept.
    pub async fn kept(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.backend.kept(&format!("kept:{name}")).await
    }

    /// Keeps `value` as `name`, replacing what was kept before.
    pub async fn keep(&self, name: &str, value: Vec<u8>) -> Result<(), StoreError> {
        self.inner
            .backend
            .keep(&format!("kept:{name}"), value)
            .await
    }

    /// Every value kept under a name starting with `prefix`, as (name without `kept:`, value).
    pub(crate) async fn kept_under(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let found = self
            .inner
            .backend
            .kept_under(&format!("kept:{prefix}"))
            .await?;
        Ok(found
            .into_iter()
            .map(|(name, value)| (name.trim_start_matches("kept:").to_owned(), value))
            .collect())
    }

    /// Forgets the value kept as `name`; whether there was one.
    pub(crate) async fn forget(&self, name: &str) -> Result<bool, StoreError> {
        self.inner.backend.forget(&format!("kept:{name}")).await
    }
}

/// A key or tenant name: 1 to 64 of `[A-Za-z0-9._@-]`.
pub(crate) fn check_name(what: &'static str, value: &str) -> Result<(), KeyError> {
    let ok = (1..=64).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@'));
    if ok {
        Ok(())
    } else {
        Err(KeyError::InvalidName {
            what,
            value: value.to_owned(),
        })
    }
}

/// `chars` random lowercase base32 characters (5 random bits each).
pub(crate) fn random_string(chars: usize) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut bytes = vec![0u8; chars];
    rand::rng().fill_bytes(&mut bytes);
    bytes
        .iter()
        .map(|b| ALPHABET[usize::from(b & 31)] as char)
        .collect()
}

/// 32 random bytes, for a new server secret.
pub(crate) fn random_secret() -> Vec<u8> {
    let mut bytes = vec![0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

/// The stored form of a key or token secret.
pub(crate) fn digest(secret: &str) -> String {
    crate::codec::sha256_hex(secret)
}

/// Constant-time equality of two digests.
pub(crate) fn digests_match(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// A new key's id and full token. The id is public (it names the key in logs and lookups);
/// the secret part carries 160 random bits.
pub(crate) fn new_key_token() -> (String, String) {
    let id = random_string(16);
    let token = format!("ck_{id}_{}", random_string(32));
    (id, token)
}

/// A fresh key token in clarify's format (`ck_<id>_<secret>`), stored nowhere: `clarify keys
/// generate` prints it for an operator to hand to [`Store::ensure_admin_key`] at start.
pub fn generate_key() -> String {
    new_key_token().1
}

/// The id of `token` when it is exactly what [`new_key_token`] makes: `ck_`, 16 characters,
/// `_`, 32 characters, all of the base32 alphabet.
pub(crate) fn parse_key(token: &str) -> Option<&str> {
    let rest = token.strip_prefix("ck_")?;
    let (id, secret) = rest.split_once('_')?;
    let base32 = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b"0123456789abcdefghjkmnpqrstvwxyz".contains(&b))
    };
    (base32(id, 16) && base32(secret, 32)).then_some(id)
}

/// The id part of a key token, if it has the key shape.
pub(crate) fn key_id_of(token: &str) -> Option<&str> {
    let rest = token.strip_prefix("ck_")?;
    let (id, secret) = rest.split_once('_')?;
    (id.len() == 16 && !secret.is_empty()).then_some(id)
}

/// A new login or session token (160 random bits).
pub(crate) fn new_token() -> String {
    format!("ct_{}", random_string(32))
}

/// A key row as the backends keep it.
#[derive(Debug, Clone)]
pub(crate) struct KeyRow {
    pub key: ApiKey,
    pub digest: String,
}

/// A key row as read from SQL.
#[derive(Debug)]
pub(crate) struct KeyParts {
    pub id: String,
    pub name: String,
    pub role: String,
    pub tenant: String,
    pub digest: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// The columns of [`KeyParts`], in order, for SELECT and RETURNING lists.
pub(crate) const KEY_COLUMNS: &str = "id, name, role, tenant, digest, created_at, revoked_at";

impl KeyParts {
    pub(crate) fn decode(self) -> Result<KeyRow, StoreError> {
        let id = self.id;
        let corrupt = |what: String| StoreError::Corrupt(format!("key {id}: {what}"));
        let role = Role::parse(&self.role)
            .ok_or_else(|| corrupt(format!("{:?} is not a role", self.role)))?;
        let created_at = from_millis(self.created_at)
            .ok_or_else(|| corrupt(format!("time {} out of range", self.created_at)))?;
        let revoked_at = match self.revoked_at {
            None => None,
            Some(ms) => {
                Some(from_millis(ms).ok_or_else(|| corrupt(format!("time {ms} out of range")))?)
            }
        };
        Ok(KeyRow {
            key: ApiKey {
                id,
                name: self.name,
                role,
                tenant: self.tenant,
                created_at,
                revoked_at,
            },
            digest: self.digest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_tokens_carry_their_id() {
        let (id, token) = new_key_token();
        assert_eq!(key_id_of(&token), Some(id.as_str()));
        assert_eq!(key_id_of("ck_short_x"), None);
        assert_eq!(key_id_of("Bearer whatever"), None);
        assert_ne!(new_key_token().1, token);
    }

    #[test]
    fn generated_keys_parse_and_nothing_else_does() {
        let token = generate_key();
        assert_eq!(parse_key(&token), key_id_of(&token));
        assert!(parse_key(&token).is_some());
        for bad in [
            "",
            "ck_short_x",
            &token.to_uppercase(),
            &format!("{token}\n"),
            &format!("{token}x"),
            &token.replace("ck_", "ct_"),
            &format!("{}i", &token[..token.len() - 1]),
        ] {
            assert_eq!(parse_key(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("name", "ci-bot@example.com").is_ok());
        assert!(check_name("name", "").is_err());
        assert!(check_name("name", "has space").is_err());
        assert!(check_name("name", &"x".repeat(65)).is_err());
    }

    #[test]
    fn digests_compare_exactly() {
        let d = digest("ck_a");
        assert!(digests_match(&d, &digest("ck_a")));
        assert!(!digests_match(&d, &digest("ck_b")));
        assert!(!digests_match(&d, "short"));
    }
}
