//! Grants: recorded with the answer that gives them, listed, and revoked.

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::{PgConnection, PgRow};

use super::feed::append_admin;
use super::{PgBackend, corrupt_row, db_err};
use crate::audit::{AdminEvent, AdminKind};
use crate::codec::millis;
use crate::error::StoreError;
use crate::grant::{GRANT_COLUMNS, GrantFilter, GrantParts, StoredGrant};
use crate::record::Actor;

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

/// Records the grants an answer gave, in its transaction; an equal grant already stored is kept.
pub(super) async fn insert_grants(
    conn: &mut PgConnection,
    tenant: &str,
    grants: &[StoredGrant],
) -> Result<(), StoreError> {
    for g in grants {
        let digest = crate::codec::sha256_hex(&g.grant.arguments);
        sqlx::query(
            "INSERT INTO clarify_grants (tenant, tool, arguments, arguments_sha256, scope, \
             session, created_at, id, request_id, granted_by) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
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
    })
}
