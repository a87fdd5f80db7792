//! `[server]`: the settings `clarify serve` also takes as flags, as written and checked.

use std::net::SocketAddr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Fail;
use crate::duration::parse_duration;
use crate::logs::LogFormat;

/// `[server]`: the settings `clarify serve` also takes as flags.
#[derive(Debug, Default)]
pub struct Server {
    pub listen: Option<SocketAddr>,
    pub db: Option<String>,
    pub public_url: Option<String>,
    pub max_options: Option<usize>,
    pub webhook_first_retry: Option<Duration>,
    pub webhook_timeout: Option<Duration>,
    pub max_waiters: Option<usize>,
    pub rate_limit: Option<std::num::NonZeroU32>,
    pub retain_resolved: Option<Duration>,
    pub durability: Option<crate::serve::Durability>,
    pub log_format: Option<LogFormat>,
    pub outbound_allow: Option<Vec<String>>,
    pub otlp_endpoint: Option<String>,
}

/// Each key is the `clarify serve` option of the same name (`max_waiters` is `--max-waiters`);
/// the option, or its environment variable, wins over the key.
// The reference takes each key's meaning and default from that option's help, so they are
// written once; a doc comment here adds to it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    listen: Option<SocketAddr>,
    db: Option<String>,
    /// The file holding `db` (its trailing line break trimmed), for a database URL with a
    /// password in it: `/run/secrets/clarify-db`. Not with `db`.
    db_file: Option<String>,
    public_url: Option<String>,
    max_options: Option<usize>,
    /// A duration: `500ms`, `10s`, `5m`, `2h`, `1d`.
    webhook_first_retry: Option<String>,
    /// A duration: `500ms`, `10s`, `5m`, `2h`, `1d`.
    webhook_timeout: Option<String>,
    max_waiters: Option<usize>,
    rate_limit: Option<std::num::NonZeroU32>,
    /// A duration: `12h`, `30d`.
    retain_resolved: Option<String>,
    durability: Option<crate::serve::Durability>,
    log_format: Option<LogFormat>,
    /// For example `["10.20.0.0/16", "hooks.internal"]`.
    outbound_allow: Option<Vec<String>>,
    /// The OTLP/HTTP collector's base URL, e.g. `http://127.0.0.1:4318`.
    otlp_endpoint: Option<String>,
}

impl RawServer {
    pub(super) fn check(self, fail: Fail<'_>) -> Result<Server, String> {
        let duration = |key: &str, text: Option<String>| {
            text.map(|t| parse_duration(&t).map_err(|e| fail(&format!("server.{key}"), e)))
                .transpose()
        };
        Ok(Server {
            listen: self.listen,
            db: match (self.db, self.db_file) {
                (Some(_), Some(_)) => {
                    return Err(fail(
                        "server.db",
                        "give either db or db_file, not both".to_owned(),
                    ));
                }
                (db, None) => db,
                (None, Some(path)) => Some(
                    clarify_channels::config::read_secret_file(std::path::Path::new(&path))
                        .map_err(|e| fail("server.db_file", e))?,
                ),
            },
            public_url: self.public_url,
            max_options: self.max_options,
            webhook_first_retry: duration("webhook_first_retry", self.webhook_first_retry)?,
            webhook_timeout: duration("webhook_timeout", self.webhook_timeout)?,
            max_waiters: self.max_waiters,
            rate_limit: self.rate_limit,
            retain_resolved: duration("retain_resolved", self.retain_resolved)?,
            durability: self.durability,
            log_format: self.log_format,
            outbound_allow: match self.outbound_allow {
                None => None,
                Some(allow) => {
                    clarify_server::OutboundGuard::allowing(&allow)
                        .map_err(|e| fail("server.outbound_allow", e.to_string()))?;
                    Some(allow)
                }
            },
            otlp_endpoint: match self.otlp_endpoint {
                None => None,
                Some(url) => {
                    clarify_server::OtlpConfig::new(&url)
                        .map_err(|e| fail("server.otlp_endpoint", e))?;
                    Some(url)
                }
            },
        })
    }
}
