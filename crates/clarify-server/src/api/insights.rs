//! `GET /v1/insights`: what the caller tenant's decisions add up to (responders and admins):
//! requests by status, how long people took to decide (overall and per day), decisions per
//! tool, per responder and per surface, defaults applied, and pending requests by age. The
//! store reads them from its rollup, so a year costs about what a day does.

use std::collections::BTreeMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use chrono::{DateTime, NaiveDate};
use clarify_store::{
    AgeFigures, DayFigures, Insights, InsightsQuery, ResponderFigures, SurfaceFigures, ToolFigures,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::query;
use crate::shared::json::Json;
use crate::state::AppState;

/// The filters, as the address carries them (the inbox's Insights page uses the same names).
#[derive(Debug, Default, Deserialize, Serialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct InsightsParams {
    /// The first day (UTC), `YYYY-MM-DD` or an RFC 3339 time (its UTC day); default 29 days
    /// before `to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The last day (UTC), included; default today. At most 731 days after `from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// An approval's tool (its action's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The surface decisions came through (`answered_via`: `inbox`, `slack`, `policy`, ...).
    /// Pending requests have none, so it does not narrow them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Who decided. Pending requests have nobody yet, so it does not narrow them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder: Option<String>,
}

impl InsightsParams {
    /// The store's query; an error names the parameter that is not a date.
    pub fn parse(&self) -> Result<InsightsQuery, ApiError> {
        let filter = |v: &Option<String>| v.as_ref().filter(|s| !s.is_empty()).cloned();
        Ok(InsightsQuery {
            from: date("from", self.from.as_deref())?,
            to: date("to", self.to.as_deref())?,
            agent: filter(&self.agent),
            tool: filter(&self.tool),
            tag: filter(&self.tag),
            channel: filter(&self.channel),
            responder: filter(&self.responder),
        })
    }
}

fn date(name: &str, value: Option<&str>) -> Result<Option<NaiveDate>, ApiError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if let Ok(day) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        return Ok(Some(day));
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(value) {
        return Ok(Some(at.to_utc().date_naive()));
    }
    Err(ApiError::bad_request(
        "invalid_date",
        format!(
            "{name} must be a day (YYYY-MM-DD) or an RFC 3339 time, got {}",
            clarify_core::quoted(value)
        ),
    ))
}

/// Times people took to decide, in seconds (answers and skips by a person; a rule's decision
/// and an expiry take nobody's time). Percentiles come from histograms: exact on their bucket
/// bounds (1, 2, 3, 5, 7, 10, 15, 20, 30, 45, 60, 90 s, ... up to a week), interpolated
/// between them. `null` where nothing was decided.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TimeToDecisionBody {
    /// How many decisions the percentiles are of.
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    /// Every day of the range, oldest first, days without decisions included.
    pub per_day: Vec<DayBody>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DayBody {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// Requests resolved that day, every status.
    pub resolved: u64,
    /// Decisions people made that day.
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
}

impl From<&DayFigures> for DayBody {
    fn from(d: &DayFigures) -> Self {
        Self {
            day: d.day.to_string(),
            resolved: d.resolved,
            count: d.count,
            p50: d.p50,
            p90: d.p90,
        }
    }
}

/// One tool's approvals: how they ended.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ToolBody {
    pub tool: String,
    pub approve: u64,
    /// Sent back with changes requested.
    pub revise: u64,
    pub deny: u64,
    /// Nobody answered in time (with or without a default).
    pub expired: u64,
    /// Of `expired`, those whose `on_timeout` default was applied.
    pub defaults: u64,
    pub cancelled: u64,
    /// Approvals a person gave within 10 seconds of being asked: often too fast to have read
    /// what was approved.
    pub fast_approvals: u64,
    /// The median time a person took to approve, in seconds.
    pub approve_p50: Option<f64>,
}

