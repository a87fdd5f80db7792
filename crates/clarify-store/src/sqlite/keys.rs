//! API keys, login and session tokens, and server secrets.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteBackend;
use super::feed::append_admin;
use crate::audit::{AdminEvent, AdminKind};
use crate::codec::millis;
use crate::error::StoreError;
use crate::keys::{ApiKey, KEY_COLUMNS, KeyParts, KeyRow, TokenKind};
use crate::record::Actor;

impl SqliteBackend {
    pub(crate) async fn insert_key(&self, row: KeyRow, by: &Actor) -> Result<bool, StoreError> {
        // Only the active-name index may refuse quietly; any other conflict is an error.
        self.insert_key_unless(
            row,
            by,
            "ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING",
        )
        .await
    }

    pub(crate) async fn insert_key_once(
        &self,
        row: KeyRow,
        by: &Actor,
    ) -> Result<bool, StoreError> {
        // No conflict target: the id and the active name both refuse quietly.
        self.insert_key_unless(row, by, "ON CONFLICT DO NOTHING")
            .await
    }

    /// Inserts the key with its `key.created` event, unless `on_conflict` skips the row; whether
    /// it was inserted.
    async fn insert_key_unless(
        &self,
        row: KeyRow,
        by: &Actor,
        on_conflict: &'static str,
    ) -> Result<bool, StoreError> {
        let event = AdminEvent::new(&row.key.tenant, AdminKind::KeyCreated, &row.key.id, by);
        self.write(move |conn| {
            let inserted = conn
                .prepare_cached(&format!(
                    "INSERT INTO keys ({KEY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                     {on_conflict}"
                ))?
                .execute(params![
                    row.key.id,
                    row.key.name,
                    row.key.role.as_str(),
                    row.key.tenant,
                    row.digest,
                    millis(row.key.created_at),
                    row.key.revoked_at.map(millis),
                ])?;
            if inserted == 1 {
                append_admin(conn, &event, row.key.created_at)?;
            }
            Ok(inserted == 1)
        })
        .await
    }

    pub(crate) async fn key(&self, id: &str) -> Result<Option<KeyRow>, StoreError> {
        self.read(|conn| {
            conn.prepare_cached(&format!("SELECT {KEY_COLUMNS} FROM keys WHERE id = ?1"))?
                .query_row(params![id], key_parts)
                .optional()?
                .map(KeyParts::decode)
                .transpose()
        })
    }

