//! How the rollup rows a reading selected add up to the figures of one insights reading (the
//! figures themselves are plain data of `clarify-model`): apart from the rollup itself (the
//! parent module), which only counts.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use clarify_core::Status;

use clarify_model::figures::FAST_APPROVAL_SECONDS;
pub use clarify_model::figures::{
    AGES, AgeFigures, DayFigures, Insights, ResponderFigures, SurfaceFigures, TimeToDecision,
    ToolFigures,
};

use super::{Cell, Ending, Histogram, Key, date_of, day_of_date};

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
