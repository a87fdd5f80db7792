//! Grants: recorded with the answer that gives them, listed, and revoked.

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::{PgConnection, PgRow};

use super::feed::{append_admin, append_events};
use super::{PgBackend, corrupt_row, db_err};
use crate::audit::{AdminEvent, AdminKind};
use crate::codec::millis;
use crate::error::StoreError;
use crate::grants::{GRANT_COLUMNS, GrantFilter, GrantParts, StoredGrant};
use crate::record::{Actor, EventKind};

impl PgBackend {
    pub(crate) async fn grants(
        &self,
        tenant: &str,
        filter: GrantFilter<'_>,
    ) -> Result<Vec<StoredGrant>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {GRANT_COLUMNS} FROM clarify_grants WHERE tenant = $1 \
             AND ($2::text IS NULL OR tool = $2) AND ($3::text IS NULL OR session = $3) \
             ORDER BY seq"
        ))
        .bind(tenant)
        .bind(filter.tool)
        .bind(filter.session)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(|row| grant_parts(row)?.decode()).collect()
    }

    pub(crate) async fn revoke_grant(
        &self,
        tenant: &str,
        id: &str,
        at: DateTime<Utc>,
        by: &Actor,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let row = sqlx::query(&format!(
            "DELETE FROM clarify_grants WHERE tenant = $1 AND id = $2 RETURNING {GRANT_COLUMNS}"
        ))
        .bind(tenant)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let Some(row) = row else {
            tx.rollback().await.map_err(db_err)?;
            return Ok(None);
        };
        let grant = grant_parts(&row)?.decode()?;
        let event = AdminEvent::new(tenant, AdminKind::GrantRevoked, &grant.id, by);
        append_admin(&mut tx, &event, at).await?;
        self.commit_events(tx).await?;
        Ok(Some(grant))
    }
}

impl PgBackend {
    /// Counts a use of grant `id` if it is still live at `now`: one conditional update, so of
    /// instances racing for a grant's last use the row lock lets one through and the others
    /// find the condition false when they re-check it.
    pub(crate) async fn use_grant(
        &self,
        tenant: &str,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let row = sqlx::query(&format!(
            "UPDATE clarify_grants SET uses = uses + 1 WHERE tenant = $1 AND id = $2 \
             AND (max_uses IS NULL OR uses < max_uses) \
             AND (expires_at IS NULL OR expires_at > $3) RETURNING {GRANT_COLUMNS}"
        ))
        .bind(tenant)
        .bind(id)
        .bind(millis(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        row.map(|row| grant_parts(&row)?.decode()).transpose()
    }
}

impl PgBackend {
    /// Records a grant a person gave by accepting a suggestion, with its event on `request_id`,
    /// in one transaction.
    pub(crate) async fn grant_suggested(
        &self,
        tenant: &str,
        request_id: &str,
        grant: &StoredGrant,
        actor: &Actor,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        insert_grants(&mut tx, tenant, std::slice::from_ref(grant)).await?;
        append_events(
            &mut tx,
            EventKind::GrantSuggestedAccepted,
            &[(tenant.to_owned(), request_id.to_owned())],
            actor.name.as_deref(),
            Some(&actor.channel),
            actor.principal.as_deref(),
            millis(at),
        )
        .await?;
        self.commit_events(tx).await
    }
}

/// Records the grants an answer gave, in its transaction; an equal grant already stored keeps
/// its id and takes the new answer's bounds, its uses counted afresh.
pub(super) async fn insert_grants(
    conn: &mut PgConnection,
    tenant: &str,
    grants: &[StoredGrant],
) -> Result<(), StoreError> {
    for g in grants {
        let digest = crate::codec::sha256_hex(&g.grant.arguments);
        sqlx::query(
            "INSERT INTO clarify_grants (tenant, tool, arguments, arguments_sha256, scope, \
             session, created_at, id, request_id, granted_by, expires_at, max_uses, uses) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 0) \
             ON CONFLICT (tenant, tool, arguments_sha256, scope, session) DO UPDATE SET \
             expires_at = excluded.expires_at, max_uses = excluded.max_uses, uses = 0",
        )
        .bind(tenant)
        .bind(&g.grant.tool)
        .bind(&g.grant.arguments)
        .bind(digest)
        .bind(g.grant.scope.as_str())
        .bind(g.grant.session.as_deref().unwrap_or(""))
        .bind(millis(g.created_at))
        .bind(&g.id)
        .bind(&g.request_id)
        .bind(&g.granted_by)
        .bind(g.expires_at.map(millis))
        .bind(g.max_uses.map(i64::from))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    }
    Ok(())
}

fn grant_parts(row: &PgRow) -> Result<GrantParts, StoreError> {
    Ok(GrantParts {
        id: row.try_get("id").map_err(corrupt_row)?,
        tool: row.try_get("tool").map_err(corrupt_row)?,
        arguments: row.try_get("arguments").map_err(corrupt_row)?,
        scope: row.try_get("scope").map_err(corrupt_row)?,
        session: row.try_get("session").map_err(corrupt_row)?,
        request_id: row.try_get("request_id").map_err(corrupt_row)?,
        granted_by: row.try_get("granted_by").map_err(corrupt_row)?,
        created_at: row.try_get("created_at").map_err(corrupt_row)?,
        expires_at: row.try_get("expires_at").map_err(corrupt_row)?,
        max_uses: row.try_get("max_uses").map_err(corrupt_row)?,
        uses: row.try_get("uses").map_err(corrupt_row)?,
    })
}
