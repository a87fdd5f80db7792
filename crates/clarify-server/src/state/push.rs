//! This server's Web Push identity: its VAPID key pair (RFC 8292) and the contact it names.
//!
//! The key is `[push] vapid_private_key` (a P-256 private key: its 32 bytes in URL-safe base64,
//! as `web-push generate-vapid-keys` prints it), or, without one, a 32-byte server secret kept in
//! the store and made into a P-256 key, so every instance sharing the store signs with the same
//! key and browsers' subscriptions keep working across restarts. The public key is what browsers
//! subscribe with (`GET /v1/push/key`). Each push carries `Authorization: vapid t=<JWT>,
//! k=<public key>`: an ES256 JWT (signed by `jsonwebtoken`) whose `aud` is the push service's
//! origin, `exp` 12 hours ahead on the store's clock, and `sub` the contact.

use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use chrono::{DateTime, TimeDelta, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::EncodePrivateKey;
use serde::Serialize;

/// How many hours a VAPID signature is good for (RFC 8292 allows at most 24).
const VALID_FOR_HOURS: i64 = 12;

/// A VAPID key pair.
#[derive(Clone)]
pub struct VapidKey {
    /// The private key as PKCS#8 DER, which `jsonwebtoken` signs with.
    pkcs8: Vec<u8>,
    /// The public key, uncompressed (65 bytes), in URL-safe base64 without padding.
    public: String,
}

impl VapidKey {
    /// The key whose private scalar is these 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() != 32 {
            return Err(format!(
                "a VAPID private key is 32 bytes, got {}",
                bytes.len()
            ));
        }
        let secret = p256::SecretKey::from_slice(bytes)
            .map_err(|_| "these 32 bytes are not a P-256 private key".to_owned())?;
        let pkcs8 = secret
            .to_pkcs8_der()
            .map_err(|e| format!("the key cannot be encoded: {e}"))?
            .as_bytes()
            .to_vec();
        let public = URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false).as_bytes());
        Ok(Self { pkcs8, public })
    }

    /// The key written as its 32 bytes in URL-safe base64 (with or without padding).
    pub fn from_base64url(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bytes = URL_SAFE_NO_PAD
            .decode(text)
            .or_else(|_| URL_SAFE.decode(text))
            .map_err(|_| "not URL-safe base64 (the 32 bytes of a P-256 private key)".to_owned())?;
        Self::from_bytes(&bytes)
    }

    /// The public key as browsers take it (`applicationServerKey`): the uncompressed point in
    /// URL-safe base64.
    pub fn public_key(&self) -> &str {
        &self.public
    }
}

impl std::fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

/// `[push]`: the key pair and contact, when configured.
#[derive(Debug, Clone, Default)]
pub struct PushConfig {
    /// `None`: the key kept in the store.
    pub key: Option<VapidKey>,
    /// `mailto:` or `https:`; `None`: derived from the public URL ([`default_subject`]).
    pub subject: Option<String>,
}

/// The contact a push service may reach the sender at, when `[push] subject` is not set: the
/// public URL when it is `https`, else `mailto:clarify@<its host>`.
pub fn default_subject(public_url: &str) -> String {
    match url::Url::parse(public_url) {
        Ok(u) if u.scheme() == "https" => u.origin().ascii_serialization(),
        Ok(u) => format!("mailto:clarify@{}", u.host_str().unwrap_or("localhost")),
        Err(_) => "mailto:clarify@localhost".to_owned(),
    }
}

/// What a push is signed with on this instance.
#[derive(Debug, Clone)]
pub struct Vapid {
    pub key: VapidKey,
    pub subject: String,
}

#[derive(Serialize)]
struct Claims<'a> {
    aud: String,
    exp: i64,
    sub: &'a str,
}

impl Vapid {
    /// The `Authorization` header value for a push to `endpoint` sent at `now`.
    pub fn authorization(
        &self,
        endpoint: &url::Url,
        now: DateTime<Utc>,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = Claims {
            aud: endpoint.origin().ascii_serialization(),
            exp: (now + TimeDelta::hours(VALID_FOR_HOURS)).timestamp(),
            sub: &self.subject,
        };
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::ES256),
            &claims,
            &EncodingKey::from_ec_der(&self.key.pkcs8),
        )?;
        Ok(format!("vapid t={token}, k={}", self.key.public))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_read_from_its_base64_and_bad_ones_are_named() {
        // The private key of RFC 8291's example (Appendix A, the application server's).
        let key =
            VapidKey::from_base64url("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw").expect("a key");
        assert_eq!(
            key.public_key(),
            "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        );
        for (text, says) in [
            ("", "32 bytes, got 0"),
            ("AAAA", "32 bytes, got 3"),
            ("not base64!", "not URL-safe base64"),
            (
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "not a P-256 private key",
            ),
        ] {
            let error = VapidKey::from_base64url(text).expect_err(text);
            assert!(error.contains(says), "{text:?}: {error}");
        }
    }

    #[test]
    fn the_subject_defaults_to_the_public_url_or_a_mailbox_at_its_host() {
        assert_eq!(
            default_subject("https://clarify.example.com/base"),
            "https://clarify.example.com"
        );
        assert_eq!(
            default_subject("http://127.0.0.1:8080"),
            "mailto:clarify@127.0.0.1"
        );
    }
}
