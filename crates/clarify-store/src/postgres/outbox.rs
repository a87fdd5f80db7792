//! The outbox: webhook deliveries and channel notifications, queued in the transaction of the
//! change they report and claimed with a lease (`FOR UPDATE SKIP LOCKED`); and the channels'
//! cursors, where reading a platform's updates resumes.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::{PgConnection, PgRow};

use super::{PgBackend, corrupt_row, db_err};
use crate::codec::{millis, qualified};
use crate::error::StoreError;
use crate::outbox::{
    ATTEMPT_COLUMNS, AfterAttempt, Attempt, AttemptParts, DELIVERY_COLUMNS, Delivery,
    DeliveryParts, Outbox, after_attempt, attempt_values,
};
use crate::record::EventKind;

impl PgBackend {
    pub(crate) async fn announced_as(
        &self,
        channel: &str,
        message_ref: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT tenant, request_id FROM clarify_deliveries WHERE message_ref = $2 \
             AND channel = $1 AND event = 'created' ORDER BY id LIMIT 1",
        )
        .bind(channel)
        .bind(message_ref)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        row.map(|r| {
            Ok((
                r.try_get("tenant").map_err(corrupt_row)?,
                r.try_get("request_id").map_err(corrupt_row)?,
            ))
        })
        .transpose()
    }

    pub(crate) async fn announced_on(
        &self,
        channel: &str,
        limit: u32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query(
            "SELECT tenant, request_id FROM clarify_deliveries WHERE channel = $1 \
             AND event = 'created' ORDER BY id DESC LIMIT $2",
        )
        .bind(channel)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("tenant").map_err(corrupt_row)?,
                    r.try_get("request_id").map_err(corrupt_row)?,
                ))
            })
            .collect()
    }

    pub(crate) async fn cursor(&self, name: &str) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar("SELECT value FROM clarify_cursors WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)
    }

    pub(crate) async fn set_cursor(&self, name: &str, value: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO clarify_cursors (name, value) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        )
        .bind(name)
        .bind(value)
        .execute(&self.pool)
        .await
        .map_err(db_err)
        .map(drop)
    }

    pub(crate) async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
        outbox: Outbox,
    ) -> Result<Vec<Delivery>, StoreError> {
        // Choosing and leasing are one statement. Rows another instance is claiming right now
        // are skipped, not waited for; once that claim commits, the re-checked condition
        // (`next_attempt_at <= now`) excludes them, so no delivery is claimed twice.
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let rows = sqlx::query(&format!(
            "WITH due AS ( \
                 SELECT id FROM clarify_deliveries \
                 WHERE status = 'pending' AND next_attempt_at <= $1 \
                 AND {} \
                 ORDER BY id LIMIT $3 \
                 FOR UPDATE SKIP LOCKED) \
             UPDATE clarify_deliveries d SET next_attempt_at = $2 \
             FROM due WHERE d.id = due.id \
             RETURNING {}",
            outbox.condition(),
            qualified(DELIVERY_COLUMNS, "d")
        ))
        .bind(millis(now))
        .bind(millis(lease_until))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let mut claimed = rows
            .iter()
            .map(delivery_parts)
            .collect::<Result<Vec<_>, _>>()?;
        // RETURNING follows no ORDER BY.
        claimed.sort_unstable_by_key(|d| d.id);
        let claimed = with_attempts(&mut tx, claimed).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(claimed)
    }

    pub(crate) async fn finish_attempt(
        &self,
        id: u64,
        attempt: Attempt,
        after: AfterAttempt,
        message_ref: Option<String>,
    ) -> Result<(), StoreError> {
        // An id no row can have names no delivery: nothing to record, as for a deleted one.
        let Ok(id) = i64::try_from(id) else {
            return Ok(());
        };
        let (status, next) = after_attempt(after);
        let (number, at, status_code, error, duration_ms) = attempt_values(&attempt);
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let updated = sqlx::query(
            "UPDATE clarify_deliveries SET status = $2, next_attempt_at = $3, \
             message_ref = COALESCE($4, message_ref) WHERE id = $1",
        )
        .bind(id)
        .bind(status)
        .bind(next)
        .bind(message_ref)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected();
        if updated == 0 {
            tx.rollback().await.map_err(db_err)?;
            return Ok(());
        }
        sqlx::query(&format!(
            "INSERT INTO clarify_delivery_attempts ({ATTEMPT_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6)"
        ))
        .bind(id)
        .bind(number)
        .bind(at)
        .bind(status_code)
        .bind(error)
        .bind(duration_ms)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn deliveries(&self, request_id: &str) -> Result<Vec<Delivery>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // One snapshot for deliveries and attempts: an attempt finishing meanwhile is seen with
        // the status it set, or not at all.
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let rows = sqlx::query(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM clarify_deliveries WHERE request_id = $1 ORDER BY id"
        ))
        .bind(request_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let found = rows
            .iter()
            .map(delivery_parts)
            .collect::<Result<Vec<_>, _>>()?;
        let found = with_attempts(&mut tx, found).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(found)
    }
}

