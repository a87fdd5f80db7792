//! The PostgreSQL backend: state shared by several clarify instances.
//!
//! Every instance talks to the same tables (all named `clarify_*`, so the database can be shared
//! with other software), so everything that must happen once happens inside PostgreSQL:
//! - a resolution is one conditional `UPDATE ... WHERE status = 'pending'`, so of concurrent
//!   resolutions from any number of instances exactly one changes the row;
//! - idempotency keys and `dedupe` are unique indexes, so two instances creating the same request
//!   at once still store it once;
//! - the reaper claims overdue rows with `FOR UPDATE SKIP LOCKED`, so instances expiring at the
//!   same moment neither block each other nor expire a request twice;
//! - a webhook delivery is inserted by the transaction that resolves its request, and workers claim
//!   due deliveries with `FOR UPDATE SKIP LOCKED`, so two instances never lease the same one;
//! - a login token is redeemed by one `DELETE ... RETURNING`, so it works once however many
//!   instances try it; an active key name and a server secret are settled by unique indexes.
//!
//! The event feed. A writing transaction takes no lock beyond its own rows and sends no
//! notification: it inserts its events, unnumbered, into `clarify_event_inbox`, and commits.
//! One *sequencer* per database numbers them: every instance runs a sequencer task, and the one
//! holding a session-level advisory lock on its own connection leads. In rounds, it moves the
//! committed inbox rows, oldest first, into `clarify_events` with the next sequence numbers and
//! their audit-chain hashes, in one transaction that also takes the event-log lock and sends one
//! `NOTIFY` for the whole round. Readers read only `clarify_events`, whose rows are written by
//! nothing else, so numbers become visible in order (ARCHITECTURE.md has the argument, and what
//! a stalled sequencer costs).
//!
//! Waiters in other instances are woken by that notification (its payload names the round's
//! newest sequence and the requests it resolved): every instance runs one listener task that
//! turns it into local wake-ups. Notifications are only hints (a waiter re-reads the row), and
//! the store's event-log poller backs them up. A waiter in the resolving instance is woken at
//! once, without waiting for the sequencer.
//!
//! How it is laid out. This file holds the backend, how it opens (schema first, then the pool, the
//! listener and the sequencer) and its error mapping; `sequencer` numbers the feed, `listener`
//! carries its wake-ups to every instance, and `hosts` reads a URL naming several hosts and keeps
//! the pool on the one that takes writes when a standby is promoted. Every other file is one concern, named as in the SQLite
//! backend (`sqlite/`) and as the concern is at the top of the crate, with that concern's
//! statements and row readers: `requests` (create, read, list, resolve), `votes`, `schedule`
//! (expiry, reminders, escalation), `retention`, `feed` (the event log: the inbox writers append
//! to, the numbered log readers read), `outbox` (webhook deliveries, channel notifications, channel
//! cursors), `grants`, `keys` (API keys, tokens, server secrets), `push` (Web Push subscriptions)
//! and `migrations` (the schema, version by version). A new concern is a new file here and one of
//! the same name there.

mod agui;
mod feed;
mod grants;
mod hosts;
mod insights;
mod keys;
mod listener;
mod migrations;
mod outbox;
mod push;
mod requests;
mod retention;
mod schedule;
mod sequencer;
mod votes;

use std::sync::Arc;
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use tokio::sync::{Notify, oneshot};

use crate::error::StoreError;
use crate::feed::waiters::Waiters;

use hosts::{Hosts, SessionAttrs, follow_primary};
use listener::{listen, run_listener};
use migrations::migrate;
use sequencer::run_sequencer;

/// Connections per instance. Every operation is a few short statements, so a small pool serves
/// many concurrent agents, and several instances stay well under the server's connection limit.
const MAX_CONNECTIONS: u32 = 16;

/// How long to wait for a connection before reporting the database unavailable. Short, so a
/// readiness probe or a CLI command fails fast instead of hanging.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Listener reconnection backoff bounds.
const LISTEN_BACKOFF_MIN: Duration = Duration::from_millis(100);
const LISTEN_BACKOFF_MAX: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub(crate) struct PgBackend {
    pool: PgPool,
    /// Tells this instance's sequencer that events were just committed.
    poke: Arc<Notify>,
    /// Dropping the backend drops these senders, which stop the listener and sequencer tasks.
    _stop_listener: oneshot::Sender<()>,
    _stop_sequencer: oneshot::Sender<()>,
    /// Present when the URL names several hosts: stops the task that follows the primary.
    _stop_follower: Option<oneshot::Sender<()>>,
}

