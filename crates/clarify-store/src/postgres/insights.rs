//! Insights: the rollups (`clarify_insights`, `clarify_insights_months`, `clarify_insights_days`,
//! see the store's `insights` module), counted into by
//! the sequencer's round that numbers a request's resolution event, in that round's
//! transaction: the round runs alone under the event-log lock and numbers each event once, so
//! each resolution is counted once, and the writers that resolve never wait on a shared row.
//! Read by day range with the filters as equality conditions on its primary key's columns.

use std::collections::HashMap;

use sqlx::Row;
use sqlx::postgres::PgConnection;

use super::requests::parts;
use super::{PgBackend, corrupt_row, db_err};
use crate::codec::{COLUMNS, COLUMNS_BEFORE_RESOLVED_SEQ};
use crate::error::StoreError;
use crate::insights::{Cell, Ending, Grain, Histogram, InsightsQuery, Key, fold, rows_of};
use crate::record::RequestRecord;

/// How many resolved requests the migration that makes the rollup reads at a time.
const BACKFILL_BATCH: i64 = 10_000;

impl PgBackend {
    pub(crate) async fn insight_rows(
        &self,
        tenant: &str,
        query: &InsightsQuery,
        grain: Grain,
        from: i64,
        to: i64,
    ) -> Result<Vec<(Key, Cell)>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT day, agent, tool, surface, responder, ending, n, times \
             FROM clarify_{} WHERE tenant = $1 AND tag = $2 AND day BETWEEN $3 AND $4 \
             AND ($5::text IS NULL OR agent = $5) AND ($6::text IS NULL OR tool = $6) \
             AND ($7::text IS NULL OR surface = $7) AND ($8::text IS NULL OR responder = $8)",
            grain.table()
        ))
        .bind(tenant)
        .bind(query.tag_key())
        .bind(from)
        .bind(to)
        .bind(&query.agent)
        .bind(&query.tool)
        .bind(&query.channel)
        .bind(&query.responder)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let ending: String = row.try_get("ending").map_err(corrupt_row)?;
            let times: Vec<i64> = row.try_get("times").map_err(corrupt_row)?;
            let n: i64 = row.try_get("n").map_err(corrupt_row)?;
            out.push((
                Key {
                    tenant: tenant.to_owned(),
                    tag: query.tag_key().to_owned(),
                    day: row.try_get("day").map_err(corrupt_row)?,
                    agent: row.try_get("agent").map_err(corrupt_row)?,
                    tool: row.try_get("tool").map_err(corrupt_row)?,
                    surface: row.try_get("surface").map_err(corrupt_row)?,
                    responder: row.try_get("responder").map_err(corrupt_row)?,
                    ending: Ending::parse(&ending).ok_or_else(|| {
                        StoreError::Corrupt(format!("insights ending {ending:?}"))
                    })?,
                },
                Cell {
                    n: u64::try_from(n).unwrap_or(0),
                    times: Histogram::from_counts(&times).ok_or_else(|| {
                        StoreError::Corrupt(format!("insights times of {} buckets", times.len()))
                    })?,
                },
            ));
        }
        Ok(out)
    }

    pub(crate) async fn pending_of(
        &self,
        tenant: &str,
        agent: Option<&str>,
    ) -> Result<Vec<RequestRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM clarify_requests WHERE tenant = $1 AND status = 'pending' \
             AND ($2::text IS NULL OR agent = $2) ORDER BY seq"
        ))
        .bind(tenant)
        .bind(agent)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(|r| parts(r)?.decode()).collect()
    }
}

/// Counts the requests with these ids, which a round is numbering resolution events of, into
/// the rollup, in the round's transaction. A request no longer stored (purged meanwhile) is
/// not counted.
pub(super) async fn count(conn: &mut PgConnection, ids: &[String]) -> Result<(), StoreError> {
    if ids.is_empty() {
        return Ok(());
    }
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM clarify_requests WHERE id = ANY($1) AND status <> 'pending'"
    ))
    .bind(ids)
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    let mut rollup = HashMap::new();
    for row in &rows {
        if let Some(rows) = rows_of(&parts(row)?.decode()?) {
            fold(&mut rollup, rows);
        }
    }
    add(conn, Grain::Day, rollup).await
}

/// Adds rollup rows of `grain` to the stored ones in one statement (histograms added bucket by
/// bucket).
async fn add(
    conn: &mut PgConnection,
    grain: Grain,
    rows: HashMap<Key, Cell>,
) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut c = Columns::default();
    for (key, cell) in rows {
        c.tenant.push(key.tenant);
        c.tag.push(key.tag);
        c.day.push(key.day);
        c.agent.push(key.agent);
        c.tool.push(key.tool);
        c.surface.push(key.surface);
        c.responder.push(key.responder);
        c.ending.push(key.ending.as_str().to_owned());
        c.n.push(i64::try_from(cell.n).unwrap_or(i64::MAX));
        c.times.push(cell.times.to_text());
    }
    sqlx::query(&format!(
        "INSERT INTO clarify_{} AS i (tenant, tag, day, agent, tool, surface, responder, \
             ending, n, times) \
         SELECT t, g, d, a, o, s, r, e, n, string_to_array(h, ',')::bigint[] \
         FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], \
                     $7::text[], $8::text[], $9::bigint[], $10::text[]) \
             AS u(t, g, d, a, o, s, r, e, n, h) \
         ON CONFLICT (tenant, tag, day, agent, tool, surface, responder, ending) DO UPDATE \
         SET n = i.n + excluded.n, \
             times = ARRAY(SELECT x + y FROM unnest(i.times, excluded.times) \
                           WITH ORDINALITY AS b(x, y, k) ORDER BY k)",
        grain.table()
    ))
    .bind(&c.tenant)
    .bind(&c.tag)
    .bind(&c.day)
    .bind(&c.agent)
    .bind(&c.tool)
    .bind(&c.surface)
    .bind(&c.responder)
    .bind(&c.ending)
    .bind(&c.n)
    .bind(&c.times)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

