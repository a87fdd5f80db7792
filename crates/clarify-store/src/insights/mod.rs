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
//!
//! This file holds the rollup (what a resolution counts, the grains, the query) and
//! [`Store::insights`], which reads it; `figures.rs` holds the figures a reading returns and how
//! the rows it read add up to them.

mod figures;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use chrono::{DateTime, Datelike as _, NaiveDate, TimeDelta, Utc};
use clarify_core::{Decision, QuestionKind, Status};

use crate::Store;
use crate::error::StoreError;
use crate::record::RequestRecord;

pub use figures::{
    AGES, AgeFigures, DayFigures, Insights, ResponderFigures, SurfaceFigures, TimeToDecision,
    ToolFigures,
};
use figures::{day_range, summarize, summarize_split};

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

pub use clarify_model::figures::FAST_APPROVAL_SECONDS;

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

    /// The bucket of the one time this histogram holds; `Ok(None)` when it holds none, `Err`
    /// when it holds more.
    pub(crate) fn only_bucket(&self) -> Result<Option<usize>, ()> {
        match self.total() {
            0 => Ok(None),
            1 => Ok(self.0.iter().position(|c| *c == 1)),
            _ => Err(()),
        }
    }

    /// [`Histogram::to_text`] of a histogram holding one time in `bucket` (`None`: no time),
    /// made once: a resolution writes one.
    pub(crate) fn single_text(bucket: Option<usize>) -> &'static str {
        static TEXTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
            (0..=BUCKETS)
                .map(|i| {
                    let mut h = Histogram::default();
                    if let Some(slot) = h.0.get_mut(i) {
                        *slot = 1;
                    }
                    h.to_text()
                })
                .collect()
        });
        // Index BUCKETS is the empty histogram.
        let i = bucket.filter(|b| *b < BUCKETS).unwrap_or(BUCKETS);
        TEXTS.get(i).map_or("", String::as_str)
    }

    /// `text`, a histogram as [`Histogram::to_text`] writes it, with one more time in `bucket`:
    /// that count's digits replaced, the text around them copied whole, so counting a resolution
    /// into a stored histogram neither parses nor writes the other counts. `None` for text that
    /// is not [`BUCKETS`] counts of digits separated by commas (spaces around a count allowed,
    /// as [`Histogram::from_bytes`] allows them), or a bucket out of range.
    pub(crate) fn bump_text(text: &[u8], bucket: usize) -> Option<String> {
        // One pass over the bytes: every count is digits with spaces around that fit a u64,
        // and the place of the one to bump is noted.
        let fits =
            |digits: &[u8]| digits.len() < 20 || digits <= b"18446744073709551615".as_slice();
        let (mut field, mut start, mut end) = (0, None, 0);
        let (mut first, mut last) = (None, 0);
        let mut after_digits = false;
        for (i, b) in text.iter().enumerate() {
            match b {
                b'0'..=b'9' if !after_digits => {
                    if first.is_none() {
                        first = Some(i);
                        if field == bucket {
                            start = Some(i);
                        }
                    }
                    last = i + 1;
                    if field == bucket {
                        end = i + 1;
                    }
                }
                b' ' => after_digits = first.is_some(),
                b',' => {
                    let digits = &text[first?..last];
                    if digits.len() > 20 || !fits(digits) {
                        return None;
                    }
                    (field, first, after_digits) = (field + 1, None, false);
                }
                _ => return None,
            }
        }
        let start = start?;
        let digits = &text[first?..last];
        if digits.len() > 20 || !fits(digits) || field + 1 != BUCKETS {
            return None;
        }
        let number = std::str::from_utf8(&text[start..end]).ok()?;
        let bumped = number.parse::<u64>().ok()?.checked_add(1)?;
        let mut out = String::with_capacity(text.len() + 1);
        // The bytes checked above are ASCII.
        out.push_str(std::str::from_utf8(&text[..start]).ok()?);
        out.push_str(itoa::Buffer::new().format(bumped));
        out.push_str(std::str::from_utf8(&text[end..]).ok()?);
        Some(out)
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
    /// Written digit by digit (`itoa`): every resolution writes one, and `write!`'s formatting
    /// machinery cost ten times as much.
    pub(crate) fn to_text(&self) -> String {
        let mut text = String::with_capacity(BUCKETS * 2);
        let mut digits = itoa::Buffer::new();
        for (i, count) in self.0.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(digits.format(*count));
        }
        text
    }

    /// Reads [`Histogram::to_text`] back; `None` for text that is not one.
    pub(crate) fn from_text(text: &str) -> Option<Self> {
        Self::from_bytes(text.as_bytes())
    }

    /// [`Histogram::from_text`] on bytes, as SQLite hands a function its argument: exactly
    /// [`BUCKETS`] counts separated by commas, each decimal digits with spaces allowed around
    /// them. Read byte by byte: every resolution reads one back (`str::parse` over `split` and
    /// `trim` cost several times as much).
    pub(crate) fn from_bytes(text: &[u8]) -> Option<Self> {
        let mut h = Self::default();
        let mut parts = text.split(|b| *b == b',');
        for slot in h.0.iter_mut() {
            let digits = parts.next()?.trim_ascii();
            if digits.is_empty() {
                return None;
            }
            let mut n: u64 = 0;
            for b in digits {
                let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
                n = n.checked_mul(10)?.checked_add(u64::from(digit))?;
            }
            *slot = n;
        }
        parts.next().is_none().then_some(h)
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

/// The rollup rows an insights reading read: day rows, or the coarser rollups' (see
/// [`split`]).
enum Read {
    Days(Vec<(Key, Cell)>),
    Split {
        totals: Vec<(Key, Cell)>,
        sections: Vec<(Key, Cell)>,
    },
}

impl Store {
    /// What `tenant`'s decisions add up to over the query's days (see [`Insights`]): read from
    /// the rollup, so its cost grows with the days and the distinct combinations they saw,
    /// not with the number of requests; pending requests are read as they are now.
    pub async fn insights(
        &self,
        tenant: &str,
        query: &InsightsQuery,
    ) -> Result<Insights, StoreError> {
        let now = self.now();
        let (from, to) = query
            .days(now.date_naive())
            .map_err(StoreError::InvalidQuery)?;
        let (first, last) = day_range(from, to);
        // PostgreSQL counts a resolution when its event is numbered: wait for what is
        // committed, so a reading after an answer includes it.
        self.sync_feed().await?;
        let backend = &self.inner.backend;
        // A broad reading over whole months reads the coarser rollups (see `insights`), as far
        // as they reach, after counting into them the days that ended since a reading last did.
        let through = match query.is_broad() {
            true => self.compacted_insights(tenant, now).await?,
            false => None,
        };
        let plan = through.and_then(|through| split(first, last.min(through)));
        let rows = match (plan, through) {
            (Some(plan), Some(through)) => {
                let totals_to = last.min(through);
                let mut totals = backend
                    .insight_rows(tenant, query, Grain::Total, first, totals_to)
                    .await?;
                let (m0, m1) = plan.months;
                let mut sections = backend
                    .insight_rows(tenant, query, Grain::Month, m0, m1)
                    .await?;
                for (a, b) in &plan.edges {
                    sections.extend(
                        backend
                            .insight_rows(tenant, query, Grain::Day, *a, *b)
                            .await?,
                    );
                }
                // The days after the coarser rollups' last count in both, from the day rows.
                if totals_to < last {
                    let tail = backend
                        .insight_rows(tenant, query, Grain::Day, totals_to + 1, last)
                        .await?;
                    totals.extend(tail.iter().cloned());
                    sections.extend(tail);
                }
                Read::Split { totals, sections }
            }
            _ => Read::Days(
                backend
                    .insight_rows(tenant, query, Grain::Day, first, last)
                    .await?,
            ),
        };
        let pending: Vec<DateTime<Utc>> = backend
            .pending_of(tenant, query.agent.as_deref())
            .await?
            .iter()
            .filter(|r| query.keeps_pending(r))
            .map(|r| r.created_at)
            .collect();
        Ok(match rows {
            Read::Days(rows) => summarize(from, to, rows, &pending, now),
            Read::Split { totals, sections } => {
                summarize_split(from, to, totals, sections, &pending, now)
            }
        })
    }

    /// The last day `tenant`'s coarser insights rollups hold, after moving it on to two days ago (a
    /// resolution is counted under the day it was made, and on PostgreSQL by the sequencer's
    /// round just after: a day two days past gets no more rows); `None` for a backend without
    /// them.
    async fn compacted_insights(
        &self,
        tenant: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let backend = &self.inner.backend;
        let Some(done) = backend.insights_compacted_through(tenant).await? else {
            return Ok(None);
        };
        let due = day_of(now) - 2;
        if due <= done {
            return Ok(Some(done));
        }
        Ok(Some(backend.compact_insights(tenant, due).await?))
    }
}
