//! On-call schedules as responders (`[oncall.pagerduty]`, `[oncall.opsgenie]`): who is on call
//! for a request's `oncall:` responder, as the provider's REST API says, made into responder
//! names through `[identities]`.
//!
//! The store asks through the [`clarify_store::OnCall`] reader [`Directory::reader`] makes, when
//! a request naming one is created (on every path) and again when it escalates; the store keeps
//! the answer with the request. A reading is reused for [`OnCallConfig::cache_for`] by the
//! injected clock, so a burst of requests to one schedule reads it once; a failed reading is not
//! kept, so the next request or escalation tries again. A reading that takes longer than
//! [`OnCallConfig::timeout`] fails, so creating a request never waits on a provider for long.
//!
//! An `oncall:` responder names its provider and schedule: `oncall:pagerduty:PSCHED1` (a
//! PagerDuty schedule), `oncall:pagerduty:policy:PPOLICY` (the first level of an escalation
//! policy), `oncall:opsgenie:payments` (an Opsgenie schedule by name, or by id when it is a
//! UUID); with one provider configured, `oncall:PSCHED1` suffices. A person on call becomes the
//! responder `[identities]` maps from `pagerduty:<user id>` (PagerDuty) or `email:<address>`
//! (both); failing those, their e-mail address is their responder name (as a person signed in
//! with OIDC by e-mail is named).

mod opsgenie;
mod pagerduty;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use clarify_store::{Clock, OnCall};

/// Where PagerDuty's REST API is, unless `api_url` says otherwise.
pub const PAGERDUTY_API: &str = "https://api.pagerduty.com";
/// Where Opsgenie's REST API is, unless `api_url` says otherwise.
pub const OPSGENIE_API: &str = "https://api.opsgenie.com";
/// Opsgenie's API for accounts in its EU region.
pub const OPSGENIE_EU_API: &str = "https://api.eu.opsgenie.com";
/// The `[identities]` prefixes of the people on call: `"pagerduty:PUSER01" = "alice"` (a
/// PagerDuty user id), `"opsgenie:alice@example.com" = "alice"` (an Opsgenie user name).
pub const IDENTITY_PREFIXES: [&str; 2] = ["pagerduty", "opsgenie"];
/// How long a reading is reused, unless `cache_for` says otherwise.
pub const DEFAULT_CACHE_FOR: Duration = Duration::from_secs(60);
/// How long one reading may take, unless `timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// `[oncall]`: the providers and how their answers are used.
#[derive(Debug, Clone)]
pub struct OnCallConfig {
    pub pagerduty: Option<Provider>,
    pub opsgenie: Option<Provider>,
    /// How long a schedule's reading is reused.
    pub cache_for: Duration,
    /// How long one reading may take before the schedule counts as unreadable.
    pub timeout: Duration,
}

