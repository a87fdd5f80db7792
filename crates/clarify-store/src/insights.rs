//! Insights: what a tenant's decisions add up to (`GET /v1/insights`, the inbox's Insights page,
//! `clarify report`'s charts).
//!
//! The figures are read from a rollup, not from the requests: every resolved request is counted
//! once, when it resolves, into one row per UTC day and per combination of what the figures can
//! be filtered by (agent, tool, surface, responder, outcome), plus one such row per tag it
//! carries. A row holds a count and a histogram of the times people took to decide. So a page
//! over a year reads the rows of 365 days, however many requests those days saw: its cost grows
//! with the number of distinct combinations a day sees, never with the number of requests
//! (`cargo bench -p clarify-store --bench insights` measures it at a million).
//!
//! Two coarser rollups beside it keep long ranges cheap ([`Grain`]): the same combinations by
//! calendar month, and per day the totals of each outcome without the combinations. They are
//! counted at reading, not at writing: a tenant's reading with no filter but the tag
//! ([`InsightsQuery::is_broad`]) first counts the day rows of the days that ended since its last
//! one (up to two days ago: a resolution is counted under the day it was made, on PostgreSQL by
//! the round just after) into them, and moves the tenant's mark; so a resolution still costs one
//! upsert per rollup row. Such a reading, over a range holding whole months ([`split`]) up to the
//! mark, reads the day totals (for the per-day series, the statuses and the percentiles), and
//! the combinations of its whole months from the month rollup and of the days at either edge
//! (and after the mark) from the day rollup (for the per-tool, per-responder and per-surface
//! figures): a year is twelve months' combinations and 365 days' totals instead of 365 days'
//! combinations.
//!
//! The SQL backends keep the rollups in tables (`insights`, `insights_months`,
//! `insights_days`, and each tenant's mark in `insights_compacted`): SQLite counts a request
//! into the day rollup in the writer's transaction that resolves it; PostgreSQL in the
//! sequencer's round that numbers its resolution event, so resolving writers never wait on a
//! shared counter row. Both count a request once and only with its resolution. The memory
//! backend folds its records at each reading through the same functions (day by day: it keeps no
//! coarser rollups), so all three give the same figures. Retention purges requests, not the
//! rollups: figures outlive the requests they count.
//!
//! Percentiles come from the histograms: exact at bucket bounds, linearly interpolated between
//! them ([`BOUNDS`]: buckets from one second to a week, each at most half again as wide as the
//! one below).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Datelike as _, NaiveDate, TimeDelta, Utc};
use clarify_core::{Decision, QuestionKind, Status};

use crate::record::RequestRecord;

/// Upper bounds (in seconds, inclusive) of the histogram's buckets; one more bucket holds
/// everything slower than a week.
pub const BOUNDS: [f64; 37] = [
    1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 450.0,
    600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0, 5400.0, 7200.0, 10800.0, 14400.0, 21600.0,
    28800.0, 43200.0, 64800.0, 86400.0, 129_600.0, 172_800.0, 259_200.0, 345_600.0, 432_000.0,
    604_800.0,
];

/// How many buckets a histogram has.
pub const BUCKETS: usize = BOUNDS.len() + 1;

/// An approval a person gave within this many seconds counts as a fast one: too fast, often,
/// to have read what was approved.
pub const FAST_APPROVAL_SECONDS: f64 = 10.0;

/// The surface rules decide through; their decisions take no person's time.
const POLICY: &str = "policy";

const DAY_MS: i64 = 86_400_000;

/// Counts of decision times per bucket of [`BOUNDS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Histogram(pub(crate) [u64; BUCKETS]);

impl Default for Histogram {
    fn default() -> Self {
        Self([0; BUCKETS])
    }
}

