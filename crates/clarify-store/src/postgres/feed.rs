//! The event feed: writers append events, unnumbered, to the inbox; readers read
//! `clarify_events`, which only the sequencer writes, in `seq` order.

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::{PgConnection, PgPool, PgRow};

use super::{PgBackend, corrupt_row, db_err, to_u64};
use crate::audit::{AdminEvent, FEED_KINDS};
use crate::codec::{EVENT_COLUMNS, EventParts, Log};
use crate::error::StoreError;
use crate::record::{Event, EventKind};

impl PgBackend {
    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let events = read_log(&self.pool, Log::Feed, tenant, after, limit).await?;
        events.into_iter().map(EventParts::decode).collect()
    }

    /// Stored events after `after` in feed order, as the audit chain holds them (tombstones
    /// included): every tenant's with `None`.
    pub(crate) async fn audit_events(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventParts>, StoreError> {
        read_log(&self.pool, Log::Chain, tenant, after, limit).await
    }

    pub(crate) async fn record_admin(
        &self,
        event: AdminEvent,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        append_admin(&mut tx, &event, at).await?;
        self.commit_events(tx).await
    }

    pub(crate) async fn spend_receipt(
        &self,
        jti: &str,
        request_id: &str,
        event: AdminEvent,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let spent = sqlx::query(
            "INSERT INTO clarify_receipts_spent (jti, tenant, request_id, spent_at, spent_by) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (jti) DO NOTHING",
        )
        .bind(jti)
        .bind(&event.tenant)
        .bind(request_id)
        .bind(crate::codec::millis(at))
        .bind(event.by.principal.as_ref().or(event.by.name.as_ref()))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected()
            == 1;
        if !spent {
            tx.rollback().await.map_err(db_err)?;
            return Ok(false);
        }
        append_admin(&mut tx, &event, at).await?;
        self.commit_events(tx).await?;
        Ok(true)
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

    /// The resolution's place kept from the log, as schema 17's migration did for the requests
    /// resolved before it: the first resolving event of the request. Only a resolved request
    /// without it changes, so instances doing this at once agree.
    pub(crate) async fn place_resolution(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE clarify_requests r SET resolved_seq = e.seq, resolved_principal = e.principal \
             FROM (SELECT seq, principal FROM clarify_events \
                   WHERE request_id = $2 AND tenant = $1 \
                     AND kind IN ('answered', 'skipped', 'expired', 'cancelled') \
                   ORDER BY seq LIMIT 1) e \
             WHERE r.tenant = $1 AND r.id = $2 AND r.status <> 'pending' \
               AND r.resolved_seq IS NULL",
        )
        .bind(tenant)
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        let seq: i64 = sqlx::query_scalar("SELECT coalesce(max(seq), 0) FROM clarify_events")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        to_u64(seq)
    }

    pub(crate) async fn tally_after(&self, after: u64) -> Result<crate::Tally, StoreError> {
        static TALLY: LazyLock<String> = LazyLock::new(|| {
            format!(
                "SELECT count(*) FILTER (WHERE kind = 'created'), \
                 count(*) FILTER (WHERE kind IN ({})), coalesce(max(seq), $1) \
                 FROM clarify_events WHERE seq > $1",
                crate::codec::resolving_kinds()
            )
        });
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let (created, resolved, last): (i64, i64, i64) = sqlx::query_as(&TALLY)
            .bind(after)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(crate::Tally {
            created: to_u64(created)?,
            resolved: to_u64(resolved)?,
            last: to_u64(last)?,
        })
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
    principal: Option<&str>,
    at: i64,
) -> Result<(), StoreError> {
    let (tenants, ids): (Vec<&str>, Vec<&str>) = targets
        .iter()
        .map(|(t, id)| (t.as_str(), id.as_str()))
        .unzip();
    sqlx::query(
        "INSERT INTO clarify_event_inbox (tenant, request_id, kind, actor, channel, at, \
             principal) \
         SELECT t, id, $3, $4, $5, $6, $7 \
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(t, id, n) ORDER BY n",
    )
    .bind(tenants)
    .bind(ids)
    .bind(kind.as_str())
    .bind(actor)
    .bind(channel)
    .bind(at)
    .bind(principal)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Appends an admin event to the inbox, in the transaction of the change it records (see
/// [`append_events`]).
pub(super) async fn append_admin(
    conn: &mut PgConnection,
    event: &AdminEvent,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let parts = event.parts(crate::codec::millis(at));
    sqlx::query(
        "INSERT INTO clarify_event_inbox (tenant, request_id, kind, actor, channel, at, \
             principal) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&parts.tenant)
    .bind(&parts.request_id)
    .bind(&parts.kind)
    .bind(&parts.actor)
    .bind(&parts.channel)
    .bind(parts.at)
    .bind(&parts.principal)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// The statement reading `log` after `$1` (every tenant's), or after `$2` (tenant `$1`'s only).
fn statement(log: Log, one_tenant: bool) -> &'static str {
    static FEED: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {EVENT_COLUMNS} FROM clarify_events WHERE seq > $1 AND {FEED_KINDS} \
             ORDER BY seq LIMIT $2"
        )
    });
    static TENANT_FEED: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {EVENT_COLUMNS} FROM clarify_events WHERE tenant = $1 AND seq > $2 \
             AND {FEED_KINDS} ORDER BY seq LIMIT $3"
        )
    });
    static CHAIN: LazyLock<String> = LazyLock::new(|| {
        format!("SELECT {EVENT_COLUMNS} FROM clarify_events WHERE seq > $1 ORDER BY seq LIMIT $2")
    });
    static TENANT_CHAIN: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {EVENT_COLUMNS} FROM clarify_events WHERE tenant = $1 AND seq > $2 \
             ORDER BY seq LIMIT $3"
        )
    });
    match (log, one_tenant) {
        (Log::Feed, false) => &FEED,
        (Log::Feed, true) => &TENANT_FEED,
        (Log::Chain, false) => &CHAIN,
        (Log::Chain, true) => &TENANT_CHAIN,
    }
}

