//! The SQLite backend: the embedded default.
//!
//! Writes use group commit with a leader. Every write joins a queue; the caller that finds the
//! writing connection free becomes the leader: it takes every queued write (up to [`MAX_BATCH`]),
//! runs each in its own savepoint inside one `BEGIN IMMEDIATE` transaction (a write alone in its
//! batch needs none), commits once, and only then gives each caller its result. A lone agent thus
//! pays no hand-off to another thread, and many concurrent agents share one commit. A failing
//! write rolls back only its own savepoint (alone, its transaction); a failed commit fails every
//! write of the batch, so nothing is half-written. WAL checkpoints run on a background thread, so
//! no write waits for one; only when the WAL has grown past [`WAL_RESTART_BYTES`] (writes that
//! never pause keep a passive checkpoint from ever letting it start over) does the writer,
//! between two group commits, finish the checkpoint and start the WAL over, so the WAL stays
//! bounded.
//!
//! Everything that must happen once is a write, so the single writer settles it: a login token is
//! used up by one `DELETE ... RETURNING`, a delivery claim chooses and leases in one `UPDATE`, and
//! a webhook delivery is queued in the savepoint of the resolution it reports.
//!
//! Reads use a small pool of separate connections; in WAL mode they never block the writer and
//! see every committed write. They are short indexed lookups and run on the calling task. A
//! request read by id goes to the writing connection instead when it is free: its page cache is
//! current, where a pooled connection drops its cache after every write by another connection.
//! What a request's stored JSON decodes to is kept by id for the rows read again in a round
//! trip, and used only while the row's text is the same (see `Decoded`); every statement on the
//! write path is prepared once per connection.
//!
//! Durability: WAL with `synchronous=NORMAL` by default. A committed write survives a crash of
//! the process (the crash tests kill it with SIGKILL); a power loss may lose the last moments of
//! commits. [`Durability::Full`] (`--durability full`) makes the writer `synchronous=FULL`: each
//! group commit is fsynced before any of its writes is acknowledged.
//! Another process sharing the file sees writes at once; its waiters are woken by the store's
//! event-log poller.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::thread;

use chrono::{DateTime, Utc};
use clarify_core::{Answers, NewRequest, Resolution, Status};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use tokio::sync::oneshot;

use crate::Durability;
use crate::access::{AfterAttempt, ApiKey, Attempt, Delivery, KeyRow, Outbox, TokenKind};
use crate::audit;
use crate::backend::{Ballot, Cast, NewRow, Resolved, Tally, tally};
use crate::codec::{
    ATTEMPT_COLUMNS, AttemptParts, COLUMNS, DELIVERY_COLUMNS, DeliveryParts, EVENT_COLUMNS,
    EventParts, KEY_COLUMNS, KeyParts, RowParts, SCHEMA_VERSION, after_attempt, answers_json,
    attempt_values, millis, reaped_callback_url, reminder_period, spec_json, votes_json,
};
use crate::error::StoreError;
use crate::grant::{GRANT_COLUMNS, GrantFilter, GrantParts, StoredGrant};
use crate::record::{
    Actor, Created, Event, EventKind, ListQuery, Page, RequestRecord, StoredResolution,
    encode_cursor,
};

/// The most writes grouped into one commit.
const MAX_BATCH: usize = 512;
/// Idle reader connections kept open.
const MAX_IDLE_READERS: usize = 8;
/// Requests whose decoded form is kept (see [`Decoded`]), and how much of their stored text: a
/// round trip needs only its own request, and requests may be up to tens of kilobytes each.
const MAX_DECODED: usize = 1024;
const MAX_DECODED_BYTES: usize = 1 << 20;
/// How often the WAL is checkpointed.
const CHECKPOINT_PERIOD: std::time::Duration = std::time::Duration::from_millis(200);
/// The WAL is made to start over once it holds more than this (see [`run_checkpoints`]).
const WAL_RESTART_BYTES: i64 = 64 << 20;
/// The WAL file is cut back to this size when it starts over. It is above what the WAL reaches
/// between two restarts under constant writes, so the file keeps its blocks and a restarted WAL
/// overwrites them in place: cut back to the restart size, it would be extended, and its blocks
/// allocated and zeroed, again after every restart, which cost a lone agent about a sixth of
/// its round trips. A WAL that a long reader let grow is still cut back.
const JOURNAL_SIZE_LIMIT: i64 = 256 << 20;
/// How long a checkpoint that restarts the WAL waits for readers to leave it.
const RESTART_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
/// How long a statement waits for a lock another connection holds.
const WRITE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// Prepared statements kept per connection: every statement of the write path and of the
/// reads fits, so none is compiled again.
const STATEMENT_CACHE: usize = 64;

/// Schema version 1: requests, their tags, the event log and grants.
const SCHEMA_V1: &str = "
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

/// Schema version 2: API keys, login and session tokens, server secrets, webhook deliveries.
const SCHEMA_V2: &str = "
CREATE TABLE keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    tenant TEXT NOT NULL,
    digest TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
-- An active name is unique; a revoked key keeps its name, which a new key may reuse.
CREATE UNIQUE INDEX keys_active_name ON keys (name) WHERE revoked_at IS NULL;
CREATE TABLE tokens (
    digest TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    key_id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tokens_key ON tokens (key_id);
CREATE INDEX tokens_expiry ON tokens (expires_at);
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
-- AUTOINCREMENT: a delivery id is never handed out twice, even after rows are deleted.
CREATE TABLE deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL,
    tenant TEXT NOT NULL,
    url TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    next_attempt_at INTEGER
);
CREATE INDEX deliveries_request ON deliveries (request_id, id);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE TABLE delivery_attempts (
    delivery_id INTEGER NOT NULL,
    number INTEGER NOT NULL,
    at INTEGER NOT NULL,
    status_code INTEGER,
    error TEXT,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, number)
) WITHOUT ROWID;
";

/// Schema version 3: grants get an id to be revoked by, and the request and person that gave
/// them. Grants stored before have neither; they get a random id.
const SCHEMA_V3: &str = "
ALTER TABLE grants ADD COLUMN id TEXT;
ALTER TABLE grants ADD COLUMN request_id TEXT;
ALTER TABLE grants ADD COLUMN granted_by TEXT;
UPDATE grants SET id = lower(hex(randomblob(16))) WHERE id IS NULL;
CREATE UNIQUE INDEX grants_id ON grants (id);
-- The order grants were given in (the table has no rowid; ids are random).
ALTER TABLE grants ADD COLUMN seq INTEGER;
CREATE INDEX grants_seq ON grants (seq);
";

/// Schema version 4: what retention (`--retain-resolved`) looks up, resolved requests by age and
/// a request's events.
const SCHEMA_V4: &str = "
CREATE INDEX requests_resolved ON requests (resolved_at) WHERE status <> 'pending';
CREATE INDEX events_request ON events (request_id);
";

