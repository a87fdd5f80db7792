//! What every platform's `[[channels]]` check shares: the [`PlatformTable`] each platform's
//! `config.rs` implements, how a secret is given ([`SecretReader`]), URL and non-empty checks, the
//! number-or-string [`Id`], the failure [`Invalid`]. The table of every platform together is
//! the registry's `RawChannel`.
//!
//! The checks live beside the platform they check so that a platform's keys, defaults and
//! client are read in one folder. The binary reads the file, hands each table to
//! `RawChannel::check` and keeps only what crosses channels (unique names, routes). The raw types' doc comments are the
//! handbook's configuration reference, rendered from their JSON Schema: the types keep their
//! names, and a default a check applies is named in the `default` their schema carries.

use schemars::JsonSchema;
use serde::Deserialize;

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

/// What each platform's raw table gives the shared check: its name, whether users
/// `[identities]` does not name may answer, and its own keys checked into its platform.
pub trait PlatformTable {
    /// The platform the table is checked into.
    type Platform;

    fn name(&self) -> &str;

    /// E-mail and ntfy answer through signed links, which name their responder: they have no
    /// such key.
    fn allow_unmapped(&self) -> bool {
        false
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid>;
}

/// A channel's name, checked: it is part of its hook's URL.
pub(crate) fn channel_name(name: &str) -> Result<String, Invalid> {
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
    Ok(name.to_owned())
}

/// Reads a secret: its value (`bot_token = "..."`), the environment variable `<key>_env` names
/// (`bot_token_env = "SLACK_BOT_TOKEN"`), or the file `<key>_file` names (`bot_token_file =
/// "/run/secrets/slack"`, as Kubernetes and compose mount secrets; its trailing line breaks
/// trimmed). Two ways at once is an error naming both, and so is a named variable that is unset
/// or empty, or a named file that cannot be read or holds nothing. The binary reads the secrets
/// of its other sections (`[oidc]`, `[push]`) through it too, so every secret in the file is
/// given the same way.
pub struct SecretReader<'a> {
    /// Resolves an environment variable (the process's, or a test's).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl std::fmt::Debug for SecretReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretReader").finish_non_exhaustive()
    }
}

impl SecretReader<'_> {
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