/// Up to `limit` events of `log` after `after`, oldest first: `tenant`'s, or every tenant's.
///
/// A tenant's reading runs as an unnamed statement, planned for its tenant at every run. A
/// statement kept prepared is planned for its values at its first five runs only; PostgreSQL
/// may then keep a generic plan, and a tenant's generic plan, not knowing how many events that
/// tenant has, walks the primary key from the cursor through every tenant's events (as the one
/// statement that served both forms did). Planned for the tenant, a reading goes through
/// `clarify_events_tenant` for a tenant with few events and along the primary key for one with
/// most, so it reads little more than it returns, for one round trip more.
async fn read_log(
    pool: &PgPool,
    log: Log,
    tenant: Option<&str>,
    after: u64,
    limit: usize,
) -> Result<Vec<EventParts>, StoreError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let query = sqlx::query(statement(log, tenant.is_some())).persistent(tenant.is_none());
    let query = match tenant {
        Some(tenant) => query.bind(tenant),
        None => query,
    };
    let rows = query
        .bind(after)
        .bind(limit)
        .fetch_all(pool)
        .await
        .map_err(db_err)?;
    rows.iter().map(event_parts).collect()
}

pub(super) fn event_parts(row: &PgRow) -> Result<EventParts, StoreError> {
    Ok(EventParts {
        seq: row.try_get("seq").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        request_id: row.try_get("request_id").map_err(corrupt_row)?,
        kind: row.try_get("kind").map_err(corrupt_row)?,
        actor: row.try_get("actor").map_err(corrupt_row)?,
        channel: row.try_get("channel").map_err(corrupt_row)?,
        principal: row.try_get("principal").map_err(corrupt_row)?,
        at: row.try_get("at").map_err(corrupt_row)?,
        hash: row.try_get("hash").map_err(corrupt_row)?,
    })
}

#[cfg(test)]
mod tests {
    use sqlx::Connection;
    use sqlx::postgres::PgPoolOptions;

    use super::*;

    /// Rows of `clarify_events` read so far, as PostgreSQL's statistics count them: through
    /// sequential scans and fetched through indexes.
    async fn rows_read(conn: &mut PgConnection) -> Result<i64, String> {
        sqlx::query_scalar(
            "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) \
             FROM pg_stat_user_tables WHERE relname = 'clarify_events'",
        )
        .fetch_one(conn)
        .await
        .map_err(|e| e.to_string())
    }

    /// One tenant's reading of the log, from far back, reads that tenant's events and no
    /// other's, however often it runs. The quiet tenant's 10 events come first, then 20,000 of
    /// two busy tenants. A statement prepared once gets a generic plan after its fifth run, which
    /// for a tenant's reading walks the primary key from the cursor: it read all 20,010 rows to
    /// return those 10, or none after them, as the one statement serving both forms did before.
    /// Here 40 readings return 200 events; the statistics count the rows they read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tenant_reads_its_own_events_however_many_others_have() {
        let Some(url) = clarify_testkit::postgres_url() else {
            return;
        };
        let name = format!("clarify_test_feed_{:016x}", rand::random::<u64>());
        let outcome = clarify_testkit::in_scratch_database(&url, &name, |url| async move {
            let mut conn = PgConnection::connect(&url)
                .await
                .map_err(|e| e.to_string())?;
            super::super::migrations::migrate(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
            sqlx::raw_sql(
                "INSERT INTO clarify_events (seq, tenant, request_id, kind, at, hash) \
                 SELECT g, 'quiet', 'q' || g, 'created', 0, '' FROM generate_series(1, 10) g; \
                 INSERT INTO clarify_events (seq, tenant, request_id, kind, at, hash) \
                 SELECT g, CASE WHEN g % 2 = 0 THEN 'busy' ELSE 'loud' END, 'r' || g, \
                 'created', 0, '' FROM generate_series(11, 20010) g; \
                 ANALYZE clarify_events;",
            )
            .execute(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
            let before = rows_read(&mut conn).await?;
            // One connection, so every reading runs on the statements it keeps.
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .connect(&url)
                .await
                .map_err(|e| e.to_string())?;
            let mut returned = 0;
            for log in [Log::Feed, Log::Chain] {
                for _ in 0..10 {
                    for (after, expected) in [(0, 10), (10, 0)] {
                        let events = read_log(&pool, log, Some("quiet"), after, 1_000)
                            .await
                            .map_err(|e| e.to_string())?;
                        if events.len() != expected || events.iter().any(|e| e.tenant != "quiet") {
                            return Err(format!("{log:?} after {after}: {events:?}"));
                        }
                        returned += expected;
                    }
                }
            }
            // PostgreSQL 15 and later publish a session's counts when it goes idle after this
            // (older ones within a second or so, by themselves).
            let _ = sqlx::query("SELECT pg_stat_force_next_flush()")
                .execute(&pool)
                .await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
            let read = loop {
                let read = rows_read(&mut conn).await? - before;
                if read >= returned as i64 || tokio::time::Instant::now() > deadline {
                    break read;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            pool.close().await;
            Ok::<_, String>((returned, read))
        })
        .await;
        let (returned, read) = outcome.unwrap_or_else(|failure| panic!("{failure}"));
        assert_eq!(returned, 200);
        assert!(
            (200..=400).contains(&read),
            "40 readings returning {returned} events read {read} rows"
        );
    }
}
