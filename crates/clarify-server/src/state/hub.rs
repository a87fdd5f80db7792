//! The event hub: how this instance's event streams hear of the event log, and what they send.
//!
//! The tailer (`api::events::tail`) reads each new event of the log once, with its record, and
//! renders its Server-Sent Event (with the answer link and without) into `recent`, a ring
//! bounded by count and bytes. Every stream of this instance sends from that ring, sharing the
//! rendered bytes: a thousand streams cost one read of the log and one rendering per event, not
//! a thousand. A stream behind the ring (a slow client, or one resuming with an old
//! `Last-Event-ID`) reads the log itself, one batch at a time, until it catches up: no stream
//! has a queue of its own that could grow.
//!
//! `newest` (a `watch`) says how far the ring reaches and wakes the streams; `beat` wakes them
//! all for a keep-alive, so an open stream holds no timer of its own. [`EventHub::sweep`]
//! applies the stall rule: it closes the connection of a stream whose client stopped reading
//! while events wait for it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use axum::body::Bytes;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// The most events the ring holds.
const RING_EVENTS: usize = 4096;
/// The most bytes of rendered events the ring holds.
const RING_BYTES: usize = 16 * 1024 * 1024;

/// The connection a request came on, in its extensions: cancelling it closes the connection
/// (the stall rule's way to cut a stream off).
#[derive(Clone, Debug)]
pub struct Connection(pub(crate) CancellationToken);

/// One event as every stream of its tenant sends it.
#[derive(Debug)]
pub struct Frame {
    pub seq: u64,
    pub tenant: String,
    /// The SSE event for a caller who sees answer links.
    pub with_link: Bytes,
    /// The SSE event for a caller who does not.
    pub without_link: Bytes,
    /// What the event is about, for readers that pick events by request (the AG-UI emitter
    /// picks a run's thread); `None` for an event of a forgotten request.
    pub subject: Option<Subject>,
}

/// The request an event is about: its id, its session, and what happened to it.
#[derive(Debug, Clone)]
pub struct Subject {
    pub request_id: String,
    pub session: Option<String>,
    pub kind: clarify_store::EventKind,
}

impl Frame {
    /// The bytes for a caller who does (or does not) see answer links.
    pub fn bytes(&self, links: bool) -> Bytes {
        if links {
            self.with_link.clone()
        } else {
            self.without_link.clone()
        }
    }

    fn size(&self) -> usize {
        self.with_link.len() + self.without_link.len()
    }
}

/// The ring: every event with a sequence in `(from, to]`, oldest first.
#[derive(Debug, Default)]
struct Ring {
    frames: VecDeque<Arc<Frame>>,
    bytes: usize,
    from: u64,
    to: u64,
}

/// An open stream as the stall rule sees it.
#[derive(Debug)]
pub struct StreamWatch {
    /// Closes the stream's connection.
    pub kill: CancellationToken,
    /// The last sequence the stream sent.
    pub after: AtomicU64,
    /// When its client last took something (the hub's clock, in milliseconds).
    pub taken_at: AtomicU64,
}

/// Tells streams that the event log has grown, and holds its recent events.
#[derive(Debug)]
pub struct EventHub {
    newest: watch::Sender<u64>,
    beat: watch::Sender<u64>,
    poke: Notify,
    recent: RwLock<Ring>,
    streams: Mutex<Vec<Weak<StreamWatch>>>,
    /// Milliseconds since the hub started, moved on by the tailer: a clock streams can read
    /// without a call to the system.
    clock_ms: AtomicU64,
    /// Bumped when this instance revokes a key or ends a session: streams check their
    /// credentials again at once rather than at their next periodic check.
    keys_epoch: AtomicU64,
}

impl EventHub {
    pub fn new(newest: u64) -> Self {
        Self {
            newest: watch::Sender::new(newest),
            beat: watch::Sender::new(0),
            poke: Notify::new(),
            recent: RwLock::new(Ring {
                from: newest,
                to: newest,
                ..Ring::default()
            }),
            streams: Mutex::new(Vec::new()),
            clock_ms: AtomicU64::new(0),
            keys_epoch: AtomicU64::new(0),
        }
    }

    /// Asks the tailer to look at the log now (this instance just wrote to it).
    pub fn poke(&self) {
        self.poke.notify_one();
    }

