//! How a secret is given: as a value (`bot_token = "..."`), as the name of an environment
//! variable (`bot_token_env = "SLACK_BOT_TOKEN"`) or as the path of a file holding it
//! (`bot_token_file = "/run/secrets/slack"`), and the type that keeps it from being printed.
//!
//! The reading itself is the channels' ([`clarify_channels::config::SecretReader`]), so a secret in
//! `[oidc]` or `[push]` is given exactly as one in `[[channels]]`; this module names the table
//! in its failures and wraps the value in [`Secret`].

use super::Fail;

/// A secret read from the file or the environment; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Reads the secret `key` of the table at `at`: its value, the environment variable `<key>_env`
/// names, or the file `<key>_file` names; two at once is an error, and so is a named variable
/// that is unset or empty, or a named file that cannot be read or is empty.
pub(super) struct TableSecrets<'a> {
    pub(super) at: &'a str,
    pub(super) env: &'a dyn Fn(&str) -> Option<String>,
    pub(super) fail: Fail<'a>,
}

impl TableSecrets<'_> {
    pub(super) fn optional(
        &self,
        key: &str,
        value: Option<String>,
        var: Option<String>,
        file: Option<String>,
    ) -> Result<Option<Secret>, String> {
        self.reader()
            .optional(key, value, var, file)
            .map(|s| s.map(Secret))
            .map_err(|e| self.failed(e))
    }

    pub(super) fn required(
        &self,
        key: &str,
        value: Option<String>,
        var: Option<String>,
        file: Option<String>,
    ) -> Result<Secret, String> {
        self.reader()
            .required(key, value, var, file)
            .map(Secret)
            .map_err(|e| self.failed(e))
    }

    fn reader(&self) -> clarify_channels::config::SecretReader<'_> {
        clarify_channels::config::SecretReader { env: self.env }
    }

    fn failed(&self, e: clarify_channels::config::Invalid) -> String {
        (self.fail)(&format!("{}.{}", self.at, e.key), e.problem)
    }
}
