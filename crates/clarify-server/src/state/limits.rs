//! The limits that keep one misbehaving agent from exhausting the server.
//!
//! - **Waiters** (`--max-waiters`): long-polls, event streams and `/mcp` requests in flight
//!   (an `ask_human` call waits inside one) share one pool of permits; past it a caller gets
//!   `503 too_many_waiters` with `Retry-After`, and waits elsewhere are untouched. A permit is
//!   held until the response's body ends, so a stream counts for as long as it is open.
//! - **Rate** (`--rate-limit`): each key may send that many requests per second (a burst of
//!   that many, refilled evenly: governor's GCRA), on every authenticated route, `/mcp`
//!   included; past it `429 rate_limited` with `Retry-After`. The key is known only after
//!   authentication, so unauthenticated callers are refused by `401` before they count.
//!
//! The rate limiter reads the store's injected clock, so tests move time instead of sleeping.

use std::num::NonZeroU32;
use std::sync::Arc;

use axum::http::StatusCode;
use clarify_store::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::shared::error::ApiError;

/// The store's clock, as governor's.
#[derive(Debug, Clone)]
struct StoreClock(Arc<dyn Clock>);

impl governor::clock::Clock for StoreClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        let nanos = self.0.now().timestamp_nanos_opt().unwrap_or(0);
        Nanos::new(u64::try_from(nanos).unwrap_or(0))
    }
}

type KeyedLimiter =
    RateLimiter<String, DashMapStateStore<String>, StoreClock, NoOpMiddleware<Nanos>>;

/// Requests per second per key.
pub struct RateLimit {
    limiter: KeyedLimiter,
    clock: StoreClock,
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RateLimit(..)")
    }
}

impl RateLimit {
    pub fn new(per_second: NonZeroU32, clock: Arc<dyn Clock>) -> Self {
        let clock = StoreClock(clock);
        Self {
            limiter: RateLimiter::dashmap_with_clock(Quota::per_second(per_second), clock.clone()),
            clock,
        }
    }

    /// Counts one request of key `key_id`; `Err` holds the whole seconds until the next one
    /// would be admitted (at least 1).
    pub fn admit(&self, key_id: &str) -> Result<(), u64> {
        self.limiter
            .check_key(&key_id.to_owned())
            .map_err(|not_until| {
                let wait = not_until.wait_time_from(governor::clock::Clock::now(&self.clock));
                (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
            })
    }
}

/// `429 rate_limited`.
pub fn rate_limited(retry_after: u64) -> ApiError {
    ApiError {
        retry_after: Some(retry_after),
        ..ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "this key sent more requests per second than the server allows (--rate-limit); retry in {retry_after} s"
            ),
        )
    }
}

/// The shared pool of long-polls, event streams and `/mcp` requests.
#[derive(Debug)]
pub struct Waiters {
    permits: Arc<Semaphore>,
    max: usize,
}

impl Waiters {
    pub fn new(max: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// A permit to wait, or `503 too_many_waiters`.
    pub fn enter(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.permits.clone().try_acquire_owned().map_err(|_| ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_waiters",
                "too many long-polls and event streams are open on this server (--max-waiters); retry in a moment",
            )
        })
    }

    /// How many are waiting now.
    pub fn open(&self) -> usize {
        self.max.saturating_sub(self.permits.available_permits())
    }

    /// Reads [`Waiters::open`] later, from elsewhere (a metrics callback).
    pub fn reader(&self) -> impl Fn() -> usize + Send + Sync + 'static {
        let permits = Arc::clone(&self.permits);
        let max = self.max;
        move || max.saturating_sub(permits.available_permits())
    }
}
