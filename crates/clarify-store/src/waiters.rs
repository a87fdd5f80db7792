//! In-process wake-ups for waiters.
//!
//! A waiter registers interest in a request id, then reads the store, then sleeps until notified.
//! Whoever resolves a request (in this process, or the poller and listener that watch other
//! processes) notifies its id. A notification is only a hint: the woken waiter reads the store
//! again, so a lost or spurious notification costs latency, never correctness. Registration
//! happens before the read, so a resolution between read and sleep still wakes the waiter.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, watch};

#[derive(Debug)]
pub(crate) struct Waiters {
    map: Mutex<HashMap<Box<str>, Entry>>,
    /// The newest event-log sequence this process has heard of, for anything that follows the
    /// feed (the server's SSE streams): raised by the PostgreSQL listener and the event-log
    /// poller. Like a wake-up, only a hint to read the log.
    feed: watch::Sender<u64>,
}

impl Default for Waiters {
    fn default() -> Self {
        Self {
            map: Mutex::default(),
            feed: watch::Sender::new(0),
        }
    }
}

#[derive(Debug)]
struct Entry {
    notify: Arc<Notify>,
    count: usize,
}

impl Waiters {
    /// Registers a waiter for `id`; dropping the guard unregisters it.
    pub(crate) fn register(self: &Arc<Self>, id: &str) -> WaitGuard {
        let mut map = self.lock();
        let entry = map.entry(id.into()).or_insert_with(|| Entry {
            notify: Arc::new(Notify::new()),
            count: 0,
        });
        entry.count += 1;
        WaitGuard {
            hub: Arc::clone(self),
            id: id.into(),
            notify: Arc::clone(&entry.notify),
        }
    }

    /// Wakes every waiter of `id`.
    pub(crate) fn notify(&self, id: &str) {
        if let Some(entry) = self.lock().get(id) {
            entry.notify.notify_waiters();
        }
    }

    /// Wakes every waiter, e.g. after a lost connection may have dropped notifications.
    pub(crate) fn notify_all(&self) {
        for entry in self.lock().values() {
            entry.notify.notify_waiters();
        }
    }

    /// Records that the event log has reached sequence `seq`.
    pub(crate) fn feed_reached(&self, seq: u64) {
        self.feed.send_if_modified(|newest| {
            let grew = seq > *newest;
            *newest = (*newest).max(seq);
            grew
        });
    }

    /// Follows the newest event-log sequence heard of (see [`Waiters::feed_reached`]).
    pub(crate) fn watch_feed(&self) -> watch::Receiver<u64> {
        self.feed.subscribe()
    }

    /// How many request ids have waiters.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Box<str>, Entry>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A registered waiter.
#[derive(Debug)]
pub(crate) struct WaitGuard {
    hub: Arc<Waiters>,
    id: Box<str>,
    pub(crate) notify: Arc<Notify>,
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let mut map = self.hub.lock();
        if let Some(entry) = map.get_mut(&self.id) {
            entry.count -= 1;
            if entry.count == 0 {
                map.remove(&self.id);
            }
        }
    }
}
