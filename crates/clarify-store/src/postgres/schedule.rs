//! What falls due with time: expiry at a request's deadline, reminders, warnings before expiry
//! (and extensions, which move both) and escalation. Each pass
//! claims due rows with `FOR UPDATE SKIP LOCKED`, so instances running it at once neither wait
//! for each other nor handle a request twice.

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgConnection;

use super::feed::append_events;
use super::outbox::{follow_up, queue_deliveries};
use super::{PgBackend, corrupt_row, db_err};
use crate::codec::{
    due_column, millis, next_reminder_at, reaped_callback_url, reaped_outcome_urls,
};
use crate::error::StoreError;
use crate::record::{Actor, EventKind, RequestRecord};

impl PgBackend {
    pub(crate) async fn remind_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.fall_due(EventKind::Reminded, millis(now), limit).await
    }

    pub(crate) async fn warn_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.fall_due(EventKind::Warned, millis(now), limit).await
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
        let (now, to) = (millis(now), millis(to));
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let tenant: Option<String> = sqlx::query_scalar(
            "UPDATE clarify_requests SET expires_at = $3, warn_at = CASE \
             WHEN warn_before IS NOT NULL AND $3 - warn_before * 1000 > $4 \
             THEN $3 - warn_before * 1000 END \
             WHERE id = $1 AND status = 'pending' AND expires_at = $2 AND expires_at > $4 \
             RETURNING tenant",
        )
        .bind(id)
        .bind(millis(deadline))
        .bind(to)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let Some(tenant) = tenant else {
            tx.rollback().await.map_err(db_err)?;
            return Ok(None);
        };
        append_events(
            &mut tx,
            EventKind::Extended,
            &[(tenant, id.to_owned())],
            by.name.as_deref(),
            Some(&by.channel),
            by.principal.as_deref(),
            now,
        )
        .await?;
        self.commit_events(tx).await?;
        self.get(id).await
    }

    /// Appends a `refused` event by `by` to request `id` of `tenant`, if there is one.
    pub(crate) async fn refused(
        &self,
        tenant: &str,
        id: &str,
        by: &Actor,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let known: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM clarify_requests WHERE id = $1 AND tenant = $2")
                .bind(id)
                .bind(tenant)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
        if known.is_none() {
            tx.rollback().await.map_err(db_err)?;
            return Ok(false);
        }
        append_events(
            &mut tx,
            EventKind::Refused,
            &[(tenant.to_owned(), id.to_owned())],
            by.name.as_deref(),
            Some(&by.channel),
            by.principal.as_deref(),
            millis(now),
        )
        .await?;
        self.commit_events(tx).await?;
        Ok(true)
    }

    pub(crate) async fn escalate_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.fall_due(EventKind::Escalated, millis(now), limit)
            .await
    }

    /// Reminds (`kind` `Reminded`: the next reminder a period from `at`), warns (`Warned`) or
    /// escalates (`Escalated`) up to `limit` pending requests due by `at`, and announces each,
    /// in one transaction holding their rows; returns their ids.
    async fn fall_due(
        &self,
        kind: EventKind,
        at: i64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let reminding = kind == EventKind::Reminded;
        let warning = kind == EventKind::Warned;
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let due = due(&mut tx, due_column(kind), at, limit).await?;
        if due.is_empty() {
            tx.rollback().await.map_err(db_err)?;
            return Ok(Vec::new());
        }
        let (ids, next): (Vec<&str>, Vec<Option<i64>>) = due
            .iter()
            .map(|(_, id, spec)| (id.as_str(), next_reminder_at(id, spec, at)))
            .unzip();
        let update = if warning {
            sqlx::query("UPDATE clarify_requests SET warn_at = NULL WHERE id = ANY($1)").bind(&ids)
        } else if reminding {
            sqlx::query(
                "UPDATE clarify_requests r SET remind_at = u.next \
                 FROM unnest($1::text[], $2::bigint[]) AS u(id, next) WHERE r.id = u.id",
            )
            .bind(&ids)
            .bind(&next)
        } else {
            sqlx::query(
                "UPDATE clarify_requests SET escalate_at = NULL, escalated_at = $2 \
                 WHERE id = ANY($1)",
            )
            .bind(&ids)
            .bind(at)
        };
        update.execute(&mut *tx).await.map_err(db_err)?;
        let ids = announce(&mut tx, &due, kind, at).await?;
        self.commit_events(tx).await?;
        Ok(ids)
    }

    pub(crate) async fn expire_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let at = millis(now);
        let system = Actor::system();
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Rows another instance is resolving or expiring right now are skipped, not waited for:
        // that instance settles them, and a later pass picks up whatever is still due.
        let rows = sqlx::query(
            "WITH due AS ( \
                 SELECT seq FROM clarify_requests \
                 WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1 \
                 ORDER BY expires_at, seq LIMIT $2 \
                 FOR UPDATE SKIP LOCKED) \
             UPDATE clarify_requests r \
             SET status = 'expired', resolved_at = $1, answered_by = $3, channel = $4, \
                 answers = NULL, remind_at = NULL, escalate_at = NULL \
             FROM due WHERE r.seq = due.seq AND r.status = 'pending' \
             RETURNING r.id, r.tenant, r.expires_at, r.seq, r.spec",
        )
        .bind(at)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(&system.name)
        .bind(&system.channel)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        if rows.is_empty() {
            tx.rollback().await.map_err(db_err)?;
            return Ok(Vec::new());
        }
        let mut due = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get("id").map_err(corrupt_row)?;
            let tenant: String = row.try_get("tenant").map_err(corrupt_row)?;
            let deadline: Option<i64> = row.try_get("expires_at").map_err(corrupt_row)?;
            let seq: i64 = row.try_get("seq").map_err(corrupt_row)?;
            let spec: String = row.try_get("spec").map_err(corrupt_row)?;
            let urls = reaped_outcome_urls(&id, &spec);
            due.push((deadline, seq, tenant, id, urls));
        }
        // Oldest deadline first, as the memory backend expires them.
        due.sort_unstable();
        let hooks: Vec<(String, String, String)> = due
            .iter()
            .flat_map(|(_, _, t, id, urls)| {
                urls.iter().map(|url| (t.clone(), id.clone(), url.clone()))
            })
            .collect();
        queue_deliveries(&mut tx, &hooks, at, None).await?;
        let targets: Vec<(String, String)> =
            due.into_iter().map(|(_, _, t, id, _)| (t, id)).collect();
        let ids: Vec<String> = targets.iter().map(|(_, id)| id.clone()).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        follow_up(&mut tx, &refs, EventKind::Expired, at).await?;
        append_events(
            &mut tx,
            EventKind::Expired,
            &targets,
            system.name.as_deref(),
            Some(&system.channel),
            None,
            at,
        )
        .await?;
        self.commit_events(tx).await?;
        Ok(ids)
    }
}

