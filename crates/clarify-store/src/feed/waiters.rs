//! In-process wake-ups for waiters.
//!
//! A waiter registers interest in a request id, then reads the store, then sleeps until notified.
//! Whoever resolves a request (in this process, or the poller and listener that watch other
//! processes) notifies its id. A notification is only a hint: the woken waiter reads the store
//! again, so a lost or spurious notification costs latency, never correctness. Registration
//! happens before the read, so a resolution between read and sleep still wakes the waiter.
//!
//! A resolution won in this process is handed to its waiters with the wake-up
//! ([`Waiters::resolved`]): it is the committed, final record, so they return it without reading
//! the store again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, watch};

use crate::record::RequestRecord;

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
    /// The request's final record, once a resolution in this process committed it. Boxed: an
    /// entry exists for every request waited on, and a record inline would make each as big as
    /// a record while it is still `None`.
    resolved: Option<Box<RequestRecord>>,
}

impl Waiters {
    /// Registers a waiter for `id`; dropping the guard unregisters it.
    pub(crate) fn register(self: &Arc<Self>, id: &str) -> WaitGuard {
        let mut map = self.lock();
        let entry = map.entry(id.into()).or_insert_with(|| Entry {
            notify: Arc::new(Notify::new()),
            count: 0,
            resolved: None,
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

    /// Wakes every waiter of the request `record`, which a resolution in this process has just
    /// committed, and hands it to them (see [`WaitGuard::resolved`]).
    pub(crate) fn resolved(&self, record: &RequestRecord) {
        if let Some(entry) = self.lock().get_mut(record.id.as_str()) {
            entry.resolved = Some(Box::new(record.clone()));
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

impl WaitGuard {
    /// The request's final record, if a resolution in this process has handed it over.
    pub(crate) fn resolved(&self) -> Option<RequestRecord> {
        self.hub
            .lock()
            .get(&self.id)
            .and_then(|entry| entry.resolved.as_deref().cloned())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> RequestRecord {
        let raw = serde_json::json!({"question": "Ship it?", "choices": ["yes", "no"]});
        let request = clarify_core::parse_request(&raw, &clarify_core::Limits::default())
            .unwrap_or_else(|e| panic!("request: {e}"));
        RequestRecord {
            id: id.to_owned(),
            tenant: "t".to_owned(),
            request: Arc::new(request),
            status: clarify_core::Status::Cancelled,
            created_at: chrono::DateTime::UNIX_EPOCH,
            expires_at: None,
            resolution: None,
            votes: Vec::new(),
            remind_at: None,
            escalated_at: None,
            on_call: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_resolution_here_reaches_its_waiters_with_its_record() {
        let hub = Arc::new(Waiters::default());
        let waiting = hub.register("r1");
        let other = hub.register("r2");
        let notify = Arc::clone(&waiting.notify);
        let woken = notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();

        hub.resolved(&record("r1"));
        tokio::time::timeout(std::time::Duration::from_secs(5), woken)
            .await
            .unwrap_or_else(|_| panic!("the waiter was not woken"));
        assert_eq!(waiting.resolved(), Some(record("r1")));
        assert_eq!(
            other.resolved(),
            None,
            "only its own request's waiters get it"
        );

        // Nobody waits for r3: nothing is kept for it.
        hub.resolved(&record("r3"));
        drop((waiting, other));
        assert_eq!(hub.len(), 0);
        let late = hub.register("r1");
        assert_eq!(
            late.resolved(),
            None,
            "the record went with its last waiter"
        );
    }
}