impl Histogram {
    pub(crate) fn record(&mut self, seconds: f64) {
        let bucket = BOUNDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BOUNDS.len());
        self.0[bucket] += 1;
    }

    pub(crate) fn add(&mut self, other: &Histogram) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    pub(crate) fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Stored as the counts separated by commas (SQLite's text, PostgreSQL's array input).
    pub(crate) fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut text = String::with_capacity(BUCKETS * 2);
        for (i, count) in self.0.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let _ = write!(text, "{count}");
        }
        text
    }

    /// Reads [`Histogram::to_text`] back; `None` for text that is not one.
    pub(crate) fn from_text(text: &str) -> Option<Self> {
        let mut h = Self::default();
        let mut n = 0;
        for (slot, part) in h.0.iter_mut().zip(text.split(',')) {
            *slot = part.trim().parse().ok()?;
            n += 1;
        }
        (n == BUCKETS).then_some(h)
    }

    pub(crate) fn from_counts(counts: &[i64]) -> Option<Self> {
        if counts.len() != BUCKETS {
            return None;
        }
        let mut h = Self::default();
        for (slot, c) in h.0.iter_mut().zip(counts) {
            *slot = u64::try_from(*c).ok()?;
        }
        Some(h)
    }

    /// The `q` quantile (0 < q ≤ 1) in seconds: the bucket holding that rank, and within it
    /// linear interpolation between its bounds (a value on a bound is given exactly). The
    /// bucket past a week gives its lower bound. `None` when empty.
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut below = 0;
        for (i, &count) in self.0.iter().enumerate() {
            if below + count >= rank {
                let lower = if i == 0 { 0.0 } else { BOUNDS[i - 1] };
                let Some(&upper) = BOUNDS.get(i) else {
                    return Some(lower);
                };
                let within = (rank - below) as f64 / count as f64;
                let value = lower + (upper - lower) * within;
                return Some((value * 10.0).round() / 10.0);
            }
            below += count;
        }
        None
    }

    /// How many of the times were at most `seconds` (a bucket bound).
    pub(crate) fn at_most(&self, seconds: f64) -> u64 {
        BOUNDS
            .iter()
            .zip(self.0.iter())
            .take_while(|(b, _)| **b <= seconds)
            .map(|(_, c)| c)
            .sum()
    }
}

/// How a resolved request ended, as the insights count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Ending {
    Approve,
    Revise,
    Deny,
    /// Answered, and not an approval.
    Answered,
    Skipped,
    /// Nobody answered in time; no default.
    Expired,
    /// Nobody answered in time; the `on_timeout` default was applied.
    Default,
    Cancelled,
}

impl Ending {
    const ALL: [Ending; 8] = [
        Self::Approve,
        Self::Revise,
        Self::Deny,
        Self::Answered,
        Self::Skipped,
        Self::Expired,
        Self::Default,
        Self::Cancelled,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Revise => "revise",
            Self::Deny => "deny",
            Self::Answered => "answered",
            Self::Skipped => "skipped",
            Self::Expired => "expired",
            Self::Default => "default",
            Self::Cancelled => "cancelled",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }

    fn status(self) -> Status {
        match self {
            Self::Approve | Self::Revise | Self::Deny | Self::Answered => Status::Answered,
            Self::Skipped => Status::Skipped,
            Self::Expired | Self::Default => Status::Expired,
            Self::Cancelled => Status::Cancelled,
        }
    }
}

/// What one rollup row counts: a day and a combination of the filters. Absent values are
/// empty strings (a request without an agent, a non-approval's tool, an expiry's responder),
/// so the key is unique as stored; `tag` is empty in the row that counts every request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    pub tenant: String,
    pub tag: String,
    /// Days since 1970-01-01, UTC.
    pub day: i64,
    pub agent: String,
    pub tool: String,
    pub surface: String,
    pub responder: String,
    pub ending: Ending,
}

/// The count and decision times of one rollup row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Cell {
    pub n: u64,
    pub times: Histogram,
}

