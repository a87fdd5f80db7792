//! AG-UI runs waiting for people (see the store's `agui` module): inserted, read by thread,
//! claimed with a lease by one conditional update, released, finished.

use chrono::{DateTime, Utc};
use rusqlite::params;

use super::SqliteBackend;
use crate::AguiRun;
use crate::codec::{from_millis, millis};
use crate::error::StoreError;

const COLUMNS: &str = "id, tenant, agent, thread_id, data, done, lease_until, created_at, events";
const READ: &str = "id, tenant, agent, thread_id, data, done, lease_until, created_at, events, seq";

fn run(row: &rusqlite::Row<'_>) -> rusqlite::Result<AguiRun> {
    let lease: Option<i64> = row.get(6)?;
    let created: i64 = row.get(7)?;
    Ok(AguiRun {
        id: row.get(0)?,
        tenant: row.get(1)?,
        agent: row.get(2)?,
        thread_id: row.get(3)?,
        data: row.get(4)?,
        done: row.get(5)?,
        lease_until: lease.and_then(from_millis),
        created_at: from_millis(created).unwrap_or_default(),
        events: row.get(8)?,
        seq: row
            .get::<_, i64>(9)
            .map(|s| u64::try_from(s).unwrap_or_default())?,
    })
}

impl SqliteBackend {
    pub(crate) async fn agui_insert(&self, run: AguiRun) -> Result<u64, StoreError> {
        self.write(move |conn| {
            conn.prepare_cached(&format!(
                "INSERT INTO agui_runs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?
            .execute(params![
                run.id,
                run.tenant,
                run.agent,
                run.thread_id,
                run.data,
                run.done,
                run.lease_until.map(millis),
                millis(run.created_at),
                run.events,
            ])?;
            Ok(u64::try_from(conn.last_insert_rowid()).unwrap_or_default())
        })
        .await
    }

    pub(crate) async fn agui_runs(
        &self,
        tenant: &str,
        agent: &str,
        thread_id: &str,
    ) -> Result<Vec<AguiRun>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {READ} FROM agui_runs \
                 WHERE tenant = ?1 AND agent = ?2 AND thread_id = ?3 ORDER BY seq"
            ))?;
            let rows = stmt
                .query_map(params![tenant, agent, thread_id], run)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub(crate) async fn agui_waiting(
        &self,
        now: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<AguiRun>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {READ} FROM agui_runs WHERE done = 0 AND seq > ?3 \
                 AND (lease_until IS NULL OR lease_until <= ?1) ORDER BY seq LIMIT ?2"
            ))?;
            let rows = stmt
                .query_map(params![millis(now), limit, after], run)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub(crate) async fn agui_claim(
        &self,
        id: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let id = id.to_owned();
        self.write(move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE agui_runs SET lease_until = ?3 WHERE id = ?1 AND done = 0 \
                     AND (lease_until IS NULL OR lease_until <= ?2)",
                )?
                .execute(params![id, millis(now), millis(until)])?;
            Ok(changed == 1)
        })
        .await
    }

    pub(crate) async fn agui_release(
        &self,
        id: &str,
        at: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.write(move |conn| {
            conn.prepare_cached("UPDATE agui_runs SET lease_until = ?2 WHERE id = ?1")?
                .execute(params![id, at.map(millis)])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn agui_finish(
        &self,
        id: &str,
        events: Option<String>,
    ) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE agui_runs SET done = 1, lease_until = NULL, \
                 events = coalesce(?2, events) WHERE id = ?1",
            )?
            .execute(params![id, events])?;
            Ok(())
        })
        .await
    }
}
