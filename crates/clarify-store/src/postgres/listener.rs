//! Wake-ups across instances: what a numbering round's `NOTIFY` says, and the listener task
//! that turns it into wake-ups of this instance's waiters and feed followers.

use std::sync::Weak;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::oneshot;

use super::{CONNECT_TIMEOUT, LISTEN_BACKOFF_MAX, LISTEN_BACKOFF_MIN};
use crate::codec::EventParts;
use crate::record::EventKind;
use crate::waiters::Waiters;

/// The channel each numbering round notifies: `<newest seq>` then the ids of the requests the
/// round resolved, space-separated, or `*` for "every request" when they do not fit.
pub(super) const WAKE_CHANNEL: &str = "clarify_resolved";

/// The longest `NOTIFY` payload sent (PostgreSQL's limit is 8,000 bytes); a round resolving more
/// requests than fit wakes every waiter instead.
const NOTIFY_PAYLOAD_MAX: usize = 7_900;

/// A listener connection subscribed to [`WAKE_CHANNEL`].
pub(super) async fn listen(options: &PgConnectOptions) -> Result<PgListener, sqlx::Error> {
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
pub(super) async fn run_listener(
    options: PgConnectOptions,
    first: PgListener,
    waiters: Weak<Waiters>,
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
                    connected = listen(&options) => connected,
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
                // The connection dropped and sqlx has already reconnected and listens again.
                Ok(None) => waiters.notify_all(),
                Err(e) => {
                    tracing::warn!(error = %e, "lost the LISTEN connection; reconnecting");
                    waiters.notify_all();
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
/// sent them.
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
