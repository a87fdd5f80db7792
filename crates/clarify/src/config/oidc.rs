//! `[oidc]`: sign-in to the inbox through an OpenID Connect provider, as written and checked.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Fail;
use super::secrets::TableSecrets;

/// `[oidc]`: signing people in to the inbox through an OpenID Connect provider, with the
/// authorization code flow and PKCE. Register clarify at the provider as a web application with
/// the redirect URI `<public_url>/auth/oidc/callback`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOidc {
    /// The provider's issuer URL, exactly as its discovery document
    /// (`<issuer>/.well-known/openid-configuration`) prints it: a trailing `/` matters.
    issuer: String,
    /// The client id clarify was registered with.
    client_id: String,
    /// The client secret. This, `client_secret_env` or `client_secret_file` is
    /// required.
    client_secret: Option<String>,
    /// The environment variable holding the client secret.
    client_secret_env: Option<String>,
    /// The file holding `client_secret` (its trailing line break trimmed).
    client_secret_file: Option<String>,
    /// On the inbox's button: "Sign in with <display_name>".
    #[serde(default = "default_display_name")]
    #[schemars(default = "default_display_name")]
    display_name: String,
    /// The scopes asked for; `openid` is always asked for.
    #[serde(default = "default_scopes")]
    #[schemars(default = "default_scopes")]
    scopes: Vec<String>,
    /// The claim whose value is the person's responder name (from the ID token, or else the
    /// userinfo endpoint).
    #[serde(default = "default_name_claim")]
    #[schemars(default = "default_name_claim")]
    name_claim: String,
    /// The claim listing the person's groups (a list of names, or one name).
    #[serde(default = "default_groups_claim")]
    #[schemars(default = "default_groups_claim")]
    groups_claim: String,
    /// Members of these groups (from the claim or `[groups]`) get the admin role; everyone
    /// else signed in is a responder.
    #[serde(default)]
    admin_groups: Vec<String>,
    /// The tenant people signed in this way belong to.
    #[serde(default = "default_tenant")]
    #[schemars(default = "default_tenant")]
    tenant: String,
    /// When given, only e-mail addresses in these domains may sign in (the `email` claim; an
    /// address the provider marks unverified is refused).
    #[serde(default)]
    allowed_domains: Vec<String>,
    /// Whether people may still sign in to the inbox with an API key or a one-time login
    /// link. `false` leaves only this provider for people; keys keep working over the API.
    #[serde(default = "default_true")]
    #[schemars(default = "default_true")]
    key_login: bool,
}

fn default_display_name() -> String {
    "single sign-on".to_owned()
}

fn default_scopes() -> Vec<String> {
    ["openid", "email", "profile"].map(str::to_owned).to_vec()
}

fn default_name_claim() -> String {
    "email".to_owned()
}

fn default_groups_claim() -> String {
    "groups".to_owned()
}

fn default_tenant() -> String {
    "default".to_owned()
}

fn default_true() -> bool {
    true
}

impl RawOidc {
    pub(super) fn check(
        self,
        env: &dyn Fn(&str) -> Option<String>,
        fail: Fail<'_>,
    ) -> Result<clarify_server::state::OidcConfig, String> {
        let secrets = TableSecrets {
            at: "oidc",
            env,
            fail,
        };
        let client_secret = secrets.required(
            "client_secret",
            self.client_secret,
            self.client_secret_env,
            self.client_secret_file,
        )?;
        match url::Url::parse(&self.issuer) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
            _ => {
                return Err(fail(
                    "oidc.issuer",
                    format!("{:?} is not an http or https URL", self.issuer),
                ));
            }
        }
        let not_empty = |key: &str, value: &str| {
            if value.trim().is_empty() {
                Err(fail(&format!("oidc.{key}"), "is empty".to_owned()))
            } else {
                Ok(())
            }
        };
        not_empty("client_id", &self.client_id)?;
        not_empty("display_name", &self.display_name)?;
        not_empty("name_claim", &self.name_claim)?;
        not_empty("groups_claim", &self.groups_claim)?;
        not_empty("tenant", &self.tenant)?;
        if let Some(bad) = self.allowed_domains.iter().find(|d| {
            let d = d.trim_start_matches('@');
            d.is_empty() || d.contains(['@', '/', ' '])
        }) {
            return Err(fail(
                "oidc.allowed_domains",
                format!("{bad:?} is not an e-mail domain such as \"example.com\""),
            ));
        }
        let mut config = clarify_server::state::OidcConfig::new(self.issuer, self.client_id);
        config.client_secret = Some(client_secret.expose().to_owned());
        config.display_name = self.display_name;
        config.scopes = self.scopes;
        config.name_claim = self.name_claim;
        config.groups_claim = self.groups_claim;
        config.admin_groups = self.admin_groups;
        config.tenant = self.tenant;
        config.allowed_domains = self.allowed_domains;
        config.key_login = self.key_login;
        Ok(config)
    }
}
