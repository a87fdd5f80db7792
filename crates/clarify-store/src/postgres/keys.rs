//! API keys, login and session tokens, and server secrets.

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;

use super::feed::append_admin;
use super::{PgBackend, corrupt_row, db_err};
use crate::audit::{AdminEvent, AdminKind};
use crate::codec::millis;
use crate::error::StoreError;
use crate::keys::{ApiKey, KEY_COLUMNS, KeyParts, KeyRow, TokenKind};
use crate::record::Actor;

impl PgBackend {
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
        // No conflict target: the id and the active name both refuse quietly, so instances
        // inserting the same key at once wait on each other's row and all but one insert none.
        self.insert_key_unless(row, by, "ON CONFLICT DO NOTHING")
            .await
    }

    /// Inserts the key with its `key.created` event, unless `on_conflict` skips the row; whether
    /// it was inserted.
    async fn insert_key_unless(
        &self,
        row: KeyRow,
        by: &Actor,
        on_conflict: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let inserted = sqlx::query(&format!(
            "INSERT INTO clarify_keys ({KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             {on_conflict}"
        ))
        .bind(&row.key.id)
        .bind(&row.key.name)
        .bind(row.key.role.as_str())
        .bind(&row.key.tenant)
        .bind(&row.digest)
        .bind(millis(row.key.created_at))
        .bind(row.key.revoked_at.map(millis))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected();
        if inserted != 1 {
            tx.rollback().await.map_err(db_err)?;
            return Ok(false);
        }
        let event = AdminEvent::new(&row.key.tenant, AdminKind::KeyCreated, &row.key.id, by);
        append_admin(&mut tx, &event, row.key.created_at).await?;
        self.commit_events(tx).await?;
        Ok(true)
    }

    pub(crate) async fn key(&self, id: &str) -> Result<Option<KeyRow>, StoreError> {
        sqlx::query(&format!(
            "SELECT {KEY_COLUMNS} FROM clarify_keys WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?
        .map(|row| key_parts(&row)?.decode())
        .transpose()
    }

    pub(crate) async fn keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        sqlx::query(&format!(
            "SELECT {KEY_COLUMNS} FROM clarify_keys ORDER BY created_at, id"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?
        .iter()
        .map(|row| Ok(key_parts(row)?.decode()?.key))
        .collect()
    }

    pub(crate) async fn revoke_key(
        &self,
        name: &str,
        at: DateTime<Utc>,
        by: &Actor,
    ) -> Result<Option<ApiKey>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Of concurrent revocations, the first locks the row; the others then find it revoked.
        let row = sqlx::query(&format!(
            "UPDATE clarify_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL \
             RETURNING {KEY_COLUMNS}"
        ))
        .bind(name)
        .bind(millis(at))
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let Some(row) = row else {
            tx.rollback().await.map_err(db_err)?;
            return Ok(None);
        };
        let key = key_parts(&row)?.decode()?.key;
        // Its sessions and login links end with it, in the same transaction.
        sqlx::query("DELETE FROM clarify_tokens WHERE key_id = $1")
            .bind(&key.id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let event = AdminEvent::new(&key.tenant, AdminKind::KeyRevoked, &key.id, by);
        append_admin(&mut tx, &event, at).await?;
        self.commit_events(tx).await?;
        Ok(Some(key))
    }

    pub(crate) async fn key_count(&self) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM clarify_keys")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    pub(crate) async fn insert_token(
        &self,
        kind: TokenKind,
        digest: &str,
        key_id: &str,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        // Expired tokens can never be redeemed; issuing is rare enough to sweep them here. The
        // sweep and the insert are one statement, so no transaction is needed.
        sqlx::query(
            "WITH swept AS (DELETE FROM clarify_tokens WHERE expires_at <= $5) \
             INSERT INTO clarify_tokens (digest, kind, key_id, expires_at, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(digest)
        .bind(kind.as_str())
        .bind(key_id)
        .bind(millis(expires_at))
        .bind(millis(now))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn redeem_token(
        &self,
        kind: TokenKind,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        // A login token is used up by the statement that finds it: of concurrent redemptions
        // the first deletes the row, and the others, waiting on its lock, then find it gone.
        let sql = match kind {
            TokenKind::Login | TokenKind::Once => {
                "DELETE FROM clarify_tokens WHERE digest = $1 AND kind = $2 AND expires_at > $3 \
                 RETURNING key_id"
            }
            TokenKind::Session => {
                "SELECT key_id FROM clarify_tokens WHERE digest = $1 AND kind = $2 \
                 AND expires_at > $3"
            }
        };
        sqlx::query_scalar(sql)
            .bind(digest)
            .bind(kind.as_str())
            .bind(millis(now))
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)
    }

    pub(crate) async fn delete_token(&self, digest: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM clarify_tokens WHERE digest = $1")
            .bind(digest)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn secret(
        &self,
        name: &str,
        candidate: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        let select = "SELECT value FROM clarify_secrets WHERE name = $1";
        // Nearly always there already.
        let stored: Option<Vec<u8>> = sqlx::query_scalar(select)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        if let Some(value) = stored {
            return Ok(value);
        }
        let inserted: Option<Vec<u8>> = sqlx::query_scalar(
            "INSERT INTO clarify_secrets (name, value) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING RETURNING value",
        )
        .bind(name)
        .bind(&candidate)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        if let Some(value) = inserted {
            return Ok(value);
        }
        // Another instance inserted first. Its row may be newer than the snapshot the insert
        // ran in, so it is read by a statement of its own, which sees every committed row.
        sqlx::query_scalar(select)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or_else(|| StoreError::Backend(format!("secret {name:?} vanished")))
    }
}

impl PgBackend {
    pub(crate) async fn kept(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        sqlx::query_scalar("SELECT value FROM clarify_secrets WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)
    }

    pub(crate) async fn keep(&self, name: &str, value: Vec<u8>) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO clarify_secrets (name, value) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
        )
        .bind(name)
        .bind(value)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }
}

impl PgBackend {
    pub(crate) async fn kept_under(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        // `starts_with` rather than LIKE, whose `_` and `%` a prefix may hold.
        sqlx::query_as(
            "SELECT name, value FROM clarify_secrets WHERE starts_with(name, $1) ORDER BY name",
        )
        .bind(prefix)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)
    }

    pub(crate) async fn forget(&self, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM clarify_secrets WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(done.rows_affected() > 0)
    }
}

fn key_parts(row: &PgRow) -> Result<KeyParts, StoreError> {
    Ok(KeyParts {
        id: row.try_get("id").map_err(corrupt_row)?,
        name: row.try_get("name").map_err(corrupt_row)?,
        role: row.try_get("role").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        digest: row.try_get("digest").map_err(corrupt_row)?,
        created_at: row.try_get("created_at").map_err(corrupt_row)?,
        revoked_at: row.try_get("revoked_at").map_err(corrupt_row)?,
    })
}
