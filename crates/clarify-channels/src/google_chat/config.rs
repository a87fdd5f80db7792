//! A `[[channels]]` table of `type = "google_chat"`: its keys as written, their defaults, and
//! the checks that make a [`GoogleChat`] of them, its service account's key read and parsed.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{API_URL, CERTS_URL, GoogleChat, ServiceAccount, TOKEN_URL};
use crate::config::{Id, Invalid, PlatformTable, SecretReader, WEB, nonempty, url};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGoogleChat {
    /// Unique among the channels; routes name it, and the Chat app's HTTP endpoint is
    /// `/hooks/google-chat/<name>`.
    name: String,
    /// Let a Google Chat user `[identities]` does not name answer, recorded as
    /// `google_chat:users/<id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The path of the service account's JSON key file. This or `credentials_json_env` is
    /// required.
    credentials_file: Option<String>,
    /// The environment variable holding the service account's JSON key.
    credentials_json_env: Option<String>,
    /// The space requests are posted to: `spaces/AAAA...` (the app must be a member).
    space: String,
    /// The Google Cloud project number: the audience of the tokens Google Chat sends (set the
    /// app's Authentication Audience to Project Number).
    audience: Id,
    /// Where the Chat API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = API_URL))]
    api_url: Option<String>,
    /// Where the service account's token is obtained.
    #[schemars(extend("default" = TOKEN_URL))]
    token_url: Option<String>,
    /// Google's certificates for the Chat system account, which verify Google Chat's calls.
    #[schemars(extend("default" = CERTS_URL))]
    certs_url: Option<String>,
}

impl PlatformTable for RawGoogleChat {
    type Platform = GoogleChat;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        let (key, text) = match (self.credentials_file, self.credentials_json_env) {
            (Some(_), Some(_)) => {
                return Err(Invalid::new(
                    "credentials_file",
                    "give either credentials_file or credentials_json_env, not both",
                ));
            }
            (Some(path), None) => (
                "credentials_file",
                std::fs::read_to_string(&path).map_err(|e| {
                    Invalid::new("credentials_file", format!("cannot read {path}: {e}"))
                })?,
            ),
            (None, Some(var)) => (
                "credentials_json_env",
                (secrets.env)(&var)
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| {
                        Invalid::new(
                            "credentials_json_env",
                            format!("the environment variable {var} is not set"),
                        )
                    })?,
            ),
            (None, None) => {
                return Err(Invalid::new(
                    "credentials_file",
                    "is missing; give credentials_file = \"key.json\" or \
                     credentials_json_env = \"VARIABLE\"",
                ));
            }
        };
        let account = ServiceAccount::from_json(&text)
            .map_err(|e| Invalid::new(key, format!("the key {e}")))?;
        let space = nonempty("space", self.space)?;
        if !space.starts_with("spaces/") {
            return Err(Invalid::new(
                "space",
                format!("{space:?} must be a space's name, spaces/..."),
            ));
        }
        let audience = self.audience.text();
        if audience.is_empty() || !audience.chars().all(|ch| ch.is_ascii_digit()) {
            return Err(Invalid::new(
                "audience",
                "must be the project number (digits)",
            ));
        }
        Ok(GoogleChat::new(
            account,
            space,
            audience,
            url("api_url", self.api_url, API_URL, &WEB)?,
            url("token_url", self.token_url, TOKEN_URL, &WEB)?,
            url("certs_url", self.certs_url, CERTS_URL, &WEB)?,
        ))
    }
}