/// The rollup rows a resolved request adds to: the untagged one and one per tag, each counting
/// it once (and its time, when a person decided). `None` for a pending request.
pub(crate) fn rows_of(record: &RequestRecord) -> Option<Vec<(Key, Cell)>> {
    let resolution = record.resolution.as_ref()?;
    let outcome = record.outcome()?;
    let tool = record.request.tool().map(str::to_owned);
    let decision = outcome.questions.iter().find_map(|q| q.decision);
    let ending = match record.status {
        Status::Pending => return None,
        Status::Answered => match decision {
            Some(Decision::Approve) => Ending::Approve,
            Some(Decision::Revise) => Ending::Revise,
            Some(Decision::Deny) => Ending::Deny,
            None => Ending::Answered,
        },
        Status::Skipped => Ending::Skipped,
        Status::Expired if outcome.default_applied => Ending::Default,
        Status::Expired => Ending::Expired,
        Status::Cancelled => Ending::Cancelled,
    };
    let surface = resolution
        .actor
        .answered_via()
        .unwrap_or_default()
        .to_owned();
    let decided_by_person =
        matches!(ending.status(), Status::Answered | Status::Skipped) && surface != POLICY;
    let mut cell = Cell {
        n: 1,
        times: Histogram::default(),
    };
    if decided_by_person {
        let ms = (resolution.resolved_at - record.created_at)
            .num_milliseconds()
            .max(0);
        cell.times.record(ms as f64 / 1000.0);
    }
    let key = Key {
        tenant: record.tenant.clone(),
        tag: String::new(),
        day: day_of(resolution.resolved_at),
        agent: record.request.agent.clone().unwrap_or_default(),
        tool: tool.unwrap_or_default(),
        surface,
        responder: match ending.status() {
            Status::Answered | Status::Skipped => resolution.actor.name.clone().unwrap_or_default(),
            _ => String::new(),
        },
        ending,
    };
    let mut rows = Vec::with_capacity(1 + record.request.tags.len());
    for tag in &record.request.tags {
        rows.push((
            Key {
                tag: tag.clone(),
                ..key.clone()
            },
            cell.clone(),
        ));
    }
    rows.push((key, cell));
    Some(rows)
}

/// Adds `rows` into `into`, merging equal keys.
pub(crate) fn fold(into: &mut HashMap<Key, Cell>, rows: Vec<(Key, Cell)>) {
    for (key, cell) in rows {
        let slot = into.entry(key).or_default();
        slot.n += cell.n;
        slot.times.add(&cell.times);
    }
}

/// A rollup's grain: which of the three a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grain {
    /// Per day and combination (`insights`): what every filtered reading reads.
    Day,
    /// Per calendar month (the row's `day` is the month's first) and combination
    /// (`insights_months`).
    Month,
    /// Per day and outcome, the combination left empty (`insights_days`).
    Total,
}

impl Grain {
    /// The SQL backends' table of this grain (without PostgreSQL's `clarify_` prefix).
    pub(crate) fn table(self) -> &'static str {
        match self {
            Self::Day => "insights",
            Self::Month => "insights_months",
            Self::Total => "insights_days",
        }
    }

    /// `key` at this grain.
    pub(crate) fn key(self, key: &Key) -> Key {
        match self {
            Self::Day => key.clone(),
            Self::Month => Key {
                day: month_of(key.day),
                ..key.clone()
            },
            Self::Total => Key {
                agent: String::new(),
                tool: String::new(),
                surface: String::new(),
                responder: String::new(),
                ..key.clone()
            },
        }
    }

    /// Day-grain `rows` at this grain, merged.
    pub(crate) fn of(self, rows: &HashMap<Key, Cell>) -> HashMap<Key, Cell> {
        let mut out: HashMap<Key, Cell> = HashMap::new();
        for (key, cell) in rows {
            let slot = out.entry(self.key(key)).or_default();
            slot.n += cell.n;
            slot.times.add(&cell.times);
        }
        out
    }
}

/// The first day of the calendar month holding `day` (both as days since 1970-01-01).
pub(crate) fn month_of(day: i64) -> i64 {
    let date = date_of(day);
    date.with_day(1).map(day_of_date).unwrap_or(day)
}

/// How a broad reading of days `first..=last` is read from the coarser rollups: the month rows
/// of `months` (first days of the first and last whole month), and the day rows of `edges`, the
/// days before and after them. `None` when the range holds no whole month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Split {
    pub months: (i64, i64),
    pub edges: Vec<(i64, i64)>,
}

pub(crate) fn split(first: i64, last: i64) -> Option<Split> {
    // The first whole month starts on `first`'s month's first day, or the next month's.
    let start = if month_of(first) == first {
        first
    } else {
        next_month(first)
    };
    // The last whole month ends the day before `last + 1`'s month starts, when `last` ends it.
    let end_next = if month_of(last + 1) == last + 1 {
        last + 1
    } else {
        month_of(last)
    };
    if start >= end_next {
        return None;
    }
    let mut edges = Vec::new();
    if first < start {
        edges.push((first, start - 1));
    }
    if end_next <= last {
        edges.push((end_next, last));
    }
    Some(Split {
        months: (start, month_of(end_next - 1)),
        edges,
    })
}

/// The first day of the month after the one holding `day`.
fn next_month(day: i64) -> i64 {
    let date = date_of(month_of(day));
    date.checked_add_months(chrono::Months::new(1))
        .map(day_of_date)
        .unwrap_or(day + 31)
}

