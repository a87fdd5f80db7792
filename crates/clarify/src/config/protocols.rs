//! `[a2a]` and `[[agui]]`: clarify as an A2A agent, and the AG-UI agents it proxies.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Fail;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgui {
    /// The agent's name in the proxy's URL (`/agui/<name>`): 1 to 64 of A-Z a-z 0-9 - _.
    name: String,
    /// Where the agent takes runs (AG-UI's HTTP + SSE binding), `http` or `https`.
    url: String,
    /// Headers sent with every run to the agent, such as an `Authorization` it wants.
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

impl RawAgui {
    pub(super) fn check(
        self,
        at: &str,
        fail: Fail<'_>,
    ) -> Result<clarify_server::state::AguiAgent, String> {
        let valid = (1..=64).contains(&self.name.len())
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(fail(
                &format!("{at}.name"),
                format!(
                    "{:?} must be 1 to 64 of A-Z a-z 0-9 - _ (it is part of a URL)",
                    self.name
                ),
            ));
        }
        let url = match url::Url::parse(&self.url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => u,
            _ => {
                return Err(fail(
                    &format!("{at}.url"),
                    format!("{:?} is not an http or https URL", self.url),
                ));
            }
        };
        for (name, value) in &self.headers {
            let fits = header_name(name) && !value.chars().any(char::is_control);
            if !fits {
                return Err(fail(
                    &format!("{at}.headers.{name}"),
                    "is not an HTTP header name with a printable value".to_owned(),
                ));
            }
        }
        Ok(clarify_server::state::AguiAgent::new(
            self.name,
            url,
            self.headers.into_iter().collect(),
        ))
    }
}

/// Whether `name` is an HTTP header name (RFC 9110 token characters).
fn header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawA2a {
    /// Serve the agent card and `/a2a` (with an agent key, as `/mcp`).
    #[serde(default)]
    pub(super) enabled: bool,
}