impl Default for OnCallConfig {
    fn default() -> Self {
        Self {
            pagerduty: None,
            opsgenie: None,
            cache_for: DEFAULT_CACHE_FOR,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// One provider's credentials and API.
#[derive(Clone)]
pub struct Provider {
    /// PagerDuty's API token, Opsgenie's API key.
    pub token: String,
    /// The API's base URL, without a trailing slash.
    pub api_url: String,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

/// What an `oncall:` responder names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// A PagerDuty schedule, by id.
    PagerDuty(String),
    /// A PagerDuty escalation policy, by id: whoever is on call at its first level.
    PagerDutyPolicy(String),
    /// An Opsgenie schedule, by name or id.
    Opsgenie(String),
}

impl Schedule {
    /// How the record and the logs name it.
    fn describe(&self) -> String {
        match self {
            Self::PagerDuty(id) => format!("PagerDuty schedule {id}"),
            Self::PagerDutyPolicy(id) => format!("PagerDuty escalation policy {id}"),
            Self::Opsgenie(name) => format!("Opsgenie schedule {name}"),
        }
    }
}

impl OnCallConfig {
    /// Whether any provider is configured.
    pub fn is_configured(&self) -> bool {
        self.pagerduty.is_some() || self.opsgenie.is_some()
    }

    /// The schedule `responder` (`oncall:...`) names, or why it names none.
    pub fn schedule(&self, responder: &str) -> Result<Schedule, String> {
        let rest = responder
            .strip_prefix(clarify_core::ONCALL_PREFIX)
            .ok_or_else(|| format!("{responder:?} is not an oncall: responder"))?;
        let (provider, rest) = match rest.split_once(':') {
            Some(("pagerduty", rest)) => ("pagerduty", rest),
            Some(("opsgenie", rest)) => ("opsgenie", rest),
            _ => match (&self.pagerduty, &self.opsgenie) {
                (Some(_), None) => ("pagerduty", rest),
                (None, Some(_)) => ("opsgenie", rest),
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "{responder:?} names no provider, and both are configured; write \
                         oncall:pagerduty:{rest} or oncall:opsgenie:{rest}"
                    ));
                }
                (None, None) => {
                    return Err("no on-call provider is configured ([oncall.pagerduty] or \
                                [oncall.opsgenie])"
                        .to_owned());
                }
            },
        };
        let configured = match provider {
            "pagerduty" => self.pagerduty.is_some(),
            _ => self.opsgenie.is_some(),
        };
        if !configured {
            return Err(format!(
                "{responder:?} names {provider}, which is not configured ([oncall.{provider}])"
            ));
        }
        let schedule = match (provider, rest.strip_prefix("policy:")) {
            ("pagerduty", Some(policy)) => Schedule::PagerDutyPolicy(policy.to_owned()),
            ("pagerduty", None) => Schedule::PagerDuty(rest.to_owned()),
            _ => Schedule::Opsgenie(rest.to_owned()),
        };
        match &schedule {
            Schedule::PagerDuty(id) | Schedule::PagerDutyPolicy(id) | Schedule::Opsgenie(id)
                if id.trim().is_empty() =>
            {
                Err(format!("{responder:?} names no schedule"))
            }
            _ => Ok(schedule),
        }
    }
}

/// A person on call, as the provider names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OnCallUser {
    /// PagerDuty's user id; Opsgenie names people by e-mail only.
    pub id: Option<String>,
    pub email: Option<String>,
}

/// Reads schedules and keeps each reading for a while.
#[derive(Debug)]
pub struct Directory {
    config: OnCallConfig,
    /// `platform:user id` → responder name.
    identities: BTreeMap<String, String>,
    clock: Arc<dyn Clock>,
    client: reqwest::Client,
    readings: Mutex<HashMap<Schedule, Reading>>,
}

#[derive(Debug, Clone)]
struct Reading {
    at: DateTime<Utc>,
    users: Vec<OnCallUser>,
}