/// The UTC day of `at`, as days since 1970-01-01.
pub(crate) fn day_of(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis().div_euclid(DAY_MS)
}

fn date_of(day: i64) -> NaiveDate {
    DateTime::<Utc>::UNIX_EPOCH
        .checked_add_signed(TimeDelta::days(day))
        .unwrap_or_default()
        .date_naive()
}

fn day_of_date(date: NaiveDate) -> i64 {
    date.signed_duration_since(DateTime::<Utc>::UNIX_EPOCH.date_naive())
        .num_days()
}

/// What a reading of the insights covers. Days are UTC and both ends are included.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InsightsQuery {
    /// The first day; default: 29 days before `to`.
    pub from: Option<NaiveDate>,
    /// The last day; default: today.
    pub to: Option<NaiveDate>,
    pub agent: Option<String>,
    /// An approval's tool (its action's name).
    pub tool: Option<String>,
    pub tag: Option<String>,
    /// The surface a decision came through (`answered_via`: `inbox`, `slack`, `policy`, ...).
    /// Pending requests have none, so this filter leaves them out of nothing.
    pub channel: Option<String>,
    /// Who decided. Pending requests have nobody yet, so this filter leaves them out of nothing.
    pub responder: Option<String>,
}

/// The longest range one reading covers.
pub const MAX_DAYS: i64 = 731;

impl InsightsQuery {
    /// The range as days since the epoch, `to` defaulting to `today`; an error names a range
    /// that ends before it starts or spans more than [`MAX_DAYS`].
    pub fn days(&self, today: NaiveDate) -> Result<(NaiveDate, NaiveDate), String> {
        let to = self.to.unwrap_or(today);
        let from = self.from.unwrap_or_else(|| to - TimeDelta::days(29));
        if from > to {
            return Err(format!("from ({from}) is after to ({to})"));
        }
        if (to - from).num_days() >= MAX_DAYS {
            return Err(format!(
                "the range from {from} to {to} is longer than {MAX_DAYS} days"
            ));
        }
        Ok((from, to))
    }

    /// Whether a rollup row (of the right tenant and tag) is one this reading counts.
    pub(crate) fn keeps(&self, key: &Key, from: i64, to: i64) -> bool {
        let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        key.day >= from
            && key.day <= to
            && is(&self.agent, &key.agent)
            && is(&self.tool, &key.tool)
            && is(&self.channel, &key.surface)
            && is(&self.responder, &key.responder)
    }

    pub(crate) fn tag_key(&self) -> &str {
        self.tag.as_deref().unwrap_or("")
    }

    /// Whether nothing but the tag narrows the reading, so the coarser rollups answer it.
    pub(crate) fn is_broad(&self) -> bool {
        self.agent.is_none()
            && self.tool.is_none()
            && self.channel.is_none()
            && self.responder.is_none()
    }

    /// Whether a pending request is one this reading counts (the responder and channel filters
    /// concern decisions, which it has none of yet).
    pub(crate) fn keeps_pending(&self, record: &RequestRecord) -> bool {
        let r = &record.request;
        self.agent
            .as_deref()
            .is_none_or(|a| r.agent.as_deref() == Some(a))
            && self
                .tag
                .as_deref()
                .is_none_or(|t| r.tags.iter().any(|x| x == t))
            && self.tool.as_deref().is_none_or(|t| {
                r.questions
                    .iter()
                    .any(|q| matches!(&q.kind, QuestionKind::Approval(a) if a.action.name == t))
            })
    }
}

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

/// Makes the figures from the rollup rows a reading selected (the tenant's, of its tag, in its
/// range, matching its filters) and the creation times of the pending requests it counts.
pub(crate) fn summarize(
    from: NaiveDate,
    to: NaiveDate,
    rows: impl IntoIterator<Item = (Key, Cell)>,
    pending_created: &[DateTime<Utc>],
    now: DateTime<Utc>,
) -> Insights {
    let mut tally = Tally::new(from, to);
    for (key, cell) in rows {
        tally.totals(&key, &cell);
        tally.sections(&key, &cell);
    }
    tally.finish(from, to, pending_created, now)
}

