//! `clarify audit`: the hash-chained event log, read directly from the store (also while a
//! server runs). `verify` recomputes the whole chain; `export` prints events as JSON lines.

use std::process::ExitCode;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use clarify_store::{Store, StoreOptions};

use crate::AuditCommand;

/// Events read per round trip.
const PAGE: usize = 1_000;

/// Opens the store at `db` for reading it (no reaper), saying which it is. A SQLite file that is
/// not there is refused: reading a store that does not exist is a typo.
pub(crate) async fn open_existing(db: &str) -> anyhow::Result<Store> {
    let options = StoreOptions {
        reaper_interval: None,
        ..StoreOptions::default()
    };
    crate::store_arg::open(
        db,
        options,
        crate::store_arg::Missing::Refuse,
        crate::store_arg::Use::Read,
    )
    .await
}

pub async fn run(command: AuditCommand, db: &str) -> anyhow::Result<ExitCode> {
    // A mistyped --since is named before the store is.
    let since = match &command {
        AuditCommand::Export { since } => since.as_deref().map(parse_since).transpose()?,
        AuditCommand::Verify => None,
    };
    let store = open_existing(db).await?;
    // Events committed moments ago are numbered (PostgreSQL numbers them just after commit).
    store.sync_feed().await?;
    match command {
        AuditCommand::Verify => match store.verify_audit().await? {
            Ok(count) => {
                println!("clarify: the audit chain verifies: {count} events");
                Ok(ExitCode::SUCCESS)
            }
            Err(at) => {
                eprintln!(
                    "clarify: the audit chain breaks at {at}; the store's events were altered \
                     outside clarify"
                );
                Ok(ExitCode::FAILURE)
            }
        },
        AuditCommand::Export { .. } => {
            let mut after = 0;
            loop {
                let events = store.audit_events(None, after, PAGE).await?;
                let Some(last) = events.last() else { break };
                after = last.seq;
                for event in events
                    .iter()
                    .filter(|e| since.is_none_or(|since| e.at >= since))
                {
                    println!("{}", serde_json::to_string(event)?);
                }
                if events.len() < PAGE {
                    break;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--since`: an RFC 3339 time, or a duration back from now (`24h`, `7d`).
fn parse_since(text: &str) -> anyhow::Result<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let back = crate::duration::parse_duration(text).map_err(|e| {
        anyhow::anyhow!(
            "--since {text:?} is neither an RFC 3339 time (2026-11-24T08:00:00Z) nor a duration \
             (24h, 7d): {e}"
        )
    })?;
    let back = chrono::TimeDelta::from_std(back).context("--since is too far back")?;
    Ok(Utc::now() - back)
}