/// Queues a notification of `kind` about each of the requests `ids` on every channel it was
/// announced on: a reminder or escalation, a vote, or its resolution (which edits the
/// announcement).
pub(super) async fn follow_up(
    conn: &mut PgConnection,
    ids: &[&str],
    kind: EventKind,
    at: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO clarify_deliveries \
         (request_id, tenant, url, status, created_at, next_attempt_at, event, channel) \
         SELECT request_id, tenant, '', 'pending', $2, $2, $3, channel FROM clarify_deliveries \
         WHERE request_id = ANY($1) AND event = 'created' AND channel IS NOT NULL ORDER BY id",
    )
    .bind(ids)
    .bind(at)
    .bind(kind.as_str())
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Queues a webhook delivery, due at once, for every `(tenant, request id, url)`, in order: of
/// a request resolved at `at` (`event` is `None`), or announcing `event` of a pending one, inside
/// the writing transaction.
pub(super) async fn queue_deliveries(
    conn: &mut PgConnection,
    targets: &[(String, String, String)],
    at: i64,
    event: Option<EventKind>,
) -> Result<(), StoreError> {
    if targets.is_empty() {
        return Ok(());
    }
    let mut tenants = Vec::with_capacity(targets.len());
    let mut ids = Vec::with_capacity(targets.len());
    let mut urls = Vec::with_capacity(targets.len());
    for (tenant, id, url) in targets {
        tenants.push(tenant.as_str());
        ids.push(id.as_str());
        urls.push(url.as_str());
    }
    sqlx::query(
        "INSERT INTO clarify_deliveries \
         (request_id, tenant, url, status, created_at, next_attempt_at, event) \
         SELECT id, t, url, 'pending', $4, $4, $5 \
         FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(t, id, url, n) \
         ORDER BY n",
    )
    .bind(tenants)
    .bind(ids)
    .bind(urls)
    .bind(at)
    .bind(event.map(EventKind::as_str))
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// The deliveries with their attempts, in the order given; one query for all the attempts.
async fn with_attempts(
    conn: &mut PgConnection,
    found: Vec<DeliveryParts>,
) -> Result<Vec<Delivery>, StoreError> {
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = found.iter().map(|d| d.id).collect();
    let rows = sqlx::query(&format!(
        "SELECT {ATTEMPT_COLUMNS} FROM clarify_delivery_attempts \
         WHERE delivery_id = ANY($1) ORDER BY delivery_id, number"
    ))
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    let mut attempts: HashMap<i64, Vec<Attempt>> = HashMap::new();
    for row in &rows {
        let parts = attempt_parts(row)?;
        let delivery = parts.delivery_id;
        attempts.entry(delivery).or_default().push(parts.decode()?);
    }
    found
        .into_iter()
        .map(|d| {
            let own = attempts.remove(&d.id).unwrap_or_default();
            d.decode(own)
        })
        .collect()
}

fn delivery_parts(row: &PgRow) -> Result<DeliveryParts, StoreError> {
    Ok(DeliveryParts {
        id: row.try_get("id").map_err(corrupt_row)?,
        request_id: row.try_get("request_id").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        url: row.try_get("url").map_err(corrupt_row)?,
        status: row.try_get("status").map_err(corrupt_row)?,
        created_at: row.try_get("created_at").map_err(corrupt_row)?,
        next_attempt_at: row.try_get("next_attempt_at").map_err(corrupt_row)?,
        event: row.try_get("event").map_err(corrupt_row)?,
        channel: row.try_get("channel").map_err(corrupt_row)?,
        message_ref: row.try_get("message_ref").map_err(corrupt_row)?,
    })
}

fn attempt_parts(row: &PgRow) -> Result<AttemptParts, StoreError> {
    let status_code: Option<i32> = row.try_get("status_code").map_err(corrupt_row)?;
    Ok(AttemptParts {
        delivery_id: row.try_get("delivery_id").map_err(corrupt_row)?,
        number: row.try_get("number").map_err(corrupt_row)?,
        at: row.try_get("at").map_err(corrupt_row)?,
        status_code: status_code.map(i64::from),
        error: row.try_get("error").map_err(corrupt_row)?,
        duration_ms: row.try_get("duration_ms").map_err(corrupt_row)?,
    })
}
