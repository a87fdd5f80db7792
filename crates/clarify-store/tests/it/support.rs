//! Test support: a fresh store of each backend per test, and small request and answer helpers.
//!
//! Memory and SQLite stores are private to one test (SQLite gets its own temporary directory).
//! PostgreSQL tests share one database, as several clarify instances would, so each test works
//! in its own random tenant and looks only at that tenant's requests and events. Expiry is global
//! by time, though: a test whose clock passes a deadline expires every tenant's overdue requests.
//! So every test's clock starts at the real current time, requests that must stay pending use a
//! timeout of a day or none (no test moves its clock that far), and tests that create
//! short-timeout requests or move their clock take [`Env::exclusive_clock`] first, which
//! serializes them across every process using the database.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clarify_core::{Limits, NewRequest, parse_request};
use clarify_store::{Actor, ManualClock, RandomIds, Store, StoreOptions};
use serde_json::Value;
use sqlx::Connection;
use sqlx::postgres::PgConnection;

pub use clarify_testkit::{in_scratch_database, postgres_url};

/// A timeout no test's clock ever reaches: requests with it stay pending unless resolved.
pub const DAY: u64 = 86_400;
/// The time limit of requests that tests expire.
pub const SHORT: u64 = 600;
/// How long one case may run before it counts as hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(120);
/// Advisory lock serializing clock-moving PostgreSQL tests (see the module comment).
const CLOCK_LOCK: i64 = 0x636c_6172_6966_7974;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

/// Everything about a test's store except the store itself, so a case can drop the store and
/// open the same one again.
#[derive(Debug)]
pub struct Env {
    pub kind: Kind,
    pub url: String,
    pub clock: Arc<ManualClock>,
    /// This test's own tenant.
    pub tenant: String,
    _dir: Option<TempDir>,
}

impl Env {
    /// Opens another store on the same URL with the same clock: a second instance, or the same
    /// one after a restart.
    /// Another store on the same URL and clock, with `change` made to its options.
    pub async fn open_with(&self, change: impl FnOnce(&mut StoreOptions)) -> Store {
        let mut options = options(&self.clock);
        change(&mut options);
        match Store::open(&self.url, options).await {
            Ok(store) => store,
            Err(e) => panic!("opening {} again failed: {e}", self.url),
        }
    }

    pub async fn open(&self) -> Store {
        match Store::open(&self.url, options(&self.clock)).await {
            Ok(store) => store,
            Err(e) => panic!("opening {} again failed: {e}", self.url),
        }
    }

    /// Whether other tests write to the same database at the same time.
    pub fn shared(&self) -> bool {
        self.kind == Kind::Postgres
    }

    /// A fresh tenant, distinct from this test's and every other test's.
    pub fn other_tenant(&self) -> String {
        random_name("t")
    }

    /// Held while a test creates short-timeout requests or moves its clock (see the module
    /// comment); a no-op for private stores.
    pub async fn exclusive_clock(&self) -> ClockGuard {
        if self.kind != Kind::Postgres {
            return ClockGuard { _session: None };
        }
        let mut conn = PgConnection::connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", self.url));
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(CLOCK_LOCK)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("taking the clock lock: {e}"));
        ClockGuard {
            _session: Some(conn),
        }
    }

    /// Moves this test's clock forward.
    pub fn advance(&self, seconds: i64) {
        self.clock.advance(chrono::TimeDelta::seconds(seconds));
    }

    pub fn now(&self) -> DateTime<Utc> {
        use clarify_store::Clock;
        self.clock.now()
    }
}

/// Releases the clock lock when dropped: closing its session releases a session-level lock.
#[derive(Debug)]
pub struct ClockGuard {
    _session: Option<PgConnection>,
}

/// Runs one conformance case against a fresh store of `kind`, or skips it when that backend
/// is not available here.
pub async fn run<F, Fut>(kind: Kind, case: F)
where
    F: FnOnce(Store, Env) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(env) = env(kind) else { return };
    let store = match Store::open(&env.url, options(&env.clock)).await {
        Ok(store) => store,
        Err(e) => panic!("opening {} failed: {e}", env.url),
    };
    assert_eq!(
        store.backend_name(),
        match kind {
            Kind::Memory => "memory",
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    );
    if tokio::time::timeout(CASE_TIMEOUT, case(store, env))
        .await
        .is_err()
    {
        panic!("the case did not finish within {CASE_TIMEOUT:?}");
    }
}

fn env(kind: Kind) -> Option<Env> {
    let (url, dir) = match kind {
        Kind::Memory => ("memory:".to_owned(), None),
        Kind::Sqlite => {
            let dir = TempDir::new();
            (
                format!("sqlite://{}", dir.0.join("clarify.db").display()),
                Some(dir),
            )
        }
        Kind::Postgres => (postgres_url()?, None),
    };
    Some(Env {
        kind,
        url,
        clock: Arc::new(ManualClock::new(start_time())),
        tenant: random_name("t"),
        _dir: dir,
    })
}

/// The real current time in whole seconds, so stored millisecond times compare equal.
pub fn start_time() -> DateTime<Utc> {
    let now = Utc::now().timestamp();
    DateTime::from_timestamp(now, 0).unwrap_or_default()
}

pub fn options(clock: &Arc<ManualClock>) -> StoreOptions {
    StoreOptions {
        clock: Arc::clone(clock) as Arc<dyn clarify_store::Clock>,
        ids: Arc::new(RandomIds),
        poll_interval: None,
        reaper_interval: None,
        retain_resolved: None,
        announce: None,
        durability: clarify_store::Durability::Normal,
        rules: None,
        groups: Arc::default(),
        forbid_self_approval: false,
        step_up: None,
        on_call: None,
    }
}

pub fn random_name(prefix: &str) -> String {
    format!("{prefix}_{:016x}", rand::random::<u64>())
}

/// A temporary directory, removed when dropped.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Self {
        let path = std::env::temp_dir().join(random_name("clarify-test"));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A validated request from any accepted shape; without `timeout_seconds` it lasts a [`DAY`].
pub fn request(mut raw: Value) -> NewRequest {
    if let Value::Object(map) = &mut raw {
        map.entry("timeout_seconds").or_insert(Value::from(DAY));
    }
    match parse_request(&raw, &Limits::default()) {
        Ok(request) => request,
        Err(e) => panic!("test request does not validate: {e}"),
    }
}

/// A one-question `single` request with options `yes` and `no`.
pub fn yes_no(text: &str) -> NewRequest {
    request(serde_json::json!({"question": text, "choices": ["yes", "no"]}))
}

pub fn alice() -> Actor {
    Actor::new("alice", "api")
}

pub fn bob() -> Actor {
    Actor::new("bob", "inbox")
}

/// Reads `tenant`'s events in batches of `batch`, each resuming after the last event seen, as a
/// feed reader does, until `done` is set and a read after that finds nothing more; everything
/// it saw. Set `done` only once every event written is numbered ([`Store::sync_feed`]).
pub async fn tail_feed(
    store: Store,
    tenant: String,
    batch: usize,
    done: Arc<std::sync::atomic::AtomicBool>,
) -> Vec<clarify_store::Event> {
    let mut seen: Vec<clarify_store::Event> = Vec::new();
    loop {
        // The flag first: a read that starts after everything is numbered sees all.
        let finished = done.load(std::sync::atomic::Ordering::SeqCst);
        let after = seen.last().map_or(0, |e| e.seq);
        let events = store
            .events_after(Some(&tenant), after, batch)
            .await
            .expect("events");
        if events.is_empty() && finished {
            return seen;
        }
        seen.extend(events);
    }
}