#[derive(Debug, Default)]
struct Columns {
    tenant: Vec<String>,
    tag: Vec<String>,
    day: Vec<i64>,
    agent: Vec<String>,
    tool: Vec<String>,
    surface: Vec<String>,
    responder: Vec<String>,
    ending: Vec<String>,
    n: Vec<i64>,
    times: Vec<String>,
}

/// Counts the requests resolved before the rollup existed, in the migrating transaction. Those
/// whose resolution event still waits in the event inbox are left to the round that numbers
/// it. A row that does not decode is left out, with a warning, rather than stopping the start.
pub(super) async fn backfill(conn: &mut PgConnection) -> Result<(), StoreError> {
    let mut rollup = HashMap::new();
    let mut after = 0_i64;
    loop {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS_BEFORE_RESOLVED_SEQ}, seq FROM clarify_requests r WHERE seq > $1 \
             AND status <> 'pending' AND NOT EXISTS (SELECT 1 FROM clarify_event_inbox x \
             WHERE x.request_id = r.id AND x.kind <> 'created') ORDER BY seq LIMIT $2"
        ))
        .bind(after)
        .bind(BACKFILL_BATCH)
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
        for row in &rows {
            after = row.try_get("seq").map_err(corrupt_row)?;
            match parts(row).and_then(|p| p.decode()) {
                Ok(record) => {
                    if let Some(rows) = rows_of(&record) {
                        fold(&mut rollup, rows);
                    }
                }
                Err(e) => {
                    tracing::warn!(seq = after, error = %e, "a resolved request left out of the insights");
                }
            }
        }
        if (rows.len() as i64) < BACKFILL_BATCH {
            break;
        }
    }
    add(conn, Grain::Day, rollup).await
}

/// Nothing compacted yet: before any day.
const NEVER: i64 = -1_000_000;

impl PgBackend {
    /// The last day `tenant`'s coarser rollups hold (see `Store::insights`).
    pub(crate) async fn insights_compacted_through(
        &self,
        tenant: &str,
    ) -> Result<Option<i64>, StoreError> {
        let done: Option<i64> = sqlx::query_scalar(
            "SELECT through_day FROM clarify_insights_compacted WHERE tenant = $1",
        )
        .bind(tenant)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(Some(done.unwrap_or(NEVER)))
    }

    /// Counts `tenant`'s day rows after the last compacted day up to `through` into the month
    /// and day-total rollups, in one transaction holding the tenant's watermark row, so
    /// instances that compact at once count each day once; returns the last day they now hold.
    pub(crate) async fn compact_insights(
        &self,
        tenant: &str,
        through: i64,
    ) -> Result<i64, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO clarify_insights_compacted (tenant, through_day) VALUES ($1, $2) \
             ON CONFLICT (tenant) DO NOTHING",
        )
        .bind(tenant)
        .bind(NEVER)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let done: i64 = sqlx::query_scalar(
            "SELECT through_day FROM clarify_insights_compacted WHERE tenant = $1 FOR UPDATE",
        )
        .bind(tenant)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        if through <= done {
            return Ok(done);
        }
        let rows = sqlx::query(
            "SELECT tenant, tag, day, agent, tool, surface, responder, ending, n, times \
             FROM clarify_insights WHERE tenant = $1 AND day > $2 AND day <= $3",
        )
        .bind(tenant)
        .bind(done)
        .bind(through)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let mut days = HashMap::new();
        for row in &rows {
            let ending: String = row.try_get("ending").map_err(corrupt_row)?;
            let times: Vec<i64> = row.try_get("times").map_err(corrupt_row)?;
            let n: i64 = row.try_get("n").map_err(corrupt_row)?;
            let key = Key {
                tenant: row.try_get("tenant").map_err(corrupt_row)?,
                tag: row.try_get("tag").map_err(corrupt_row)?,
                day: row.try_get("day").map_err(corrupt_row)?,
                agent: row.try_get("agent").map_err(corrupt_row)?,
                tool: row.try_get("tool").map_err(corrupt_row)?,
                surface: row.try_get("surface").map_err(corrupt_row)?,
                responder: row.try_get("responder").map_err(corrupt_row)?,
                ending: Ending::parse(&ending)
                    .ok_or_else(|| StoreError::Corrupt(format!("insights ending {ending:?}")))?,
            };
            let cell = Cell {
                n: u64::try_from(n).unwrap_or(0),
                times: Histogram::from_counts(&times).ok_or_else(|| {
                    StoreError::Corrupt(format!("insights times of {} buckets", times.len()))
                })?,
            };
            fold(&mut days, vec![(key, cell)]);
        }
        add(&mut tx, Grain::Month, Grain::Month.of(&days)).await?;
        add(&mut tx, Grain::Total, Grain::Total.of(&days)).await?;
        sqlx::query("UPDATE clarify_insights_compacted SET through_day = $1 WHERE tenant = $2")
            .bind(through)
            .bind(tenant)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(through)
    }
}
