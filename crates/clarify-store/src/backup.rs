//! A consistent copy of a SQLite store, made while servers keep writing to it.
//!
//! SQLite's online backup API copies every page in one step, inside one read transaction of the
//! source: the copy is the database as of one commit, and in WAL mode a reader never blocks the
//! writer, so a serving instance goes on committing meanwhile. The copy is written to a hidden
//! file beside `OUT`, checked (`PRAGMA quick_check`, and that it holds clarify's tables), and
//! only then renamed to `OUT`; a failed backup leaves nothing behind. PostgreSQL stores are
//! backed up with `pg_dump`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

/// How long a backup waits for a source that stays locked (another process migrating it).
const BUSY_FOR: Duration = Duration::from_secs(30);

/// Why a backup failed; nothing was written to `OUT`.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(
        "clarify backup copies SQLite stores (--db sqlite://PATH); back up PostgreSQL with pg_dump"
    )]
    NotSqlite,
    #[error("{0} already exists; choose a new file name or remove the old backup first")]
    Exists(PathBuf),
    #[error("{0} does not exist; check --db (or CLARIFY_DB)")]
    NoDatabase(String),
    #[error("{path} is not a clarify database: {detail}")]
    NotClarify { path: String, detail: String },
    #[error("cannot back up {path}: {detail}")]
    Failed { path: String, detail: String },
}

/// What a backup copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupReport {
    /// Requests in the copy.
    pub requests: u64,
    /// The copy's size in bytes.
    pub bytes: u64,
}

/// Copies the store at `url` (`sqlite://PATH`) to the new file `out`.
pub async fn backup(url: &str, out: &Path) -> Result<BackupReport, BackupError> {
    let trimmed = url.trim();
    let path = trimmed
        .strip_prefix("sqlite://")
        .or_else(|| trimmed.strip_prefix("sqlite:"))
        .filter(|p| !p.is_empty())
        .ok_or(BackupError::NotSqlite)?
        .to_owned();
    let out = out.to_owned();
    tokio::task::spawn_blocking(move || copy(&path, &out))
        .await
        .map_err(|e| BackupError::Failed {
            path: url.to_owned(),
            detail: e.to_string(),
        })?
}

fn copy(path: &str, out: &Path) -> Result<BackupReport, BackupError> {
    if out.exists() {
        return Err(BackupError::Exists(out.to_owned()));
    }
    if !Path::new(path).exists() {
        return Err(BackupError::NoDatabase(path.to_owned()));
    }
    let failed = |detail: String| BackupError::Failed {
        path: path.to_owned(),
        detail,
    };
    let name = out
        .file_name()
        .ok_or_else(|| failed(format!("{} is not a file name", out.display())))?;
    let partial = out.with_file_name(format!(".{}.partial", name.to_string_lossy()));
    // `backups/clarify-<date>.db` on a fresh machine: the folder is made, as `cp` into a new
    // folder would not, since a backup's place is usually one made for backups.
    if let Some(folder) = out.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|e| {
            failed(format!(
                "cannot create the folder {}: {e}",
                folder.display()
            ))
        })?;
    }
    let result = copy_into(path, &partial).and_then(|requests| {
        std::fs::rename(&partial, out)
            .map_err(|e| failed(format!("cannot write {}: {e}", out.display())))?;
        let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
        Ok(BackupReport { requests, bytes })
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// Copies `path` into the new file `to` and checks the copy; returns its request count.
fn copy_into(path: &str, to: &Path) -> Result<u64, BackupError> {
    let failed = |detail: String| BackupError::Failed {
        path: path.to_owned(),
        detail,
    };
    // Read-write without create: a missing file is an error, and a WAL database needs its
    // shared-memory index, which a read-only connection might not be able to make.
    let source = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| failed(e.to_string()))?;
    let _ = std::fs::remove_file(to);
    let mut copy = Connection::open(to).map_err(|e| failed(format!("{}: {e}", to.display())))?;
    {
        let backup = Backup::new(&source, &mut copy).map_err(|e| failed(e.to_string()))?;
        let started = Instant::now();
        loop {
            // -1: every page in one step, so the copy is one consistent snapshot.
            match backup.step(-1).map_err(|e| failed(e.to_string()))? {
                StepResult::Done => break,
                StepResult::More => {}
                StepResult::Busy | StepResult::Locked if started.elapsed() < BUSY_FOR => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                StepResult::Busy | StepResult::Locked => {
                    return Err(failed(format!(
                        "the database stayed locked for {} s",
                        BUSY_FOR.as_secs()
                    )));
                }
                other => return Err(failed(format!("unexpected backup step {other:?}"))),
            }
        }
    }
    // A backup is one self-contained file; the store turns WAL on again when it opens it.
    copy.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
        .map_err(|e| failed(format!("finishing the copy: {e}")))?;
    let check: String = copy
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(|e| failed(format!("checking the copy: {e}")))?;
    if check != "ok" {
        return Err(failed(format!("the copy does not check out: {check}")));
    }
    let requests: i64 = copy
        .query_row("SELECT count(*) FROM requests", [], |r| r.get(0))
        .map_err(|e| BackupError::NotClarify {
            path: path.to_owned(),
            detail: e.to_string(),
        })?;
    Ok(u64::try_from(requests).unwrap_or(0))
}
