//! Insights: the rollups (`insights`, `insights_months`, `insights_days`, see the store's
//! `insights` module), counted into in the writer's transaction that resolves a request, and
//! read by day range with the filters as equality conditions on their primary key's columns.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, ToSql, params, params_from_iter};

use super::SqliteBackend;
use super::decoded::row_parts;
use crate::codec::{COLUMNS, COLUMNS_BEFORE_RESOLVED_SEQ};
use crate::error::StoreError;
use crate::insights::{Cell, Ending, Grain, Histogram, InsightsQuery, Key, fold, rows_of};
use crate::record::RequestRecord;

/// How many resolved requests the migration that makes the rollup reads at a time.
const BACKFILL_BATCH: i64 = 10_000;

/// A rollup row as a statement's first eight columns give it: day, agent, tool, surface,
/// responder, ending, count, times.
type RawRow = (i64, String, String, String, String, String, i64, String);

fn raw_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
    ))
}

/// `tenant`'s row of `tag` as the store's key and cell; a stored value that is not one is
/// corruption, named.
fn decode(tenant: &str, tag: String, raw: RawRow) -> Result<(Key, Cell), StoreError> {
    let (day, agent, tool, surface, responder, ending, n, times) = raw;
    let ending = Ending::parse(&ending)
        .ok_or_else(|| StoreError::Corrupt(format!("insights ending {ending:?}")))?;
    let times = Histogram::from_text(&times)
        .ok_or_else(|| StoreError::Corrupt(format!("insights times {times:?}")))?;
    Ok((
        Key {
            tenant: tenant.to_owned(),
            tag,
            day,
            agent,
            tool,
            surface,
            responder,
            ending,
        },
        Cell {
            n: u64::try_from(n).unwrap_or(0),
            times,
        },
    ))
}

impl SqliteBackend {
    pub(crate) async fn insight_rows(
        &self,
        tenant: &str,
        query: &InsightsQuery,
        grain: Grain,
        from: i64,
        to: i64,
    ) -> Result<Vec<(Key, Cell)>, StoreError> {
        // The primary key leads with (tenant, tag, day), so the range is one index range.
        let mut sql = format!(
            "SELECT day, agent, tool, surface, responder, ending, n, times \
             FROM {} WHERE tenant = ?1 AND tag = ?2 AND day BETWEEN ?3 AND ?4",
            grain.table()
        );
        let mut args: Vec<rusqlite::types::Value> = vec![
            tenant.to_owned().into(),
            query.tag_key().to_owned().into(),
            from.into(),
            to.into(),
        ];
        for (column, value) in [
            ("agent", &query.agent),
            ("tool", &query.tool),
            ("surface", &query.channel),
            ("responder", &query.responder),
        ] {
            if let Some(value) = value {
                args.push(value.clone().into());
                sql.push_str(&format!(" AND {column} = ?{}", args.len()));
            }
        }
        let tag = query.tag_key().to_owned();
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), raw_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(decode(tenant, tag.clone(), row?)?);
            }
            Ok(out)
        })
    }

    pub(crate) async fn pending_of(
        &self,
        tenant: &str,
        agent: Option<&str>,
    ) -> Result<Vec<RequestRecord>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM requests WHERE tenant = ?1 AND status = 'pending' \
                 AND (?2 IS NULL OR agent = ?2) ORDER BY seq"
            ))?;
            let rows = stmt.query_map(params![tenant, agent], row_parts)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row?.decode()?);
            }
            Ok(out)
        })
    }
}

/// Counts a request that just resolved into the rollup; runs in the resolving transaction (the
/// single writer's, so reading a row and writing it back races with nothing). Each of its rows
/// counts one request with at most one time, so it is written by [`bump`]; a row that folded
/// more (a tag named twice) by [`add`].
pub(super) fn count(conn: &Connection, record: &RequestRecord) -> Result<(), StoreError> {
    if let Some(rows) = rows_of(record) {
        // A request without tags counts into one row: nothing to fold.
        if let [(key, cell)] = rows.as_slice()
            && cell.n == 1
            && let Ok(bucket) = cell.times.only_bucket()
        {
            return bump(conn, key, bucket);
        }
        let mut one = HashMap::new();
        fold(&mut one, rows);
        let mut several = HashMap::new();
        for (key, cell) in one {
            match (cell.n, cell.times.only_bucket()) {
                (1, Ok(bucket)) => bump(conn, &key, bucket)?,
                _ => {
                    several.insert(key, cell);
                }
            }
        }
        if !several.is_empty() {
            add(conn, Grain::Day, several)?;
        }
    }
    Ok(())
}

