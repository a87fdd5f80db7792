//! `/v1/events`: the caller's tenant's request events as Server-Sent Events.
//!
//! The store's event log is the only source: each SSE `id` is an event-log sequence, so a client
//! that reconnects with `Last-Event-ID` is replayed exactly what came after, with no gap and no
//! repeat, whichever instance it reconnects to. The tailer reads each new event once and renders
//! it into the [`EventHub`](crate::state::hub::EventHub)'s ring, from which every stream sends
//! the same bytes; a stream behind the ring reads the log in small batches, only when its
//! client is ready for more, so a slow client holds one batch at most and delays nobody else.
//! The tailer learns that the log grew from this instance's own writes (pokes, read at most
//! every `POKE_GAP`, or a longer gap the more streams are open, so that each stream is woken
//! for several events rather than each one), from the store's feed watch (PostgreSQL's one
//! notification per numbering round), and by polling every `event_poll` as a backstop.
//!
//! Rules a client sees: a keep-alive comment every 15 s; a stream ends when its key is revoked
//! (at once when revoked on this instance, within a second elsewhere) and when the server
//! stops; and a stream whose client has taken nothing for `Config::stream_stall` (60 s) while events wait for it is
//! closed (the stall rule), so a client that stopped reading holds no connection and no memory:
//! it resumes with `Last-Event-ID` and loses nothing.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use clarify_model::wire::event_name;
use futures_util::stream::{self, Stream};
use tokio::sync::watch;

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::state::AppState;
use crate::state::hub::{Frame, StreamWatch, Subject};

/// How many events one read of the log returns.
const BATCH: usize = 100;

/// The least time between two reads of the log on this instance's own writes: under load a
/// stream learns of a write up to this much later, and the tailer reads the log at most this
/// often instead of once per write.
const POKE_GAP: Duration = Duration::from_millis(2);

/// What each open stream adds to that gap, up to `MAX_GAP`: with a thousand streams open, each
/// wakes at most about every 12 ms, for all the events of that time, instead of for each.
const GAP_PER_STREAM: Duration = Duration::from_micros(10);
const MAX_GAP: Duration = Duration::from_millis(25);

/// How often every stream sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a stream trusts its credentials between checks, when nothing was revoked here.
const RECHECK: Duration = Duration::from_secs(1);

/// Follows the event log until shutdown: reads new events into the hub's ring while streams
/// are open, every `event_poll` (for other instances' writes and the reaper's, and the pending
/// gauge) and after this instance's own writes; sends keep-alives and applies the stall rule.
pub(crate) async fn tail(state: AppState) {
    let every = state.config.event_poll;
    let mut feed = state.store.watch_feed();
    let mut feed_open = true;
    let started = tokio::time::Instant::now();
    let mut poll_at = started + every;
    let mut read_at = started;
    let mut beat_at = started + KEEP_ALIVE;
    let mut sweep_at = started;
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
            // Only streams wait for the ring (each opens from the log itself), and the
            // pending gauge catches up at every poll and scrape: with no stream open, a write
            // here costs the tailer nothing.
            if !state.hub.streams_open() {
                continue;
            }
            let streams = u32::try_from(state.hub.stream_count()).unwrap_or(u32::MAX);
            let gap = (POKE_GAP + GAP_PER_STREAM * streams).min(MAX_GAP);
            tokio::time::sleep_until(read_at + gap).await;
        }
        read_at = tokio::time::Instant::now();
        poll_at = read_at + every;
        let now_ms = u64::try_from(read_at.duration_since(started).as_millis()).unwrap_or(u64::MAX);
        state.hub.tick(now_ms);
        if read_at >= beat_at {
            beat_at = read_at + KEEP_ALIVE;
            state.hub.beat();
        }
        if read_at >= sweep_at {
            sweep_at = read_at + state.config.stream_stall / 10;
            let closed = state
                .hub
                .sweep(u64::try_from(state.config.stream_stall.as_millis()).unwrap_or(u64::MAX));
            if closed > 0 {
                tracing::info!(
                    closed,
                    "closed event streams whose clients stopped reading (they resume with Last-Event-ID)"
                );
            }
        }
        match state.store.last_event_seq().await {
            Ok(seq) => {
                let reached = if state.hub.streams_open() {
                    fill(&state, seq).await
                } else {
                    state.hub.skip_to(seq);
                    seq
                };
                if state.hub.advance(reached)
                    && let Err(e) = state.metrics.count_pending(&state.store).await
                {
                    tracing::warn!(error = %e, "counting pending requests failed; retrying");
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the event log failed; retrying"),
        }
    }
}

