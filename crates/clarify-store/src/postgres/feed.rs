//! The event feed: writers append events, unnumbered, to the inbox; readers read
//! `clarify_events`, which only the sequencer writes, in `seq` order.

use std::time::Duration;

use sqlx::Row;
use sqlx::postgres::{PgConnection, PgRow};

use super::{PgBackend, corrupt_row, db_err, to_u64};
use crate::codec::{EVENT_COLUMNS, EventParts};
use crate::error::StoreError;
use crate::record::{Event, EventKind};

impl PgBackend {
    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let columns = EVENT_COLUMNS;
        let rows = match tenant {
            Some(tenant) => {
                sqlx::query(&format!(
                    "SELECT {columns} FROM clarify_events WHERE tenant = $1 AND seq > $2 \
                     AND kind <> 'purged' ORDER BY seq LIMIT $3"
                ))
                .bind(tenant)
                .bind(after)
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
            None => {
                sqlx::query(&format!(
                    "SELECT {columns} FROM clarify_events WHERE seq > $1 AND kind <> 'purged' \
                     ORDER BY seq LIMIT $2"
                ))
                .bind(after)
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
        }
        .map_err(db_err)?;
        rows.iter().map(event).collect()
    }

    /// Stored events after `after` in feed order, as the audit chain holds them (tombstones
    /// included): every tenant's with `None`.
    pub(crate) async fn audit_events(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventParts>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM clarify_events \
             WHERE seq > $1 AND ($2::text IS NULL OR tenant = $2) ORDER BY seq LIMIT $3"
        ))
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(tenant)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(event_parts).collect()
    }

    pub(crate) async fn sync_feed(&self, within: Duration) -> Result<(), StoreError> {
        // Every event committed before now is in this snapshot: numbered already, or in the
        // inbox with an id up to this one.
        let newest: Option<i64> = sqlx::query_scalar("SELECT max(id) FROM clarify_event_inbox")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        let Some(newest) = newest else {
            return Ok(());
        };
        self.poke.notify_one();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let waiting: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM clarify_event_inbox WHERE id <= $1)",
            )
            .bind(newest)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
            if !waiting {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(StoreError::Unavailable(format!(
                    "events committed {} s ago are still not numbered: no clarify instance's \
                     event sequencer is making progress on this database",
                    within.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        let seq: i64 = sqlx::query_scalar("SELECT coalesce(max(seq), 0) FROM clarify_events")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        to_u64(seq)
    }

    pub(crate) async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        // One snapshot for all: an event is committed with the change it records, in the inbox
        // or, once numbered, in the log.
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // Committed events the sequencer has not numbered yet are in the inbox, in the same
        // snapshot: their effect is taken out, so the count is the one as of the newest number.
        let n: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM clarify_requests WHERE status = 'pending') \
                 - (SELECT count(*) FROM clarify_event_inbox WHERE kind = 'created') \
                 + (SELECT count(*) FROM clarify_event_inbox \
                    WHERE kind IN ('answered', 'skipped', 'expired', 'cancelled'))",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        let seq: i64 = sqlx::query_scalar("SELECT coalesce(max(seq), 0) FROM clarify_events")
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok((
            u64::try_from(n).unwrap_or(0),
            u64::try_from(seq).unwrap_or(0),
        ))
    }
}

/// Appends one event per `(tenant, request id)` target, in order, to the inbox: unnumbered
/// and unhashed, without any lock, for the sequencer to number once the transaction commits
/// (see `sequencer`). Commit with [`PgBackend::commit_events`].
pub(super) async fn append_events(
    conn: &mut PgConnection,
    kind: EventKind,
    targets: &[(String, String)],
    actor: Option<&str>,
    channel: Option<&str>,
    at: i64,
) -> Result<(), StoreError> {
    let (tenants, ids): (Vec<&str>, Vec<&str>) = targets
        .iter()
        .map(|(t, id)| (t.as_str(), id.as_str()))
        .unzip();
    sqlx::query(
        "INSERT INTO clarify_event_inbox (tenant, request_id, kind, actor, channel, at) \
         SELECT t, id, $3, $4, $5, $6 \
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(t, id, n) ORDER BY n",
    )
    .bind(tenants)
    .bind(ids)
    .bind(kind.as_str())
    .bind(actor)
    .bind(channel)
    .bind(at)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

fn event(row: &PgRow) -> Result<Event, StoreError> {
    event_parts(row)?.decode()
}

pub(super) fn event_parts(row: &PgRow) -> Result<EventParts, StoreError> {
    Ok(EventParts {
        seq: row.try_get("seq").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        request_id: row.try_get("request_id").map_err(corrupt_row)?,
        kind: row.try_get("kind").map_err(corrupt_row)?,
        actor: row.try_get("actor").map_err(corrupt_row)?,
        channel: row.try_get("channel").map_err(corrupt_row)?,
        at: row.try_get("at").map_err(corrupt_row)?,
        hash: row.try_get("hash").map_err(corrupt_row)?,
    })
}
