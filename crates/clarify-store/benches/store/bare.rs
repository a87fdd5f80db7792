//! Raw limits: the same writes as a round trip, with nothing of the store around them, so the
//! store's figures read as a share of what the database itself allows.

use std::time::{Duration, Instant};

use rusqlite::{Connection, params};

use crate::bare_pg::{ANSWERS, now_ms};

/// The canonical JSON of the bench request, as the store keeps it.
pub(crate) fn spec() -> String {
    serde_json::to_string(&crate::request()).unwrap_or_else(|e| panic!("spec: {e}"))
}

/// SQLite round trips/s: a create (request row and event row) and an answer (the request
/// updated to answered, an event row) per round trip, on one connection set up with the
/// store writer's pragmas, `batch` writes per commit. No reads, no checkpoints.
pub(crate) fn sqlite(path: &std::path::Path, batch: usize, duration: Duration) -> f64 {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let conn = Connection::open(path).unwrap_or_else(|e| panic!("open: {e}"));
    let setup = || -> rusqlite::Result<()> {
        // As `configure` and `open_writer` in the store's sqlite/mod.rs.
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        conn.pragma_update(None, "journal_size_limit", 256i64 << 20)?;
        conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.execute_batch(
            "CREATE TABLE requests (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, \
             status TEXT NOT NULL, spec TEXT NOT NULL, created_at INTEGER NOT NULL, \
             resolved_at INTEGER, answers TEXT);
             CREATE TABLE events (seq INTEGER PRIMARY KEY, request_id TEXT NOT NULL, \
             kind TEXT NOT NULL, at INTEGER NOT NULL);",
        )
    };
    setup().unwrap_or_else(|e| panic!("bare sqlite setup: {e}"));
    let spec = spec();
    let mut next = 0u64;
    let mut trips = 0u64;
    let started = Instant::now();
    let mut run = || -> rusqlite::Result<u64> {
        while started.elapsed() < duration {
            // `batch` writes per commit: half of them creates, then as many answers.
            let ids: Vec<String> = (0..batch.div_ceil(2).max(1))
                .map(|_| {
                    next += 1;
                    format!("{next:032x}")
                })
                .collect();
            for answering in [false, true] {
                let per_commit = if batch == 1 { 1 } else { ids.len() };
                for chunk in ids.chunks(per_commit) {
                    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
                    for id in chunk {
                        let at = now_ms();
                        if answering {
                            conn.prepare_cached(
                                "UPDATE requests SET status = 'answered', resolved_at = ?2, \
                                 answers = ?3 WHERE id = ?1 AND status = 'pending'",
                            )?
                            .execute(params![id, at, ANSWERS])?;
                        } else {
                            conn.prepare_cached(
                                "INSERT INTO requests (id, status, spec, created_at) \
                                 VALUES (?1, 'pending', ?2, ?3)",
                            )?
                            .execute(params![id, spec, at])?;
                        }
                        conn.prepare_cached(
                            "INSERT INTO events (request_id, kind, at) VALUES (?1, ?2, ?3)",
                        )?
                        .execute(params![
                            id,
                            if answering { "answered" } else { "created" },
                            at
                        ])?;
                    }
                    conn.prepare_cached("COMMIT")?.execute([])?;
                }
            }
            trips += ids.len() as u64;
        }
        Ok(trips)
    };
    let trips = run().unwrap_or_else(|e| panic!("bare sqlite: {e}"));
    trips as f64 / started.elapsed().as_secs_f64()
}
