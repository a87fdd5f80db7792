//! A `[[channels]]` table of `type = "voice"`: its keys as written, their defaults, and the
//! checks that make a [`Voice`] of them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Voice;
use crate::config::{Invalid, PlatformTable, SecretReader};
use crate::sms::config::{account, phone_number};
use crate::twilio::API_URL;

/// The voice `<Say>` speaks in unless `language` says otherwise.
const LANGUAGE: &str = "en-US";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawVoice {
    /// Unique among the channels; routes name it, and Twilio calls `/hooks/voice/<name>`
    /// while a call is under way (clarify names the URL when it places the call).
    name: String,
    /// Let a number `[identities]` does not name answer, recorded as `phone:<number>`, instead
    /// of refusing its key press.
    #[serde(default)]
    allow_unmapped: bool,
    /// The Twilio account's SID (`AC…`).
    account_sid: String,
    /// The account's auth token: it signs the API calls and Twilio's webhook calls. This,
    /// `auth_token_env` or `auth_token_file` is required.
    auth_token: Option<String>,
    /// The environment variable holding `auth_token`.
    auth_token_env: Option<String>,
    /// The file holding `auth_token` (its trailing line break trimmed).
    auth_token_file: Option<String>,
    /// The Twilio number calls come from, in E.164 form (`"+14155550100"`).
    from: String,
    /// Numbers every request calls (E.164). Without them, the numbers `[identities]` gives the
    /// request's responders (`"phone:+4930…" = "alice"`) are called.
    #[serde(default)]
    to: Vec<String>,
    /// The language `<Say>` speaks (`language` of Twilio's `<Say>`, such as `de-DE`); what is
    /// said is clarify's English words and the request's own text.
    #[schemars(extend("default" = LANGUAGE))]
    language: Option<String>,
    /// Where Twilio's REST API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = API_URL))]
    api_url: Option<String>,
}

impl PlatformTable for RawVoice {
    type Platform = Voice;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        let language = self.language.unwrap_or_else(|| LANGUAGE.to_owned());
        let valid = !language.is_empty()
            && language.len() <= 16
            && language.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Err(Invalid::new(
                "language",
                format!("{language:?} is not a language tag such as \"en-US\""),
            ));
        }
        Ok(Voice {
            account: account(
                secrets,
                self.account_sid,
                (self.auth_token, self.auth_token_env, self.auth_token_file),
                self.api_url,
            )?,
            from: phone_number("from", &self.from)?,
            to: self
                .to
                .iter()
                .map(|n| phone_number("to", n))
                .collect::<Result<_, _>>()?,
            language,
        })
    }
}