/// Schema version 5: a quorum request's votes, reminders and escalation, and webhooks that
/// announce an event of a pending request (a reminder, an escalation).
const SCHEMA_V5: &str = "
ALTER TABLE requests ADD COLUMN votes TEXT;
ALTER TABLE requests ADD COLUMN remind_at INTEGER;
ALTER TABLE requests ADD COLUMN escalate_at INTEGER;
ALTER TABLE requests ADD COLUMN escalated_at INTEGER;
CREATE INDEX requests_remind ON requests (remind_at)
    WHERE status = 'pending' AND remind_at IS NOT NULL;
CREATE INDEX requests_escalate ON requests (escalate_at)
    WHERE status = 'pending' AND escalate_at IS NOT NULL;
ALTER TABLE deliveries ADD COLUMN event TEXT;
";

/// Schema version 6: channel notifications are deliveries to a channel (by its configured
/// name) instead of a URL, with the reference of the message they posted.
const SCHEMA_V6: &str = "
ALTER TABLE deliveries ADD COLUMN channel TEXT;
ALTER TABLE deliveries ADD COLUMN message_ref TEXT;
";

/// Schema version 7: an announcement found by the platform's reference to its message (a reply
/// typed in a chat thread names the message it replies to).
const SCHEMA_V7: &str = "
CREATE INDEX deliveries_message_ref ON deliveries (message_ref) WHERE message_ref IS NOT NULL;
";