    pub(crate) async fn keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {KEY_COLUMNS} FROM keys ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map([], key_parts)?;
            rows.map(|row| Ok(row?.decode()?.key)).collect()
        })
    }

    pub(crate) async fn revoke_key(
        &self,
        name: &str,
        at: DateTime<Utc>,
        by: &Actor,
    ) -> Result<Option<ApiKey>, StoreError> {
        let (name, by) = (name.to_owned(), by.clone());
        self.write(move |conn| {
            let revoked = conn
                .prepare_cached(&format!(
                    "UPDATE keys SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL \
                     RETURNING {KEY_COLUMNS}"
                ))?
                .query_row(params![name, millis(at)], key_parts)
                .optional()?;
            let Some(parts) = revoked else {
                return Ok(None);
            };
            // Its sessions and login links end with it, in the same transaction.
            conn.prepare_cached("DELETE FROM tokens WHERE key_id = ?1")?
                .execute(params![parts.id])?;
            let key = parts.decode()?.key;
            let event = AdminEvent::new(&key.tenant, AdminKind::KeyRevoked, &key.id, &by);
            append_admin(conn, &event, at)?;
            Ok(Some(key))
        })
        .await
    }

    pub(crate) async fn key_count(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            let n: i64 = conn
                .prepare_cached("SELECT count(*) FROM keys")?
                .query_row([], |r| r.get(0))?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    pub(crate) async fn insert_token(
        &self,
        kind: TokenKind,
        digest: &str,
        key_id: &str,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let (digest, key_id) = (digest.to_owned(), key_id.to_owned());
        self.write(move |conn| {
            // Expired tokens can never be redeemed; issuing is rare enough to sweep them here.
            conn.prepare_cached("DELETE FROM tokens WHERE expires_at <= ?1")?
                .execute(params![millis(now)])?;
            conn.prepare_cached(
                "INSERT INTO tokens (digest, kind, key_id, expires_at, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                digest,
                kind.as_str(),
                key_id,
                millis(expires_at),
                millis(now)
            ])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn redeem_token(
        &self,
        kind: TokenKind,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        let now = millis(now);
        match kind {
            // Used up by the statement that finds it: of concurrent redemptions, the first
            // write to run deletes the row and the others find nothing.
            TokenKind::Login | TokenKind::Once => {
                let digest = digest.to_owned();
                self.write(move |conn| {
                    Ok(conn
                        .prepare_cached(
                            "DELETE FROM tokens WHERE digest = ?1 AND kind = ?2 \
                             AND expires_at > ?3 RETURNING key_id",
                        )?
                        .query_row(params![digest, kind.as_str(), now], |r| r.get(0))
                        .optional()?)
                })
                .await
            }
            TokenKind::Session => self.read(|conn| {
                Ok(conn
                    .prepare_cached(
                        "SELECT key_id FROM tokens WHERE digest = ?1 AND kind = ?2 \
                         AND expires_at > ?3",
                    )?
                    .query_row(params![digest, kind.as_str(), now], |r| r.get(0))
                    .optional()?)
            }),
        }
    }

    pub(crate) async fn delete_token(&self, digest: &str) -> Result<(), StoreError> {
        let digest = digest.to_owned();
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM tokens WHERE digest = ?1")?
                .execute(params![digest])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn secret(
        &self,
        name: &str,
        candidate: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        // Nearly always there already: a read then, with no write to queue for.
        let stored = self.read(|conn| read_secret(conn, name))?;
        if let Some(value) = stored {
            return Ok(value);
        }
        let name = name.to_owned();
        self.write(move |conn| {
            // Whoever inserts first wins; everyone, this writer included, reads the winner.
            conn.prepare_cached(
                "INSERT INTO secrets (name, value) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            )?
            .execute(params![name, candidate])?;
            read_secret(conn, &name)?
                .ok_or_else(|| StoreError::Backend(format!("secret {name:?} vanished")))
        })
        .await
    }
}

impl SqliteBackend {
    pub(crate) async fn kept(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.read(|conn| read_secret(conn, name))
    }

    pub(crate) async fn keep(&self, name: &str, value: Vec<u8>) -> Result<(), StoreError> {
        let name = name.to_owned();
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO secrets (name, value) VALUES (?1, ?2) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![name, value])?;
            Ok(())
        })
        .await
    }
}

impl SqliteBackend {
    pub(crate) async fn kept_under(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        // `substr` rather than LIKE, whose `_` and `%` a prefix may hold.
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT name, value FROM secrets \
                 WHERE substr(name, 1, length(?1)) = ?1 ORDER BY name",
            )?;
            let rows = statement
                .query_map(params![prefix], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub(crate) async fn forget(&self, name: &str) -> Result<bool, StoreError> {
        let name = name.to_owned();
        self.write(move |conn| {
            Ok(conn
                .prepare_cached("DELETE FROM secrets WHERE name = ?1")?
                .execute(params![name])?
                > 0)
        })
        .await
    }
}

pub(super) fn read_secret(conn: &Connection, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT value FROM secrets WHERE name = ?1")?
        .query_row(params![name], |r| r.get(0))
        .optional()?)
}

fn key_parts(row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyParts> {
    Ok(KeyParts {
        id: row.get(0)?,
        name: row.get(1)?,
        role: row.get(2)?,
        tenant: row.get(3)?,
        digest: row.get(4)?,
        created_at: row.get(5)?,
        revoked_at: row.get(6)?,
    })
}