/// Reads the log's events up to `seq` into the ring, each with its record rendered once;
/// returns how far the ring reaches (less than `seq` when a read failed: the next round
/// goes on from there).
async fn fill(state: &AppState, seq: u64) -> u64 {
    let mut filled = state.hub.filled();
    while filled < seq {
        let batch = match state.store.events_after(None, filled, BATCH).await {
            Ok(batch) if !batch.is_empty() => batch,
            Ok(_) => break,
            Err(e) => {
                tracing::warn!(error = %e, "reading the event log for the streams failed; retrying");
                break;
            }
        };
        for event in batch {
            let record = if event.kind == clarify_store::EventKind::Unknown {
                // A newer release's kind (a rolling upgrade): nothing this one can show.
                Ok(None)
            } else {
                state.store.get(&event.tenant, &event.request_id).await
            };
            let frame = match record {
                Ok(Some(record)) => {
                    let with = render_event(state, true, &event, &record);
                    let without = render_event(state, false, &event, &record);
                    Frame {
                        subject: Some(Subject {
                            request_id: event.request_id.clone(),
                            session: record.request.session.clone(),
                            kind: event.kind,
                        }),
                        seq: event.seq,
                        tenant: event.tenant,
                        with_link: with,
                        without_link: without,
                    }
                }
                // Forgotten by a memory store, or of a kind a newer release added: nothing to
                // show, but the ring moves past it.
                Ok(None) => Frame {
                    seq: event.seq,
                    tenant: String::new(),
                    with_link: Bytes::new(),
                    without_link: Bytes::new(),
                    subject: None,
                },
                Err(e) => {
                    tracing::warn!(error = %e, "reading a record for the event streams failed; retrying");
                    return state.hub.filled();
                }
            };
            state.hub.push(frame);
        }
        filled = state.hub.filled();
    }
    filled
}

/// One SSE event: `id`, `event` and the record as the caller sees it (with its answer link
/// or without) on one `data` line (compact JSON has no line breaks).
fn render_event(
    state: &AppState,
    links: bool,
    event: &clarify_store::Event,
    record: &clarify_store::RequestRecord,
) -> Bytes {
    let body = crate::api::render_for(state, links, record);
    let data = serde_json::to_string(&body).unwrap_or_else(|_| "null".to_owned());
    Bytes::from(format!(
        "id: {}\nevent: {}\ndata: {data}\n\n",
        event.seq,
        event_name(event.kind)
    ))
}

/// Request events of the caller's tenant. Without `Last-Event-ID` the stream starts with events
/// written from now on; with it, it replays every later event first. Each event's data is the
/// request's record as it was just after the event (as it is now, for events replayed from
/// further back than this instance keeps). A client that takes nothing for 60 s while events
/// wait for it is disconnected; it resumes with `Last-Event-ID`.
#[utoipa::path(get, path = "/v1/events", tag = "events",
    params(("Last-Event-ID" = Option<u64>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "`text/event-stream` of `request.created`, `request.voted`, `request.reminded`, `request.warned`, `request.extended`, `request.refused`, `request.escalated`, `request.answered`, `request.skipped`, `request.expired`, `request.cancelled`; data is the record", content_type = "text/event-stream"),
        (status = 400, description = "Last-Event-ID is not an event id", body = ErrorBody),
        (status = 503, description = "Too many long-polls and event streams are open (`too_many_waiters`), or the store is unreachable; retry after `Retry-After` seconds", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait before retrying")))),
    security(("bearer" = [])))]
