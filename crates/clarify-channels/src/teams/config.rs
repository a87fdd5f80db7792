//! A `[[channels]]` table of `type = "teams"`: its keys as written, their defaults, and the
//! checks that make a [`Teams`] of them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Conversation, OPENID_URL, Teams, token_url};
use crate::config::{Invalid, PlatformTable, SecretReader, WEB, nonempty, url};

/// Microsoft's sign-in host; the default `login_url` is the tenant's token endpoint on it.
const LOGIN: &str = "https://login.microsoftonline.com";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTeams {
    /// Unique among the channels; routes name it, and the bot's messaging endpoint is
    /// `/hooks/teams/<name>`.
    name: String,
    /// Let a Teams user `[identities]` does not name answer, recorded as
    /// `teams:<Entra object id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The Azure Bot's Microsoft App ID: the audience of the tokens Teams sends.
    app_id: String,
    /// A client secret of the app. This, `app_password_env` or
    /// `app_password_file` is required.
    app_password: Option<String>,
    /// The environment variable holding `app_password`.
    app_password_env: Option<String>,
    /// The file holding `app_password` (its trailing line break trimmed).
    app_password_file: Option<String>,
    /// The Microsoft Entra tenant (directory) id the single-tenant bot is registered in.
    tenant_id: String,
    /// The Bot Connector URL of the conversation requests are posted to (the `serviceUrl` of
    /// its activities, such as `https://smba.trafficmanager.net/emea/`); with
    /// `conversation_id`. Absent: the conversation the bot is added to is captured.
    service_url: Option<String>,
    /// The id of the conversation requests are posted to (`19:...@thread.tacv2` for a
    /// channel); with `service_url`.
    conversation_id: Option<String>,
    /// The client-credentials token endpoint.
    #[schemars(extend("default" = "https://login.microsoftonline.com/<tenant_id>/oauth2/v2.0/token"))]
    login_url: Option<String>,
    /// The Bot Framework's OpenID metadata, whose keys verify Teams' calls.
    #[schemars(extend("default" = OPENID_URL))]
    openid_url: Option<String>,
}

impl PlatformTable for RawTeams {
    type Platform = Teams;

    fn name(&self) -> &str {
        &self.name
    }

    fn allow_unmapped(&self) -> bool {
        self.allow_unmapped
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        let conversation = match (self.service_url, self.conversation_id) {
            (Some(service), Some(id)) => Some(Conversation {
                service_url: url("service_url", Some(service), "", &WEB)?
                    .as_str()
                    .to_owned(),
                conversation_id: nonempty("conversation_id", id)?,
            }),
            (None, None) => None,
            (Some(_), None) | (None, Some(_)) => {
                return Err(Invalid::new(
                    "conversation_id",
                    "give service_url and conversation_id together, or neither (the \
                     conversation the bot is added to is then captured)",
                ));
            }
        };
        let tenant_id = nonempty("tenant_id", self.tenant_id)?;
        let login = token_url(LOGIN, &tenant_id);
        let app_id = nonempty("app_id", self.app_id)?;
        let app_password = secrets.required(
            "app_password",
            self.app_password,
            self.app_password_env,
            self.app_password_file,
        )?;
        let login_url = url("login_url", self.login_url, &login, &WEB)?;
        let openid_url = url("openid_url", self.openid_url, OPENID_URL, &WEB)?;
        Ok(Teams::new(
            app_id,
            app_password,
            tenant_id,
            login_url,
            openid_url,
            conversation,
        ))
    }
}