impl From<&ToolFigures> for ToolBody {
    fn from(t: &ToolFigures) -> Self {
        Self {
            tool: t.tool.clone(),
            approve: t.approve,
            revise: t.revise,
            deny: t.deny,
            expired: t.expired,
            defaults: t.defaults,
            cancelled: t.cancelled,
            fast_approvals: t.fast_approvals,
            approve_p50: t.approve_p50,
        }
    }
}

/// One responder's load (`answered_by`; a rule's is `policy:<name>`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ResponderBody {
    pub responder: String,
    /// Answers and skips.
    pub decisions: u64,
    pub approve: u64,
    pub revise: u64,
    pub deny: u64,
    /// Seconds taken to decide.
    pub p50: Option<f64>,
    pub p90: Option<f64>,
}

impl From<&ResponderFigures> for ResponderBody {
    fn from(r: &ResponderFigures) -> Self {
        Self {
            responder: r.responder.clone(),
            decisions: r.decisions,
            approve: r.approve,
            revise: r.revise,
            deny: r.deny,
            p50: r.p50,
            p90: r.p90,
        }
    }
}

/// Decisions that came through one surface (`answered_via`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SurfaceBody {
    pub surface: String,
    pub decisions: u64,
}

impl From<&SurfaceFigures> for SurfaceBody {
    fn from(s: &SurfaceFigures) -> Self {
        Self {
            surface: s.surface.clone(),
            decisions: s.decisions,
        }
    }
}

/// Pending requests that have waited this long.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AgeBody {
    /// `under_5m`, `5m_to_15m`, `15m_to_1h`, `1h_to_4h`, `4h_to_1d`, `1d_to_7d`, `over_7d`.
    pub age: String,
    /// Waiting at least this many seconds,
    pub from_seconds: u64,
    /// and less than this many; `null` for the last bucket.
    pub to_seconds: Option<u64>,
    pub count: u64,
}

impl From<&AgeFigures> for AgeBody {
    fn from(a: &AgeFigures) -> Self {
        Self {
            age: a.age.to_owned(),
            from_seconds: a.from_seconds,
            to_seconds: a.to_seconds,
            count: a.count,
        }
    }
}

/// The figures of a range of days.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct InsightsBody {
    /// The first day counted (`YYYY-MM-DD`, UTC).
    pub from: String,
    /// The last day counted, included.
    pub to: String,
    /// `pending` (now) and `answered`, `skipped`, `expired`, `cancelled` (resolved within the
    /// range).
    pub by_status: BTreeMap<String, u64>,
    pub time_to_decision: TimeToDecisionBody,
    /// Approvals per tool, most used first.
    pub by_tool: Vec<ToolBody>,
    /// Who decided, busiest first.
    pub by_responder: Vec<ResponderBody>,
    /// Through which surface, busiest first.
    pub by_surface: Vec<SurfaceBody>,
    /// Requests that expired with their `on_timeout` default applied.
    pub defaults_applied: u64,
    /// Pending requests by how long they have waited.
    pub pending_by_age: Vec<AgeBody>,
}

impl From<&Insights> for InsightsBody {
    fn from(i: &Insights) -> Self {
        Self {
            from: i.from.to_string(),
            to: i.to.to_string(),
            by_status: i
                .by_status
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
            time_to_decision: TimeToDecisionBody {
                count: i.time_to_decision.count,
                p50: i.time_to_decision.p50,
                p90: i.time_to_decision.p90,
                p99: i.time_to_decision.p99,
                per_day: i
                    .time_to_decision
                    .per_day
                    .iter()
                    .map(DayBody::from)
                    .collect(),
            },
            by_tool: i.by_tool.iter().map(ToolBody::from).collect(),
            by_responder: i.by_responder.iter().map(ResponderBody::from).collect(),
            by_surface: i.by_surface.iter().map(SurfaceBody::from).collect(),
            defaults_applied: i.defaults_applied,
            pending_by_age: i.pending_by_age.iter().map(AgeBody::from).collect(),
        }
    }
}

