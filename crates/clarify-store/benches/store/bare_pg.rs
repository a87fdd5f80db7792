//! The raw limit of PostgreSQL: the same writes as a round trip on a plain pool, with nothing of
//! clarify around them. Shared by the store's benchmark (`bare-pg`) and the HTTP benchmark's
//! `compare`, which includes this file by path, so both measure the same loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The answers a bare round trip stores.
pub(crate) const ANSWERS: &str = r#"{"q1":{"option":"yes"}}"#;

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// PostgreSQL round trips/s with `clients` concurrent clients on a plain pool: per round
/// trip one commit inserting a request row and an event row, one updating it to answered
/// and inserting an event row. No advisory lock, no NOTIFY. The tables are this process's
/// own, dropped at the end.
pub(crate) async fn postgres(
    url: &str,
    spec: &str,
    clients: usize,
    duration: Duration,
) -> Option<f64> {
    use sqlx::postgres::PgPoolOptions;
    let pool = match PgPoolOptions::new()
        .max_connections(clients as u32)
        .connect(url)
        .await
    {
        Ok(pool) => pool,
        Err(e) => {
            println!("bare-pg: skipped ({e})");
            return None;
        }
    };
    let pid = std::process::id();
    let (requests, events) = (
        format!("bench_bare_requests_{pid}"),
        format!("bench_bare_events_{pid}"),
    );
    for sql in [
        format!("DROP TABLE IF EXISTS {requests}, {events}"),
        format!(
            "CREATE TABLE {requests} (id TEXT PRIMARY KEY, status TEXT NOT NULL, \
             spec TEXT NOT NULL, created_at BIGINT NOT NULL, resolved_at BIGINT, answers TEXT)"
        ),
        format!(
            "CREATE TABLE {events} (seq BIGSERIAL PRIMARY KEY, request_id TEXT NOT NULL, \
             kind TEXT NOT NULL, at BIGINT NOT NULL)"
        ),
    ] {
        sqlx::query(&sql)
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("bare-pg: {sql}: {e}"));
    }
    let spec: Arc<str> = Arc::from(spec);
    let trips = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let sql = Arc::new([
        format!(
            "INSERT INTO {requests} (id, status, spec, created_at) VALUES ($1, 'pending', $2, $3)"
        ),
        format!("INSERT INTO {events} (request_id, kind, at) VALUES ($1, $2, $3)"),
        format!(
            "UPDATE {requests} SET status = 'answered', resolved_at = $2, answers = $3 \
             WHERE id = $1 AND status = 'pending'"
        ),
    ]);
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (pool, spec, trips, sql) = (pool.clone(), spec.clone(), trips.clone(), sql.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while started.elapsed() < duration {
                    n += 1;
                    let id = format!("{pid:08x}{client:08x}{n:016x}");
                    pg_round_trip(&pool, &sql, &spec, &id)
                        .await
                        .unwrap_or_else(|e| panic!("bare-pg: {e}"));
                    trips.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let rate = trips.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let _ = sqlx::query(&format!("DROP TABLE IF EXISTS {requests}, {events}"))
        .execute(&pool)
        .await;
    pool.close().await;
    Some(rate)
}

/// One round trip's two commits.
async fn pg_round_trip(
    pool: &sqlx::PgPool,
    sql: &[String; 3],
    spec: &str,
    id: &str,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let at = now_ms();
    sqlx::query(&sql[0])
        .bind(id)
        .bind(spec)
        .bind(at)
        .execute(&mut *tx)
        .await?;
    sqlx::query(&sql[1])
        .bind(id)
        .bind("created")
        .bind(at)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    let mut tx = pool.begin().await?;
    let at = now_ms();
    sqlx::query(&sql[2])
        .bind(id)
        .bind(at)
        .bind(ANSWERS)
        .execute(&mut *tx)
        .await?;
    sqlx::query(&sql[1])
        .bind(id)
        .bind("answered")
        .bind(at)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}
