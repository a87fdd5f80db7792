//! `[push]`: Web Push's VAPID key pair and contact, as written and checked.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Fail;
use super::secrets::TableSecrets;

/// `[push]`: the VAPID key pair (RFC 8292) Web Push notifications are signed with, and the
/// contact push services may write to.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPush {
    /// The P-256 private key: its 32 bytes in URL-safe base64, as `npx web-push
    /// generate-vapid-keys` prints it. Keep it: browsers subscribed with its public key, and a
    /// new key leaves every subscription unreachable until people turn notifications on again.
    /// Without this, `vapid_private_key_env` or `vapid_private_key_file`, the key kept in
    /// the store is used.
    vapid_private_key: Option<String>,
    /// The environment variable holding the private key.
    vapid_private_key_env: Option<String>,
    /// The file holding `vapid_private_key` (its trailing line break trimmed).
    vapid_private_key_file: Option<String>,
    /// Who runs this server, for the push services: `mailto:ops@example.com` or an `https:`
    /// URL. Default: the public URL when it is `https`, else `mailto:clarify@<its host>`
    /// (Apple's push service refuses a `localhost` contact: set one for Safari).
    subject: Option<String>,
}

impl RawPush {
    pub(super) fn check(
        self,
        env: &dyn Fn(&str) -> Option<String>,
        fail: Fail<'_>,
    ) -> Result<clarify_server::state::push::PushConfig, String> {
        let secrets = TableSecrets {
            at: "push",
            env,
            fail,
        };
        let key = secrets
            .optional(
                "vapid_private_key",
                self.vapid_private_key,
                self.vapid_private_key_env,
                self.vapid_private_key_file,
            )?
            .map(|k| clarify_server::state::push::VapidKey::from_base64url(k.expose()))
            .transpose()
            .map_err(|e| fail("push.vapid_private_key", e))?;
        if let Some(subject) = &self.subject {
            let fits = subject
                .strip_prefix("mailto:")
                .is_some_and(|m| m.contains('@'))
                || url::Url::parse(subject).is_ok_and(|u| u.scheme() == "https" && u.has_host());
            if !fits {
                return Err(fail(
                    "push.subject",
                    format!(
                        "{subject:?} is neither a mailto: address nor an https: URL; use \"mailto:ops@example.com\""
                    ),
                ));
            }
        }
        Ok(clarify_server::state::push::PushConfig {
            key,
            subject: self.subject,
        })
    }
}
