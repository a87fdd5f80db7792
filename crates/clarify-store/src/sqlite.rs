//! The SQLite backend: the embedded default.
//!
//! Writes use group commit with a leader. Every write joins a queue; the caller that finds the
//! writing connection free becomes the leader: it takes every queued write (up to [`MAX_BATCH`]),
//! runs each in its own savepoint inside one `BEGIN IMMEDIATE` transaction, commits once, and only
//! then gives each caller its result. A lone agent thus pays no hand-off to another thread, and
//! many concurrent agents share one commit. A failing write rolls back only its own savepoint; a
//! failed commit fails every write of the batch, so nothing is half-written. WAL checkpoints run
//! on a background thread, so no write waits for one.
//!
//! Reads use a small pool of separate connections; in WAL mode they never block the writer and
//! see every committed write. They are short indexed lookups and run on the calling task.
//!
//! Durability: WAL with `synchronous=NORMAL`. A committed write survives a crash of the process
//! (the crash tests kill it with SIGKILL); a power loss may lose the last moments of commits.
//! Another process sharing the file sees writes at once; its waiters are woken by the store's
//! event-log poller.

use std::sync::Mutex;
use std::thread;

use chrono::{DateTime, Utc};
use clarify_core::Status;
use clarify_core::policy::Grant;
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use tokio::sync::oneshot;

use crate::backend::{NewRow, Resolved};
use crate::codec::{
    COLUMNS, EVENT_COLUMNS, EventParts, RowParts, SCHEMA_VERSION, answers_json, millis, spec_json,
};
use crate::error::StoreError;
use crate::record::{
    Created, Event, EventKind, ListQuery, Page, RequestRecord, StoredResolution, encode_cursor,
};

/// The most writes grouped into one commit.
const MAX_BATCH: usize = 512;
/// Idle reader connections kept open.
const MAX_IDLE_READERS: usize = 8;

const SCHEMA: &str = "
CREATE TABLE requests (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    status TEXT NOT NULL,
    session TEXT,
    agent TEXT,
    spec TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    resolved_at INTEGER,
    answered_by TEXT,
    channel TEXT,
    answers TEXT,
    idempotency_key TEXT,
    dedupe_key TEXT
);
CREATE UNIQUE INDEX requests_idempotency ON requests (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX requests_tenant ON requests (tenant, seq);
CREATE INDEX requests_status ON requests (tenant, status, seq);
CREATE INDEX requests_session ON requests (tenant, session, seq) WHERE session IS NOT NULL;
CREATE INDEX requests_agent ON requests (tenant, agent, seq) WHERE agent IS NOT NULL;
CREATE INDEX requests_due ON requests (expires_at)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
CREATE INDEX requests_dedupe ON requests (tenant, dedupe_key)
    WHERE status = 'pending' AND dedupe_key IS NOT NULL;
CREATE TABLE request_tags (
    tenant TEXT NOT NULL,
    tag TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (tenant, tag, seq)
) WITHOUT ROWID;
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT,
    channel TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX events_tenant ON events (tenant, seq);
CREATE TABLE grants (
    tenant TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    scope TEXT NOT NULL,
    session TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, tool, arguments, scope, session)
) WITHOUT ROWID;
";

/// Runs once the batch's commit outcome is known, with that outcome.
type Completion = Box<dyn FnOnce(Result<(), StoreError>) + Send>;
/// A write: runs on the writer's connection (or learns that the batch could not start).
type Job = Box<dyn FnOnce(Result<&Connection, StoreError>) -> Completion + Send>;

pub(crate) struct SqliteBackend {
    path: String,
    queue: Mutex<Vec<Job>>,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Dropped with the backend, which stops the checkpoint thread.
    _checkpointer: std::sync::mpsc::Sender<()>,
}