/// Locks up to `limit` pending requests whose `column` time is due at `at` and that no other
/// transaction holds, and returns their `(tenant, id, spec)`, oldest due first.
async fn due(
    conn: &mut PgConnection,
    column: &str,
    at: i64,
    limit: usize,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let rows = sqlx::query(&format!(
        "SELECT tenant, id, spec FROM clarify_requests \
         WHERE status = 'pending' AND {column} IS NOT NULL AND {column} <= $1 \
         ORDER BY {column}, seq LIMIT $2 FOR UPDATE SKIP LOCKED"
    ))
    .bind(at)
    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("tenant").map_err(corrupt_row)?,
                row.try_get("id").map_err(corrupt_row)?,
                row.try_get("spec").map_err(corrupt_row)?,
            ))
        })
        .collect()
}

/// Writes a system event about each of the `due` pending requests and queues their webhooks and
/// a notification on each channel they were announced on; returns their ids.
async fn announce(
    conn: &mut PgConnection,
    due: &[(String, String, String)],
    kind: EventKind,
    at: i64,
) -> Result<Vec<String>, StoreError> {
    let hooks: Vec<(String, String, String)> = due
        .iter()
        .filter_map(|(t, id, spec)| Some((t.clone(), id.clone(), reaped_callback_url(id, spec)?)))
        .collect();
    queue_deliveries(conn, &hooks, at, Some(kind)).await?;
    // Every channel a request was announced on hears of it too.
    let ids: Vec<&str> = due.iter().map(|(_, id, _)| id.as_str()).collect();
    follow_up(conn, &ids, kind, at).await?;
    let targets: Vec<(String, String)> = due
        .iter()
        .map(|(t, id, _)| (t.clone(), id.clone()))
        .collect();
    let system = Actor::system();
    append_events(
        conn,
        kind,
        &targets,
        system.name.as_deref(),
        Some(&system.channel),
        None,
        at,
    )
    .await?;
    Ok(targets.into_iter().map(|(_, id)| id).collect())
}