/// [`summarize`] of a broad reading read from the coarser rollups ([`split`]): `totals`, the
/// day totals of the range, give what does not depend on the combination (statuses, the
/// percentiles, the per-day series, defaults); `sections`, the combinations of its whole months
/// and edge days, give the per-tool, per-responder and per-surface figures. The same figures
/// as [`summarize`] of the range's day rows.
pub(crate) fn summarize_split(
    from: NaiveDate,
    to: NaiveDate,
    totals: impl IntoIterator<Item = (Key, Cell)>,
    sections: impl IntoIterator<Item = (Key, Cell)>,
    pending_created: &[DateTime<Utc>],
    now: DateTime<Utc>,
) -> Insights {
    let mut tally = Tally::new(from, to);
    for (key, cell) in totals {
        tally.totals(&key, &cell);
    }
    for (key, cell) in sections {
        tally.sections(&key, &cell);
    }
    tally.finish(from, to, pending_created, now)
}

/// The figures being added up, row by row.
struct Tally {
    by_status: BTreeMap<&'static str, u64>,
    overall: Histogram,
    days: BTreeMap<i64, (u64, Histogram)>,
    tools: BTreeMap<String, (ToolFigures, Histogram)>,
    responders: BTreeMap<String, (ResponderFigures, Histogram)>,
    surfaces: BTreeMap<String, u64>,
    defaults_applied: u64,
}

impl Tally {
    fn new(from: NaiveDate, to: NaiveDate) -> Self {
        let (first, last) = (day_of_date(from), day_of_date(to));
        Self {
            by_status: [
                Status::Pending,
                Status::Answered,
                Status::Skipped,
                Status::Expired,
                Status::Cancelled,
            ]
            .into_iter()
            .map(|s| (s.as_str(), 0))
            .collect(),
            overall: Histogram::default(),
            days: (first..=last)
                .map(|d| (d, (0, Histogram::default())))
                .collect(),
            tools: BTreeMap::new(),
            responders: BTreeMap::new(),
            surfaces: BTreeMap::new(),
            defaults_applied: 0,
        }
    }

    /// What a row adds whatever its combination: statuses, times, the day's figures, defaults.
    fn totals(&mut self, key: &Key, cell: &Cell) {
        *self
            .by_status
            .entry(key.ending.status().as_str())
            .or_default() += cell.n;
        self.overall.add(&cell.times);
        if let Some((resolved, times)) = self.days.get_mut(&key.day) {
            *resolved += cell.n;
            times.add(&cell.times);
        }
        if key.ending == Ending::Default {
            self.defaults_applied += cell.n;
        }
    }

    /// What a row adds to its tool, its responder and its surface.
    fn sections(&mut self, key: &Key, cell: &Cell) {
        if !key.tool.is_empty() {
            if !self.tools.contains_key(&key.tool) {
                let fresh = ToolFigures {
                    tool: key.tool.clone(),
                    ..ToolFigures::default()
                };
                self.tools
                    .insert(key.tool.clone(), (fresh, Histogram::default()));
            }
            if let Some((t, approve_times)) = self.tools.get_mut(&key.tool) {
                match key.ending {
                    Ending::Approve => {
                        t.approve += cell.n;
                        approve_times.add(&cell.times);
                    }
                    Ending::Revise => t.revise += cell.n,
                    Ending::Deny => t.deny += cell.n,
                    Ending::Expired => t.expired += cell.n,
                    Ending::Default => {
                        t.expired += cell.n;
                        t.defaults += cell.n;
                    }
                    Ending::Cancelled => t.cancelled += cell.n,
                    Ending::Answered | Ending::Skipped => {}
                }
            }
        }
        if !key.responder.is_empty() {
            if !self.responders.contains_key(&key.responder) {
                let fresh = ResponderFigures {
                    responder: key.responder.clone(),
                    ..ResponderFigures::default()
                };
                self.responders
                    .insert(key.responder.clone(), (fresh, Histogram::default()));
            }
            if let Some((r, times)) = self.responders.get_mut(&key.responder) {
                r.decisions += cell.n;
                match key.ending {
                    Ending::Approve => r.approve += cell.n,
                    Ending::Revise => r.revise += cell.n,
                    Ending::Deny => r.deny += cell.n,
                    _ => {}
                }
                times.add(&cell.times);
            }
        }
        if !key.surface.is_empty() {
            match self.surfaces.get_mut(&key.surface) {
                Some(n) => *n += cell.n,
                None => {
                    self.surfaces.insert(key.surface.clone(), cell.n);
                }
            }
        }
    }