impl std::fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteBackend")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteBackend {
    pub(crate) async fn open(path: &str) -> Result<Self, StoreError> {
        let path = path.to_owned();
        let writer = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || open_writer(&path))
                .await
                .map_err(|e| StoreError::Backend(e.to_string()))??
        };
        let (stop, stopped) = std::sync::mpsc::channel();
        let checkpoint_path = path.clone();
        thread::Builder::new()
            .name("clarify-sqlite-checkpoint".to_owned())
            .spawn(move || run_checkpoints(&checkpoint_path, &stopped))
            .map_err(|e| StoreError::Backend(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Self {
            path,
            queue: Mutex::new(Vec::new()),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            _checkpointer: stop,
        })
    }

    /// Runs `f` inside the next group commit and returns its result once committed.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let result = conn.and_then(|conn| in_savepoint(conn, f));
            Box::new(move |commit: Result<(), StoreError>| {
                let _ = tx.send(commit.and(result));
            })
        });
        lock(&self.queue).push(job);
        self.lead();
        rx.await
            .map_err(|_| StoreError::Backend("a SQLite write was dropped".to_owned()))?
    }

    /// Commits queued writes while the writing connection is free. A write queued by a caller
    /// that found the connection busy is picked up by the current leader: the queue is checked
    /// again after the connection is released, so no write is left behind.
    fn lead(&self) {
        loop {
            {
                let Ok(conn) = self.writer.try_lock() else {
                    return;
                };
                loop {
                    let batch: Vec<Job> = {
                        let mut queue = lock(&self.queue);
                        let n = queue.len().min(MAX_BATCH);
                        queue.drain(..n).collect()
                    };
                    if batch.is_empty() {
                        break;
                    }
                    commit_batch(&conn, batch);
                }
            }
            if lock(&self.queue).is_empty() {
                return;
            }
        }
    }

    /// Runs a read on a pooled connection.
    fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let pooled = self.lock_readers().pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => open_reader(&self.path)?,
        };
        let result = f(&conn);
        let mut readers = self.lock_readers();
        if readers.len() < MAX_IDLE_READERS {
            readers.push(conn);
        }
        result
    }

    fn lock_readers(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        lock(&self.readers)
    }

    pub(crate) async fn create(&self, row: NewRow) -> Result<Created, StoreError> {
        let spec = spec_json(&row.request)?;
        self.write(move |conn| create(conn, row, &spec)).await
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        self.read(|conn| get(conn, id))
    }

    pub(crate) async fn list(
        &self,
        tenant: &str,
        q: &ListQuery,
        before: Option<u64>,
    ) -> Result<Page, StoreError> {
        let limit = q.effective_limit();
        let before = before.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX));
        let mut sql;
        let mut args: Vec<rusqlite::types::Value> = vec![tenant.to_owned().into()];
        if let Some(tag) = &q.tag {
            sql = format!(
                "SELECT {}, r.seq FROM request_tags t JOIN requests r ON r.seq = t.seq \
                 WHERE t.tenant = ?1 AND t.tag = ?2 AND t.seq < ?3",
                prefixed("r")
            );
            args.push(tag.clone().into());
        } else {
            sql =
                format!("SELECT {COLUMNS}, seq FROM requests r WHERE r.tenant = ?1 AND r.seq < ?2");
        }
        args.push(before.into());
        let mut filter = |column: &str, value: &str| {
            args.push(value.to_owned().into());
            sql.push_str(&format!(" AND r.{column} = ?{}", args.len()));
        };
        if let Some(status) = q.status {
            filter("status", status.as_str());
        }
        if let Some(session) = &q.session {
            filter("session", session);
        }
        if let Some(agent) = &q.agent {
            filter("agent", agent);
        }
        sql.push_str(&format!(" ORDER BY r.seq DESC LIMIT {}", limit + 1));

        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), |row| {
                Ok((row_parts(row)?, row.get::<_, i64>(10)?))
            })?;
            let mut records = Vec::with_capacity(limit);
            let mut next_cursor = None;
            for row in rows {
                let (parts, seq) = row?;
                if records.len() == limit {
                    next_cursor = records
                        .last()
                        .map(|(_, s): &(RequestRecord, i64)| encode_cursor(*s as u64));
                    break;
                }
                records.push((parts.decode()?, seq));
            }
            Ok(Page {
                records: records.into_iter().map(|(r, _)| r).collect(),
                next_cursor,
            })
        })
    }

    pub(crate) async fn resolve(
        &self,
        id: &str,
        res: StoredResolution,
    ) -> Result<Resolved, StoreError> {
        let id = id.to_owned();
        let answers = answers_json(&res.resolution)?;
        self.write(move |conn| resolve(conn, &id, &res, answers.as_deref()))
            .await
    }

    pub(crate) async fn expire_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| {
            let now_ms = millis(now);
            let expired: Vec<(String, String)> = {
                let mut stmt = conn.prepare_cached(
                    "UPDATE requests SET status = 'expired', resolved_at = ?1, answered_by = NULL, \
                     channel = 'system' WHERE seq IN (SELECT seq FROM requests WHERE status = 'pending' \
                     AND expires_at IS NOT NULL AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2) \
                     RETURNING id, tenant",
                )?;
                let rows = stmt.query_map(params![now_ms, limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            for (id, tenant) in &expired {
                append_event(conn, tenant, id, EventKind::Expired, None, Some("system"), now_ms)?;
            }
            Ok(expired.into_iter().map(|(id, _)| id).collect())
        })
        .await
    }

    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events \
                 WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2) ORDER BY seq LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![after, tenant, limit as i64], |r| {
                Ok(EventParts {
                    seq: r.get(0)?,
                    tenant: r.get(1)?,
                    request_id: r.get(2)?,
                    kind: r.get(3)?,
                    actor: r.get(4)?,
                    channel: r.get(5)?,
                    at: r.get(6)?,
                })
            })?;
            rows.map(|row| row?.decode()).collect()
        })
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            let seq: i64 =
                conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
            Ok(u64::try_from(seq).unwrap_or(0))
        })
    }

    pub(crate) async fn add_grant(
        &self,
        tenant: &str,
        grant: &Grant,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let (tenant, grant) = (tenant.to_owned(), grant.clone());
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT OR IGNORE INTO grants (tenant, tool, arguments, scope, session, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                tenant,
                grant.tool,
                grant.arguments,
                grant.scope.as_str(),
                grant.session.as_deref().unwrap_or(""),
                millis(at)
            ])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn grants(&self, tenant: &str, tool: &str) -> Result<Vec<Grant>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT tool, arguments, scope, session FROM grants WHERE tenant = ?1 AND tool = ?2 \
                 ORDER BY created_at",
            )?;
            let rows = stmt.query_map(params![tenant, tool], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })?;
            let mut grants = Vec::new();
            for row in rows {
                let (tool, arguments, scope, session) = row?;
                let scope = clarify_core::Scope::parse(&scope)
                    .ok_or_else(|| StoreError::Corrupt(format!("grant scope {scope:?}")))?;
                grants.push(Grant {
                    tool,
                    arguments,
                    scope,
                    session: (!session.is_empty()).then_some(session),
                });
            }
            Ok(grants)
        })
    }

    // STUB-BEGIN (access methods, to be implemented)
    pub(crate) async fn insert_key(&self, _row: crate::access::KeyRow) -> Result<bool, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn key(&self, _id: &str) -> Result<Option<crate::access::KeyRow>, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn keys(&self) -> Result<Vec<crate::access::ApiKey>, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn revoke_key(
        &self,
        _name: &str,
        _at: DateTime<Utc>,
    ) -> Result<Option<crate::access::ApiKey>, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn key_count(&self) -> Result<u64, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn insert_token(
        &self,
        _kind: crate::access::TokenKind,
        _digest: &str,
        _key_id: &str,
        _expires_at: DateTime<Utc>,
        _now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn redeem_token(
        &self,
        _kind: crate::access::TokenKind,
        _digest: &str,
        _now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn delete_token(&self, _digest: &str) -> Result<(), StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn secret(
        &self,
        _name: &str,
        _candidate: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn claim_deliveries(
        &self,
        _now: DateTime<Utc>,
        _lease_until: DateTime<Utc>,
        _limit: usize,
    ) -> Result<Vec<crate::access::Delivery>, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn finish_attempt(
        &self,
        _id: u64,
        _attempt: crate::access::Attempt,
        _after: crate::access::AfterAttempt,
    ) -> Result<(), StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    pub(crate) async fn deliveries(
        &self,
        _request_id: &str,
    ) -> Result<Vec<crate::access::Delivery>, StoreError> {
        Err(StoreError::Backend("unimplemented".into()))
    }
    // STUB-END
    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        self.read(|conn| {
            conn.query_row("SELECT 1", [], |_| Ok(()))?;
            Ok(())
        })
    }

    pub(crate) async fn count_pending(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            let n: i64 = conn.query_row(
                "SELECT count(*) FROM requests WHERE status = 'pending'",
                [],
                |r| r.get(0),
            )?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }
}

fn create(conn: &Connection, row: NewRow, spec: &str) -> Result<Created, StoreError> {
    if let Some(key) = &row.request.idempotency_key {
        let existing = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM requests WHERE tenant = ?1 AND idempotency_key = ?2"
            ))?
            .query_row(params![row.tenant, key], row_parts)
            .optional()?;
        if let Some(parts) = existing {
            return Ok(Created {
                record: parts.decode()?,
                created: false,
            });
        }
    }
    if let Some(key) = &row.dedupe_key {
        let existing = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM requests WHERE tenant = ?1 AND dedupe_key = ?2 \
                 AND status = 'pending' AND session IS ?3 ORDER BY seq LIMIT 1"
            ))?
            .query_row(params![row.tenant, key, row.request.session], row_parts)
            .optional()?;
        if let Some(parts) = existing {
            return Ok(Created {
                record: parts.decode()?,
                created: false,
            });
        }
    }
    let created_ms = millis(row.created_at);
    conn.prepare_cached(
        "INSERT INTO requests (id, tenant, status, session, agent, spec, created_at, expires_at, \
         idempotency_key, dedupe_key) VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        row.id,
        row.tenant,
        row.request.session,
        row.request.agent,
        spec,
        created_ms,
        row.expires_at.map(millis),
        row.request.idempotency_key,
        row.dedupe_key,
    ])?;
    let seq = conn.last_insert_rowid();
    if !row.request.tags.is_empty() {
        let mut stmt =
            conn.prepare_cached("INSERT INTO request_tags (tenant, tag, seq) VALUES (?1, ?2, ?3)")?;
        for tag in &row.request.tags {
            stmt.execute(params![row.tenant, tag, seq])?;
        }
    }
    append_event(
        conn,
        &row.tenant,
        &row.id,
        EventKind::Created,
        None,
        None,
        created_ms,
    )?;
    Ok(Created {
        record: row.into_record(),
        created: true,
    })
}