    /// Completes when [`poke`](Self::poke) was called.
    pub async fn poked(&self) {
        self.poke.notified().await;
    }

    /// Wakes on every growth of the ring.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }

    /// Wakes on every keep-alive beat.
    pub fn heartbeat(&self) -> watch::Receiver<u64> {
        self.beat.subscribe()
    }

    /// Has every stream send a keep-alive.
    pub fn beat(&self) {
        self.beat.send_modify(|n| *n += 1);
    }

    /// Whether any stream is listening.
    pub fn streams_open(&self) -> bool {
        self.newest.receiver_count() > 0
    }

    /// How many streams are open.
    pub fn stream_count(&self) -> usize {
        self.newest.receiver_count()
    }

    /// The last sequence the ring holds (or stands for).
    pub fn filled(&self) -> u64 {
        self.recent.read().map_or(0, |r| r.to)
    }

    /// Adds the next event of the log (its sequence must follow the ring's last); the oldest
    /// events leave when the ring is over its bounds.
    pub fn push(&self, frame: Frame) {
        let Ok(mut ring) = self.recent.write() else {
            return;
        };
        if frame.seq <= ring.to {
            return;
        }
        ring.to = frame.seq;
        ring.bytes += frame.size();
        ring.frames.push_back(Arc::new(frame));
        while ring.frames.len() > RING_EVENTS || ring.bytes > RING_BYTES {
            let Some(old) = ring.frames.pop_front() else {
                break;
            };
            ring.bytes -= old.size();
            ring.from = old.seq;
        }
    }

    /// Moves the ring's end to `seq` with nothing in it (no stream is open to need the
    /// events): a stream opened later reads anything older from the log.
    pub fn skip_to(&self, seq: u64) {
        if let Ok(mut ring) = self.recent.write()
            && seq > ring.to
        {
            *ring = Ring {
                from: seq,
                to: seq,
                ..Ring::default()
            };
        }
    }

    /// Tells the streams the ring reaches `seq`; whether that is further than before.
    pub fn advance(&self, seq: u64) -> bool {
        self.newest.send_if_modified(|newest| {
            let grew = seq > *newest;
            *newest = (*newest).max(seq);
            grew
        })
    }

    /// Up to `max` of `tenant`'s events after `after`, from the ring, and the sequence a
    /// reader has then seen everything up to (the last one given when `max` cut the list, else
    /// the ring's end); `None` when `after` is older than the ring (read the log instead).
    pub fn after(&self, tenant: &str, after: u64, max: usize) -> Option<(Vec<Arc<Frame>>, u64)> {
        let ring = self.recent.read().ok()?;
        if after < ring.from {
            return None;
        }
        let start = ring.frames.partition_point(|f| f.seq <= after);
        let frames: Vec<Arc<Frame>> = ring
            .frames
            .range(start..)
            .filter(|f| f.tenant == tenant)
            .take(max)
            .cloned()
            .collect();
        let seen = match frames.last() {
            Some(last) if frames.len() == max => last.seq,
            _ => ring.to.max(after),
        };
        Some((frames, seen))
    }

