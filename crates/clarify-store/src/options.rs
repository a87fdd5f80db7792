//! How a store behaves beyond its URL: the options [`crate::Store::open`] takes, read once when
//! it opens. They live apart from the store so a reader looking for a setting (durability, the
//! reaper's pace, who may answer) finds every one of them in one place.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_core::NewRequest;

use crate::clock::{Clock, IdGenerator, RandomIds, SystemClock};

/// How a store behaves beyond its URL.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    /// How often the event log is polled for resolutions made by other processes. `None` picks
    /// the backend's default: 100 ms on SQLite, 1 s on PostgreSQL (a backstop to LISTEN/NOTIFY),
    /// never for memory.
    pub poll_interval: Option<Duration>,
    /// How often overdue requests are expired; `None` disables the reaper (tests drive expiry
    /// through [`Store::expire_due`](crate::Store::expire_due)).
    pub reaper_interval: Option<Duration>,
    /// Resolved requests older than this (by resolution time) are purged by the reaper, with
    /// their events, tags and webhook deliveries; `None` keeps them forever.
    pub retain_resolved: Option<TimeDelta>,
    /// The channels a new request is announced on (by configured name), given its tenant.
    pub announce: Option<Announce>,
    /// How a SQLite store makes its commits durable (PostgreSQL follows its own
    /// `synchronous_commit`).
    pub durability: Durability,
    /// The `[[rules]]` every new approval is decided by, whatever path created it (see
    /// [`Store::create`](crate::Store::create)).
    pub rules: Option<clarify_core::rules::Rules>,
    /// `[groups]`: each group's members by responder name. A request naming `group:NAME` among
    /// its responders (or `escalate_to`) lets them answer, on every path.
    pub groups: Arc<BTreeMap<String, Vec<String>>>,
    /// Four eyes (`[decisions] forbid_self_approval`): the person a request acts for
    /// (`on_behalf_of`) may not answer or vote on it, on any path.
    pub forbid_self_approval: bool,
    /// Step-up (`[decisions] step_up`): requests of this risk or above are answered only with
    /// a fresh passkey confirmation for that answer, or by an admin key, on every path; `None`
    /// asks for none.
    pub step_up: Option<clarify_core::Risk>,
    /// `[oncall.*]`: who is on call for an `oncall:` responder, read when a request naming one
    /// is created (whatever path creates it) and again at its escalation. `None`: such a
    /// responder names nobody, and says so.
    pub on_call: Option<OnCall>,
}

/// Reads who is on call for an `oncall:` responder (`[oncall.*]`).
#[derive(Clone)]
pub struct OnCall(pub Arc<ReadOnCall>);

/// Given an `oncall:...` responder as a request names it, the people on call by responder
/// name, or why the schedule could not be read (one line, for the request's record). The
/// reader bounds its own time: the store waits for it while creating a request.
pub type ReadOnCall = dyn Fn(String) -> Pin<Box<dyn Future<Output = Result<Vec<String>, String>> + Send>>
    + Send
    + Sync;

impl std::fmt::Debug for OnCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnCall(..)")
    }
}

/// How a SQLite store makes its commits durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// WAL with `synchronous=NORMAL`: a commit survives a crash of the process; a power loss or
    /// an operating-system crash may lose the last moments of commits.
    #[default]
    Normal,
    /// `synchronous=FULL`: each group commit reaches the disk (fsync) before it is acknowledged,
    /// so it survives a power loss too. The writer commits many agents' writes at once, so the
    /// cost is one fsync per batch, not per request.
    Full,
}

impl Durability {
    /// Parses `normal` or `full`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "normal" => Some(Self::Normal),
            "full" => Some(Self::Full),
            _ => None,
        }
    }
}

/// Picks the channels a new request is announced on: the routes of the channel configuration.
#[derive(Clone)]
pub struct Announce(pub Arc<PickChannels>);

/// Given a new request's tenant and the request, the names of the channels to announce it on.
pub type PickChannels = dyn Fn(&str, &NewRequest) -> Vec<String> + Send + Sync;

/// Warnings before expiry and extensions of a deadline, as the configuration sets them
/// ([`Store::set_deadlines`](crate::Store::set_deadlines); the defaults without).
#[derive(Debug, Clone)]
pub struct Deadlines {
    /// How long before its deadline a new request's responders are warned, when the request
    /// says nothing (`warn_before_seconds`): the routes' `warn_before`; `None` from it (or no
    /// picker) means [`DEFAULT_WARN_BEFORE`].
    pub warn_before: Option<WarnBefore>,
    /// How far past its first deadline a request may be extended, in all
    /// (`[decisions] max_extension`; see [`Store::extend`](crate::Store::extend)).
    pub max_extension: TimeDelta,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            warn_before: None,
            max_extension: DEFAULT_MAX_EXTENSION,
        }
    }
}

/// The warning period (seconds before the deadline) the routes give a new request, if any.
#[derive(Clone)]
pub struct WarnBefore(pub Arc<PickWarnBefore>);

/// Given a new request's tenant and the request, the routes' warning period in seconds.
pub type PickWarnBefore = dyn Fn(&str, &NewRequest) -> Option<u64> + Send + Sync;

impl std::fmt::Debug for WarnBefore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WarnBefore(..)")
    }
}

/// The warning period of a request that names none, on no route that names one: 10 minutes.
pub const DEFAULT_WARN_BEFORE: u64 = 600;

/// How far past its first deadline a request may be extended when the configuration says
/// nothing: one day.
pub const DEFAULT_MAX_EXTENSION: TimeDelta = TimeDelta::days(1);

impl std::fmt::Debug for Announce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Announce(..)")
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
            poll_interval: None,
            reaper_interval: Some(Duration::from_millis(500)),
            retain_resolved: None,
            announce: None,
            durability: Durability::Normal,
            rules: None,
            groups: Arc::default(),
            forbid_self_approval: false,
            step_up: None,
            on_call: None,
        }
    }
}