fn get(conn: &Connection, id: &str) -> Result<Option<RequestRecord>, StoreError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM requests WHERE id = ?1"))?
        .query_row(params![id], row_parts)
        .optional()?
        .map(RowParts::decode)
        .transpose()
}

fn resolve(
    conn: &Connection,
    id: &str,
    res: &StoredResolution,
    answers: Option<&str>,
) -> Result<Resolved, StoreError> {
    let status = res.resolution.status();
    let at = millis(res.resolved_at);
    let expiring = status == Status::Expired;
    let updated = conn
        .prepare_cached(&format!(
            "UPDATE requests SET status = ?2, resolved_at = ?3, answered_by = ?4, channel = ?5, \
             answers = ?6 WHERE id = ?1 AND status = 'pending' AND CASE WHEN ?7 \
             THEN expires_at IS NOT NULL AND expires_at <= ?3 \
             ELSE expires_at IS NULL OR expires_at > ?3 END RETURNING {COLUMNS}"
        ))?
        .query_row(
            params![
                id,
                status.as_str(),
                at,
                res.actor.name,
                res.actor.channel,
                answers,
                expiring
            ],
            row_parts,
        )
        .optional()?;
    match updated {
        Some(parts) => {
            let record = parts.decode()?;
            append_event(
                conn,
                &record.tenant,
                id,
                EventKind::for_status(status),
                res.actor.name.as_deref(),
                Some(&res.actor.channel),
                at,
            )?;
            Ok(Resolved::Won(record))
        }
        None => Ok(match get(conn, id)? {
            Some(record) => Resolved::Lost(record),
            None => Resolved::NotFound,
        }),
    }
}

