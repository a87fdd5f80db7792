//! Grants: recorded with the answer that gives them, listed, and revoked.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteBackend;
use super::feed::{append_admin, append_event};
use crate::audit::{AdminEvent, AdminKind};
use crate::codec::millis;
use crate::error::StoreError;
use crate::grants::{GRANT_COLUMNS, GrantFilter, GrantParts, StoredGrant};
use crate::record::{Actor, EventKind};

impl SqliteBackend {
    pub(crate) async fn grants(
        &self,
        tenant: &str,
        filter: GrantFilter<'_>,
    ) -> Result<Vec<StoredGrant>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {GRANT_COLUMNS} FROM grants WHERE tenant = ?1 \
                 AND (?2 IS NULL OR tool = ?2) AND (?3 IS NULL OR session = ?3) \
                 ORDER BY seq, created_at, id"
            ))?;
            let rows = stmt.query_map(params![tenant, filter.tool, filter.session], grant_parts)?;
            rows.map(|row| row?.decode()).collect()
        })
    }

    pub(crate) async fn revoke_grant(
        &self,
        tenant: &str,
        id: &str,
        at: DateTime<Utc>,
        by: &Actor,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let (tenant, id, by) = (tenant.to_owned(), id.to_owned(), by.clone());
        self.write(move |conn| {
            let parts = conn
                .prepare_cached(&format!(
                    "DELETE FROM grants WHERE tenant = ?1 AND id = ?2 RETURNING {GRANT_COLUMNS}"
                ))?
                .query_row(params![tenant, id], grant_parts)
                .optional()?;
            let Some(grant) = parts.map(GrantParts::decode).transpose()? else {
                return Ok(None);
            };
            let event = AdminEvent::new(&tenant, AdminKind::GrantRevoked, &grant.id, &by);
            append_admin(conn, &event, at)?;
            Ok(Some(grant))
        })
        .await
    }
}

impl SqliteBackend {
    /// Counts a use of grant `id` if it is still live at `now`: one conditional update.
    pub(crate) async fn use_grant(
        &self,
        tenant: &str,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let (tenant, id, now) = (tenant.to_owned(), id.to_owned(), millis(now));
        self.write(move |conn| {
            let parts = conn
                .prepare_cached(&format!(
                    "UPDATE grants SET uses = uses + 1 WHERE tenant = ?1 AND id = ?2 \
                     AND (max_uses IS NULL OR uses < max_uses) \
                     AND (expires_at IS NULL OR expires_at > ?3) RETURNING {GRANT_COLUMNS}"
                ))?
                .query_row(params![tenant, id, now], grant_parts)
                .optional()?;
            parts.map(GrantParts::decode).transpose()
        })
        .await
    }
}

impl SqliteBackend {
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
        let (tenant, request_id, grant, actor) = (
            tenant.to_owned(),
            request_id.to_owned(),
            grant.clone(),
            actor.clone(),
        );
        self.write(move |conn| {
            insert_grants(conn, &tenant, std::slice::from_ref(&grant))?;
            append_event(
                conn,
                &tenant,
                &request_id,
                EventKind::GrantSuggestedAccepted,
                Some(&actor),
                millis(at),
            )
            .map(|_| ())
        })
        .await
    }
}

/// Records the grants an answer gave, in its transaction; an equal grant already stored keeps
/// its id and takes the new answer's bounds, its uses counted afresh.
pub(super) fn insert_grants(
    conn: &Connection,
    tenant: &str,
    grants: &[StoredGrant],
) -> Result<(), StoreError> {
    for g in grants {
        conn.prepare_cached(
            "INSERT INTO grants (tenant, tool, arguments, scope, session, created_at, \
             id, request_id, granted_by, seq, expires_at, max_uses, uses) VALUES (?1, ?2, ?3, \
             ?4, ?5, ?6, ?7, ?8, ?9, (SELECT COALESCE(MAX(seq), 0) + 1 FROM grants), ?10, ?11, \
             0) ON CONFLICT (tenant, tool, arguments, scope, session) DO UPDATE SET \
             expires_at = excluded.expires_at, max_uses = excluded.max_uses, uses = 0",
        )?
        .execute(params![
            tenant,
            g.grant.tool,
            g.grant.arguments,
            g.grant.scope.as_str(),
            g.grant.session.as_deref().unwrap_or(""),
            millis(g.created_at),
            g.id,
            g.request_id,
            g.granted_by,
            g.expires_at.map(millis),
            g.max_uses,
        ])?;
    }
    Ok(())
}

fn grant_parts(r: &rusqlite::Row<'_>) -> rusqlite::Result<GrantParts> {
    Ok(GrantParts {
        id: r.get(0)?,
        tool: r.get(1)?,
        arguments: r.get(2)?,
        scope: r.get(3)?,
        session: r.get(4)?,
        request_id: r.get(5)?,
        granted_by: r.get(6)?,
        created_at: r.get(7)?,
        expires_at: r.get(8)?,
        max_uses: r.get(9)?,
        uses: r.get(10)?,
    })
}
