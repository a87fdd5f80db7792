//! Wake-ups across instances: what a numbering round's `NOTIFY` says, and the listener task
//! that turns it into wake-ups of this instance's waiters and feed followers.

use std::sync::{Arc, Weak};

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::{Notify, oneshot};

use super::hosts::Hosts;
use super::{CONNECT_TIMEOUT, LISTEN_BACKOFF_MAX, LISTEN_BACKOFF_MIN};
use crate::codec::EventParts;
use crate::feed::waiters::Waiters;
use crate::record::EventKind;

/// The channel each numbering round notifies: `<newest seq>` then the ids of the requests the
/// round resolved, space-separated, or `*` for "every request" when they do not fit.
///
/// Versions before the sequencer (PostgreSQL schema 9 and older) sent one notification per
/// resolution on the same channel, its payload the request id alone, and read every payload as
/// a request id. This listener reads theirs; theirs cannot read this one, which must carry the
/// sequence, so while both run, waiters on an older instance learn of a resolution made through
/// a newer one from their own poller (ARCHITECTURE.md, "Upgrading").
pub(super) const WAKE_CHANNEL: &str = "clarify_resolved";

/// The longest `NOTIFY` payload sent (PostgreSQL's limit is 8,000 bytes); a round resolving more
/// requests than fit wakes every waiter instead.
const NOTIFY_PAYLOAD_MAX: usize = 7_900;

/// A listener connection subscribed to [`WAKE_CHANNEL`], on the first of `hosts` where LISTEN
/// works (a standby refuses it: it cannot LISTEN during recovery); else the last host's error.
pub(super) async fn listen(hosts: &Hosts) -> Result<PgListener, sqlx::Error> {
    let mut failed = None;
    for options in hosts.each() {
        match listen_on(options).await {
            Ok(mut listener) => {
                // sqlx would reconnect to this same host, retrying a dead one until its
                // timeout, before saying the connection was lost; with several hosts the lost
                // connection is reported at once and the hosts are walked again instead.
                listener.eager_reconnect(!hosts.several());
                return Ok(listener);
            }
            Err(e) => failed = Some(e),
        }
    }
    Err(failed.unwrap_or(sqlx::Error::PoolTimedOut))
}

async fn listen_on(options: &PgConnectOptions) -> Result<PgListener, sqlx::Error> {
    // A pool of its own, one connection, never recycled: the listener is meant to stay. A fresh
    // pool per (re)connection means a dead old connection can never hold the only slot.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(CONNECT_TIMEOUT)
        .max_lifetime(None)
        .idle_timeout(None)
        .connect_lazy_with(options.clone());
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(WAKE_CHANNEL).await?;
    Ok(listener)
}

/// Turns notifications into local wake-ups until the backend is dropped. While the connection is
/// down notifications are lost, so every (re)connection wakes every waiter to re-read its request.
/// A lost connection also tells `lost`, as the primary may have gone; with several hosts the
/// listener then walks them again itself rather than let sqlx reconnect to the same one.
pub(super) async fn run_listener(
    hosts: Hosts,
    first: PgListener,
    waiters: Weak<Waiters>,
    lost: Arc<Notify>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut listener = Some(first);
    let mut backoff = LISTEN_BACKOFF_MIN;
    loop {
        let mut current = match listener.take() {
            Some(l) => l,
            None => {
                let connected = tokio::select! {
                    _ = &mut stop => return,
                    connected = listen(&hosts) => connected,
                };
                match connected {
                    Ok(l) => {
                        backoff = LISTEN_BACKOFF_MIN;
                        let Some(waiters) = waiters.upgrade() else {
                            return;
                        };
                        waiters.notify_all();
                        l
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot LISTEN for wake-ups; retrying");
                        tokio::select! {
                            _ = &mut stop => return,
                            () = tokio::time::sleep(backoff) => {}
                        }
                        backoff = (backoff * 2).min(LISTEN_BACKOFF_MAX);
                        continue;
                    }
                }
            }
        };
        loop {
            let received = tokio::select! {
                _ = &mut stop => return,
                received = current.try_recv() => received,
            };
            let Some(waiters) = waiters.upgrade() else {
                return;
            };
            match received {
                Ok(Some(notification)) => wake(&waiters, notification.payload()),
                // The connection dropped; with one host sqlx has already reconnected to it.
                Ok(None) => {
                    waiters.notify_all();
                    lost.notify_one();
                    if hosts.several() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "lost the LISTEN connection; reconnecting");
                    waiters.notify_all();
                    lost.notify_one();
                    break;
                }
            }
        }
        tokio::select! {
            _ = &mut stop => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(LISTEN_BACKOFF_MAX);
    }
}