fn append_event(
    conn: &Connection,
    tenant: &str,
    request_id: &str,
    kind: EventKind,
    actor: Option<&str>,
    channel: Option<&str>,
    at: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO events (tenant, request_id, kind, actor, channel, at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        tenant,
        request_id,
        kind.as_str(),
        actor,
        channel,
        at
    ])?;
    Ok(())
}

fn row_parts(row: &rusqlite::Row<'_>) -> rusqlite::Result<RowParts> {
    Ok(RowParts {
        id: row.get(0)?,
        tenant: row.get(1)?,
        status: row.get(2)?,
        spec: row.get(3)?,
        created_at: row.get(4)?,
        expires_at: row.get(5)?,
        resolved_at: row.get(6)?,
        answered_by: row.get(7)?,
        channel: row.get(8)?,
        answers: row.get(9)?,
    })
}

fn prefixed(alias: &str) -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn in_savepoint<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    conn.execute_batch("SAVEPOINT job")?;
    match f(conn) {
        Ok(v) => {
            conn.execute_batch("RELEASE job")?;
            Ok(v)
        }
        Err(e) => {
            conn.execute_batch("ROLLBACK TO job; RELEASE job")?;
            Err(e)
        }
    }
}

fn commit_batch(conn: &Connection, batch: Vec<Job>) {
    let completions: Vec<Completion> = match conn.execute_batch("BEGIN IMMEDIATE") {
        Ok(()) => batch.into_iter().map(|job| job(Ok(conn))).collect(),
        Err(e) => {
            let err = StoreError::from(e);
            batch.into_iter().map(|job| job(Err(err.clone()))).collect()
        }
    };
    let commit = if conn.is_autocommit() {
        // BEGIN failed: the jobs already carry the error.
        Ok(())
    } else {
        conn.execute_batch("COMMIT").map_err(|e| {
            let _ = conn.execute_batch("ROLLBACK");
            StoreError::from(e)
        })
    };
    for complete in completions {
        complete(commit.clone());
    }
}