    /// The hub's clock, in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.clock_ms.load(Ordering::Relaxed)
    }

    /// Moves the hub's clock to `ms`.
    pub fn tick(&self, ms: u64) {
        self.clock_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// A key or session was ended here: streams check theirs again.
    pub fn keys_changed(&self) {
        self.keys_epoch.fetch_add(1, Ordering::Relaxed);
    }

    pub fn keys_epoch(&self) -> u64 {
        self.keys_epoch.load(Ordering::Relaxed)
    }

    /// Registers an open stream for the stall rule.
    pub fn watch_stream(&self, kill: CancellationToken, after: u64) -> Arc<StreamWatch> {
        let watch = Arc::new(StreamWatch {
            kill,
            after: AtomicU64::new(after),
            taken_at: AtomicU64::new(self.now_ms()),
        });
        if let Ok(mut streams) = self.streams.lock() {
            streams.push(Arc::downgrade(&watch));
        }
        watch
    }

    /// The stall rule: closes the connection of every stream whose client has taken nothing
    /// for `stall_ms` while events wait for it (the ring reaches past what it sent). Closed
    /// streams and ended ones leave the list. Returns how many were closed.
    pub fn sweep(&self, stall_ms: u64) -> usize {
        let now = self.now_ms();
        let newest = *self.newest.borrow();
        let Ok(mut streams) = self.streams.lock() else {
            return 0;
        };
        let mut closed = 0;
        streams.retain(|weak| {
            let Some(stream) = weak.upgrade() else {
                return false;
            };
            let waiting = stream.after.load(Ordering::Relaxed) < newest;
            let idle = now.saturating_sub(stream.taken_at.load(Ordering::Relaxed));
            if waiting && idle >= stall_ms {
                stream.kill.cancel();
                closed += 1;
                return false;
            }
            true
        });
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u64, tenant: &str, size: usize) -> Frame {
        Frame {
            seq,
            tenant: tenant.to_owned(),
            with_link: Bytes::from(vec![b'a'; size]),
            without_link: Bytes::from(vec![b'b'; size]),
            subject: None,
        }
    }

    #[test]
    fn the_ring_gives_a_tenants_events_after_a_sequence_and_says_when_it_is_too_old() {
        let hub = EventHub::new(10);
        for seq in 11..=20 {
            hub.push(frame(seq, if seq % 2 == 0 { "a" } else { "b" }, 10));
        }
        let seqs = |v: Option<(Vec<Arc<Frame>>, u64)>| {
            v.map(|(v, _)| v.iter().map(|f| f.seq).collect::<Vec<_>>())
        };
        assert_eq!(
            seqs(hub.after("a", 10, 100)),
            Some(vec![12, 14, 16, 18, 20])
        );
        assert_eq!(seqs(hub.after("a", 15, 2)), Some(vec![16, 18]));
        assert_eq!(seqs(hub.after("b", 20, 100)), Some(vec![]));
        assert_eq!(seqs(hub.after("a", 9, 100)), None, "older than the ring");
        assert_eq!(
            hub.after("a", 15, 2).map(|(_, seen)| seen),
            Some(18),
            "cut by max"
        );
        assert_eq!(
            hub.after("b", 15, 9).map(|(_, seen)| seen),
            Some(20),
            "the ring's end"
        );
    }

    #[test]
    fn the_ring_drops_its_oldest_events_beyond_its_bounds() {
        let hub = EventHub::new(0);
        for seq in 1..=(RING_EVENTS as u64 + 10) {
            hub.push(frame(seq, "t", 1));
        }
        assert!(hub.after("t", 9, 1).is_none(), "event 10 left the ring");
        assert_eq!(hub.after("t", 10, 1).map(|(v, _)| v[0].seq), Some(11));
        // Bytes bound: two events of half the ring each push out everything before them.
        hub.push(frame(RING_EVENTS as u64 + 11, "t", RING_BYTES / 4));
        hub.push(frame(RING_EVENTS as u64 + 12, "t", RING_BYTES / 4));
        assert_eq!(
            hub.after("t", RING_EVENTS as u64 + 10, 9)
                .map(|(v, _)| v.len()),
            Some(2)
        );
        hub.push(frame(RING_EVENTS as u64 + 13, "t", 1));
        assert!(hub.after("t", RING_EVENTS as u64 + 10, 9).is_none());
    }

    #[test]
    fn a_stream_whose_client_stopped_reading_while_events_wait_is_closed() {
        let hub = EventHub::new(5);
        let _rx = hub.subscribe();
        let (idle, reading, behind) = (
            CancellationToken::new(),
            CancellationToken::new(),
            CancellationToken::new(),
        );
        let idle_watch = hub.watch_stream(idle.clone(), 5);
        let reading_watch = hub.watch_stream(reading.clone(), 5);
        let behind_watch = hub.watch_stream(behind.clone(), 5);
        hub.tick(120_000);
        // Nothing waits for any of them: however long idle, none is closed.
        assert_eq!(hub.sweep(60_000), 0);
        hub.advance(6);
        reading_watch.after.store(6, Ordering::Relaxed);
        behind_watch.taken_at.store(100_000, Ordering::Relaxed);
        assert_eq!(hub.sweep(60_000), 1);
        assert!(
            idle.is_cancelled(),
            "stalled for 120 s with an event waiting"
        );
        assert!(!reading.is_cancelled(), "sent everything");
        assert!(!behind.is_cancelled(), "took something 20 s ago");
        drop((idle_watch, reading_watch, behind_watch));
        assert_eq!(hub.sweep(0), 0, "ended streams leave the list");
        assert!(hub.streams.lock().map(|s| s.is_empty()).unwrap_or(false));
    }
}
