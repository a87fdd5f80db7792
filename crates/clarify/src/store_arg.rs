//! Opening the store a command works on directly (`keys`, `audit`, `report --db`, `mcp`): each
//! that writes says on stderr which store it used, and none creates a SQLite file unless asked.
//!
//! Opening a `sqlite://PATH` store creates the file when it is not there. For `clarify serve`
//! that is the point; for a command run beside a server it is a mistake waiting to happen: run in
//! another directory, `clarify keys create` would make a key in a new, empty `clarify.db` that no
//! server reads, and the server would then refuse the key. So these commands refuse a file that
//! does not exist, naming it and how to point at the server's store, unless `--create` asks for a
//! new one.

use anyhow::Context as _;
use clarify_store::{Store, StoreOptions};

/// Whether a SQLite file that does not exist may be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Refuse it, saying how to name the server's store or ask for a new one.
    Refuse,
    /// Create it (`--create`).
    Create,
}

/// What the command does with the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Writes it: which store it is goes to stderr first.
    Write,
    /// Only reads it (its error, if any, stays one line).
    Read,
}

/// Opens the store at `db` for a command that is not the server; one that writes says on
/// stderr which store it is first (a PostgreSQL password shown as `***`).
pub async fn open(
    db: &str,
    options: StoreOptions,
    missing: Missing,
    used: Use,
) -> anyhow::Result<Store> {
    let shown = shown(db);
    if let Some(path) = sqlite_path(db).filter(|p| !std::path::Path::new(p).exists()) {
        if missing == Missing::Refuse {
            anyhow::bail!(
                "there is no store at {path}: point at the store your server uses with --db \
                 (or CLARIFY_DB), e.g. --db sqlite:///srv/clarify/clarify.db, the URL `clarify \
                 serve` was given; or pass --create to make a new store at {path}"
            );
        }
        eprintln!("clarify: store {shown} (created)");
    } else if used == Use::Write {
        eprintln!("clarify: store {shown}");
    }
    Store::open(db, options)
        .await
        .with_context(|| format!("cannot open the store {shown}"))
}

/// The file of a `sqlite:` URL, without any `?options`.
fn sqlite_path(db: &str) -> Option<&str> {
    let db = db.trim();
    let path = db
        .strip_prefix("sqlite://")
        .or_else(|| db.strip_prefix("sqlite:"))?;
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    (!path.is_empty() && path != ":memory:").then_some(path)
}

/// The URL as it may be printed: a password in it (`postgres://user:secret@host/db`) is
/// replaced by `***`.
pub fn shown(db: &str) -> String {
    clarify_store::redacted_url(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            shown("postgres://clarify:s3cret@db:5432/clarify?sslmode=require"),
            "postgres://clarify:***@db:5432/clarify?sslmode=require"
        );
        assert_eq!(
            shown("postgres://clarify@db/clarify"),
            "postgres://clarify@db/clarify"
        );
        assert_eq!(shown("sqlite://clarify.db"), "sqlite://clarify.db");
        assert_eq!(shown("memory:"), "memory:");
    }

    #[test]
    fn the_file_of_a_sqlite_url_is_found() {
        assert_eq!(sqlite_path("sqlite://clarify.db"), Some("clarify.db"));
        assert_eq!(sqlite_path("sqlite:/srv/c.db?mode=rwc"), Some("/srv/c.db"));
        assert_eq!(sqlite_path("postgres://db/clarify"), None);
        assert_eq!(sqlite_path("memory:"), None);
    }
}