/// Checkpoints the WAL into the database file every 200 ms (writes never wait for it), until
/// the backend is dropped.
fn run_checkpoints(path: &str, stop: &std::sync::mpsc::Receiver<()>) {
    let Ok(conn) = open_reader(path) else {
        tracing::warn!(%path, "cannot open a checkpoint connection; the WAL will grow");
        return;
    };
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
        stop.recv_timeout(std::time::Duration::from_millis(200))
    {
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!(%path, error = %e, "WAL checkpoint failed");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // Checkpoints run on their own thread (see `run_checkpoints`).
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    // Reading pages through a memory map saves a system call per page.
    conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
    Ok(())
}

fn classify(path: &str, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotADatabase {
            path: path.to_owned(),
            detail: e.to_string(),
        },
        Some(ErrorCode::CannotOpen) => StoreError::Unavailable(format!("cannot open {path}: {e}")),
        _ => StoreError::Backend(format!("{path}: {e}")),
    }
}

fn open_writer(path: &str) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(|e| classify(path, e))?;
    let setup = || -> rusqlite::Result<i64> {
        configure(&conn)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(%path, %mode, "SQLite did not switch to WAL mode");
        }
        conn.query_row("PRAGMA user_version", [], |r| r.get(0))
    };
    let version = setup().map_err(|e| classify(path, e))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < SCHEMA_VERSION {
        migrate(&conn).map_err(|e| classify(path, e))?;
    }
    Ok(conn)
}

/// Brings the schema up to [`SCHEMA_VERSION`] in one transaction.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    // Another process may have migrated while we waited for the lock.
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let result = (|| {
        if current < 1 {
            conn.execute_batch(SCHEMA)?;
        }
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

fn open_reader(path: &str) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(|e| classify(path, e))?;
    configure(&conn).map_err(|e| classify(path, e))?;
    Ok(conn)
}
