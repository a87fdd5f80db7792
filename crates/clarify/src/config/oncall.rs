//! `[oncall]`: the on-call providers `oncall:` responders are read from, as written and checked.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Fail;
use super::secrets::TableSecrets;
use clarify_server::state::oncall::{OnCallConfig, Provider};

/// `[oncall]`: who is on call, read from PagerDuty or Opsgenie, for requests whose `responders`
/// or `escalate_to` name `oncall:<schedule>`. Read when such a request is created and again at
/// its escalation; a schedule that cannot be read lets the request's other responders answer.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOnCall {
    /// PagerDuty: `oncall:pagerduty:<schedule id>` or `oncall:pagerduty:policy:<escalation
    /// policy id>`.
    pagerduty: Option<RawPagerDuty>,
    /// Opsgenie: `oncall:opsgenie:<schedule name or id>`.
    opsgenie: Option<RawOpsgenie>,
    /// How long a schedule's reading is reused: a duration (`60s`, the default). Longer saves
    /// calls to the provider; shorter notices a handover sooner.
    cache_for: Option<String>,
    /// How long one reading may take before the schedule counts as unreadable: a duration
    /// (`5s`, the default). A request naming the schedule waits at most this long to be
    /// created.
    timeout: Option<String>,
}

/// `[oncall.pagerduty]`: PagerDuty's REST API.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPagerDuty {
    /// A REST API key (read-only is enough), sent as `Authorization: Token token=…`.
    api_token: Option<String>,
    /// The environment variable holding the API key.
    api_token_env: Option<String>,
    /// The file holding the API key (its trailing line break trimmed).
    api_token_file: Option<String>,
    /// The API's base URL (default `https://api.pagerduty.com`).
    api_url: Option<String>,
}

/// `[oncall.opsgenie]`: Opsgenie's REST API.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOpsgenie {
    /// An API integration's key, sent as `Authorization: GenieKey …`.
    api_key: Option<String>,
    /// The environment variable holding the API key.
    api_key_env: Option<String>,
    /// The file holding the API key (its trailing line break trimmed).
    api_key_file: Option<String>,
    /// The API's base URL (default `https://api.opsgenie.com`; `https://api.eu.opsgenie.com`
    /// for an account in Opsgenie's EU region).
    api_url: Option<String>,
}

impl RawOnCall {
    pub(super) fn check(
        self,
        env: &dyn Fn(&str) -> Option<String>,
        fail: Fail<'_>,
    ) -> Result<OnCallConfig, String> {
        let mut config = OnCallConfig::default();
        if let Some(p) = self.pagerduty {
            let token = TableSecrets {
                at: "oncall.pagerduty",
                env,
                fail,
            }
            .required("api_token", p.api_token, p.api_token_env, p.api_token_file)?;
            config.pagerduty = Some(Provider {
                token: token.expose().to_owned(),
                api_url: api_url(
                    "oncall.pagerduty.api_url",
                    p.api_url,
                    clarify_server::state::oncall::PAGERDUTY_API,
                    fail,
                )?,
            });
        }
        if let Some(o) = self.opsgenie {
            let key = TableSecrets {
                at: "oncall.opsgenie",
                env,
                fail,
            }
            .required("api_key", o.api_key, o.api_key_env, o.api_key_file)?;
            config.opsgenie = Some(Provider {
                token: key.expose().to_owned(),
                api_url: api_url(
                    "oncall.opsgenie.api_url",
                    o.api_url,
                    clarify_server::state::oncall::OPSGENIE_API,
                    fail,
                )?,
            });
        }
        if let Some(text) = &self.cache_for {
            config.cache_for =
                crate::duration::parse_duration(text).map_err(|e| fail("oncall.cache_for", e))?;
        }
        if let Some(text) = &self.timeout {
            let timeout =
                crate::duration::parse_duration(text).map_err(|e| fail("oncall.timeout", e))?;
            if timeout.is_zero() {
                return Err(fail(
                    "oncall.timeout",
                    "must be longer than 0, e.g. 5s".to_owned(),
                ));
            }
            config.timeout = timeout;
        }
        Ok(config)
    }
}

/// `given`, checked to be an `http(s)` URL, without a trailing slash; else `default`.
fn api_url(
    key: &str,
    given: Option<String>,
    default: &str,
    fail: Fail<'_>,
) -> Result<String, String> {
    let Some(url) = given else {
        return Ok(default.to_owned());
    };
    let parsed =
        url::Url::parse(&url).map_err(|e| fail(key, format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || !parsed.has_host() {
        return Err(fail(
            key,
            format!("{url:?} is not an http(s) URL; e.g. {default:?}"),
        ));
    }
    Ok(url.trim_end_matches('/').to_owned())
}