impl Directory {
    /// A directory of `config`'s providers, naming people through `identities`, keeping time by
    /// `clock` (the store's).
    pub fn new(
        config: OnCallConfig,
        identities: BTreeMap<String, String>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, String> {
        let client = clarify_client::http::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                format!("cannot build the HTTP client on-call schedules are read with: {e}")
            })?;
        Ok(Self {
            config,
            identities,
            clock,
            client,
            readings: Mutex::default(),
        })
    }

    /// The store's reader: [`Directory::who_is_on_call`].
    pub fn reader(self: Arc<Self>) -> OnCall {
        OnCall(Arc::new(move |responder: String| {
            let directory = Arc::clone(&self);
            Box::pin(async move { directory.who_is_on_call(&responder).await })
        }))
    }

    /// The people on call for `responder` (`oncall:...`) by responder name, each once; or why
    /// they could not be read, in one line.
    pub async fn who_is_on_call(&self, responder: &str) -> Result<Vec<String>, String> {
        let schedule = self.config.schedule(responder)?;
        let users = self
            .users(&schedule)
            .await
            .map_err(|e| format!("on-call {} could not be read: {e}", schedule.describe()))?;
        if users.is_empty() {
            return Err(format!("{} names nobody on call now", schedule.describe()));
        }
        let mut people: Vec<String> = Vec::new();
        for user in &users {
            match self.person(&schedule, user) {
                Some(name) if !people.contains(&name) => people.push(name),
                Some(_) => {}
                None => tracing::warn!(
                    schedule = schedule.describe(),
                    user = ?user.id,
                    "a person on call has no e-mail address and no [identities] entry, so \
                     clarify cannot name them"
                ),
            }
        }
        Ok(people)
    }

    /// The responder name of `user`: their identity, else their e-mail address.
    fn person(&self, schedule: &Schedule, user: &OnCallUser) -> Option<String> {
        let provider = match schedule {
            Schedule::PagerDuty(_) | Schedule::PagerDutyPolicy(_) => "pagerduty",
            Schedule::Opsgenie(_) => "opsgenie",
        };
        let by_id = user
            .id
            .as_ref()
            .and_then(|id| self.identities.get(&format!("{provider}:{id}")));
        let by_email = user.email.as_ref().and_then(|e| {
            self.identities
                .get(&format!("{provider}:{e}"))
                .or_else(|| self.identities.get(&format!("email:{e}")))
                .or_else(|| {
                    self.identities
                        .iter()
                        .find(|(k, _)| {
                            k.strip_prefix("email:")
                                .is_some_and(|a| a.eq_ignore_ascii_case(e))
                        })
                        .map(|(_, name)| name)
                })
        });
        by_id.or(by_email).cloned().or_else(|| user.email.clone())
    }

    /// Who is on call for `schedule`: the reading of the last `cache_for` if there is one,
    /// else a new one (kept only when it succeeded).
    async fn users(&self, schedule: &Schedule) -> Result<Vec<OnCallUser>, String> {
        let now = self.clock.now();
        let fresh_for = TimeDelta::from_std(self.config.cache_for).unwrap_or(TimeDelta::MAX);
        if let Some(reading) = self.lock().get(schedule)
            && now.signed_duration_since(reading.at) < fresh_for
        {
            return Ok(reading.users.clone());
        }
        let users = self.read(schedule).await?;
        self.lock().insert(
            schedule.clone(),
            Reading {
                at: now,
                users: users.clone(),
            },
        );
        Ok(users)
    }

    async fn read(&self, schedule: &Schedule) -> Result<Vec<OnCallUser>, String> {
        let missing = |p: &str| format!("[oncall.{p}] is not configured");
        match schedule {
            Schedule::PagerDuty(id) => {
                let p = self
                    .config
                    .pagerduty
                    .as_ref()
                    .ok_or_else(|| missing("pagerduty"))?;
                pagerduty::on_call(&self.client, p, pagerduty::Filter::Schedule(id)).await
            }
            Schedule::PagerDutyPolicy(id) => {
                let p = self
                    .config
                    .pagerduty
                    .as_ref()
                    .ok_or_else(|| missing("pagerduty"))?;
                pagerduty::on_call(&self.client, p, pagerduty::Filter::Policy(id)).await
            }
            Schedule::Opsgenie(name) => {
                let p = self
                    .config
                    .opsgenie
                    .as_ref()
                    .ok_or_else(|| missing("opsgenie"))?;
                opsgenie::on_call(&self.client, p, name).await
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Schedule, Reading>> {
        self.readings.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What went wrong with a call to a provider, in one line: its status and message, or the
/// transport's failure.
pub(crate) fn failure(provider: &str, e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("{provider} did not answer in time")
    } else if e.is_connect() {
        format!("cannot reach {provider}: {e}")
    } else {
        format!("calling {provider} failed: {e}")
    }
}

/// A refusal's status and the provider's message (its JSON `message` or `error.message`),
/// in one line.
pub(crate) async fn refusal(provider: &str, response: reqwest::Response) -> String {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let message = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            v.get("message")
                .or_else(|| v.get("error").and_then(|e| e.get("message")))
                .and_then(|m| m.as_str())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let hint = match status.as_u16() {
        401 => " (check the token)",
        403 => " (the token may not read this schedule)",
        404 => " (no such schedule)",
        _ => "",
    };
    if message.is_empty() {
        format!("{provider} answered {status}{hint}")
    } else {
        format!("{provider} answered {status}{hint}: {message}")
    }
}
