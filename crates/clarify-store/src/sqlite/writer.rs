//! The single writer: group commit, and the WAL checkpoints that keep its log bounded.
//!
//! Every write is a closure queued for the writing connection; whoever finds the connection free
//! leads, running the queued writes in one transaction (each in a savepoint unless it is alone)
//! and committing once. The checkpoint thread copies the WAL into the database in the
//! background; when the writer is idle it finishes the copy holding the writing connection, so
//! the next write starts the WAL over, and it asks the writer to do so when writes never pause
//! long enough.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{SqliteBackend, WRITE_WAIT, lock, open_reader};
use crate::error::StoreError;

/// The most writes grouped into one commit.
const MAX_BATCH: usize = 512;

/// How often the checkpoint thread looks for the writer to be idle after its copy.
const SETTLE_POLL: std::time::Duration = std::time::Duration::from_micros(500);

/// How long a checkpoint that restarts the WAL waits for readers to leave it.
const RESTART_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

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

/// The writing connection and the writes queued for it.
pub(super) struct Writer {
    queue: Mutex<Vec<Job>>,
    conn: Mutex<Connection>,
    /// Set by the checkpoint thread when the WAL should start over; see [`run_checkpoints`].
    restart_wal: AtomicBool,
}

impl Writer {
    pub(super) fn new(conn: Connection) -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            conn: Mutex::new(conn),
            restart_wal: AtomicBool::new(false),
        }
    }

    /// The writing connection, when no write is running on it.
    pub(super) fn try_conn(&self) -> Option<std::sync::MutexGuard<'_, Connection>> {
        self.conn.try_lock().ok()
    }

    /// Commits queued writes while the writing connection is free. A write queued by a caller
    /// that found the connection busy is picked up by the current leader: the queue is checked
    /// again after the connection is released, so no write is left behind. Whoever held the
    /// connection for something else (a read, the checkpoint thread) leads once it lets go.
    pub(super) fn lead(&self) {
        loop {
            {
                let Ok(conn) = self.conn.try_lock() else {
                    return;
                };
                loop {
                    if self.restart_wal.swap(false, Ordering::Relaxed) {
                        restart_wal(&conn);
                    }
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
}

impl SqliteBackend {
    /// Runs `f` inside the next group commit and returns its result once committed.
    pub(super) async fn write<T: Send + 'static>(
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
        self.writer.lead();
        rx.await
            .map_err(|_| StoreError::Backend("a SQLite write was dropped".to_owned()))?
    }
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
///
/// Under a moderate load (a few hundred writes a second) the writer is idle most of the time,
/// yet a write commits while the checkpoint copies and syncs (milliseconds), so the next write
/// still finds frames not copied and the WAL went on growing to `restart_bytes` all the same.
/// A long WAL costs every write: SQLite's WAL index is a hash table per 4,096 frames, probed
/// linearly, so a page written at every commit (a table's last leaf, the root pages) makes a
/// run its next entry and every lookup of it walk, and each checkpoint sorts the whole current
/// block. So once the writer is idle after the copy, this thread takes its connection for a
/// second pass, which copies only what was committed during the first and while this thread
/// looked for the pause (often nothing, and then no sync; else a few frames and one sync of the
/// database file, at most once a period) while no write of this process can commit: the next
/// write finds the WAL copied and starts it over. A busy writer is not waited on: this thread
/// looks again every [`SETTLE_POLL`] for up to a quarter of the period (a write takes well
/// under a millisecond), and skips the pass if the writer never pauses that long. Looking once
/// only, a writer busy at that moment skipped the pass for the whole period: on a loaded
/// machine (a CI run, the instruction count under valgrind) that happened often enough for the
/// WAL to grow to a third of what was written.
pub(super) fn run_checkpoints(
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
    // The second column is the number of frames in the WAL.
    let checkpoint =
        || conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1));
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(period) {
        let Some(writer) = writer.upgrade() else {
            return;
        };
        match checkpoint() {
            Ok(frames) if frames > restart_frames => {
                writer.restart_wal.store(true, Ordering::Relaxed);
            }
            Ok(0) => {}
            Ok(_) => {
                if let Some(idle) = idle_writer(&writer, period / 4) {
                    let settled = checkpoint();
                    drop(idle);
                    // Writes queued while the connection was held are committed here.
                    writer.lead();
                    if let Err(e) = settled {
                        tracing::warn!(%path, error = %e, "WAL checkpoint failed");
                    }
                }
            }
            Err(e) => tracing::warn!(%path, error = %e, "WAL checkpoint failed"),
        }
    }
}

/// The writing connection once no write runs on it, looked for every [`SETTLE_POLL`] for up
/// to `within`. Polled rather than locked: under writes that never pause the leader keeps the
/// connection from batch to batch, and a blocking lock would hold this thread, and the restart
/// it must ask for, until they stop.
fn idle_writer(
    writer: &Writer,
    within: std::time::Duration,
) -> Option<std::sync::MutexGuard<'_, Connection>> {
    let until = std::time::Instant::now() + within;
    loop {
        if let Some(conn) = writer.try_conn() {
            return Some(conn);
        }
        if std::time::Instant::now() >= until {
            return None;
        }
        std::thread::sleep(SETTLE_POLL);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;

    use rusqlite::params;

    use super::*;
    use crate::Durability;
    use crate::sqlite::Scratch;
    use crate::sqlite::keys::read_secret;

    /// Held by each test of the WAL's size for its whole run. What the WAL grows to depends on
    /// when the checkpoint thread gets a core, and the constant-load test's writers and readers
    /// keep both cores busy: beside it, the moderate-load test's writer was seldom idle when a
    /// checkpoint finished, and (before the checkpoint thread looked again for a pause) its WAL
    /// grew to a third of what it wrote.
    static WAL_TESTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// Writes that never pause, with readers always in the WAL: a passive checkpoint alone
    /// never lets the WAL start over, so it would grow by every write (120 MiB here). With
    /// restarts it stays near what is written between two checkpoints (12 MiB on two busy
    /// cores).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_stays_bounded_under_constant_writes_and_reads() {
        let _alone = WAL_TESTS.lock().await;
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
            wal < written / 2,
            "the WAL grew to {wal} bytes of the {written} written"
        );
    }

    /// Writes at a steady, moderate pace (one every millisecond or so, each two pages): the
    /// writer is idle between them, and the checkpoint thread's second pass under its
    /// connection lets the next write start the WAL over after every checkpoint, so the WAL
    /// holds what a few checkpoint periods write, not everything written (without that pass, a
    /// write committing during each checkpoint's copy kept the WAL growing to its restart size).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_starts_over_at_each_checkpoint_under_a_moderate_load() {
        let _alone = WAL_TESTS.lock().await;
        let scratch = Scratch::new("wal-moderate");
        let path = scratch.0.clone();
        let period = std::time::Duration::from_millis(20);
        let backend = SqliteBackend::open_with(&path, Durability::Normal, period, 64 << 20)
            .await
            .expect("open");
        let writes = 2_000;
        for i in 0..writes {
            backend
                .write(move |conn| {
                    conn.prepare_cached(
                        "INSERT INTO secrets (name, value) VALUES (?1, zeroblob(3000))",
                    )?
                    .execute(params![format!("moderate-{i}")])?;
                    Ok(())
                })
                .await
                .expect("write");
            tokio::time::sleep(std::time::Duration::from_micros(500)).await;
        }
        let wal = std::fs::metadata(format!("{path}-wal")).map_or(0, |m| m.len());
        drop(backend);
        // Without restarts the WAL would hold all of it (its restart size here is 64 MiB); with
        // them, a few checkpoint periods' worth (about 160 KiB each; 0.4 to 1.0 MB measured,
        // also with two busy loops on the two cores).
        let written = writes * 2 * 4096;
        assert!(
            wal < written / 8,
            "the WAL grew to {wal} bytes of the {written} written: it did not start over"
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
        backend.writer.lead();
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
