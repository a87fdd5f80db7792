//! What a platform's fake was called with, the one record every chat fake keeps: each call's
//! kind (an HTTP method, or an API method such as Slack's `chat.postMessage`), its path and its
//! body, in order; read back by kind, or waited for.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

/// The calls a fake received.
#[derive(Debug, Default)]
pub struct Calls(Mutex<Vec<(String, String, Value)>>);

impl Calls {
    /// Records a call of `kind` to `path` with `body`.
    pub fn record(&self, kind: &str, path: impl Into<String>, body: Value) {
        self.0
            .lock()
            .expect("lock")
            .push((kind.to_owned(), path.into(), body));
    }

    /// The paths and bodies of the calls of `kind` so far, in order.
    pub fn of(&self, kind: &str) -> Vec<(String, Value)> {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .filter(|(k, _, _)| k == kind)
            .map(|(_, path, body)| (path.clone(), body.clone()))
            .collect()
    }

    /// Waits (ten seconds at most, failing the test then, with every call made) until `n`
    /// calls of `kind` were made; their paths and bodies.
    pub async fn wait_for(&self, kind: &str, n: usize) -> Vec<(String, Value)> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let found = self.of(kind);
            if found.len() >= n {
                return found;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{n} {kind} calls expected; calls: {:?}",
                self.0.lock().expect("lock")
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
