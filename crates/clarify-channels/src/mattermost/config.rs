//! A `[[channels]]` table of `type = "mattermost"`: its keys as written, and the checks that
//! make a [`Mattermost`] of them. The server has no default: each team runs its own.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Mattermost;
use crate::config::{Invalid, PlatformTable, SecretReader, WEB, nonempty, url};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMattermost {
    /// Unique among the channels; routes name it, and Mattermost's buttons and dialogs call
    /// `/hooks/mattermost/<name>`.
    name: String,
    /// Let a Mattermost user `[identities]` does not name answer, recorded as
    /// `mattermost:<user id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The Mattermost server, such as `https://chat.example.com`.
    url: String,
    /// The bot account's access token. This, `bot_token_env` or
    /// `bot_token_file` is required.
    bot_token: Option<String>,
    /// The environment variable holding `bot_token`.
    bot_token_env: Option<String>,
    /// The file holding `bot_token` (its trailing line break trimmed).
    bot_token_file: Option<String>,
    /// The id of the channel requests are posted to (26 characters, under View Info).
    channel_id: String,
}

impl PlatformTable for RawMattermost {
    type Platform = Mattermost;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        Ok(Mattermost {
            url: url("url", Some(self.url), "", &WEB)?,
            bot_token: secrets.required(
                "bot_token",
                self.bot_token,
                self.bot_token_env,
                self.bot_token_file,
            )?,
            channel_id: nonempty("channel_id", self.channel_id)?,
        })
    }
}
