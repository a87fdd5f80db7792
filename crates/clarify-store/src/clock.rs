//! Injected time and ids, so tests control expiry and can predict ids.

use std::fmt::Debug;
use std::sync::Mutex;

use chrono::{DateTime, TimeDelta, Utc};
use rand::RngCore;

/// The source of "now" for deadlines and timestamps.
pub trait Clock: Send + Sync + Debug + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told, for tests.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self(Mutex::new(start))
    }

    pub fn advance(&self, by: TimeDelta) {
        let mut now = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *now += by;
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The source of request and grant ids.
pub trait IdGenerator: Send + Sync + Debug + 'static {
    fn request_id(&self) -> String;

    /// A grant's id; by default drawn like a request id.
    fn grant_id(&self) -> String {
        self.request_id()
    }
}

/// 128 random bits as 26 lowercase Crockford base32 characters: unguessable and URL-safe.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomIds;

impl IdGenerator for RandomIds {
    fn request_id(&self) -> String {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        base32(u128::from_be_bytes(bytes))
    }
}

/// Ids `r000001`, `r000002`, ... (and grants `g000001`, ...) for tests that want to predict
/// them.
#[derive(Debug, Default)]
pub struct SequentialIds(std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64);

impl IdGenerator for SequentialIds {
    fn request_id(&self) -> String {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        format!("r{n:06}")
    }

    fn grant_id(&self) -> String {
        let n = self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        format!("g{n:06}")
    }
}

fn base32(mut n: u128) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut out = [0u8; 26];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(n & 31) as usize];
        n >>= 5;
    }
    out.iter().map(|&b| b as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_are_url_safe_and_distinct() {
        let a = RandomIds.request_id();
        let b = RandomIds.request_id();
        assert_eq!(a.len(), 26);
        assert_ne!(a, b);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
    }
}
