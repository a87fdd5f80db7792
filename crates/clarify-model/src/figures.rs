//! The figures of one insights reading: what the store's rollup adds up to, and what the
//! inbox's Insights page, `clarify report` and the API show.

use std::collections::BTreeMap;

use chrono::NaiveDate;

/// An approval a person gave within this many seconds counts as a fast one: too fast, often,
/// to have read what was approved.
pub const FAST_APPROVAL_SECONDS: f64 = 10.0;

/// The figures of one reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Insights {
    pub from: NaiveDate,
    pub to: NaiveDate,
    /// Requests by status: resolutions within the range, and the pending ones now.
    pub by_status: BTreeMap<&'static str, u64>,
    pub time_to_decision: TimeToDecision,
    pub by_tool: Vec<ToolFigures>,
    pub by_responder: Vec<ResponderFigures>,
    pub by_surface: Vec<SurfaceFigures>,
    /// Requests that expired with their `on_timeout` default applied.
    pub defaults_applied: u64,
    pub pending_by_age: Vec<AgeFigures>,
}

/// How long people took to decide (answers and skips by a person; rules and expiries take
/// nobody's time), in seconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeToDecision {
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    /// Every day of the range, oldest first, also those without decisions.
    pub per_day: Vec<DayFigures>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DayFigures {
    pub day: NaiveDate,
    /// Resolutions of the day (every status).
    pub resolved: u64,
    /// Decisions by people that day, which the percentiles are of.
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFigures {
    pub tool: String,
    pub approve: u64,
    pub revise: u64,
    pub deny: u64,
    /// Timed out, with or without a default.
    pub expired: u64,
    /// Timed out with the `on_timeout` default applied.
    pub defaults: u64,
    pub cancelled: u64,
    /// Approvals a person gave within [`FAST_APPROVAL_SECONDS`].
    pub fast_approvals: u64,
    /// The median time a person took to approve.
    pub approve_p50: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponderFigures {
    pub responder: String,
    /// Answers and skips.
    pub decisions: u64,
    pub approve: u64,
    pub revise: u64,
    pub deny: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SurfaceFigures {
    /// `answered_via`.
    pub surface: String,
    pub decisions: u64,
}

/// Pending requests by how long they have waited.
#[derive(Debug, Clone, PartialEq)]
pub struct AgeFigures {
    /// `under_5m`, `5m_to_1h`, ...
    pub age: &'static str,
    /// Waiting at least this long (seconds).
    pub from_seconds: u64,
    /// And less than this long; `None` for the last bucket.
    pub to_seconds: Option<u64>,
    pub count: u64,
}

/// Ages of pending requests, as (name, from seconds).
pub const AGES: [(&str, u64); 7] = [
    ("under_5m", 0),
    ("5m_to_15m", 300),
    ("15m_to_1h", 900),
    ("1h_to_4h", 3600),
    ("4h_to_1d", 14_400),
    ("1d_to_7d", 86_400),
    ("over_7d", 604_800),
];
