//! What falls due with time: expiry at a request's deadline, reminders, warnings before expiry
//! (and extensions, which move both) and escalation. Each
//! pass runs in the writer's transaction, so another instance sharing the file finds the
//! requests it handled no longer due.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteBackend;
use super::feed::append_event;
use super::outbox::{follow_up, queue_delivery};
use super::requests::get;
use crate::codec::{
    due_column, millis, next_reminder_at, reaped_callback_url, reaped_outcome_urls,
};
use crate::error::StoreError;
use crate::record::{Actor, EventKind, RequestRecord};

impl SqliteBackend {
    pub(crate) async fn expire_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let decoded = std::sync::Arc::clone(&self.decoded);
        self.write(move |conn| {
            let decoded = &decoded;
            let now_ms = millis(now);
            let expired: Vec<(String, String, String)> = {
                let mut stmt = conn.prepare_cached(
                    "UPDATE requests SET status = 'expired', resolved_at = ?1, answered_by = NULL, \
                     channel = 'system', remind_at = NULL, escalate_at = NULL WHERE seq IN (SELECT seq FROM requests WHERE status = 'pending' \
                     AND expires_at IS NOT NULL AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2) \
                     RETURNING id, tenant, spec",
                )?;
                let rows = stmt.query_map(params![now_ms, limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            for (id, tenant, spec) in &expired {
                for url in reaped_outcome_urls(id, spec) {
                    queue_delivery(conn, id, tenant, &url, now_ms, None)?;
                }
                follow_up(conn, id, EventKind::Expired, now_ms)?;
                append_event(conn, tenant, id, EventKind::Expired, Some(&Actor::system()), now_ms)?;
                if let Some(record) = get(conn, decoded, id)? {
                    super::insights::count(conn, &record)?;
                }
            }
            Ok(expired.into_iter().map(|(id, _, _)| id).collect())
        })
        .await
    }

    pub(crate) async fn remind_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| fall_due(conn, EventKind::Reminded, millis(now), limit))
            .await
    }

    pub(crate) async fn warn_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| fall_due(conn, EventKind::Warned, millis(now), limit))
            .await
    }

    /// Moves a pending request's deadline from `deadline` to `to` (and its warning to
    /// `warn_before` ahead of `to`, if that is after `now`), with an `extended` event by `by`;
    /// `None` when the request is no longer pending with that deadline still ahead.
    pub(crate) async fn extend(
        &self,
        id: &str,
        deadline: DateTime<Utc>,
        to: DateTime<Utc>,
        by: &Actor,
        now: DateTime<Utc>,
    ) -> Result<Option<RequestRecord>, StoreError> {
        let decoded = std::sync::Arc::clone(&self.decoded);
        let (id, by) = (id.to_owned(), by.clone());
        self.write(move |conn| {
            let (now, to) = (millis(now), millis(to));
            let tenant: Option<String> = conn
                .prepare_cached(
                    "UPDATE requests SET expires_at = ?3, warn_at = CASE \
                     WHEN warn_before IS NOT NULL AND ?3 - warn_before * 1000 > ?4 \
                     THEN ?3 - warn_before * 1000 END \
                     WHERE id = ?1 AND status = 'pending' AND expires_at = ?2 AND expires_at > ?4 \
                     RETURNING tenant",
                )?
                .query_row(params![id, millis(deadline), to, now], |r| r.get(0))
                .optional()?;
            let Some(tenant) = tenant else {
                return Ok(None);
            };
            append_event(conn, &tenant, &id, EventKind::Extended, Some(&by), now)?;
            get(conn, &decoded, &id)
        })
        .await
    }

    /// Appends a `refused` event by `by` to request `id` of `tenant`, if there is one.
    pub(crate) async fn refused(
        &self,
        tenant: &str,
        id: &str,
        by: &Actor,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let (tenant, id, by) = (tenant.to_owned(), id.to_owned(), by.clone());
        self.write(move |conn| {
            let known = conn
                .prepare_cached("SELECT 1 FROM requests WHERE id = ?1 AND tenant = ?2")?
                .query_row(params![id, tenant], |_| Ok(()))
                .optional()?
                .is_some();
            if known {
                append_event(
                    conn,
                    &tenant,
                    &id,
                    EventKind::Refused,
                    Some(&by),
                    millis(now),
                )?;
            }
            Ok(known)
        })
        .await
    }

    pub(crate) async fn escalate_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| fall_due(conn, EventKind::Escalated, millis(now), limit))
            .await
    }
}

/// Reminds (`kind` `Reminded`: the next reminder a period from `now`), warns (`Warned`: once)
/// or escalates (`Escalated`) up to `limit` pending requests due by `now`, and announces each; returns their
/// ids. Runs in the writer's transaction, so another instance finds them no longer due.
fn fall_due(
    conn: &Connection,
    kind: EventKind,
    now: i64,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let reminding = kind == EventKind::Reminded;
    let due = due(conn, due_column(kind), now, limit)?;
    for row in &due {
        if kind == EventKind::Warned {
            conn.prepare_cached("UPDATE requests SET warn_at = NULL WHERE id = ?1")?
                .execute(params![row.0])?;
        } else if reminding {
            let next = next_reminder_at(&row.0, &row.2, now);
            conn.prepare_cached("UPDATE requests SET remind_at = ?2 WHERE id = ?1")?
                .execute(params![row.0, next])?;
        } else {
            conn.prepare_cached(
                "UPDATE requests SET escalate_at = NULL, escalated_at = ?2 WHERE id = ?1",
            )?
            .execute(params![row.0, now])?;
        }
        announce(conn, row, kind, now)?;
    }
    Ok(due.into_iter().map(|(id, _, _)| id).collect())
}

/// The ids, tenants and specs of up to `limit` pending requests whose `column` time is due.
fn due(
    conn: &Connection,
    column: &str,
    now: i64,
    limit: usize,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, tenant, spec FROM requests WHERE status = 'pending' \
         AND {column} IS NOT NULL AND {column} <= ?1 ORDER BY {column} LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![now, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Writes a system event about a pending request, and queues its webhook and a notification on
/// each channel it was announced on.
fn announce(
    conn: &Connection,
    (id, tenant, spec): &(String, String, String),
    kind: EventKind,
    at: i64,
) -> Result<(), StoreError> {
    if let Some(url) = reaped_callback_url(id, spec) {
        queue_delivery(conn, id, tenant, &url, at, Some(kind))?;
    }
    follow_up(conn, id, kind, at)?;
    append_event(conn, tenant, id, kind, Some(&Actor::system()), at).map(|_| ())
}