    fn finish(
        self,
        from: NaiveDate,
        to: NaiveDate,
        pending_created: &[DateTime<Utc>],
        now: DateTime<Utc>,
    ) -> Insights {
        let Tally {
            mut by_status,
            overall,
            days,
            tools,
            responders,
            surfaces,
            defaults_applied,
        } = self;
        by_status.insert(Status::Pending.as_str(), pending_created.len() as u64);
        let per_day = days
            .into_iter()
            .map(|(day, (resolved, times))| DayFigures {
                day: date_of(day),
                resolved,
                count: times.total(),
                p50: times.quantile(0.5),
                p90: times.quantile(0.9),
            })
            .collect();
        let mut by_tool: Vec<ToolFigures> = tools
            .into_values()
            .map(|(mut t, approve_times)| {
                t.fast_approvals = approve_times.at_most(FAST_APPROVAL_SECONDS);
                t.approve_p50 = approve_times.quantile(0.5);
                t
            })
            .collect();
        by_tool.sort_by(|a, b| {
            let total = |t: &ToolFigures| t.approve + t.revise + t.deny + t.expired + t.cancelled;
            total(b).cmp(&total(a)).then_with(|| a.tool.cmp(&b.tool))
        });
        let mut by_responder: Vec<ResponderFigures> = responders
            .into_values()
            .map(|(mut r, times)| {
                r.p50 = times.quantile(0.5);
                r.p90 = times.quantile(0.9);
                r
            })
            .collect();
        by_responder.sort_by(|a, b| {
            b.decisions
                .cmp(&a.decisions)
                .then_with(|| a.responder.cmp(&b.responder))
        });
        let mut by_surface: Vec<SurfaceFigures> = surfaces
            .into_iter()
            .map(|(surface, decisions)| SurfaceFigures { surface, decisions })
            .collect();
        by_surface.sort_by(|a, b| {
            b.decisions
                .cmp(&a.decisions)
                .then_with(|| a.surface.cmp(&b.surface))
        });
        let mut pending_by_age: Vec<AgeFigures> = AGES
            .iter()
            .enumerate()
            .map(|(i, (age, from_seconds))| AgeFigures {
                age,
                from_seconds: *from_seconds,
                to_seconds: AGES.get(i + 1).map(|(_, s)| *s),
                count: 0,
            })
            .collect();
        for created in pending_created {
            let waited = u64::try_from((now - *created).num_seconds()).unwrap_or(0);
            if let Some(bucket) = pending_by_age
                .iter_mut()
                .rev()
                .find(|b| waited >= b.from_seconds)
            {
                bucket.count += 1;
            }
        }
        Insights {
            from,
            to,
            by_status,
            time_to_decision: TimeToDecision {
                count: overall.total(),
                p50: overall.quantile(0.5),
                p90: overall.quantile(0.9),
                p99: overall.quantile(0.99),
                per_day,
            },
            by_tool,
            by_responder,
            by_surface,
            defaults_applied,
            pending_by_age,
        }
    }
}