pub async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    connection: Option<axum::Extension<crate::state::hub::Connection>>,
    headers: HeaderMap,
) -> Response {
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
    // Served without a connection of ours (a test's `oneshot`), the stall rule has nothing to
    // close and does not apply.
    let watch = connection.map(|c| state.hub.watch_stream(c.0.0.clone(), after));
    let cursor = Cursor {
        newest: state.hub.subscribe(),
        beat: state.hub.heartbeat(),
        links: caller.sees_links(),
        checked: (Instant::now(), state.hub.keys_epoch()),
        state,
        caller,
        after,
        pending: std::collections::VecDeque::new(),
        watch,
        _permit: permit,
    };
    let mut response = Body::from_stream(events(cursor)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

struct Cursor {
    state: AppState,
    caller: Caller,
    links: bool,
    /// The last sequence sent (or skipped).
    after: u64,
    /// Events read and not yet sent.
    pending: std::collections::VecDeque<Bytes>,
    newest: watch::Receiver<u64>,
    beat: watch::Receiver<u64>,
    /// When the caller's credentials were last found current, and the hub's key epoch then.
    checked: (Instant, u64),
    watch: Option<Arc<StreamWatch>>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Cursor {
    /// Whether the caller may still receive: checked against the store when a key or session
    /// was ended here since the last check, or a second has passed.
    async fn still_current(&mut self) -> bool {
        let epoch = self.state.hub.keys_epoch();
        if epoch == self.checked.1 && self.checked.0.elapsed() < RECHECK {
            return true;
        }
        match self.caller.is_current(&self.state).await {
            Ok(true) => {
                self.checked = (Instant::now(), epoch);
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::warn!(error = %e, "checking a stream's key failed");
                false
            }
        }
    }

    /// The next events after `after`, from the ring or, when the stream is behind it, from the
    /// log. `Ok(false)` when there is nothing new yet.
    async fn read(&mut self) -> Result<bool, ()> {
        let tenant = self.caller.tenant().to_owned();
        if let Some((frames, seen)) = self.state.hub.after(&tenant, self.after, BATCH) {
            let any = !frames.is_empty();
            for frame in frames {
                if !frame.with_link.is_empty() {
                    self.pending.push_back(frame.bytes(self.links));
                }
            }
            self.after = self.after.max(seen);
            return Ok(any);
        }
        let batch = match self
            .state
            .store
            .events_after(Some(&tenant), self.after, BATCH)
            .await
        {
            Ok(batch) => batch,
            Err(e) => {
                tracing::warn!(error = %e, "reading the event log for a stream failed");
                return Err(());
            }
        };
        let Some(last) = batch.last().map(|e| e.seq) else {
            return Ok(false);
        };
        for event in &batch {
            if event.kind == clarify_store::EventKind::Unknown {
                continue;
            }
            match self.state.store.get(&tenant, &event.request_id).await {
                Ok(Some(record)) => {
                    self.pending
                        .push_back(render_event(&self.state, self.links, event, &record));
                }
                // Forgotten by a memory store; nothing to show.
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "reading a record for the event stream failed");
                    return Err(());
                }
            }
        }
        self.after = last;
        Ok(true)
    }
}

fn events(cursor: Cursor) -> impl Stream<Item = Result<Bytes, Infallible>> {
    stream::unfold(cursor, |mut c| async move {
        // Asked for more: the client is taking what was sent.
        if let Some(watch) = &c.watch {
            watch
                .taken_at
                .store(c.state.hub.now_ms(), Ordering::Relaxed);
        }
        loop {
            if let Some(bytes) = c.pending.pop_front() {
                return Some((Ok(bytes), c));
            }
            if let Some(watch) = &c.watch {
                watch.after.store(c.after, Ordering::Relaxed);
            }
            // Mark what is seen before reading, so growth during the read is not missed.
            c.newest.borrow_and_update();
            match c.read().await {
                Ok(true) => {
                    // The key was checked when the stream opened, but a stream outlives that
                    // check: a revoked key must stop receiving records (and their answer
                    // links), as it stops everywhere else.
                    if !c.still_current().await {
                        return None;
                    }
                    continue;
                }
                Ok(false) => {
                    if let Some(watch) = &c.watch {
                        watch.after.store(c.after, Ordering::Relaxed);
                    }
                }
                Err(()) => return None,
            }
            let shutdown = c.state.shutdown.clone();
            tokio::select! {
                changed = c.newest.changed() => if changed.is_err() { return None },
                changed = c.beat.changed() => {
                    if changed.is_err() { return None }
                    return Some((Ok(Bytes::from_static(b":\n\n")), c));
                }
                () = shutdown.cancelled() => return None,
            }
        }
    })
}
