//! A `[[channels]]` table of `type = "ntfy"`: its keys as written, their defaults, and the
//! checks that make an [`Ntfy`] of them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Ntfy;
use crate::config::{Invalid, PlatformTable, SecretReader, WEB, nonempty, url};

/// The public ntfy server, unless `url` names your own.
const URL: &str = "https://ntfy.sh";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawNtfy {
    /// Unique among the channels; routes name it.
    name: String,
    /// The ntfy server.
    #[schemars(extend("default" = URL))]
    url: Option<String>,
    /// The topic pushes go to; whoever subscribes to it in the ntfy app gets them.
    topic: String,
    /// An access token, when the topic needs one.
    token: Option<String>,
    /// The environment variable holding `token`.
    token_env: Option<String>,
    /// The file holding `token` (its trailing line break trimmed).
    token_file: Option<String>,
}

impl PlatformTable for RawNtfy {
    type Platform = Ntfy;

    fn name(&self) -> &str {
        &self.name
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        Ok(Ntfy {
            url: url("url", self.url, URL, &WEB)?,
            topic: nonempty("topic", self.topic)?,
            token: secrets.optional("token", self.token, self.token_env, self.token_file)?,
        })
    }
}
