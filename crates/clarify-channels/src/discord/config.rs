//! A `[[channels]]` table of `type = "discord"`: its keys as written, their defaults, and the
//! checks that make a [`Discord`] of them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Discord;
use crate::config::{Id, Invalid, PlatformTable, SecretReader, WEB, nonempty, url};

/// Where Discord's API is unless `api_url` says otherwise.
const API_URL: &str = "https://discord.com/api/v10";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDiscord {
    /// Unique among the channels; routes name it, and Discord calls `/hooks/discord/<name>`.
    name: String,
    /// Let a Discord user `[identities]` does not name answer, recorded as
    /// `discord:<user id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The bot's token. This, `bot_token_env` or `bot_token_file` is
    /// required.
    bot_token: Option<String>,
    /// The environment variable holding `bot_token`.
    bot_token_env: Option<String>,
    /// The file holding `bot_token` (its trailing line break trimmed).
    bot_token_file: Option<String>,
    /// The application's public key (64 hex digits, under General Information), which verifies
    /// Discord's calls.
    public_key: String,
    /// The id of the channel requests are posted to, as a number or a string.
    channel_id: Id,
    /// Where Discord's API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = API_URL))]
    api_url: Option<String>,
}

impl PlatformTable for RawDiscord {
    type Platform = Discord;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        let hex =
            self.public_key.len() == 64 && self.public_key.chars().all(|ch| ch.is_ascii_hexdigit());
        if !hex {
            return Err(Invalid::new(
                "public_key",
                "must be the application's public key: 64 hex digits",
            ));
        }
        Ok(Discord {
            bot_token: secrets.required(
                "bot_token",
                self.bot_token,
                self.bot_token_env,
                self.bot_token_file,
            )?,
            public_key: self.public_key.to_ascii_lowercase(),
            channel_id: nonempty("channel_id", self.channel_id.text())?,
            api_url: url("api_url", self.api_url, API_URL, &WEB)?,
        })
    }
}
