//! A `[[channels]]` table of `type = "whatsapp_cloud"`: its keys as written, their defaults, and
//! the checks that make a [`WhatsAppCloud`] of them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Template, WhatsAppCloud};
use crate::config::{Id, Invalid, PlatformTable, SecretReader, WEB, nonempty, url};

/// Where the Graph API is unless `api_url` says otherwise.
const API_URL: &str = "https://graph.facebook.com";
/// The Graph API version called unless `api_version` says otherwise.
const API_VERSION: &str = "v21.0";
/// A template's language unless `template_language` says otherwise.
const TEMPLATE_LANGUAGE: &str = "en_US";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWhatsAppCloud {
    /// Unique among the channels; routes name it, and Meta calls `/hooks/whatsapp-cloud/<name>`.
    name: String,
    /// Let a number `[identities]` does not name answer, recorded as `phone:<number>`, instead
    /// of refusing its answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// A system user's access token with `whatsapp_business_messaging`. This,
    /// `access_token_env` or `access_token_file` is required.
    access_token: Option<String>,
    /// The environment variable holding `access_token`.
    access_token_env: Option<String>,
    /// The file holding `access_token` (its trailing line break trimmed).
    access_token_file: Option<String>,
    /// The Meta app's secret, which signs every webhook call (`X-Hub-Signature-256`). This,
    /// `app_secret_env` or `app_secret_file` is required.
    app_secret: Option<String>,
    /// The environment variable holding `app_secret`.
    app_secret_env: Option<String>,
    /// The file holding `app_secret` (its trailing line break trimmed).
    app_secret_file: Option<String>,
    /// The token Meta's webhook check (`GET` with `hub.verify_token`) must carry, as typed into
    /// the app's webhook settings; without it, the check is refused.
    verify_token: Option<String>,
    /// The environment variable holding `verify_token`.
    verify_token_env: Option<String>,
    /// The file holding `verify_token` (its trailing line break trimmed).
    verify_token_file: Option<String>,
    /// The business phone number's id (not the number) that sends the messages.
    phone_number_id: Id,
    /// The approved message template sent to a person who has not written to the business
    /// number in the last 24 hours (WhatsApp allows nothing else then); its body takes two
    /// parameters, the headline and the request's short code. Without it, such a person's
    /// message fails.
    template: Option<String>,
    /// The template's language code.
    #[schemars(extend("default" = TEMPLATE_LANGUAGE))]
    template_language: Option<String>,
    /// The numbers written to (`+4930…`). Absent: the numbers `[identities]` gives the
    /// request's responders (`"phone:+4930…" = "alice"`).
    #[serde(default)]
    to: Vec<String>,
    /// The Graph API version in the path.
    #[schemars(extend("default" = API_VERSION))]
    api_version: Option<String>,
    /// Where the Graph API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = API_URL))]
    api_url: Option<String>,
}

impl PlatformTable for RawWhatsAppCloud {
    type Platform = WhatsAppCloud;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        for number in &self.to {
            if super::number(number).is_none() {
                return Err(Invalid::new(
                    "to",
                    format!("{number:?} is not a phone number in international form (+4930…)"),
                ));
            }
        }
        let version = self.api_version.unwrap_or_else(|| API_VERSION.to_owned());
        if !version.starts_with('v') || version.contains('/') {
            return Err(Invalid::new(
                "api_version",
                format!("{version:?} is not a Graph API version (v21.0)"),
            ));
        }
        let template = match self.template {
            Some(name) => Some(Template {
                name: nonempty("template", name)?,
                language: nonempty(
                    "template_language",
                    self.template_language
                        .unwrap_or_else(|| TEMPLATE_LANGUAGE.to_owned()),
                )?,
            }),
            None if self.template_language.is_some() => {
                return Err(Invalid::new(
                    "template_language",
                    "is used with template only",
                ));
            }
            None => None,
        };
        Ok(WhatsAppCloud {
            access_token: secrets.required(
                "access_token",
                self.access_token,
                self.access_token_env,
                self.access_token_file,
            )?,
            app_secret: secrets.required(
                "app_secret",
                self.app_secret,
                self.app_secret_env,
                self.app_secret_file,
            )?,
            verify_token: secrets.optional(
                "verify_token",
                self.verify_token,
                self.verify_token_env,
                self.verify_token_file,
            )?,
            phone_number_id: nonempty("phone_number_id", self.phone_number_id.text())?,
            template,
            to: self.to,
            api_version: version,
            api_url: url("api_url", self.api_url, API_URL, &WEB)?,
        })
    }
}
