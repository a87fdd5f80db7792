//! The event hub: how this instance tells its event streams that the event log has grown.
//!
//! It holds no events, only the newest sequence seen (a `watch`), so no per-client queue exists
//! to grow; each stream reads the log itself. The tailer (`api::events::tail`) moves it forward
//! and is poked after this instance's own writes.

use tokio::sync::{Notify, watch};

/// Tells streams that the event log has grown.
#[derive(Debug)]
pub struct EventHub {
    newest: watch::Sender<u64>,
    poke: Notify,
}

impl EventHub {
    pub fn new(newest: u64) -> Self {
        Self {
            newest: watch::Sender::new(newest),
            poke: Notify::new(),
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

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }

    /// Whether any stream is listening.
    pub fn streams_open(&self) -> bool {
        self.newest.receiver_count() > 0
    }

    /// Records that the log reaches `seq`; whether that is further than known before (the
    /// streams were told).
    pub fn advance(&self, seq: u64) -> bool {
        self.newest.send_if_modified(|newest| {
            let grew = seq > *newest;
            *newest = (*newest).max(seq);
            grew
        })
    }
}