/// Schema version 8: cursors, a channel's place in a platform's feed (Telegram's update offset),
/// advanced only once what came before it is committed.
const SCHEMA_V8: &str = "
CREATE TABLE cursors (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
";

/// Schema version 9: the audit chain, a hash per event (see `audit`). Events stored before it
/// are hashed in order by the migration.
const SCHEMA_V9: &str = "
ALTER TABLE events ADD COLUMN hash TEXT;
";

/// Schema version 10: fewer pages written per event. The event log loses `AUTOINCREMENT`, whose
/// counter row in `sqlite_sequence` every append rewrote (events are never deleted, retention
/// leaves tombstones, so the newest `seq` is the high-water mark; see [`migrate`] for a log whose
/// newest events an older version deleted), and its `(tenant, seq)` index, which no query used:
/// a tenant's feed is read in `seq` order through the primary key.
const SCHEMA_V10: &str = "
CREATE TABLE events_v10 (
    seq INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT,
    channel TEXT,
    at INTEGER NOT NULL,
    hash TEXT
);
INSERT INTO events_v10 (seq, tenant, request_id, kind, actor, channel, at, hash)
    SELECT seq, tenant, request_id, kind, actor, channel, at, hash FROM events ORDER BY seq;
DROP TABLE events;
ALTER TABLE events_v10 RENAME TO events;
CREATE INDEX events_request ON events (request_id);
";

/// Migrations in order; entry `i` brings the schema to version `i + 1`. Applied ones never change.
const MIGRATIONS: &[&str] = &[
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7, SCHEMA_V8,
    SCHEMA_V9, SCHEMA_V10,
];
const _: () = assert!(MIGRATIONS.len() as i64 == SCHEMA_VERSION);

/// Runs once the batch's commit outcome is known, with that outcome.
type Completion = Box<dyn FnOnce(Result<(), StoreError>) + Send>;
/// A write: runs on the writer's connection (or learns that the batch could not start), alone
/// in its transaction or beside others; returns what to do once the commit's outcome is known,
/// and whether it failed.
type Job = Box<dyn FnOnce(Result<Slot<'_>, StoreError>) -> (Completion, bool) + Send>;

/// Where a write runs: in a transaction of its own, or in a savepoint of a shared one.
#[derive(Clone, Copy)]
struct Slot<'c> {
    conn: &'c Connection,
    /// The batch's only write. A failure then rolls back the whole transaction, which undoes
    /// exactly its changes; a savepoint would cost two statements and a copy of every page the
    /// write changes, on the path a lone agent takes at every step.
    alone: bool,
}

pub(crate) struct SqliteBackend {
    path: String,
    writer: Arc<Writer>,
    readers: Mutex<Vec<Connection>>,
    decoded: Arc<Decoded>,
    /// Dropped with the backend, which stops the checkpoint thread.
    _checkpointer: std::sync::mpsc::Sender<()>,
}

/// The writing connection and the writes queued for it.
struct Writer {
    queue: Mutex<Vec<Job>>,
    conn: Mutex<Connection>,
    /// Set by the checkpoint thread when the WAL should start over; see [`run_checkpoints`].
    restart_wal: AtomicBool,
}

impl std::fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteBackend")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteBackend {
    pub(crate) async fn open(path: &str, durability: Durability) -> Result<Self, StoreError> {
        Self::open_with(path, durability, CHECKPOINT_PERIOD, WAL_RESTART_BYTES).await
    }

    /// Opens with the checkpoint thread's period and the WAL size past which it restarts the WAL.
    async fn open_with(
        path: &str,
        durability: Durability,
        checkpoint_period: std::time::Duration,
        restart_bytes: i64,
    ) -> Result<Self, StoreError> {
        let path = path.to_owned();
        let writer = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || open_writer(&path, durability))
                .await
                .map_err(|e| StoreError::Backend(e.to_string()))??
        };
        let (stop, stopped) = std::sync::mpsc::channel();
        let checkpoint_path = path.clone();
        let writer = Arc::new(Writer {
            queue: Mutex::new(Vec::new()),
            conn: Mutex::new(writer),
            restart_wal: AtomicBool::new(false),
        });
        let writing = Arc::downgrade(&writer);
        thread::Builder::new()
            .name("clarify-sqlite-checkpoint".to_owned())
            .spawn(move || {
                run_checkpoints(
                    &checkpoint_path,
                    &stopped,
                    checkpoint_period,
                    restart_bytes,
                    &writing,
                );
            })
            .map_err(|e| StoreError::Backend(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Self {
            path,
            writer,
            readers: Mutex::new(Vec::new()),
            decoded: Arc::new(Decoded::default()),
            _checkpointer: stop,
        })
    }

    /// Runs `f` inside the next group commit and returns its result once committed.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |slot| {
            let result = slot.and_then(|slot| match slot.alone {
                true => f(slot.conn),
                false => in_savepoint(slot.conn, f),
            });
            let failed = result.is_err();
            let complete: Completion = Box::new(move |commit: Result<(), StoreError>| {
                let _ = tx.send(commit.and(result));
            });
            (complete, failed)
        });
        lock(&self.writer.queue).push(job);
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
                let Ok(conn) = self.writer.conn.try_lock() else {
                    return;
                };
                loop {
                    if self.writer.restart_wal.swap(false, Ordering::Relaxed) {
                        restart_wal(&conn);
                    }
                    let batch: Vec<Job> = {
                        let mut queue = lock(&self.writer.queue);
                        let n = queue.len().min(MAX_BATCH);
                        queue.drain(..n).collect()
                    };
                    if batch.is_empty() {
                        break;
                    }
                    commit_batch(&conn, batch);
                }
            }
            if lock(&self.writer.queue).is_empty() {
                return;
            }
        }
    }

    /// Runs a short read (one row by its key) on the writing connection when it is free, else
    /// on a pooled one.
    ///
    /// The writer's page cache is always current, since it made every change of this process;
    /// a pooled connection drops its cache whenever another connection wrote since its last
    /// read, so reading a row just written costs it the pages again, from the WAL. Only reads
    /// that cannot hold up the writer for long come here: a write queued meanwhile waits for
    /// the read, and is committed by this caller afterwards, as by any leader.
    fn read_point<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let Ok(conn) = self.writer.conn.try_lock() else {
            return self.read(f);
        };
        let result = f(&conn);
        drop(conn);
        self.lead();
        result
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
        let decoded = Arc::clone(&self.decoded);
        self.write(move |conn| create(conn, &decoded, row, spec))
            .await
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        self.read_point(|conn| get(conn, &self.decoded, id))
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
                Ok((row_parts(row)?, row.get::<_, i64>(ROW_COLUMNS)?))
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
        grants: &[StoredGrant],
    ) -> Result<Resolved, StoreError> {
        let id = id.to_owned();
        let answers = answers_json(&res.resolution)?;
        let grants = grants.to_vec();
        let decoded = Arc::clone(&self.decoded);
        self.write(move |conn| resolve(conn, &decoded, &id, &res, answers, &grants))
            .await
    }

    pub(crate) async fn expire_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| {
            let now_ms = millis(now);
            let expired: Vec<(String, String, String)> = {
                let mut stmt = conn.prepare_cached(
                    "UPDATE requests SET status = 'expired', resolved_at = ?1, answered_by = NULL, \
                     channel = 'system', remind_at = NULL, escalate_at = NULL WHERE seq IN (SELECT seq FROM requests WHERE status = 'pending' \
                     AND expires_at IS NOT NULL AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2) \
                     RETURNING id, tenant, spec",
                )?;
                let rows = stmt.query_map(params![now_ms, limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            for (id, tenant, spec) in &expired {
                if let Some(url) = reaped_callback_url(id, spec) {
                    queue_delivery(conn, id, tenant, &url, now_ms, None)?;
                }
                follow_up(conn, id, EventKind::Expired, now_ms)?;
                append_event(conn, tenant, id, EventKind::Expired, None, Some("system"), now_ms)?;
            }
            Ok(expired.into_iter().map(|(id, _, _)| id).collect())
        })
        .await
    }

    pub(crate) async fn vote(&self, id: &str, ballot: Ballot) -> Result<Cast, StoreError> {
        let id = id.to_owned();
        let decoded = Arc::clone(&self.decoded);
        self.write(move |conn| vote(conn, &decoded, &id, ballot))
            .await
    }

    pub(crate) async fn remind_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| fall_due(conn, EventKind::Reminded, millis(now), limit))
            .await
    }

    pub(crate) async fn escalate_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| fall_due(conn, EventKind::Escalated, millis(now), limit))
            .await
    }

    pub(crate) async fn purge_resolved(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| {
            let victims: Vec<(i64, String, String, String)> = {
                let mut stmt = conn.prepare_cached(
                    "SELECT seq, id, tenant, spec FROM requests r \
                     WHERE status <> 'pending' AND resolved_at < ?1 AND NOT EXISTS ( \
                         SELECT 1 FROM deliveries d WHERE d.request_id = r.id AND d.status = 'pending') \
                     ORDER BY resolved_at LIMIT ?2",
                )?;
                let rows = stmt.query_map(params![millis(before), limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            for (seq, id, tenant, spec) in &victims {
                // The tags are in the stored request, so their rows are found by primary key.
                conn.prepare_cached(
                    "DELETE FROM request_tags WHERE tenant = ?1 AND seq = ?2 \
                     AND tag IN (SELECT value FROM json_each(?3, '$.tags'))",
                )?
                .execute(params![tenant, seq, spec])?;
                // Events stay as tombstones (seq and hash), so the audit chain still verifies.
                conn.prepare_cached(
                    "UPDATE events SET tenant = '', request_id = '', kind = 'purged', \
                     actor = NULL, channel = NULL WHERE request_id = ?1",
                )?
                .execute([id])?;
                conn.prepare_cached(
                    "DELETE FROM delivery_attempts WHERE delivery_id IN \
                     (SELECT id FROM deliveries WHERE request_id = ?1)",
                )?
                .execute([id])?;
                conn.prepare_cached("DELETE FROM deliveries WHERE request_id = ?1")?
                    .execute([id])?;
                conn.prepare_cached("DELETE FROM requests WHERE seq = ?1")?
                    .execute([seq])?;
            }
            Ok(victims.into_iter().map(|(_, id, _, _)| id).collect())
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
                 WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2) AND kind <> 'purged' \
                 ORDER BY seq LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![after, tenant, limit as i64], event_parts)?;
            rows.map(|row| row?.decode()).collect()
        })
    }

    /// Stored events after `after` in feed order, as the audit chain holds them (tombstones
    /// included): every tenant's with `None`.
    pub(crate) async fn audit_events(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventParts>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events \
                 WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2) ORDER BY seq LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![after, tenant, limit as i64], event_parts)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// The hash the first stored event links to: none, since every event is kept (retention
    /// leaves tombstones).
    pub(crate) async fn audit_base(&self) -> Result<String, StoreError> {
        Ok(String::new())
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            let seq: i64 =
                conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
            Ok(u64::try_from(seq).unwrap_or(0))
        })
    }

    pub(crate) async fn grants(
        &self,
        tenant: &str,
        filter: GrantFilter<'_>,
    ) -> Result<Vec<StoredGrant>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {GRANT_COLUMNS} FROM grants WHERE tenant = ?1 \
                 AND (?2 IS NULL OR tool = ?2) AND (?3 IS NULL OR session = ?3) \
                 ORDER BY seq, created_at, id"
            ))?;
            let rows = stmt.query_map(params![tenant, filter.tool, filter.session], grant_parts)?;
            rows.map(|row| row?.decode()).collect()
        })
    }

    pub(crate) async fn revoke_grant(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        self.write(move |conn| {
            let parts = conn
                .prepare_cached(&format!(
                    "DELETE FROM grants WHERE tenant = ?1 AND id = ?2 RETURNING {GRANT_COLUMNS}"
                ))?
                .query_row(params![tenant, id], grant_parts)
                .optional()?;
            parts.map(GrantParts::decode).transpose()
        })
        .await
    }

    pub(crate) async fn insert_key(&self, row: KeyRow) -> Result<bool, StoreError> {
        self.write(move |conn| {
            // Only the active-name index may refuse quietly; any other conflict is an error.
            let inserted = conn
                .prepare_cached(&format!(
                    "INSERT INTO keys ({KEY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                     ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING"
                ))?
                .execute(params![
                    row.key.id,
                    row.key.name,
                    row.key.role.as_str(),
                    row.key.tenant,
                    row.digest,
                    millis(row.key.created_at),
                    row.key.revoked_at.map(millis),
                ])?;
            Ok(inserted == 1)
        })
        .await
    }

    pub(crate) async fn key(&self, id: &str) -> Result<Option<KeyRow>, StoreError> {
        self.read(|conn| {
            conn.prepare_cached(&format!("SELECT {KEY_COLUMNS} FROM keys WHERE id = ?1"))?
                .query_row(params![id], key_parts)
                .optional()?
                .map(KeyParts::decode)
                .transpose()
        })
    }

    pub(crate) async fn keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {KEY_COLUMNS} FROM keys ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map([], key_parts)?;
            rows.map(|row| Ok(row?.decode()?.key)).collect()
        })
    }

    pub(crate) async fn revoke_key(
        &self,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<ApiKey>, StoreError> {
        let name = name.to_owned();
        self.write(move |conn| {
            let revoked = conn
                .prepare_cached(&format!(
                    "UPDATE keys SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL \
                     RETURNING {KEY_COLUMNS}"
                ))?
                .query_row(params![name, millis(at)], key_parts)
                .optional()?;
            let Some(parts) = revoked else {
                return Ok(None);
            };
            // Its sessions and login links end with it, in the same transaction.
            conn.prepare_cached("DELETE FROM tokens WHERE key_id = ?1")?
                .execute(params![parts.id])?;
            Ok(Some(parts.decode()?.key))
        })
        .await
    }

    pub(crate) async fn key_count(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            let n: i64 = conn
                .prepare_cached("SELECT count(*) FROM keys")?
                .query_row([], |r| r.get(0))?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    pub(crate) async fn insert_token(
        &self,
        kind: TokenKind,
        digest: &str,
        key_id: &str,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let (digest, key_id) = (digest.to_owned(), key_id.to_owned());
        self.write(move |conn| {
            // Expired tokens can never be redeemed; issuing is rare enough to sweep them here.
            conn.prepare_cached("DELETE FROM tokens WHERE expires_at <= ?1")?
                .execute(params![millis(now)])?;
            conn.prepare_cached(
                "INSERT INTO tokens (digest, kind, key_id, expires_at, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                digest,
                kind.as_str(),
                key_id,
                millis(expires_at),
                millis(now)
            ])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn redeem_token(
        &self,
        kind: TokenKind,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        let now = millis(now);
        match kind {
            // Used up by the statement that finds it: of concurrent redemptions, the first
            // write to run deletes the row and the others find nothing.
            TokenKind::Login | TokenKind::Once => {
                let digest = digest.to_owned();
                self.write(move |conn| {
                    Ok(conn
                        .prepare_cached(
                            "DELETE FROM tokens WHERE digest = ?1 AND kind = ?2 \
                             AND expires_at > ?3 RETURNING key_id",
                        )?
                        .query_row(params![digest, kind.as_str(), now], |r| r.get(0))
                        .optional()?)
                })
                .await
            }
            TokenKind::Session => self.read(|conn| {
                Ok(conn
                    .prepare_cached(
                        "SELECT key_id FROM tokens WHERE digest = ?1 AND kind = ?2 \
                         AND expires_at > ?3",
                    )?
                    .query_row(params![digest, kind.as_str(), now], |r| r.get(0))
                    .optional()?)
            }),
        }
    }

    pub(crate) async fn delete_token(&self, digest: &str) -> Result<(), StoreError> {
        let digest = digest.to_owned();
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM tokens WHERE digest = ?1")?
                .execute(params![digest])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn secret(
        &self,
        name: &str,
        candidate: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        // Nearly always there already: a read then, with no write to queue for.
        let stored = self.read(|conn| read_secret(conn, name))?;
        if let Some(value) = stored {
            return Ok(value);
        }
        let name = name.to_owned();
        self.write(move |conn| {
            // Whoever inserts first wins; everyone, this writer included, reads the winner.
            conn.prepare_cached(
                "INSERT INTO secrets (name, value) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            )?
            .execute(params![name, candidate])?;
            read_secret(conn, &name)?
                .ok_or_else(|| StoreError::Backend(format!("secret {name:?} vanished")))
        })
        .await
    }

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
        let channels = outbox == Outbox::Channels;
        // A write, so the choice and the lease are one step: no other writer (in this process
        // or another sharing the file) runs between them.
        self.write(move |conn| {
            let mut claimed: Vec<DeliveryParts> = {
                let mut stmt = conn.prepare_cached(&format!(
                    "UPDATE deliveries SET next_attempt_at = ?2 WHERE id IN (\
                     SELECT id FROM deliveries WHERE status = 'pending' \
                     AND next_attempt_at <= ?1 AND (channel IS NOT NULL) = ?4 \
                     ORDER BY id LIMIT ?3) RETURNING {DELIVERY_COLUMNS}"
                ))?;
                let rows = stmt.query_map(
                    params![millis(now), millis(lease_until), limit, channels],
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

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        self.read(|conn| {
            conn.query_row("SELECT 1", [], |_| Ok(()))?;
            Ok(())
        })
    }

    pub(crate) async fn pragma(&self, name: &str) -> Result<i64, StoreError> {
        let name = name.to_owned();
        self.write(move |conn| Ok(conn.pragma_query_value(None, &name, |r| r.get(0))?))
            .await
    }

    pub(crate) async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        self.read(|conn| {
            // One read transaction: one snapshot for both.
            let tx = conn.unchecked_transaction()?;
            let n: i64 = tx.query_row(
                "SELECT count(*) FROM requests WHERE status = 'pending'",
                [],
                |r| r.get(0),
            )?;
            let seq: i64 =
                tx.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
            tx.commit()?;
            Ok((
                u64::try_from(n).unwrap_or(0),
                u64::try_from(seq).unwrap_or(0),
            ))
        })
    }
}

/// What the stored JSON of recently used requests decodes to, by request id, so a round trip
/// (the create, the answer's read, the resolution, the waiter's reads) parses a request's JSON
/// at most once instead of at every read.
///
/// An entry is used only for a row whose text is exactly the text it was decoded from, so it
/// cannot go stale: another process sharing the file, a failed commit, a purge or a reused id
/// leave rows whose text either matches (and then means the same) or does not (and is parsed
/// as before). Comparing costs a `memcmp` of the text, against a parse and its allocations.
#[derive(Default)]
struct Decoded {
    entries: Mutex<DecodedEntries>,
}

#[derive(Default)]
struct DecodedEntries {
    by_id: HashMap<String, DecodedRequest>,
    /// Ids in the order first kept; the oldest goes when full.
    order: VecDeque<String>,
    /// The stored text the entries hold.
    bytes: usize,
}

struct DecodedRequest {
    spec: String,
    request: Arc<NewRequest>,
    /// An answered request's stored answers, and what they decode to.
    answers: Option<(String, Answers)>,
    /// Whether this process created it announced on a channel; `None` when another did, or
    /// not known.
    announced: Option<bool>,
}

impl Decoded {
    /// Decodes a request row, reusing what its text decoded to before; `known` is the answers
    /// the caller just stored, with their text.
    fn decode(
        &self,
        parts: RowParts,
        known: Option<(String, Answers)>,
    ) -> Result<RequestRecord, StoreError> {
        let (request, recalled) = {
            let entries = lock(&self.entries);
            match entries.by_id.get(&parts.id) {
                Some(d) if d.spec == parts.spec => {
                    let answers = match (&d.answers, &parts.answers) {
                        (Some((text, answers)), Some(stored)) if text == stored => {
                            Some(answers.clone())
                        }
                        _ => None,
                    };
                    (Some(Arc::clone(&d.request)), answers)
                }
                _ => (None, None),
            }
        };
        let new_spec = request.is_none().then(|| parts.spec.clone());
        let new_answers = match recalled {
            Some(_) => None,
            None => parts.answers.clone(),
        };
        let answers = recalled.or_else(|| {
            known
                .filter(|(text, _)| parts.answers.as_ref() == Some(text))
                .map(|(_, answers)| answers)
        });
        let id = (new_spec.is_some() || new_answers.is_some()).then(|| parts.id.clone());
        let record = parts.decode_reusing(request, answers)?;
        if let Some(id) = id {
            let answers = match (&record.resolution, new_answers) {
                (
                    Some(StoredResolution {
                        resolution: Resolution::Answered(a),
                        ..
                    }),
                    Some(text),
                ) => Some((text, a.clone())),
                _ => None,
            };
            self.remember(&id, new_spec, &record.request, answers, None);
        }
        Ok(record)
    }

    /// Whether request `id`, stored with `spec`, was created here and announced on no
    /// channel: then it has no announcement to follow up.
    fn unannounced(&self, id: &str, spec: &str) -> bool {
        lock(&self.entries)
            .by_id
            .get(id)
            .is_some_and(|d| d.announced == Some(false) && d.spec == spec)
    }

    /// Keeps what request `id`'s `spec` and `answers` decode to, and whether it was announced
    /// when known; without `spec`, only adds `answers` to the entry already kept.
    fn remember(
        &self,
        id: &str,
        spec: Option<String>,
        request: &Arc<NewRequest>,
        answers: Option<(String, Answers)>,
        announced: Option<bool>,
    ) {
        let text = |d: &DecodedRequest| d.spec.len() + d.answers.as_ref().map_or(0, |a| a.0.len());
        let mut entries = lock(&self.entries);
        let entries = &mut *entries;
        match (entries.by_id.get_mut(id), spec) {
            (Some(d), None) => {
                if answers.is_some() {
                    entries.bytes -= text(d);
                    d.answers = answers;
                    entries.bytes += text(d);
                }
            }
            (Some(d), Some(spec)) => {
                entries.bytes -= text(d);
                *d = DecodedRequest {
                    spec,
                    request: Arc::clone(request),
                    answers,
                    announced,
                };
                entries.bytes += text(d);
            }
            (None, None) => {}
            (None, Some(spec)) => {
                let d = DecodedRequest {
                    spec,
                    request: Arc::clone(request),
                    answers,
                    announced,
                };
                entries.bytes += text(&d);
                entries.order.push_back(id.to_owned());
                entries.by_id.insert(id.to_owned(), d);
            }
        }
        while entries.order.len() > MAX_DECODED || entries.bytes > MAX_DECODED_BYTES {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some(d) = entries.by_id.remove(&oldest) {
                entries.bytes -= text(&d);
            }
        }
    }
}

fn create(
    conn: &Connection,
    decoded: &Decoded,
    row: NewRow,
    spec: String,
) -> Result<Created, StoreError> {
    if let Some(key) = &row.request.idempotency_key {
        let existing = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM requests WHERE tenant = ?1 AND idempotency_key = ?2"
            ))?
            .query_row(params![row.tenant, key], row_parts)
            .optional()?;
        if let Some(parts) = existing {
            return Ok(Created {
                record: decoded.decode(parts, None)?,
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
                record: decoded.decode(parts, None)?,
                created: false,
            });
        }
    }
    let created_ms = millis(row.created_at);
    conn.prepare_cached(
        "INSERT INTO requests (id, tenant, status, session, agent, spec, created_at, expires_at, \
         idempotency_key, dedupe_key, remind_at, escalate_at) \
         VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        row.id,
        row.tenant,
        row.request.session,
        row.request.agent,
        &spec,
        created_ms,
        row.expires_at.map(millis),
        row.request.idempotency_key,
        row.dedupe_key,
        row.remind_at.map(millis),
        row.escalate_at.map(millis),
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
    for channel in &row.announce {
        conn.prepare_cached(
            "INSERT INTO deliveries (request_id, tenant, url, status, created_at, \
             next_attempt_at, event, channel) VALUES (?1, ?2, '', 'pending', ?3, ?3, 'created', ?4)",
        )?
        .execute(params![row.id, row.tenant, created_ms, channel])?;
    }
    let announced = !row.announce.is_empty();
    let record = row.into_record();
    // Kept even if the commit then fails: an entry is only used for a row with this spec.
    decoded.remember(
        &record.id,
        Some(spec),
        &record.request,
        None,
        Some(announced),
    );
    Ok(Created {
        record,
        created: true,
    })
}

fn get(
    conn: &Connection,
    decoded: &Decoded,
    id: &str,
) -> Result<Option<RequestRecord>, StoreError> {
    conn.prepare_cached(&GET_REQUEST)?
        .query_row(params![id], row_parts)
        .optional()?
        .map(|parts| decoded.decode(parts, None))
        .transpose()
}

fn resolve(
    conn: &Connection,
    decoded: &Decoded,
    id: &str,
    res: &StoredResolution,
    answers: Option<String>,
    grants: &[StoredGrant],
) -> Result<Resolved, StoreError> {
    let status = res.resolution.status();
    let at = millis(res.resolved_at);
    let expiring = status == Status::Expired;
    let updated = conn
        .prepare_cached(&RESOLVE_REQUEST)?
        .query_row(
            params![
                id,
                status.as_str(),
                at,
                res.actor.name,
                res.actor.channel,
                answers.as_deref(),
                expiring
            ],
            row_parts,
        )
        .optional()?;
    match updated {
        Some(parts) => {
            let announced = !decoded.unannounced(&parts.id, &parts.spec);
            // The answers just stored are these: their text is not parsed back.
            let known = match &res.resolution {
                Resolution::Answered(a) => answers.map(|text| (text, a.clone())),
                _ => None,
            };
            let record = decoded.decode(parts, known)?;
            // Queued in the resolving transaction: both happen, or neither.
            if let Some(url) = &record.request.callback_url {
                queue_delivery(conn, &record.id, &record.tenant, url, at, None)?;
            }
            insert_grants(conn, &record.tenant, grants)?;
            // Every announcement of it is edited to show the outcome.
            if announced {
                follow_up(conn, id, EventKind::for_status(status), at)?;
            }
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
        None => Ok(match get(conn, decoded, id)? {
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
    // The writer's transaction holds the database, so the head read here is the chain's.
    let (last, previous) = chain_head(conn)?;
    let event = EventParts {
        seq: last + 1,
        tenant: tenant.to_owned(),
        request_id: request_id.to_owned(),
        kind: kind.as_str().to_owned(),
        actor: actor.map(str::to_owned),
        channel: channel.map(str::to_owned),
        at,
        hash: None,
    };
    Ok(insert_linked(conn, event, previous.as_deref())?)
}

/// The newest event's `seq` (0 for none) and hash. Events are never deleted (see `SCHEMA_V10`),
/// so its `seq` is the highest ever handed out.
fn chain_head(conn: &Connection) -> rusqlite::Result<(i64, Option<String>)> {
    Ok(conn
        .prepare_cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, None)))
}

/// Stores `event`, hashed onto the chain whose head hash is `previous`.
fn insert_linked(
    conn: &Connection,
    mut event: EventParts,
    previous: Option<&str>,
) -> rusqlite::Result<()> {
    event.hash = Some(audit::link(
        previous.unwrap_or_default(),
        &audit::canonical(&event),
    ));
    conn.prepare_cached(
        "INSERT INTO events (seq, tenant, request_id, kind, actor, channel, at, hash) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        event.seq,
        event.tenant,
        event.request_id,
        event.kind,
        event.actor,
        event.channel,
        event.at,
        event.hash
    ])?;
    Ok(())
}

/// Keeps `seq` numbers from being handed out twice once `AUTOINCREMENT` is gone (schema 10): an
/// older version deleted purged events, so the newest ones may be gone, and a follower may hold
/// a cursor up to `high_water`. A tombstone at `high_water` makes it the newest `seq` again.
fn keep_high_water(conn: &Connection, high_water: i64) -> rusqlite::Result<()> {
    let (newest, previous) = chain_head(conn)?;
    if newest >= high_water {
        return Ok(());
    }
    let tombstone = EventParts {
        seq: high_water,
        tenant: String::new(),
        request_id: String::new(),
        kind: audit::PURGED.to_owned(),
        actor: None,
        channel: None,
        at: 0,
        hash: None,
    };
    insert_linked(conn, tombstone, previous.as_deref())
}

/// Hashes, in order, the events stored before the audit chain existed (schema 9).
fn hash_unhashed(conn: &Connection) -> rusqlite::Result<()> {
    let mut verifier_head = String::new();
    let rows: Vec<EventParts> = {
        let mut stmt = conn.prepare(&format!("SELECT {EVENT_COLUMNS} FROM events ORDER BY seq"))?;
        stmt.query_map([], event_parts)?.collect::<Result<_, _>>()?
    };
    for mut event in rows {
        if let Some(hash) = &event.hash {
            verifier_head = hash.clone();
            continue;
        }
        let hash = audit::link(&verifier_head, &audit::canonical(&event));
        event.hash = Some(hash.clone());
        conn.execute(
            "UPDATE events SET hash = ?1 WHERE seq = ?2",
            params![hash, event.seq],
        )?;
        verifier_head = hash;
    }
    Ok(())
}

fn event_parts(r: &rusqlite::Row<'_>) -> rusqlite::Result<EventParts> {
    Ok(EventParts {
        seq: r.get(0)?,
        tenant: r.get(1)?,
        request_id: r.get(2)?,
        kind: r.get(3)?,
        actor: r.get(4)?,
        channel: r.get(5)?,
        at: r.get(6)?,
        hash: r.get(7)?,
    })
}

/// Records the grants an answer gave, in its transaction; an equal grant already stored is kept.
fn insert_grants(
    conn: &Connection,
    tenant: &str,
    grants: &[StoredGrant],
) -> Result<(), StoreError> {
    for g in grants {
        conn.prepare_cached(
            "INSERT OR IGNORE INTO grants (tenant, tool, arguments, scope, session, created_at, \
             id, request_id, granted_by, seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, \
             (SELECT COALESCE(MAX(seq), 0) + 1 FROM grants))",
        )?
        .execute(params![
            tenant,
            g.grant.tool,
            g.grant.arguments,
            g.grant.scope.as_str(),
            g.grant.session.as_deref().unwrap_or(""),
            millis(g.created_at),
            g.id,
            g.request_id,
            g.granted_by,
        ])?;
    }
    Ok(())
}

fn grant_parts(r: &rusqlite::Row<'_>) -> rusqlite::Result<GrantParts> {
    Ok(GrantParts {
        id: r.get(0)?,
        tool: r.get(1)?,
        arguments: r.get(2)?,
        scope: r.get(3)?,
        session: r.get(4)?,
        request_id: r.get(5)?,
        granted_by: r.get(6)?,
        created_at: r.get(7)?,
    })
}

/// Queues a webhook delivery due at once: of a request just resolved at `at` (`event` is
/// `None`), or announcing `event` of a pending one.
fn queue_delivery(
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

/// Casts `ballot` on request `id`; runs in the writer's transaction, which serializes votes.
fn vote(
    conn: &Connection,
    decoded: &Decoded,
    id: &str,
    ballot: Ballot,
) -> Result<Cast, StoreError> {
    let Some(record) = get(conn, decoded, id)? else {
        return Ok(Cast::NotFound);
    };
    let Ballot {
        vote,
        channel,
        grants,
    } = ballot;
    let (votes, decided) = match tally(&record, &vote) {
        Tally::Closed => return Ok(Cast::Lost(record)),
        Tally::AlreadyVoted => return Ok(Cast::AlreadyVoted(record)),
        Tally::Counted { votes, decided } => (votes, decided),
    };
    let at = millis(vote.at);
    conn.prepare_cached("UPDATE requests SET votes = ?2 WHERE id = ?1")?
        .execute(params![id, votes_json(&votes)?])?;
    append_event(
        conn,
        &record.tenant,
        id,
        EventKind::Voted,
        Some(&vote.by),
        Some(&channel),
        at,
    )?;
    let record = RequestRecord { votes, ..record };
    let Some(answers) = decided else {
        // The announcements show the votes so far.
        follow_up(conn, id, EventKind::Voted, at)?;
        return Ok(Cast::Counted(record));
    };
    let made = grants(&record, &answers);
    let resolution = StoredResolution {
        resolution: Resolution::Answered(answers),
        actor: Actor {
            name: Some(vote.by),
            channel,
        },
        resolved_at: vote.at,
    };
    let body = answers_json(&resolution.resolution)?;
    Ok(
        match resolve(conn, decoded, id, &resolution, body, &made)? {
            Resolved::Won(record) => Cast::Counted(record),
            Resolved::Lost(record) => Cast::Lost(record),
            Resolved::NotFound => Cast::NotFound,
        },
    )
}

/// Reminds (`kind` `Reminded`: the next reminder a period from `now`) or escalates
/// (`Escalated`) up to `limit` pending requests due by `now`, and announces each; returns their
/// ids. Runs in the writer's transaction, so another instance finds them no longer due.
fn fall_due(
    conn: &Connection,
    kind: EventKind,
    now: i64,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let reminding = kind == EventKind::Reminded;
    let column = if reminding {
        "remind_at"
    } else {
        "escalate_at"
    };
    let due = due(conn, column, now, limit)?;
    for row in &due {
        if reminding {
            let next = reminder_period(&row.0, &row.2).map(|p| now.saturating_add(p));
            conn.prepare_cached("UPDATE requests SET remind_at = ?2 WHERE id = ?1")?
                .execute(params![row.0, next])?;
        } else {
            conn.prepare_cached(
                "UPDATE requests SET escalate_at = NULL, escalated_at = ?2 WHERE id = ?1",
            )?
            .execute(params![row.0, now])?;
        }
        announce(conn, row, kind, now)?;
    }
    Ok(due.into_iter().map(|(id, _, _)| id).collect())
}

/// The ids, tenants and specs of up to `limit` pending requests whose `column` time is due.
fn due(
    conn: &Connection,
    column: &str,
    now: i64,
    limit: usize,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, tenant, spec FROM requests WHERE status = 'pending' \
         AND {column} IS NOT NULL AND {column} <= ?1 ORDER BY {column} LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![now, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Writes a system event about a pending request, and queues its webhook and a notification on
/// each channel it was announced on.
fn announce(
    conn: &Connection,
    (id, tenant, spec): &(String, String, String),
    kind: EventKind,
    at: i64,
) -> Result<(), StoreError> {
    if let Some(url) = reaped_callback_url(id, spec) {
        queue_delivery(conn, id, tenant, &url, at, Some(kind))?;
    }
    follow_up(conn, id, kind, at)?;
    append_event(conn, tenant, id, kind, None, Some("system"), at)
}

/// Queues a notification of `kind` about request `id` on every channel it was announced on:
/// a reminder or escalation, a vote, or its resolution (which edits the announcement).
fn follow_up(conn: &Connection, id: &str, kind: EventKind, at: i64) -> Result<(), StoreError> {
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

fn read_secret(conn: &Connection, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT value FROM secrets WHERE name = ?1")?
        .query_row(params![name], |r| r.get(0))
        .optional()?)
}

fn key_parts(row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyParts> {
    Ok(KeyParts {
        id: row.get(0)?,
        name: row.get(1)?,
        role: row.get(2)?,
        tenant: row.get(3)?,
        digest: row.get(4)?,
        created_at: row.get(5)?,
        revoked_at: row.get(6)?,
    })
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

/// Reads a request by id (the hot path's statements are built once, not at every call).
static GET_REQUEST: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM requests WHERE id = ?1"));
/// Resolves a pending request, if its deadline allows (`?7`: expiring it), and returns its row.
static RESOLVE_REQUEST: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE requests SET status = ?2, resolved_at = ?3, answered_by = ?4, channel = ?5, \
         answers = ?6, remind_at = NULL, escalate_at = NULL WHERE id = ?1 AND status = 'pending' \
         AND CASE WHEN ?7 THEN expires_at IS NOT NULL AND expires_at <= ?3 \
         ELSE expires_at IS NULL OR expires_at > ?3 END RETURNING {COLUMNS}"
    )
});

/// How many columns [`COLUMNS`] names: the index of a column selected after them.
const ROW_COLUMNS: usize = 13;

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
        votes: row.get(10)?,
        remind_at: row.get(11)?,
        escalated_at: row.get(12)?,
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
    conn.prepare_cached("SAVEPOINT job")?.execute([])?;
    match f(conn) {
        Ok(v) => {
            conn.prepare_cached("RELEASE job")?.execute([])?;
            Ok(v)
        }
        Err(e) => {
            conn.execute_batch("ROLLBACK TO job; RELEASE job")?;
            Err(e)
        }
    }
}

fn commit_batch(conn: &Connection, batch: Vec<Job>) {
    if !conn.is_autocommit() {
        // A transaction left open by a rollback that failed: what it holds was reported
        // failed, and is undone before anything else runs.
        let _ = conn.execute_batch("ROLLBACK");
    }
    let begin = conn
        .prepare_cached("BEGIN IMMEDIATE")
        .and_then(|mut s| s.execute([]))
        .map_err(StoreError::from);
    let alone = batch.len() == 1;
    let mut failed_alone = false;
    let completions: Vec<Completion> = match begin {
        Ok(_) => batch
            .into_iter()
            .map(|job| {
                let (complete, failed) = job(Ok(Slot { conn, alone }));
                failed_alone |= alone && failed;
                complete
            })
            .collect(),
        Err(ref err) => batch
            .into_iter()
            .map(|job| job(Err(err.clone())).0)
            .collect(),
    };
    let commit = if begin.is_err() || conn.is_autocommit() {
        // BEGIN failed: the jobs already carry the error.
        Ok(())
    } else if failed_alone {
        // The only write failed: none of its changes may be committed. Should even the
        // rollback fail, the write is reported failed all the same, and the next batch rolls
        // the transaction back before it begins, so nothing of it is ever committed.
        let _ = conn.execute_batch("ROLLBACK");
        Ok(())
    } else {
        conn.prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]))
            .map(drop)
            .map_err(|e| {
                let _ = conn.execute_batch("ROLLBACK");
                StoreError::from(e)
            })
    };
    for complete in completions {
        complete(commit.clone());
    }
}

/// Checkpoints the WAL into the database file every `period` (writes never wait for it), until
/// the backend is dropped; once the WAL holds more than `restart_bytes`, asks the writer to
/// start it over (see [`restart_wal`]).
///
/// A passive checkpoint copies what it can without waiting, but only a write that finds the
/// whole WAL copied and no reader in it starts the WAL over from its beginning (and only then
/// is the file cut back to `journal_size_limit`). Under writes that never pause the checkpoint
/// never catches up, so the WAL would grow for as long as the writes go on. Nor can this thread
/// make the restart itself: that needs the write lock, which a busy writer only lets go for
/// moments.
fn run_checkpoints(
    path: &str,
    stop: &std::sync::mpsc::Receiver<()>,
    period: std::time::Duration,
    restart_bytes: i64,
    writer: &std::sync::Weak<Writer>,
) {
    let setup = || -> Result<(Connection, i64), StoreError> {
        let conn = open_reader(path)?;
        let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        Ok((conn, restart_bytes / page_size.max(512)))
    };
    let (conn, restart_frames) = match setup() {
        Ok(opened) => opened,
        Err(e) => {
            tracing::warn!(%path, error = %e, "cannot open a checkpoint connection; the WAL will grow");
            return;
        }
    };
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(period) {
        // The second column is the number of frames in the WAL.
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1)) {
            Ok(frames) if frames > restart_frames => match writer.upgrade() {
                Some(writer) => writer.restart_wal.store(true, Ordering::Relaxed),
                None => return,
            },
            Ok(_) => {}
            Err(e) => tracing::warn!(%path, error = %e, "WAL checkpoint failed"),
        }
    }
}

/// Copies what is left of the WAL into the database and waits (up to [`RESTART_WAIT`]) for the
/// readers still in it, so that the next write starts the WAL over. Runs on the writing
/// connection between group commits, holding this process's writes off meanwhile; what is left
/// to copy is what was written since the last passive checkpoint.
fn restart_wal(conn: &Connection) {
    let restart = || -> rusqlite::Result<bool> {
        conn.busy_timeout(RESTART_WAIT)?;
        let busy = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0));
        conn.busy_timeout(WRITE_WAIT)?;
        Ok(busy? != 0)
    };
    match restart() {
        // A long reader (a backup, a large count) is still in the WAL: the checkpoint thread
        // asks again after its next pass.
        Ok(true) => tracing::debug!("WAL restart waited for readers in vain"),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "WAL restart failed"),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(WRITE_WAIT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // Checkpoints run on their own thread (see `run_checkpoints`).
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    // After a checkpoint the WAL file is cut back to this size, so a burst of writes does not
    // leave a large file behind for good.
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)?;
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

fn open_writer(path: &str, durability: Durability) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(|e| classify(path, e))?;
    let setup = || -> rusqlite::Result<i64> {
        configure(&conn)?;
        if durability == Durability::Full {
            conn.pragma_update(None, "synchronous", "FULL")?;
        }
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
        for (version, sql) in (1_i64..).zip(MIGRATIONS) {
            if version <= current {
                continue;
            }
            // Read before version 10 drops it: the highest event `seq` ever handed out.
            let high_water = if version == 10 {
                conn.query_row(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .optional()?
            } else {
                None
            };
            conn.execute_batch(sql)?;
            if version == 9 {
                hash_unhashed(conn)?;
            }
            if let Some(high_water) = high_water {
                keep_high_water(conn, high_water)?;
            }
        }
        // Never lowered: a newer binary may have migrated further meanwhile.
        if current < SCHEMA_VERSION {
            conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A database file of this test process's own, removed (with its WAL) before and after.
    struct Scratch(String);

    impl Scratch {
        fn new(name: &str) -> Self {
            let path =
                std::env::temp_dir().join(format!("clarify-{name}-{}.db", std::process::id()));
            let scratch = Self(path.to_string_lossy().into_owned());
            scratch.remove();
            scratch
        }

        fn remove(&self) {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", self.0));
            }
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            self.remove();
        }
    }

    #[test]
    fn row_columns_counts_the_selected_columns() {
        assert_eq!(COLUMNS.split(", ").count(), ROW_COLUMNS);
    }

    #[test]
    fn decoded_requests_keep_the_newest_within_their_bound() {
        let decoded = Decoded::default();
        let raw = serde_json::json!({"question": "Deploy?"});
        let request = Arc::new(
            clarify_core::parse_request(&raw, &clarify_core::Limits::default()).expect("request"),
        );
        let spec = "x".repeat(64 << 10);
        for i in 0..100 {
            decoded.remember(&format!("r{i}"), Some(spec.clone()), &request, None, None);
        }
        let entries = lock(&decoded.entries);
        assert_eq!(entries.by_id.len(), MAX_DECODED_BYTES / spec.len());
        assert!(entries.by_id.contains_key("r99") && !entries.by_id.contains_key("r0"));
        let held: usize = entries.by_id.values().map(|d| d.spec.len()).sum();
        assert_eq!(entries.bytes, held);
    }

    /// Writes that never pause, with readers always in the WAL: a passive checkpoint alone
    /// never lets the WAL start over, so it would grow by every write (120 MiB here). With
    /// restarts it stays near what is written between two checkpoints (12 MiB on two busy
    /// cores).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_stays_bounded_under_constant_writes_and_reads() {
        let scratch = Scratch::new("wal");
        let path = scratch.0.clone();
        let period = std::time::Duration::from_millis(5);
        let backend = Arc::new(
            SqliteBackend::open_with(&path, Durability::Normal, period, 256 << 10)
                .await
                .expect("open"),
        );
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (backend, done) = (Arc::clone(&backend), Arc::clone(&done));
                thread::spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        backend.read(|conn| read_secret(conn, "0")).expect("read");
                    }
                })
            })
            .collect();
        // Each write adds four to five pages to the WAL (its leaf, an overflow page, the pages
        // of the tree above it).
        let (writers, writes) = (4, 1_500);
        let tasks: Vec<_> = (0..writers)
            .map(|w| {
                let backend = Arc::clone(&backend);
                tokio::spawn(async move {
                    for i in 0..writes {
                        backend
                            .write(move |conn| {
                                conn.prepare_cached(
                                    "INSERT INTO secrets (name, value) VALUES (?1, zeroblob(4000))",
                                )?
                                .execute(params![format!("{w}-{i}")])?;
                                Ok(())
                            })
                            .await
                            .expect("write");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("writer");
        }
        done.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.join().expect("reader");
        }
        let wal = std::fs::metadata(format!("{path}-wal")).map_or(0, |m| m.len());
        drop(backend);
        let written = writers * writes * 4 * 4096;
        assert!(
            wal < written / 4,
            "the WAL grew to {wal} bytes of the {written} written"
        );
    }

    /// A write that fails leaves nothing behind: alone in its transaction (no savepoint, the
    /// transaction rolls back) and beside others in a batch (its savepoint rolls back, theirs
    /// commit).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_write_leaves_nothing_alone_or_in_a_batch() {
        let scratch = Scratch::new("fail");
        let path = scratch.0.clone();
        let backend = Arc::new(
            SqliteBackend::open(&path, Durability::Normal)
                .await
                .expect("open"),
        );
        let write = |name: &'static str, fail: bool| {
            let backend = Arc::clone(&backend);
            async move {
                backend
                    .write(move |conn| {
                        conn.execute(
                            "INSERT INTO secrets (name, value) VALUES (?1, x'00')",
                            [name],
                        )?;
                        match fail {
                            true => Err(StoreError::Backend(format!("{name} refused"))),
                            false => Ok(()),
                        }
                    })
                    .await
            }
        };
        let stored = |name: &str| {
            backend
                .read(|conn| read_secret(conn, name))
                .expect("read")
                .is_some()
        };

        assert!(write("lone", true).await.is_err());
        assert!(!stored("lone"), "a lone failed write was rolled back");
        write("after", false).await.expect("the next write commits");
        assert!(stored("after"));

        // Hold the connection so the writes queue, then commit them as one batch.
        let held = backend.writer.conn.lock().expect("writer");
        let tasks: Vec<_> = [("a", false), ("b", true), ("c", false)]
            .into_iter()
            .map(|(name, fail)| tokio::spawn(write(name, fail)))
            .collect();
        while lock(&backend.writer.queue).len() < 3 {
            // Not awaited: the connection's lock is held here, and the writes queue on the
            // runtime's workers meanwhile.
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        drop(held);
        backend.lead();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.expect("task").is_ok());
        }
        assert_eq!(outcomes, [true, false, true]);
        assert_eq!(
            ["a", "b", "c"].map(stored),
            [true, false, true],
            "only the failed write of the batch was rolled back"
        );
        drop(backend);
    }
}
