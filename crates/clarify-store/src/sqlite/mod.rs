//! The SQLite backend: the embedded default.
//!
//! Writes use group commit with a leader. Every write joins a queue; the caller that finds the
//! writing connection free becomes the leader: it takes every queued write (up to a batch's
//! bound), runs each in its own savepoint inside one `BEGIN IMMEDIATE` transaction (a write alone
//! in its batch needs none), commits once, and only then gives each caller its result. A lone
//! agent thus pays no hand-off to another thread, and many concurrent agents share one commit. A
//! failing write rolls back only its own savepoint (alone, its transaction); a failed commit
//! fails every write of the batch, so nothing is half-written. WAL checkpoints run on a
//! background thread, so no write waits for one. Once the writer is idle after a checkpoint (it
//! looks for a pause for up to a quarter of the period), the thread copies what was committed
//! meanwhile holding the writing connection, so the next write starts the WAL over and SQLite's
//! WAL index stays short; only when the WAL has grown past [`WAL_RESTART_BYTES`] (writes that
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
//! trip, and used only while the row's text is the same (see `decoded`); every statement on the
//! write path is prepared once per connection.
//!
//! Durability: WAL with `synchronous=NORMAL` by default. A committed write survives a crash of
//! the process (the crash tests kill it with SIGKILL); a power loss may lose the last moments of
//! commits. [`Durability::Full`] (`--durability full`) makes the writer `synchronous=FULL`: each
//! group commit is fsynced before any of its writes is acknowledged.
//! Another process sharing the file sees writes at once; its waiters are woken by the store's
//! event-log poller.
//!
//! How it is laid out. This file holds the backend, how it opens its connections and its reads;
//! `writer` the group commit and the WAL checkpoints, `decoded` how a request row is read and the
//! cache of decoded requests. Every other file is one concern, named as in the PostgreSQL backend
//! (`postgres/`) and as the concern is at the top of the crate, with that concern's statements and
//! row readers: `requests` (create, read, list, resolve), `votes`, `schedule` (expiry, reminders,
//! escalation), `retention`, `feed` (the event log and its audit chain), `outbox` (webhook
//! deliveries, channel notifications, channel cursors), `grants`, `keys` (API keys, tokens, server
//! secrets), `agui` (AG-UI runs waiting for people), `push` (Web Push subscriptions) and
//! `migrations` (the schema, version by version). A new concern is a new file here and one of the
//! same name there.

mod agui;
mod decoded;
mod feed;
mod grants;
mod insights;
mod keys;
mod migrations;
mod outbox;
mod push;
mod requests;
mod retention;
mod schedule;
mod votes;
mod writer;

use std::sync::{Arc, Mutex};
use std::thread;

use rusqlite::{Connection, ErrorCode};

use crate::Durability;
use crate::error::StoreError;

use decoded::Decoded;
use migrations::{SCHEMA_VERSION, migrate};
use writer::{Writer, run_checkpoints};

/// Idle reader connections kept open.
const MAX_IDLE_READERS: usize = 8;

/// How often the WAL is checkpointed.
const CHECKPOINT_PERIOD: std::time::Duration = std::time::Duration::from_millis(200);

/// The WAL is made to start over once it holds more than this (see [`run_checkpoints`]).
const WAL_RESTART_BYTES: i64 = 64 << 20;

pub(crate) struct SqliteBackend {
    path: String,
    writer: Arc<Writer>,
    readers: Mutex<Vec<Connection>>,
    decoded: Arc<Decoded>,
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
        let writer = Arc::new(Writer::new(writer));
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
        let Some(conn) = self.writer.try_conn() else {
            return self.read(f);
        };
        let result = f(&conn);
        drop(conn);
        self.writer.lead();
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
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The WAL file is cut back to this size when it starts over. It is above what the WAL reaches
/// between two restarts under constant writes, so the file keeps its blocks and a restarted WAL
/// overwrites them in place: cut back to the restart size, it would be extended, and its blocks
/// allocated and zeroed, again after every restart, which cost a lone agent about a sixth of
/// its round trips. A WAL that a long reader let grow is still cut back.
const JOURNAL_SIZE_LIMIT: i64 = 256 << 20;

/// How long a statement waits for a lock another connection holds.
const WRITE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Prepared statements kept per connection: every statement of the write path and of the
/// reads fits, so none is compiled again.
const STATEMENT_CACHE: usize = 64;

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
    insights::register_functions(conn)?;
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

fn open_reader(path: &str) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(|e| classify(path, e))?;
    configure(&conn).map_err(|e| classify(path, e))?;
    Ok(conn)
}

/// A database file of this test process's own, removed (with its WAL) before and after.
#[cfg(test)]
struct Scratch(String);

#[cfg(test)]
impl Scratch {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("clarify-{name}-{}.db", std::process::id()));
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

#[cfg(test)]
impl Drop for Scratch {
    fn drop(&mut self) {
        self.remove();
    }
}