impl PgBackend {
    pub(crate) async fn open(url: &str, waiters: Arc<Waiters>) -> Result<Self, StoreError> {
        let mut hosts = Hosts::parse(url).map_err(|reason| StoreError::InvalidUrl {
            url: redact(url),
            reason,
        })?;
        // Named, so an operator can tell clarify's connections apart; a URL's own name wins.
        hosts.name_connections("clarify");

        // One direct connection first: the pool retries a refused connection until its timeout
        // and then reports only "timed out", while this says what is wrong, at once.
        let (mut conn, primary) = hosts.connect().await.map_err(|e| {
            StoreError::Unavailable(format!(
                "{e}; check that the server runs and the URL is right"
            ))
        })?;
        let migrated = migrate(&mut conn).await;
        // Closing is a courtesy to the server; the connection is finished either way.
        let _ = conn.close().await;
        migrated?;

        // Lost: the primary may have moved (the listener lost its connection, the pool reached a
        // read-only server); the follower, when the URL names several hosts, looks for it.
        let lost = Arc::new(Notify::new());
        let mut pool_options = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(CONNECT_TIMEOUT);
        let attrs = hosts.attrs();
        if attrs != SessionAttrs::Any {
            let lost = Arc::clone(&lost);
            pool_options = pool_options.after_connect(move |conn, _| {
                let lost = Arc::clone(&lost);
                Box::pin(async move {
                    if attrs.accepts(conn).await? {
                        return Ok(());
                    }
                    lost.notify_one();
                    Err(sqlx::Error::Protocol(
                        "the database server is read-only (a standby?)".to_owned(),
                    ))
                })
            });
        }
        let pool = pool_options.connect_lazy_with(hosts.options(primary).clone());

        // Listening before `open` returns means no resolution made after it is missed.
        let listener = listen(&hosts).await.map_err(|e| {
            StoreError::Unavailable(format!(
                "PostgreSQL at {}: cannot LISTEN: {e}",
                hosts.describe()
            ))
        })?;
        let (stop_listener, stopped) = oneshot::channel();
        tokio::spawn(run_listener(
            hosts.clone(),
            listener,
            Arc::downgrade(&waiters),
            Arc::clone(&lost),
            stopped,
        ));
        let poke = Arc::new(Notify::new());
        let (stop_sequencer, stopped) = oneshot::channel();
        tokio::spawn(run_sequencer(hosts.clone(), Arc::clone(&poke), stopped));
        let stop_follower = hosts.several().then(|| {
            let (stop, stopped) = oneshot::channel();
            tokio::spawn(follow_primary(hosts, pool.clone(), primary, lost, stopped));
            stop
        });
        Ok(Self {
            pool,
            poke,
            _stop_listener: stop_listener,
            _stop_sequencer: stop_sequencer,
            _stop_follower: stop_follower,
        })
    }

    /// Commits a transaction that appended events, and tells this instance's sequencer.
    async fn commit_events(
        &self,
        tx: sqlx::Transaction<'_, sqlx::Postgres>,
    ) -> Result<(), StoreError> {
        tx.commit().await.map_err(db_err)?;
        self.poke.notify_one();
        Ok(())
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

/// Connection-level failures (the server went away, is starting or shutting down, refuses more
/// connections) are "unavailable"; everything else is a failure of the statement.
fn db_err(e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &e {
        let unavailable = db.code().is_some_and(|code| {
            code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03" | "53300")
        });
        if unavailable {
            return StoreError::Unavailable(e.to_string());
        }
    }
    StoreError::from(e)
}

fn corrupt_row(e: sqlx::Error) -> StoreError {
    StoreError::Corrupt(format!("unexpected column: {e}"))
}

fn to_u64(seq: i64) -> Result<u64, StoreError> {
    u64::try_from(seq).map_err(|_| StoreError::Corrupt(format!("negative sequence {seq}")))
}

/// `host:port/database` for messages; never the password.
fn describe(options: &PgConnectOptions) -> String {
    let host = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    match options.get_database() {
        Some(db) => format!("{host}/{db}"),
        None => host,
    }
}

/// The store URL `url` with any password replaced by `***`, for messages and logs: the one
/// rule every place that shows a store's URL uses.
pub fn redact(url: &str) -> String {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_send<T: Send>(_: T) {}

    /// Servers open stores inside spawned tasks, so opening must be `Send`.
    #[allow(dead_code)]
    fn open_is_send(waiters: Arc<Waiters>) {
        is_send(PgBackend::open("postgres://localhost/x", waiters));
    }

    #[test]
    fn redact_hides_passwords() {
        assert_eq!(
            redact("postgres://u:secret@host:5432/db?x=1"),
            "postgres://u:***@host:5432/db?x=1"
        );
        assert_eq!(redact("postgres://u@host/db"), "postgres://u@host/db");
    }
}
