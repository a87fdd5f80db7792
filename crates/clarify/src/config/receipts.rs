//! `[receipts]`: the key decisions' receipts are signed with, as written and checked.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Fail;
use super::secrets::TableSecrets;

/// `[receipts]`: the Ed25519 key receipts are signed with, and how long a retired key stays
/// published at `/.well-known/jwks.json`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReceipts {
    /// The Ed25519 private key: its 32-byte seed in URL-safe base64 (`openssl rand 32 |
    /// basenc --base64url`). Without this, `signing_key_env` or `signing_key_file`, the key kept
    /// in the store signs (made on first start, shared by every instance, rotated with
    /// `clarify receipts rotate`). The store's keys stay published, so receipts they signed
    /// still verify.
    signing_key: Option<String>,
    /// The environment variable holding the key.
    signing_key_env: Option<String>,
    /// The file holding the key (its trailing line break trimmed).
    signing_key_file: Option<String>,
    /// How long a key stays published after it stopped signing: a duration (`365d`, the
    /// default). Receipts signed with a key no longer published no longer verify.
    retired_keys_published_for: Option<String>,
}

impl RawReceipts {
    pub(super) fn check(
        self,
        env: &dyn Fn(&str) -> Option<String>,
        fail: Fail<'_>,
    ) -> Result<clarify_server::state::receipts::ReceiptsConfig, String> {
        let secrets = TableSecrets {
            at: "receipts",
            env,
            fail,
        };
        let signing_key = secrets
            .optional(
                "signing_key",
                self.signing_key,
                self.signing_key_env,
                self.signing_key_file,
            )?
            .map(|k| seed(k.expose()))
            .transpose()
            .map_err(|e| fail("receipts.signing_key", e))?;
        let mut config = clarify_server::state::receipts::ReceiptsConfig {
            signing_key,
            ..Default::default()
        };
        if let Some(text) = &self.retired_keys_published_for {
            let window = crate::duration::parse_duration(text)
                .map_err(|e| fail("receipts.retired_keys_published_for", e))?;
            config.retired_published_for = chrono::TimeDelta::from_std(window)
                .map_err(|e| fail("receipts.retired_keys_published_for", e.to_string()))?;
        }
        Ok(config)
    }
}

/// The 32-byte seed in `text` (URL-safe base64, padded or not).
fn seed(text: &str) -> Result<[u8; 32], String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim().trim_end_matches('='))
        .map_err(|e| format!("not URL-safe base64: {e}"))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        format!(
            "an Ed25519 key is 32 bytes, this one is {}; make one with `openssl rand 32 | basenc --base64url`",
            bytes.len()
        )
    })
}
