//! The outbox: webhook deliveries and channel notifications, queued in the transaction of the
//! change they report and claimed with a lease; and the channels' cursors, where reading a
//! platform's updates resumes.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteBackend;
use crate::codec::millis;
use crate::error::StoreError;
use crate::outbox::{
    ATTEMPT_COLUMNS, AfterAttempt, Attempt, AttemptParts, DELIVERY_COLUMNS, Delivery,
    DeliveryParts, Outbox, after_attempt, attempt_values,
};
use crate::record::EventKind;

impl SqliteBackend {
    pub(crate) async fn cursor(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached("SELECT value FROM cursors WHERE name = ?1")?
                .query_row(params![name], |r| r.get(0))
                .optional()?)
        })
    }

    pub(crate) async fn set_cursor(&self, name: &str, value: i64) -> Result<(), StoreError> {
        let name = name.to_owned();
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO cursors (name, value) VALUES (?1, ?2) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![name, value])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
        outbox: Outbox,
    ) -> Result<Vec<Delivery>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // A write, so the choice and the lease are one step: no other writer (in this process
        // or another sharing the file) runs between them.
        self.write(move |conn| {
            let mut claimed: Vec<DeliveryParts> = {
                let mut stmt = conn.prepare_cached(&format!(
                    "UPDATE deliveries SET next_attempt_at = ?2 WHERE id IN (\
                     SELECT id FROM deliveries WHERE status = 'pending' \
                     AND next_attempt_at <= ?1 AND {} \
                     ORDER BY id LIMIT ?3) RETURNING {DELIVERY_COLUMNS}",
                    outbox.condition()
                ))?;
                let rows = stmt.query_map(
                    params![millis(now), millis(lease_until), limit],
                    delivery_parts,
                )?;
                rows.collect::<Result<_, _>>()?
            };
            // RETURNING follows no ORDER BY.
            claimed.sort_unstable_by_key(|d| d.id);
            with_attempts(conn, claimed)
        })
        .await
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
        self.write(move |conn| {
            let (status, next) = after_attempt(after);
            let updated = conn
                .prepare_cached(
                    "UPDATE deliveries SET status = ?2, next_attempt_at = ?3, \
                     message_ref = COALESCE(?4, message_ref) WHERE id = ?1",
                )?
                .execute(params![id, status, next, message_ref])?;
            if updated == 0 {
                return Ok(());
            }
            let (number, at, status_code, error, duration_ms) = attempt_values(&attempt);
            conn.prepare_cached(&format!(
                "INSERT INTO delivery_attempts ({ATTEMPT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
            ))?
            .execute(params![id, number, at, status_code, error, duration_ms])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn deliveries(&self, request_id: &str) -> Result<Vec<Delivery>, StoreError> {
        self.read(|conn| {
            // One snapshot for deliveries and attempts: an attempt finishing meanwhile is seen
            // with the status it set, or not at all. Dropping the transaction ends the read.
            let tx = conn.unchecked_transaction()?;
            let conn = &*tx;
            let found: Vec<DeliveryParts> = {
                let mut stmt = conn.prepare_cached(&format!(
                    "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE request_id = ?1 ORDER BY id"
                ))?;
                let rows = stmt.query_map(params![request_id], delivery_parts)?;
                rows.collect::<Result<_, _>>()?
            };
            with_attempts(conn, found)
        })
    }

    pub(crate) async fn announced_as(
        &self,
        channel: &str,
        message_ref: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT tenant, request_id FROM deliveries WHERE message_ref = ?2 \
                     AND channel = ?1 AND event = 'created' ORDER BY id LIMIT 1",
                )?
                .query_row(params![channel, message_ref], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?)
        })
    }

    pub(crate) async fn announced_on(
        &self,
        channel: &str,
        limit: u32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT tenant, request_id FROM deliveries WHERE channel = ?1 \
                 AND event = 'created' ORDER BY id DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![channel, limit], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }
}

/// Queues a webhook delivery due at once: of a request just resolved at `at` (`event` is
/// `None`), or announcing `event` of a pending one.
pub(super) fn queue_delivery(
    conn: &Connection,
    request_id: &str,
    tenant: &str,
    url: &str,
    at: i64,
    event: Option<EventKind>,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO deliveries (request_id, tenant, url, status, created_at, next_attempt_at, \
         event) VALUES (?1, ?2, ?3, 'pending', ?4, ?4, ?5)",
    )?
    .execute(params![
        request_id,
        tenant,
        url,
        at,
        event.map(EventKind::as_str)
    ])?;
    Ok(())
}

/// Queues a notification of `kind` about request `id` on every channel it was announced on:
/// a reminder or escalation, a vote, or its resolution (which edits the announcement).
pub(super) fn follow_up(
    conn: &Connection,
    id: &str,
    kind: EventKind,
    at: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO deliveries (request_id, tenant, url, status, created_at, next_attempt_at, \
         event, channel) SELECT request_id, tenant, '', 'pending', ?2, ?2, ?3, channel \
         FROM deliveries WHERE request_id = ?1 AND event = 'created' AND channel IS NOT NULL \
         ORDER BY id",
    )?
    .execute(params![id, at, kind.as_str()])?;
    Ok(())
}

/// The deliveries with their attempts, in the order given.
fn with_attempts(
    conn: &Connection,
    deliveries: Vec<DeliveryParts>,
) -> Result<Vec<Delivery>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {ATTEMPT_COLUMNS} FROM delivery_attempts WHERE delivery_id = ?1 ORDER BY number"
    ))?;
    deliveries
        .into_iter()
        .map(|d| {
            let rows = stmt.query_map(params![d.id], |r| {
                Ok(AttemptParts {
                    delivery_id: r.get(0)?,
                    number: r.get(1)?,
                    at: r.get(2)?,
                    status_code: r.get(3)?,
                    error: r.get(4)?,
                    duration_ms: r.get(5)?,
                })
            })?;
            let attempts = rows
                .map(|row| row?.decode())
                .collect::<Result<Vec<_>, StoreError>>()?;
            d.decode(attempts)
        })
        .collect()
}

fn delivery_parts(row: &rusqlite::Row<'_>) -> rusqlite::Result<DeliveryParts> {
    Ok(DeliveryParts {
        id: row.get(0)?,
        request_id: row.get(1)?,
        tenant: row.get(2)?,
        url: row.get(3)?,
        status: row.get(4)?,
        created_at: row.get(5)?,
        next_attempt_at: row.get(6)?,
        event: row.get(7)?,
        channel: row.get(8)?,
        message_ref: row.get(9)?,
    })
}
