//! How a secret is given: as a value (`bot_token = "..."`) or as the name of an environment
//! variable (`bot_token_env = "SLACK_BOT_TOKEN"`), and the type that keeps it from being printed.

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

/// Reads the secret `key` of a channel: its value, or the environment variable `<key>_env`
/// names; both at once is an error, and so is a named variable that is unset or empty.
pub(super) struct Secrets<'a> {
    pub(super) at: &'a str,
    pub(super) env: &'a dyn Fn(&str) -> Option<String>,
    pub(super) fail: Fail<'a>,
}

impl Secrets<'_> {
    pub(super) fn optional(
        &self,
        key: &str,
        value: Option<String>,
        var: Option<String>,
    ) -> Result<Option<Secret>, String> {
        match (value, var) {
            (Some(_), Some(_)) => Err((self.fail)(
                &format!("{}.{key}", self.at),
                format!("give either {key} or {key}_env, not both"),
            )),
            (Some(v), None) if v.is_empty() => Err((self.fail)(
                &format!("{}.{key}", self.at),
                "is empty".to_owned(),
            )),
            (Some(v), None) => Ok(Some(Secret(v))),
            (None, Some(name)) => match (self.env)(&name).filter(|v| !v.is_empty()) {
                Some(v) => Ok(Some(Secret(v))),
                None => Err((self.fail)(
                    &format!("{}.{key}_env", self.at),
                    format!("the environment variable {name} is not set"),
                )),
            },
            (None, None) => Ok(None),
        }
    }

    pub(super) fn required(
        &self,
        key: &str,
        value: Option<String>,
        var: Option<String>,
    ) -> Result<Secret, String> {
        self.optional(key, value, var)?.ok_or_else(|| {
            (self.fail)(
                &format!("{}.{key}", self.at),
                format!("is missing; give {key} = \"...\" or {key}_env = \"VARIABLE\""),
            )
        })
    }
}
