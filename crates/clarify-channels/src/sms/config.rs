//! A `[[channels]]` table of `type = "sms"`: its keys as written, their defaults, and the
//! checks that make an [`Sms`] of them. `type = "whatsapp"` takes the same keys.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Sender, Sms};
use crate::config::{Invalid, PlatformTable, SecretReader, WEB, url};
use crate::twilio::{API_URL, Account};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSms {
    /// Unique among the channels; routes name it, and Twilio calls `/hooks/<type>/<name>`
    /// (`/hooks/sms/oncall`) with the replies: set it as the number's "A message comes in"
    /// webhook.
    pub(crate) name: String,
    /// Let a number `[identities]` does not name answer, recorded as `phone:<number>`, instead
    /// of refusing its reply.
    #[serde(default)]
    pub(crate) allow_unmapped: bool,
    /// The Twilio account's SID (`AC…`).
    pub(crate) account_sid: String,
    /// The account's auth token: it signs the API calls and Twilio's webhook calls. This,
    /// `auth_token_env` or `auth_token_file` is required.
    pub(crate) auth_token: Option<String>,
    /// The environment variable holding `auth_token`.
    pub(crate) auth_token_env: Option<String>,
    /// The file holding `auth_token` (its trailing line break trimmed).
    pub(crate) auth_token_file: Option<String>,
    /// The Twilio number messages come from, in E.164 form (`"+14155550100"`). This or
    /// `messaging_service_sid` is required.
    pub(crate) from: Option<String>,
    /// A Messaging Service (`MG…`) that picks the sending number, instead of `from`.
    pub(crate) messaging_service_sid: Option<String>,
    /// Numbers every message goes to (E.164). Without them, each message goes to the numbers
    /// `[identities]` gives the request's responders (`"phone:+4930…" = "alice"`).
    #[serde(default)]
    pub(crate) to: Vec<String>,
    /// Where Twilio's REST API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = API_URL))]
    pub(crate) api_url: Option<String>,
}

impl PlatformTable for RawSms {
    type Platform = Sms;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        let from = match (self.from, self.messaging_service_sid) {
            (Some(_), Some(_)) => {
                return Err(Invalid::new(
                    "from",
                    "give either from or messaging_service_sid, not both",
                ));
            }
            (Some(number), None) => Sender::Number(phone_number("from", &number)?),
            (None, Some(sid)) => Sender::Service(sid_of("messaging_service_sid", "MG", sid)?),
            (None, None) => {
                return Err(Invalid::new(
                    "from",
                    "is missing; give the Twilio number (from = \"+14155550100\") or \
                     messaging_service_sid = \"MG…\"",
                ));
            }
        };
        let to = self
            .to
            .iter()
            .map(|n| phone_number("to", n))
            .collect::<Result<_, _>>()?;
        Ok(Sms {
            account: account(
                secrets,
                self.account_sid,
                (self.auth_token, self.auth_token_env, self.auth_token_file),
                self.api_url,
            )?,
            from,
            to,
        })
    }
}

/// The Twilio account of a table: its SID, its auth token (a secret) and the API's URL.
pub(crate) fn account(
    secrets: &SecretReader<'_>,
    account_sid: String,
    (token, token_env, token_file): (Option<String>, Option<String>, Option<String>),
    api_url: Option<String>,
) -> Result<Account, Invalid> {
    Ok(Account {
        account_sid: sid_of("account_sid", "AC", account_sid)?,
        auth_token: secrets.required("auth_token", token, token_env, token_file)?,
        api_url: url("api_url", api_url, API_URL, &WEB)?,
    })
}

/// A Twilio SID of the kind `prefix` names (`AC` an account, `MG` a Messaging Service).
fn sid_of(key: &str, prefix: &str, sid: String) -> Result<String, Invalid> {
    let sid = sid.trim().to_owned();
    let valid = sid.starts_with(prefix)
        && sid.len() > prefix.len()
        && sid.chars().all(|c| c.is_ascii_alphanumeric());
    if !valid {
        return Err(Invalid::new(
            key,
            format!("{sid:?} is not a Twilio SID; it starts with {prefix}, as the console shows it"),
        ));
    }
    Ok(sid)
}

/// A phone number in E.164 form: `+`, then 8 to 15 digits (`"+4930123456"`).
pub(crate) fn phone_number(key: &str, number: &str) -> Result<String, Invalid> {
    let digits = number.strip_prefix('+').unwrap_or("");
    if !(8..=15).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(Invalid::new(
            key,
            format!("{number:?} is not a phone number in E.164 form, such as \"+4930123456\""),
        ));
    }
    Ok(number.to_owned())
}
