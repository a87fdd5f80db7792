//! A `[[channels]]` table of `type = "slack"`: its keys as written, their defaults, and the
//! checks that make a [`Slack`] of them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Slack;
use crate::config::{Invalid, PlatformTable, SecretReader, WEB, nonempty, url};

/// Where Slack's Web API is unless `api_url` says otherwise.
const API_URL: &str = "https://slack.com/api";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSlack {
    /// Unique among the channels; routes name it, and Slack calls `/hooks/slack/<name>`.
    name: String,
    /// Let a Slack user `[identities]` does not name answer, recorded as `slack:<user id>`,
    /// instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The bot's token (`xoxb-...`, under OAuth & Permissions). This, `bot_token_env`
    /// or `bot_token_file` is required.
    bot_token: Option<String>,
    /// The environment variable holding `bot_token`.
    bot_token_env: Option<String>,
    /// The file holding `bot_token` (its trailing line break trimmed).
    bot_token_file: Option<String>,
    /// Verifies Slack's calls to `/hooks/slack/<name>`; required unless `socket_mode` is true.
    signing_secret: Option<String>,
    /// The environment variable holding `signing_secret`.
    signing_secret_env: Option<String>,
    /// The file holding `signing_secret` (its trailing line break trimmed).
    signing_secret_file: Option<String>,
    /// The id of the conversation requests are posted to (`C0123456789`).
    channel: String,
    /// Where Slack's Web API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = API_URL))]
    api_url: Option<String>,
    /// Receive Slack's events over a WebSocket clarify opens, so no public URL is needed;
    /// needs `app_token`.
    #[serde(default)]
    socket_mode: bool,
    /// The app-level token (`xapp-...` with `connections:write`); required with `socket_mode`.
    app_token: Option<String>,
    /// The environment variable holding `app_token`.
    app_token_env: Option<String>,
    /// The file holding `app_token` (its trailing line break trimmed).
    app_token_file: Option<String>,
    /// Users (`U...`) or user groups (`S...`) mentioned in each announcement.
    #[serde(default)]
    mention: Vec<String>,
}

impl PlatformTable for RawSlack {
    type Platform = Slack;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        let app_token = secrets.optional(
            "app_token",
            self.app_token,
            self.app_token_env,
            self.app_token_file,
        )?;
        let signing_secret = secrets.optional(
            "signing_secret",
            self.signing_secret,
            self.signing_secret_env,
            self.signing_secret_file,
        )?;
        if self.socket_mode && app_token.is_none() {
            return Err(Invalid::new(
                "app_token",
                "is needed with socket_mode = true (an xapp- token with connections:write)",
            ));
        }
        if !self.socket_mode && signing_secret.is_none() {
            return Err(Invalid::new(
                "signing_secret",
                "is needed to verify Slack's calls to /hooks/slack/<name>; or set socket_mode = true",
            ));
        }
        Ok(Slack {
            bot_token: secrets.required(
                "bot_token",
                self.bot_token,
                self.bot_token_env,
                self.bot_token_file,
            )?,
            signing_secret,
            channel: nonempty("channel", self.channel)?,
            api_url: url("api_url", self.api_url, API_URL, &WEB)?,
            socket_mode: self.socket_mode,
            app_token,
            mention: self.mention,
        })
    }
}