/// The range of days (since the epoch) of `from..=to`.
pub(crate) fn day_range(from: NaiveDate, to: NaiveDate) -> (i64, i64) {
    (day_of_date(from), day_of_date(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(times: &[f64]) -> Histogram {
        let mut h = Histogram::default();
        for t in times {
            h.record(*t);
        }
        h
    }

    #[test]
    fn quantiles_are_exact_on_bucket_bounds_and_interpolated_between() {
        let h = hist(&[10.0, 30.0, 60.0, 120.0]);
        assert_eq!(h.quantile(0.5), Some(30.0));
        assert_eq!(h.quantile(0.9), Some(120.0));
        assert_eq!(h.quantile(0.25), Some(10.0));
        // Two times in (20, 30]: the first of them is placed halfway.
        assert_eq!(hist(&[25.0, 26.0]).quantile(0.5), Some(25.0));
        assert_eq!(Histogram::default().quantile(0.5), None);
        // Slower than a week: the week.
        assert_eq!(hist(&[1e7]).quantile(0.5), Some(604_800.0));
    }

    #[test]
    fn a_histogram_round_trips_through_its_text() {
        let h = hist(&[0.2, 3.0, 3.0, 9e6]);
        assert_eq!(Histogram::from_text(&h.to_text()), Some(h));
        assert_eq!(Histogram::from_text("1,2"), None);
        assert_eq!(Histogram::from_text("x"), None);
    }

    #[test]
    fn fast_approvals_count_up_to_the_bound() {
        assert_eq!(hist(&[1.0, 9.9, 10.0, 10.1, 400.0]).at_most(10.0), 3);
    }

    fn day(y: i32, m: u32, d: u32) -> i64 {
        day_of_date(NaiveDate::from_ymd_opt(y, m, d).expect("a date"))
    }

    #[test]
    fn a_range_splits_into_its_whole_months_and_the_days_at_either_edge() {
        // A year back from a day in November: December to October whole, two edge stretches.
        assert_eq!(
            split(day(2025, 11, 26), day(2026, 11, 26)),
            Some(Split {
                months: (day(2025, 12, 1), day(2026, 10, 1)),
                edges: vec![
                    (day(2025, 11, 26), day(2025, 11, 30)),
                    (day(2026, 11, 1), day(2026, 11, 26)),
                ],
            })
        );
        // Exactly whole months: no edges; February of a leap year ends on the 29th.
        assert_eq!(
            split(day(2024, 1, 1), day(2024, 2, 29)),
            Some(Split {
                months: (day(2024, 1, 1), day(2024, 2, 1)),
                edges: vec![],
            })
        );
        assert_eq!(
            split(day(2024, 1, 1), day(2024, 1, 31)),
            Some(Split {
                months: (day(2024, 1, 1), day(2024, 1, 1)),
                edges: vec![],
            })
        );
        // No whole month inside: read day by day.
        assert_eq!(split(day(2026, 1, 15), day(2026, 2, 20)), None);
        assert_eq!(split(day(2026, 1, 1), day(2026, 1, 30)), None);
        assert_eq!(split(day(2026, 11, 1), day(2026, 11, 1)), None);
    }

    #[test]
    fn a_broad_reading_from_the_coarser_rollups_equals_the_one_from_the_day_rows() {
        // A deterministic year of rows over many combinations, some outside the range.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut dice = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let (first, last) = (day(2025, 3, 17), day(2026, 3, 9));
        let mut rows: HashMap<Key, Cell> = HashMap::new();
        for _ in 0..20_000 {
            let ending = Ending::ALL[dice(Ending::ALL.len() as u64) as usize];
            let person = matches!(ending.status(), Status::Answered | Status::Skipped);
            let key = Key {
                tenant: "t".into(),
                tag: String::new(),
                day: first - 20 + dice((last - first + 40) as u64) as i64,
                agent: format!("agent-{}", dice(3)),
                tool: if dice(5) == 0 {
                    String::new()
                } else {
                    format!("tool-{}", dice(6))
                },
                surface: if person {
                    format!("surface-{}", dice(3))
                } else {
                    String::new()
                },
                responder: if person {
                    format!("person-{}", dice(7))
                } else {
                    String::new()
                },
                ending,
            };
            let mut cell = Cell {
                n: 1,
                times: Histogram::default(),
            };
            if person {
                cell.times.record(dice(100_000) as f64 / 10.0);
            }
            fold(&mut rows, vec![(key, cell)]);
        }
        let within = |from: i64, to: i64| -> Vec<(Key, Cell)> {
            rows.iter()
                .filter(|(k, _)| k.day >= from && k.day <= to)
                .map(|(k, c)| (k.clone(), c.clone()))
                .collect()
        };
        let now = DateTime::<Utc>::UNIX_EPOCH + TimeDelta::days(last + 1);
        let (from, to) = (date_of(first), date_of(last));
        let by_days = summarize(from, to, within(first, last), &[], now);

        let plan = split(first, last).expect("whole months inside");
        let months = Grain::Month.of(&rows);
        let mut sections: Vec<(Key, Cell)> = months
            .into_iter()
            .filter(|(k, _)| k.day >= plan.months.0 && k.day <= plan.months.1)
            .collect();
        for (a, b) in &plan.edges {
            sections.extend(within(*a, *b));
        }
        let totals: Vec<(Key, Cell)> = Grain::Total
            .of(&within(first, last).into_iter().collect())
            .into_iter()
            .collect();
        let by_grains = summarize_split(from, to, totals, sections, &[], now);
        assert!(by_days.by_tool.len() > 3 && by_days.time_to_decision.count > 1_000);
        assert_eq!(by_grains, by_days);
    }
}
