//! A `[[channels]]` table of `type = "whatsapp"`: the SMS channel's keys, for a
//! WhatsApp-enabled sender (numbers written with or without `whatsapp:`), checked into a
//! [`WhatsApp`] by the SMS channel's checks.

use schemars::JsonSchema;
use serde::Deserialize;

use super::WhatsApp;
use crate::config::{Invalid, PlatformTable, SecretReader};
use crate::sms::config::RawSms;
use crate::twilio::API_URL;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWhatsApp {
    /// Unique among the channels; routes name it, and Twilio calls `/hooks/whatsapp/<name>`
    /// with the replies: set it as the sender's "When a message comes in" webhook.
    name: String,
    /// Let a number `[identities]` does not name answer, recorded as `phone:<number>`, instead
    /// of refusing its reply.
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
    /// The WhatsApp-enabled Twilio number messages come from (`"whatsapp:+14155238886"`, or
    /// without `whatsapp:`). This or `messaging_service_sid` is required.
    from: Option<String>,
    /// A Messaging Service (`MG…`) with a WhatsApp sender, instead of `from`.
    messaging_service_sid: Option<String>,
    /// Numbers every message goes to. Without them, each message goes to the numbers
    /// `[identities]` gives the request's responders (`"phone:+4930…" = "alice"`).
    #[serde(default)]
    to: Vec<String>,
    /// Where Twilio's REST API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = API_URL))]
    api_url: Option<String>,
    /// An approved WhatsApp template of Twilio's Content API (`HX…`), sent to a number that has
    /// not written to the sender in the last 24 hours (WhatsApp delivers only a template then):
    /// its variables `{{1}}` and `{{2}}` are the request's headline and short code. Without it,
    /// such a message is sent free-form and Twilio fails it (error 63016).
    content_sid: Option<String>,
}

impl PlatformTable for RawWhatsApp {
    type Platform = WhatsApp;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        let bare = |n: &String| n.strip_prefix("whatsapp:").unwrap_or(n).to_owned();
        let content_sid = match self.content_sid.map(|s| s.trim().to_owned()) {
            Some(sid)
                if sid.len() != 34
                    || !sid.starts_with("HX")
                    || !sid[2..].chars().all(|c| c.is_ascii_hexdigit()) =>
            {
                return Err(Invalid::new(
                    "content_sid",
                    format!("{sid:?} is not a Twilio Content SID (HX and 32 hex digits)"),
                ));
            }
            sid => sid,
        };
        let sms = RawSms {
            name: self.name,
            allow_unmapped: self.allow_unmapped,
            account_sid: self.account_sid,
            auth_token: self.auth_token,
            auth_token_env: self.auth_token_env,
            auth_token_file: self.auth_token_file,
            from: self.from.as_ref().map(bare),
            messaging_service_sid: self.messaging_service_sid,
            to: self.to.iter().map(bare).collect(),
            api_url: self.api_url,
        };
        sms.check(secrets)
            .map(|sms| WhatsApp { sms, content_sid })
    }
}
