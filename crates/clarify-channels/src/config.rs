//! A `[[channels]]` table as the configuration file writes it: [`RawChannel`], one arm per
//! platform, each holding the raw type of its platform's `config.rs`, and what every platform's
//! check shares (how a secret is given, URL and non-empty checks, the number-or-string [`Id`],
//! the failure [`Invalid`]).
//!
//! The checks live beside the platform they check so that a platform's keys, defaults and
//! client are read in one folder, and a new platform is a new folder plus one arm here and in
//! [`Platform`]. The binary reads the file, hands each table to [`RawChannel::check`] and keeps
//! only what crosses channels (unique names, routes). The raw types' doc comments are the
//! handbook's configuration reference, rendered from their JSON Schema: the types keep their
//! names, and a default a check applies is named in the `default` their schema carries.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::{Channel, Platform};
use crate::{discord, email, google_chat, mattermost, ntfy, slack, teams, telegram};

/// A key of a `[[channels]]` table that is wrong, and why: the binary names the file and the
/// table before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct Invalid {
    /// The key within the table, such as `bot_token_env`.
    pub key: String,
    pub problem: String,
}

impl Invalid {
    pub fn new(key: &str, problem: impl Into<String>) -> Self {
        Self {
            key: key.to_owned(),
            problem: problem.into(),
        }
    }
}

/// One `[[channels]]` entry; `type` says which platform, and which keys it takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RawChannel {
    /// Messages with buttons and forms in a Slack conversation, answered in place.
    Slack(slack::config::RawSlack),
    /// Messages with buttons in a Telegram chat, answered with a button or a reply.
    Telegram(telegram::config::RawTelegram),
    /// Messages with buttons, selects and forms in a Discord channel.
    Discord(discord::config::RawDiscord),
    /// Posts with buttons, menus and dialogs in a Mattermost channel.
    Mattermost(mattermost::config::RawMattermost),
    /// Adaptive Cards from an Azure Bot in a Microsoft Teams team, chat or channel.
    Teams(teams::config::RawTeams),
    /// Cards from a Chat app in a Google Chat space.
    #[serde(rename = "google_chat")]
    GoogleChat(google_chat::config::RawGoogleChat),
    /// Mail over SMTP, answered through signed links.
    Email(email::config::RawEmail),
    /// A push to a topic on ntfy.sh or your own ntfy server, with one button per answer.
    Ntfy(ntfy::config::RawNtfy),
}

impl RawChannel {
    /// The channel this table describes, its secrets read through `env` (which resolves a
    /// `<key>_env` variable): the name first, then the platform's own keys.
    pub fn check(self, env: &dyn Fn(&str) -> Option<String>) -> Result<Channel, Invalid> {
        let secrets = Secrets { env };
        match self {
            Self::Slack(c) => checked(c, &secrets),
            Self::Telegram(c) => checked(c, &secrets),
            Self::Discord(c) => checked(c, &secrets),
            Self::Mattermost(c) => checked(c, &secrets),
            Self::Teams(c) => checked(c, &secrets),
            Self::GoogleChat(c) => checked(c, &secrets),
            Self::Email(c) => checked(c, &secrets),
            Self::Ntfy(c) => checked(c, &secrets),
        }
    }
}

/// What each platform's raw table gives the shared check: its name, whether users
/// `[identities]` does not name may answer, and its own keys checked into its [`Platform`].
pub(crate) trait PlatformTable {
    fn name(&self) -> &str;

    /// E-mail and ntfy answer through signed links, which name their responder: they have no
    /// such key.
    fn allow_unmapped(&self) -> bool {
        false
    }

    fn check(self, secrets: &Secrets<'_>) -> Result<Platform, Invalid>;
}

fn checked(table: impl PlatformTable, secrets: &Secrets<'_>) -> Result<Channel, Invalid> {
    let name = table.name().to_owned();
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(Invalid::new(
            "name",
            format!("{name:?} must be 1 to 64 of A-Z a-z 0-9 - _ (it is part of a URL)"),
        ));
    }
    let allow_unmapped = table.allow_unmapped();
    Ok(Channel {
        name,
        platform: table.check(secrets)?,
        allow_unmapped,
    })
}