/// Counts one request (and its time in `bucket`, when a person decided) into the day rollup's
/// row of `key`: inserted holding just that, or its count and the time's bucket bumped by
/// [`register_functions`]' `clarify_histogram_bump`, which changes one count of the stored text
/// in place instead of reading every count of two histograms and writing them all again.
fn bump(conn: &Connection, key: &Key, bucket: Option<usize>) -> Result<(), StoreError> {
    const BUMP: &str = "INSERT INTO insights (tenant, tag, day, agent, tool, surface, responder, \
         ending, n, times) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9) \
         ON CONFLICT (tenant, tag, day, agent, tool, surface, responder, ending) \
         DO UPDATE SET n = n + 1, times = clarify_histogram_bump(times, ?10)";
    let (ending, times, bucket) = (
        key.ending.as_str(),
        Histogram::single_text(bucket),
        bucket.and_then(|b| i64::try_from(b).ok()),
    );
    let cell: [&dyn ToSql; 3] = [&ending, &times, &bucket];
    conn.prepare_cached(BUMP)?
        .execute(params_from_iter(key_params(key).into_iter().chain(cell)))?;
    Ok(())
}

/// A rollup row's key but its ending, as the statements' `?1` to `?7` (the order of its primary
/// key; the ending is `?8`).
fn key_params(key: &Key) -> [&dyn ToSql; 7] {
    [
        &key.tenant,
        &key.tag,
        &key.day,
        &key.agent,
        &key.tool,
        &key.surface,
        &key.responder,
    ]
}

/// Adds rollup rows of `grain` to the stored ones: one upsert a row, the histograms added by
/// [`register_functions`]' `clarify_histogram_add` inside it, so counting a resolution costs one
/// statement per rollup row rather than a read and a write.
fn add(conn: &Connection, grain: Grain, rows: HashMap<Key, Cell>) -> Result<(), StoreError> {
    let table = grain.table();
    let mut write = conn.prepare_cached(&format!(
        "INSERT INTO {table} (tenant, tag, day, agent, tool, surface, responder, ending, n, \
         times) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
         ON CONFLICT (tenant, tag, day, agent, tool, surface, responder, ending) \
         DO UPDATE SET n = n + excluded.n, times = clarify_histogram_add(times, excluded.times)"
    ))?;
    for (key, cell) in rows {
        let (ending, n, times) = (
            key.ending.as_str(),
            i64::try_from(cell.n).unwrap_or(i64::MAX),
            cell.times.to_text(),
        );
        let cell: [&dyn ToSql; 3] = [&ending, &n, &times];
        write.execute(params_from_iter(key_params(&key).into_iter().chain(cell)))?;
    }
    Ok(())
}

/// Registers `clarify_histogram_add(a, b)` on `conn`: the sum of two histograms as
/// [`Histogram::to_text`] writes them. Deterministic; a text that is not a histogram is an
/// error, which fails the statement (and the transaction counting into it) rather than losing
/// counts.
pub(super) fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "clarify_histogram_add",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let read = |i: usize| -> rusqlite::Result<Histogram> {
                let text = ctx
                    .get_raw(i)
                    .as_bytes()
                    .map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))?;
                Histogram::from_bytes(text).ok_or_else(|| {
                    rusqlite::Error::UserFunctionError(
                        format!(
                            "insights times {:?} is not a histogram",
                            String::from_utf8_lossy(text)
                        )
                        .into(),
                    )
                })
            };
            let mut sum = read(0)?;
            sum.add(&read(1)?);
            Ok(sum.to_text())
        },
    )?;
    // `clarify_histogram_bump(h, bucket)`: `h` with one more time in `bucket`, or `h` as it is
    // for a NULL bucket. Deterministic; text that is not a histogram, or a bucket out of range,
    // fails the statement, as for `clarify_histogram_add`.
    conn.create_scalar_function(
        "clarify_histogram_bump",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let text = ctx
                .get_raw(0)
                .as_bytes()
                .map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))?;
            let bucket: Option<i64> = ctx.get(1)?;
            let Some(bucket) = bucket else {
                return Ok(String::from_utf8_lossy(text).into_owned());
            };
            usize::try_from(bucket)
                .ok()
                .and_then(|b| Histogram::bump_text(text, b))
                .ok_or_else(|| {
                    rusqlite::Error::UserFunctionError(
                        format!(
                            "insights times {:?} is not a histogram with a bucket {bucket}",
                            String::from_utf8_lossy(text)
                        )
                        .into(),
                    )
                })
        },
    )
}

