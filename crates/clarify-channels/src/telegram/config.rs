//! A `[[channels]]` table of `type = "telegram"`: its keys as written, their defaults, and the
//! checks that make a [`Telegram`] of them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Telegram;
use crate::config::{Id, Invalid, PlatformTable, SecretReader, WEB, nonempty, url};

/// Where the Bot API is unless `api_url` says otherwise.
const API_URL: &str = "https://api.telegram.org";

/// How a Telegram bot receives its updates.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TelegramMode {
    /// clarify long-polls `getUpdates`: no public URL needed; run it on one instance.
    #[default]
    Polling,
    /// Telegram calls `/hooks/telegram/<name>` with `webhook_secret`; for several instances.
    Webhook,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTelegram {
    /// Unique among the channels; routes name it, and in webhook mode Telegram calls
    /// `/hooks/telegram/<name>`.
    name: String,
    /// Let a Telegram user `[identities]` does not name answer, recorded as
    /// `telegram:<user id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The bot's token from @BotFather (`123456:ABC-...`). This,
    /// `bot_token_env` or `bot_token_file` is required.
    bot_token: Option<String>,
    /// The environment variable holding `bot_token`.
    bot_token_env: Option<String>,
    /// The file holding `bot_token` (its trailing line break trimmed).
    bot_token_file: Option<String>,
    /// The chat requests are posted to: a number (a group's is negative) or `"@channelusername"`.
    chat_id: Id,
    #[serde(default)]
    #[schemars(extend("default" = "polling"))]
    mode: TelegramMode,
    /// The secret Telegram sends with each webhook call; required with `mode = "webhook"`, refused
    /// with polling.
    webhook_secret: Option<String>,
    /// The environment variable holding `webhook_secret`.
    webhook_secret_env: Option<String>,
    /// The file holding `webhook_secret` (its trailing line break trimmed).
    webhook_secret_file: Option<String>,
    /// Where the Bot API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = API_URL))]
    api_url: Option<String>,
}

impl PlatformTable for RawTelegram {
    type Platform = Telegram;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        let webhook_secret = secrets.optional(
            "webhook_secret",
            self.webhook_secret,
            self.webhook_secret_env,
            self.webhook_secret_file,
        )?;
        if matches!(self.mode, TelegramMode::Webhook) && webhook_secret.is_none() {
            return Err(Invalid::new(
                "webhook_secret",
                "is needed with mode = \"webhook\"",
            ));
        }
        if matches!(self.mode, TelegramMode::Polling) && webhook_secret.is_some() {
            return Err(Invalid::new(
                "webhook_secret",
                "is used with mode = \"webhook\" only; polling needs no secret",
            ));
        }
        Ok(Telegram {
            bot_token: secrets.required(
                "bot_token",
                self.bot_token,
                self.bot_token_env,
                self.bot_token_file,
            )?,
            chat_id: nonempty("chat_id", self.chat_id.text())?,
            webhook_secret,
            api_url: url("api_url", self.api_url, API_URL, &WEB)?,
        })
    }
}
