//! `/v1/events`: the caller's tenant's request events as Server-Sent Events.
//!
//! The store's event log is the only source: each SSE `id` is an event-log sequence, so a client
//! that reconnects with `Last-Event-ID` is replayed exactly what came after, with no gap and no
//! repeat, whichever instance it reconnects to. A stream reads the log in small batches only
//! when its client is ready for more, so a slow client holds one batch at most and delays nobody
//! else. The [`EventHub`](crate::state::hub::EventHub) only says "the log has grown" (a `watch`
//! of the newest sequence): this instance pokes it after its own writes, the store's feed watch
//! (PostgreSQL's one notification per numbering round) after anyone's, and a tailer polls the
//! log as a backstop. Pokes are read at most every `POKE_GAP`, and not at all while no stream
//! is open, so a busy instance does not read the log once per write. A stream ends when its key
//! is revoked.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use clarify_store::EventKind;
use futures_util::stream::{self, Stream};
use tokio::sync::watch;

use crate::api::render;
use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// How many events one read of the log returns.
const BATCH: usize = 100;

/// The least time between two reads of the log on this instance's own writes: under load a
/// stream learns of a write up to this much later, and the tailer reads the log at most this
/// often instead of once per write.
const POKE_GAP: Duration = Duration::from_millis(2);

/// Watches the newest event-log sequence until shutdown: every `event_poll` (for other
/// instances' writes and the reaper's, and the pending gauge), and after this instance's own
/// writes while any stream is open to hear of them.
pub(crate) async fn tail(state: AppState) {
    let every = state.config.event_poll;
    let mut feed = state.store.watch_feed();
    let mut feed_open = true;
    let mut poll_at = tokio::time::Instant::now() + every;
    let mut read_at = tokio::time::Instant::now();
    loop {
        let poked = tokio::select! {
            () = state.shutdown.cancelled() => return,
            () = state.hub.poked() => true,
            // The store heard that the feed grew (PostgreSQL's per-round notification): read.
            changed = feed.changed(), if feed_open => {
                feed_open = changed.is_ok();
                false
            }
            () = tokio::time::sleep_until(poll_at) => false,
        };
        if poked {
            // Only streams wait for `newest` (each opens from the log itself), and the
            // pending gauge catches up at every poll and scrape: with no stream open, a write
            // here costs the tailer nothing.
            if !state.hub.streams_open() {
                continue;
            }
            tokio::time::sleep_until(read_at + POKE_GAP).await;
        }
        read_at = tokio::time::Instant::now();
        poll_at = read_at + every;
        match state.store.last_event_seq().await {
            Ok(seq) => {
                if state.hub.advance(seq)
                    && let Err(e) = state.metrics.count_pending(&state.store).await
                {
                    tracing::warn!(error = %e, "counting pending requests failed; retrying");
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the event log failed; retrying"),
        }
    }
}

/// The SSE `event` name of an event kind.
pub fn event_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Created => "request.created",
        EventKind::Answered => "request.answered",
        EventKind::Skipped => "request.skipped",
        EventKind::Expired => "request.expired",
        EventKind::Cancelled => "request.cancelled",
        EventKind::Voted => "request.voted",
        EventKind::Reminded => "request.reminded",
        EventKind::Escalated => "request.escalated",
        EventKind::GrantSuggestedAccepted => "grant.suggested_accepted",
    }
}

/// Request events of the caller's tenant. Without `Last-Event-ID` the stream starts with events
/// written from now on; with it, it replays every later event first. Each event's data is the
/// request's record as it is when the event is sent.
#[utoipa::path(get, path = "/v1/events", tag = "events",
    params(("Last-Event-ID" = Option<u64>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "`text/event-stream` of `request.created`, `request.voted`, `request.reminded`, `request.escalated`, `request.answered`, `request.skipped`, `request.expired`, `request.cancelled`; data is the record", content_type = "text/event-stream"),
        (status = 400, description = "Last-Event-ID is not an event id", body = ErrorBody),
        (status = 503, description = "Too many long-polls and event streams are open (`too_many_waiters`), or the store is unreachable; retry after `Retry-After` seconds", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait before retrying")))),
    security(("bearer" = [])))]
pub async fn stream(State(state): State<AppState>, caller: Caller, headers: HeaderMap) -> Response {
    let resume = match headers.get("last-event-id") {
        None => None,
        Some(v) => match v.to_str().ok().and_then(|s| s.trim().parse::<u64>().ok()) {
            Some(seq) => Some(seq),
            None => {
                return ApiError::bad_request(
                    "invalid_last_event_id",
                    "Last-Event-ID must be the id of an event this server sent",
                )
                .into_response();
            }
        },
    };
    let permit = match state.waiter() {
        Ok(permit) => permit,
        Err(e) => return e.into_response(),
    };
    let newest = match state.store.last_event_seq().await {
        Ok(seq) => seq,
        Err(e) => return ApiError::store(&e).into_response(),
    };
    let after = match resume {
        // An id beyond the log's end means the log was started again (a memory store
        // restarted): everything in it is new to this client.
        Some(seq) if seq > newest => 0,
        Some(seq) => seq,
        None => newest,
    };
    let cursor = Cursor {
        newest: state.hub.subscribe(),
        state,
        caller,
        after,
        pending: Vec::new().into_iter(),
        _permit: permit,
    };
    Sse::new(events(cursor))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

struct Cursor {
    state: AppState,
    caller: Caller,
    /// The last sequence sent (or skipped).
    after: u64,
    pending: std::vec::IntoIter<clarify_store::Event>,
    newest: watch::Receiver<u64>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

fn events(cursor: Cursor) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(cursor, |mut c| async move {
        loop {
            if let Some(event) = c.pending.next() {
                c.after = event.seq;
                let record = match c
                    .state
                    .store
                    .get(c.caller.tenant(), &event.request_id)
                    .await
                {
                    Ok(Some(record)) => record,
                    // Forgotten by a memory store; nothing to show.
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading a record for the event stream failed");
                        return None;
                    }
                };
                let body = render(&c.state, &c.caller, &record);
                let sse = Event::default()
                    .id(event.seq.to_string())
                    .event(event_name(event.kind))
                    .json_data(&body)
                    .unwrap_or_else(|_| Event::default().comment("unrenderable record"));
                return Some((Ok(sse), c));
            }
            // Mark what is seen before reading, so growth during the read is not missed.
            c.newest.borrow_and_update();
            match c
                .state
                .store
                .events_after(Some(c.caller.tenant()), c.after, BATCH)
                .await
            {
                Ok(batch) if !batch.is_empty() => {
                    // The key was checked when the stream opened, but a stream outlives that
                    // check: a revoked key must stop receiving records (and their answer
                    // links) at once, as it stops everywhere else.
                    match c.caller.is_current(&c.state).await {
                        Ok(true) => {}
                        Ok(false) => return None,
                        Err(e) => {
                            tracing::warn!(error = %e, "checking a stream's key failed");
                            return None;
                        }
                    }
                    c.pending = batch.into_iter();
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "reading the event log for a stream failed");
                    return None;
                }
            }
            let shutdown = c.state.shutdown.clone();
            tokio::select! {
                changed = c.newest.changed() => if changed.is_err() { return None },
                () = shutdown.cancelled() => return None,
            }
        }
    })
}