/// Counts the requests resolved before the rollup existed (the migration that makes it). A row
/// that does not decode is left out of the figures, with a warning, rather than stopping the
/// store from opening.
pub(super) fn backfill(conn: &Connection) -> rusqlite::Result<()> {
    // The migration speaks rusqlite's errors; this carries the store's through as its source.
    backfill_rows(conn).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn backfill_rows(conn: &Connection) -> Result<(), StoreError> {
    let mut rollup = HashMap::new();
    let mut after = 0_i64;
    loop {
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS_BEFORE_RESOLVED_SEQ}, seq FROM requests WHERE seq > ?1 \
             AND status <> 'pending' ORDER BY seq LIMIT ?2"
        ))?;
        let rows = stmt.query_map(params![after, BACKFILL_BATCH], |r| {
            Ok((row_parts(r)?, r.get::<_, i64>(16)?))
        })?;
        let mut read = 0;
        for row in rows {
            let (parts, seq) = row?;
            after = seq;
            read += 1;
            match parts.decode() {
                Ok(record) => {
                    if let Some(rows) = rows_of(&record) {
                        fold(&mut rollup, rows);
                    }
                }
                Err(e) => {
                    tracing::warn!(seq, error = %e, "a resolved request left out of the insights")
                }
            }
        }
        if read < BACKFILL_BATCH {
            break;
        }
    }
    add(conn, Grain::Day, rollup)
}

impl SqliteBackend {
    /// The last day `tenant`'s coarser rollups hold (see `Store::insights`).
    pub(crate) async fn insights_compacted_through(
        &self,
        tenant: &str,
    ) -> Result<Option<i64>, StoreError> {
        self.read(|conn| Ok(Some(compacted_through(conn, tenant)?)))
    }

    /// Counts `tenant`'s day rows after the last compacted day up to `through` into the month
    /// and day-total rollups, in one write; returns the last day they now hold.
    pub(crate) async fn compact_insights(
        &self,
        tenant: &str,
        through: i64,
    ) -> Result<i64, StoreError> {
        let tenant = tenant.to_owned();
        self.write(move |conn| compact(conn, &tenant, through))
            .await
    }
}

/// Nothing compacted yet: before any day.
const NEVER: i64 = -1_000_000;

fn compacted_through(conn: &Connection, tenant: &str) -> Result<i64, StoreError> {
    Ok(conn
        .query_row(
            "SELECT through_day FROM insights_compacted WHERE tenant = ?1",
            params![tenant],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(NEVER))
}

fn compact(conn: &Connection, tenant: &str, through: i64) -> Result<i64, StoreError> {
    let done = compacted_through(conn, tenant)?;
    if through <= done {
        return Ok(done);
    }
    let mut days = HashMap::new();
    {
        let mut stmt = conn.prepare_cached(
            "SELECT day, agent, tool, surface, responder, ending, n, times, tag \
             FROM insights WHERE tenant = ?1 AND day > ?2 AND day <= ?3",
        )?;
        let rows = stmt.query_map(params![tenant, done, through], |r| {
            Ok((raw_row(r)?, r.get::<_, String>(8)?))
        })?;
        for row in rows {
            let (raw, tag) = row?;
            let (key, cell) = decode(tenant, tag, raw)?;
            fold(&mut days, vec![(key, cell)]);
        }
    }
    add(conn, Grain::Month, Grain::Month.of(&days))?;
    add(conn, Grain::Total, Grain::Total.of(&days))?;
    conn.execute(
        "INSERT INTO insights_compacted (tenant, through_day) VALUES (?1, ?2) \
         ON CONFLICT (tenant) DO UPDATE SET through_day = excluded.through_day",
        params![tenant, through],
    )?;
    Ok(through)
}