impl InsightsBody {
    /// The figures again, as the server computed them: what a client of `/v1/insights` (the
    /// report made over HTTP) draws its charts from.
    pub fn figures(self) -> Result<Insights, String> {
        fn day(text: &str) -> Result<NaiveDate, String> {
            text.parse()
                .map_err(|e| format!("{text:?} is not a day (YYYY-MM-DD): {e}"))
        }
        const STATUSES: [&str; 5] = ["pending", "answered", "skipped", "expired", "cancelled"];
        let by_status = self
            .by_status
            .into_iter()
            .map(|(k, v)| {
                STATUSES
                    .iter()
                    .find(|s| **s == k)
                    .map(|s| (*s, v))
                    .ok_or_else(|| format!("unknown status {k:?}"))
            })
            .collect::<Result<_, _>>()?;
        let t = self.time_to_decision;
        Ok(Insights {
            from: day(&self.from)?,
            to: day(&self.to)?,
            by_status,
            time_to_decision: clarify_store::TimeToDecision {
                count: t.count,
                p50: t.p50,
                p90: t.p90,
                p99: t.p99,
                per_day: t
                    .per_day
                    .into_iter()
                    .map(|d| {
                        Ok(DayFigures {
                            day: day(&d.day)?,
                            resolved: d.resolved,
                            count: d.count,
                            p50: d.p50,
                            p90: d.p90,
                        })
                    })
                    .collect::<Result<_, String>>()?,
            },
            by_tool: self
                .by_tool
                .into_iter()
                .map(|t| ToolFigures {
                    tool: t.tool,
                    approve: t.approve,
                    revise: t.revise,
                    deny: t.deny,
                    expired: t.expired,
                    defaults: t.defaults,
                    cancelled: t.cancelled,
                    fast_approvals: t.fast_approvals,
                    approve_p50: t.approve_p50,
                })
                .collect(),
            by_responder: self
                .by_responder
                .into_iter()
                .map(|r| ResponderFigures {
                    responder: r.responder,
                    decisions: r.decisions,
                    approve: r.approve,
                    revise: r.revise,
                    deny: r.deny,
                    p50: r.p50,
                    p90: r.p90,
                })
                .collect(),
            by_surface: self
                .by_surface
                .into_iter()
                .map(|s| SurfaceFigures {
                    surface: s.surface,
                    decisions: s.decisions,
                })
                .collect(),
            defaults_applied: self.defaults_applied,
            pending_by_age: self
                .pending_by_age
                .into_iter()
                .map(|a| {
                    let age = clarify_store::PENDING_AGES
                        .iter()
                        .find(|(name, _)| *name == a.age)
                        .map(|(name, _)| *name)
                        .ok_or_else(|| format!("unknown age {:?}", a.age))?;
                    Ok(AgeFigures {
                        age,
                        from_seconds: a.from_seconds,
                        to_seconds: a.to_seconds,
                        count: a.count,
                    })
                })
                .collect::<Result<_, String>>()?,
        })
    }
}

/// The figures a page shows for `params`, for the caller's tenant: checked, then read.
pub(crate) async fn read(
    state: &AppState,
    caller: &Caller,
    params: &InsightsParams,
) -> Result<Insights, ApiError> {
    caller.must_answer()?;
    let q = params.parse()?;
    q.days(state.store.now().date_naive())
        .map_err(|m| ApiError::bad_request("invalid_range", m))?;
    Ok(state.store.insights(caller.tenant(), &q).await?)
}

/// What the caller tenant's decisions add up to over a range of days (responders and admins).
#[utoipa::path(get, path = "/v1/insights", tag = "insights", params(InsightsParams),
    responses(
        (status = 200, description = "The figures", body = InsightsBody),
        (status = 400, description = "A date that is not one, a range that ends before it starts or spans more than 731 days, or an unknown parameter", body = ErrorBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 403, description = "An agent key", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn insights(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<InsightsParams>, QueryRejection>,
) -> Result<Json<InsightsBody>, ApiError> {
    let params = query(q)?;
    let figures = read(&state, &caller, &params).await?;
    Ok(Json(InsightsBody::from(&figures)))
}