/// Reads a secret: its value (`bot_token = "..."`), the environment variable `<key>_env` names
/// (`bot_token_env = "SLACK_BOT_TOKEN"`), or the file `<key>_file` names (`bot_token_file =
/// "/run/secrets/slack"`, as Kubernetes and compose mount secrets; its trailing line breaks
/// trimmed). Two ways at once is an error naming both, and so is a named variable that is unset
/// or empty, or a named file that cannot be read or holds nothing. The binary reads the secrets
/// of its other sections (`[oidc]`, `[push]`) through it too, so every secret in the file is
/// given the same way.
pub struct Secrets<'a> {
    /// Resolves an environment variable (the process's, or a test's).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl std::fmt::Debug for Secrets<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets").finish_non_exhaustive()
    }
}

impl Secrets<'_> {
    /// The secret `key`, given as `value`, through the variable `var` or in the file `file`;
    /// `None` when none is given.
    pub fn optional(
        &self,
        key: &str,
        value: Option<String>,
        var: Option<String>,
        file: Option<String>,
    ) -> Result<Option<String>, Invalid> {
        let given: Vec<String> = [
            value.is_some().then(|| key.to_owned()),
            var.is_some().then(|| format!("{key}_env")),
            file.is_some().then(|| format!("{key}_file")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let [first, second, ..] = given.as_slice() {
            return Err(Invalid::new(
                first,
                format!("give either {first} or {second}, not both"),
            ));
        }
        match (value, var, file) {
            (Some(v), _, _) if v.is_empty() => Err(Invalid::new(key, "is empty")),
            (Some(v), _, _) => Ok(Some(v)),
            (None, Some(name), _) => match (self.env)(&name).filter(|v| !v.is_empty()) {
                Some(v) => Ok(Some(v)),
                None => Err(Invalid::new(
                    &format!("{key}_env"),
                    format!("the environment variable {name} is not set"),
                )),
            },
            (None, None, Some(path)) => read_secret_file(std::path::Path::new(&path))
                .map(Some)
                .map_err(|problem| Invalid::new(&format!("{key}_file"), problem)),
            (None, None, None) => Ok(None),
        }
    }

    pub fn required(
        &self,
        key: &str,
        value: Option<String>,
        var: Option<String>,
        file: Option<String>,
    ) -> Result<String, Invalid> {
        self.optional(key, value, var, file)?.ok_or_else(|| {
            Invalid::new(
                key,
                format!(
                    "is missing; give {key} = \"...\", {key}_env = \"VARIABLE\" or \
                     {key}_file = \"PATH\""
                ),
            )
        })
    }
}

/// The secret held in the file at `path`: its text without trailing line breaks (an editor or
/// `echo` adds one; Kubernetes' secrets keep whatever was given). A file that cannot be read or
/// holds nothing else is refused, naming the file.
pub fn read_secret_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let secret = text.trim_end_matches(['\n', '\r']);
    if secret.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    Ok(secret.to_owned())
}

/// The schemes of an API a channel calls.
pub(crate) const WEB: [&str; 2] = ["http", "https"];

/// `given`, or `default` when absent, as a URL with a host and one of `schemes`.
pub(crate) fn url(
    key: &str,
    given: Option<String>,
    default: &str,
    schemes: &[&str],
) -> Result<url::Url, Invalid> {
    let text = given.unwrap_or_else(|| default.to_owned());
    match url::Url::parse(&text) {
        Ok(u) if schemes.contains(&u.scheme()) && u.has_host() => Ok(u),
        Ok(_) | Err(_) => Err(Invalid::new(
            key,
            format!("{text:?} is not a {} URL", schemes.join(" or ")),
        )),
    }
}

/// `value`, unless it is empty or only spaces.
pub(crate) fn nonempty(key: &str, value: String) -> Result<String, Invalid> {
    if value.trim().is_empty() {
        return Err(Invalid::new(key, "is empty"));
    }
    Ok(value)
}

/// A Telegram chat id (a number) or channel username, or a Discord snowflake, written either as
/// a number or as a string.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Id {
    Number(i64),
    Text(String),
}

impl Id {
    pub(crate) fn text(self) -> String {
        match self {
            Self::Number(n) => n.to_string(),
            Self::Text(s) => s,
        }
    }
}
