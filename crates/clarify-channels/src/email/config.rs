//! A `[[channels]]` table of `type = "email"`: its keys as written, and the checks that make an
//! [`Email`] of them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Email;
use crate::config::{Invalid, PlatformTable, SecretReader, url};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEmail {
    /// Unique among the channels; routes name it.
    name: String,
    /// `smtps://host[:port]` (TLS, port 465) or `smtp://host[:port]` (plain, port 25; add
    /// `?tls=required` for STARTTLS on port 587, or `?tls=opportunistic`), with the user (and
    /// password) in the URL; a path names the EHLO host.
    smtp_url: String,
    /// The SMTP password, when it is not in the URL.
    password: Option<String>,
    /// The environment variable holding `password`.
    password_env: Option<String>,
    /// The file holding `password` (its trailing line break trimmed).
    password_file: Option<String>,
    /// The sender: `clarify@example.com` or `Clarify <clarify@example.com>`.
    from: String,
    /// The recipients. Absent: the addresses `[identities]` gives the request's responders
    /// (and, for an escalation, its `escalate_to`).
    #[serde(default)]
    to: Vec<String>,
    /// Mailgun's HTTP webhook signing key. With it, a reply to an announcement answers it: a
    /// Mailgun route forwards replies to `/hooks/email/<name>`, and each post's signature is
    /// checked with this key.
    mailgun_signing_key: Option<String>,
    /// The environment variable holding `mailgun_signing_key`.
    mailgun_signing_key_env: Option<String>,
    /// The file holding `mailgun_signing_key` (its trailing line break trimmed).
    mailgun_signing_key_file: Option<String>,
}

impl PlatformTable for RawEmail {
    type Platform = Email;

    fn name(&self) -> &str {
        &self.name
    }

    fn check(self, secrets: &SecretReader<'_>) -> Result<Self::Platform, Invalid> {
        address("from", &self.from)?;
        for a in &self.to {
            address("to", a)?;
        }
        Ok(Email {
            smtp_url: url("smtp_url", Some(self.smtp_url), "", &["smtp", "smtps"])?,
            password: secrets.optional(
                "password",
                self.password,
                self.password_env,
                self.password_file,
            )?,
            from: self.from,
            to: self.to,
            mailgun_signing_key: secrets.optional(
                "mailgun_signing_key",
                self.mailgun_signing_key,
                self.mailgun_signing_key_env,
                self.mailgun_signing_key_file,
            )?,
        })
    }
}

/// A loose check that `a` is an address (`local@domain.tld`), enough to catch a name written
/// where an address belongs; the SMTP server has the last word.
fn address(key: &str, a: &str) -> Result<(), Invalid> {
    let ok = a
        .split_once('@')
        .is_some_and(|(l, d)| !l.is_empty() && d.contains('.'));
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(key, format!("{a:?} is not an e-mail address")))
    }
}