/// Turns one numbering round's notification (see [`WAKE_CHANNEL`]) into local wake-ups. A
/// payload that does not start with a number is a request id, as versions before the sequencer
/// sent them (a random id is 26 characters, too long to read as a sequence even when all its
/// characters are digits).
fn wake(waiters: &Waiters, payload: &str) {
    let (first, rest) = payload.split_once(' ').unwrap_or((payload, ""));
    let Ok(seq) = first.parse::<u64>() else {
        waiters.notify(payload);
        return;
    };
    if rest == "*" {
        waiters.notify_all();
    } else {
        for id in rest.split(' ').filter(|id| !id.is_empty()) {
            waiters.notify(id);
        }
    }
    waiters.feed_reached(seq);
}

/// The notification of a round whose newest event is `seq` (see [`WAKE_CHANNEL`]).
pub(super) fn wake_payload(seq: i64, events: &[EventParts]) -> String {
    let mut payload = seq.to_string();
    for e in events {
        if EventKind::parse(&e.kind).is_some_and(EventKind::resolves) {
            if payload.len() + 1 + e.request_id.len() > NOTIFY_PAYLOAD_MAX {
                return format!("{seq} *");
            }
            payload.push(' ');
            payload.push_str(&e.request_id);
        }
    }
    payload
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Whether a waiter registered for `id` (before `act`) is woken by `act`.
    async fn woken(hub: &Arc<Waiters>, id: &str, act: impl FnOnce()) -> bool {
        let guard = hub.register(id);
        let notify = Arc::clone(&guard.notify);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        act();
        tokio::time::timeout(Duration::from_millis(20), notified)
            .await
            .is_ok()
    }

    fn event(seq: i64, kind: EventKind, request_id: &str) -> EventParts {
        EventParts {
            seq,
            tenant: "t".to_owned(),
            request_id: request_id.to_owned(),
            kind: kind.as_str().to_owned(),
            actor: None,
            channel: None,
            principal: None,
            at: 0,
            hash: None,
        }
    }

    #[tokio::test]
    async fn the_listener_reads_a_round_and_a_request_id_as_older_versions_sent_it() {
        let hub = Arc::new(Waiters::default());
        let feed = hub.watch_feed();
        let round = wake_payload(
            42,
            &[
                event(40, EventKind::Answered, "r1"),
                event(41, EventKind::Created, "r2"),
                event(42, EventKind::Expired, "r3"),
            ],
        );
        assert_eq!(round, "42 r1 r3", "the round names what it resolved");
        assert!(woken(&hub, "r1", || wake(&hub, &round)).await);
        assert!(woken(&hub, "r3", || wake(&hub, &round)).await);
        assert!(
            !woken(&hub, "r2", || wake(&hub, &round)).await,
            "r2 was only created"
        );
        assert_eq!(*feed.borrow(), 42);

        assert!(
            woken(&hub, "r9", || wake(&hub, "43 *")).await,
            "too many to name"
        );
        assert_eq!(*feed.borrow(), 43);

        // Older versions' payloads: the request id alone, however it is spelled.
        let digits = "01234567890123456789012345";
        assert!(woken(&hub, "r000002", || wake(&hub, "r000002")).await);
        assert!(woken(&hub, digits, || wake(&hub, digits)).await);
        assert!(!woken(&hub, "r1", || wake(&hub, "r000002")).await);
        assert_eq!(*feed.borrow(), 43, "no sequence in them");
    }
}
