//! AG-UI runs waiting for people (see the store's `agui` module): inserted, read by thread,
//! claimed with a lease by one conditional update, released, finished.

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;

use super::{PgBackend, corrupt_row, db_err};
use crate::AguiRun;
use crate::codec::{from_millis, millis};
use crate::error::StoreError;

const COLUMNS: &str = "id, tenant, agent, thread_id, data, done, lease_until, created_at, events";
const READ: &str = "id, tenant, agent, thread_id, data, done, lease_until, created_at, events, seq";

fn run(row: &PgRow) -> Result<AguiRun, StoreError> {
    let lease: Option<i64> = row.try_get("lease_until").map_err(corrupt_row)?;
    let created: i64 = row.try_get("created_at").map_err(corrupt_row)?;
    Ok(AguiRun {
        id: row.try_get("id").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        agent: row.try_get("agent").map_err(corrupt_row)?,
        thread_id: row.try_get("thread_id").map_err(corrupt_row)?,
        data: row.try_get("data").map_err(corrupt_row)?,
        done: row.try_get("done").map_err(corrupt_row)?,
        lease_until: lease.and_then(from_millis),
        created_at: from_millis(created).unwrap_or_default(),
        events: row.try_get("events").map_err(corrupt_row)?,
        seq: u64::try_from(row.try_get::<i64, _>("seq").map_err(corrupt_row)?).unwrap_or_default(),
    })
}

impl PgBackend {
    pub(crate) async fn agui_insert(&self, run: AguiRun) -> Result<u64, StoreError> {
        let seq: i64 = sqlx::query_scalar(&format!(
            "INSERT INTO clarify_agui_runs ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             RETURNING seq"
        ))
        .bind(&run.id)
        .bind(&run.tenant)
        .bind(&run.agent)
        .bind(&run.thread_id)
        .bind(&run.data)
        .bind(run.done)
        .bind(run.lease_until.map(millis))
        .bind(millis(run.created_at))
        .bind(&run.events)
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(u64::try_from(seq).unwrap_or_default())
    }

    pub(crate) async fn agui_runs(
        &self,
        tenant: &str,
        agent: &str,
        thread_id: &str,
    ) -> Result<Vec<AguiRun>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {READ} FROM clarify_agui_runs \
             WHERE tenant = $1 AND agent = $2 AND thread_id = $3 ORDER BY seq"
        ))
        .bind(tenant)
        .bind(agent)
        .bind(thread_id)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(run).collect()
    }

    pub(crate) async fn agui_waiting(
        &self,
        now: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<AguiRun>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {READ} FROM clarify_agui_runs WHERE NOT done AND seq > $3 \
             AND (lease_until IS NULL OR lease_until <= $1) ORDER BY seq LIMIT $2"
        ))
        .bind(millis(now))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(run).collect()
    }

    pub(crate) async fn agui_claim(
        &self,
        id: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE clarify_agui_runs SET lease_until = $3 WHERE id = $1 AND NOT done \
             AND (lease_until IS NULL OR lease_until <= $2)",
        )
        .bind(id)
        .bind(millis(now))
        .bind(millis(until))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() == 1)
    }

    pub(crate) async fn agui_release(
        &self,
        id: &str,
        at: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE clarify_agui_runs SET lease_until = $2 WHERE id = $1")
            .bind(id)
            .bind(at.map(millis))
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn agui_finish(
        &self,
        id: &str,
        events: Option<String>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE clarify_agui_runs SET done = true, lease_until = NULL, \
             events = coalesce($2, events) WHERE id = $1",
        )
        .bind(id)
        .bind(events)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }
}
