//! Passkeys (WebAuthn): the relying party this instance is, and the ceremonies between the two
//! calls of each registration, sign-in and step-up.
//!
//! The relying party is the host of `--public-url` (its id) and that URL's origin; webauthn-rs
//! does every check of what an authenticator returns. A ceremony's state is kept in the store
//! as a single-use token ([`clarify_store::Store::issue_once`]) on the store's clock, so any
//! instance finishes what another started, and a replayed finish finds nothing. A step-up
//! ends in a proof, another single-use token bound to the request and the person, good for
//! [`STEP_UP_WINDOW`] after the assertion: the answer carries it (`X-Clarify-Step-Up`), and
//! the store accepts the answer only with it ([`clarify_store::StepUp::Confirmed`]).

use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clarify_store::{STEP_UP_WINDOW, Store, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyAuthentication, PasskeyRegistration,
    PublicKeyCredential, Url, Webauthn, WebauthnBuilder,
};

use super::AppState;
use crate::shared::error::ApiError;
use clarify_store::StoredPasskey;

/// How long a person has to finish a ceremony the browser started.
const CEREMONY_TTL: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

/// The header an answer carries its step-up proof in.
pub const STEP_UP_HEADER: &str = "x-clarify-step-up";

/// The relying party, built from the public URL; `None` when that URL cannot be one (an IP
/// address is not a relying-party id).
pub fn relying_party_of(public_url: &str) -> Option<Webauthn> {
    let origin = Url::parse(public_url).ok()?;
    let host = origin.host_str()?.to_owned();
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        tracing::info!(%public_url, "passkeys are off: the public URL's host is an IP address, and a passkey's relying party must be a domain name (localhost works)");
        return None;
    }
    match WebauthnBuilder::new(&host, &origin).and_then(|b| b.rp_name("clarify").build()) {
        Ok(rp) => Some(rp),
        Err(e) => {
            tracing::warn!(error = %e, %public_url, "passkeys are off: the public URL is no relying party");
            None
        }
    }
}

/// The base64url (unpadded) form of a credential id, as passkeys are stored by it.
pub fn credential_key(id: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(id)
}

/// What a ceremony token holds between its two calls.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ceremony {
    /// Registering a passkey for the person `name` of `tenant`.
    Register {
        tenant: String,
        name: String,
        state: PasskeyRegistration,
    },
    /// Signing in with any passkey (discoverable).
    SignIn { state: DiscoverableAuthentication },
    /// Confirming an answer to `request` with one of the person's passkeys.
    StepUp {
        tenant: String,
        name: String,
        request: String,
        state: PasskeyAuthentication,
    },
    /// Confirming an answer to `request` through an answer link with whichever passkey the
    /// authenticator offers; its owner is who answers.
    LinkStepUp {
        tenant: String,
        request: String,
        /// The person a personal link names; `None` for an anonymous link.
        person: Option<String>,
        state: DiscoverableAuthentication,
    },
    /// A finished step-up: the person `name` may answer `request` once, until the token
    /// expires ([`STEP_UP_WINDOW`] after the assertion).
    Proof {
        tenant: String,
        name: String,
        request: String,
        /// Who the passkey's owner signed in as (`key:<name>`, `oidc:...`).
        principal: String,
    },
}

const PREFIX: &str = "webauthn:";

impl Ceremony {
    /// Keeps the ceremony in the store; the token the browser sends back to finish it.
    pub async fn begin(&self, store: &Store) -> Result<String, StoreError> {
        let ttl = match self {
            Self::Proof { .. } => STEP_UP_WINDOW,
            _ => CEREMONY_TTL,
        };
        let json = serde_json::to_string(self)
            .map_err(|e| StoreError::Corrupt(format!("a passkey ceremony: {e}")))?;
        store.issue_once(&format!("{PREFIX}{json}"), ttl).await
    }

    /// The ceremony `token` stands for, used up; `None` when unknown, expired or used.
    pub async fn take(store: &Store, token: &str) -> Result<Option<Self>, StoreError> {
        let Some(held) = store.redeem_once(token).await? else {
            return Ok(None);
        };
        Ok(held
            .strip_prefix(PREFIX)
            .and_then(|json| serde_json::from_str(json).ok()))
    }
}

/// The relying party, or `409 passkeys_unavailable`.
pub fn relying_party(state: &AppState) -> Result<&Webauthn, ApiError> {
    state.webauthn.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "passkeys_unavailable",
            "passkeys need the server's public URL to name a host (such as localhost or clarify.example.com), not an IP address; set --public-url",
        )
    })
}

pub fn ceremony_gone() -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_ceremony",
        "this passkey ceremony is unknown, already used or expired; start again",
    )
}

pub fn refused(message: impl Into<String>) -> ApiError {
    ApiError::forbidden("passkey_refused", message)
}

/// A credential as the browser gives it, or `422 invalid_credential`.
pub fn parse<T: serde::de::DeserializeOwned>(credential: Value) -> Result<T, ApiError> {
    serde_json::from_value(credential).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_credential",
            format!(
                "credential: not a WebAuthn credential as the browser gives it: {}",
                clarify_core::quoted(&e.to_string())
            ),
        )
    })
}

/// Verifies a discoverable assertion against the passkey it names and records its use.
pub async fn verify_discoverable(
    state: &AppState,
    rp: &Webauthn,
    credential: &PublicKeyCredential,
    authentication: webauthn_rs::prelude::DiscoverableAuthentication,
) -> Result<StoredPasskey, ApiError> {
    let (_, id) = rp
        .identify_discoverable_authentication(credential)
        .map_err(|e| refused(format!("the passkey answer names no user: {e}")))?;
    let key = credential_key(id);
    let Some(stored) = state.store.passkey_by_credential(&key).await? else {
        return Err(refused("this passkey is not registered here"));
    };
    let mut passkey: Passkey = serde_json::from_value(stored.credential.clone())
        .map_err(|_| refused("this passkey can no longer be read; register it again"))?;
    let result = rp
        .finish_discoverable_authentication_v2(credential, authentication, &passkey)
        .map_err(|e| refused(format!("the passkey answer does not verify: {e}")))?;
    if passkey.update_credential(&result).is_some() {
        state
            .store
            .passkey_used(&key, serde_json::to_value(&passkey).unwrap_or(Value::Null))
            .await?;
    }
    Ok(stored)
}

/// Refuses an answer whose step-up proof does not hold.
pub fn step_up_refused(why: &str) -> ApiError {
    ApiError::forbidden(
        "step_up_required",
        format!("{why}; confirm with your passkey again"),
    )
}

/// Who a step-up proof confirms for request `id`: used up here; refused when it was made for
/// another request, is used already or is older than 5 minutes.
pub async fn take_proof(state: &AppState, proof: &str, id: &str) -> Result<Confirmed, ApiError> {
    match Ceremony::take(&state.store, proof).await? {
        Some(Ceremony::Proof {
            tenant,
            name,
            request,
            principal,
        }) => {
            if request != id {
                Err(step_up_refused(
                    "this passkey confirmation was made for another request",
                ))
            } else {
                Ok(Confirmed {
                    tenant,
                    name,
                    principal,
                })
            }
        }
        _ => Err(step_up_refused(
            "this passkey confirmation is unknown, already used or older than 5 minutes",
        )),
    }
}

/// Whom a step-up proof confirms.
#[derive(Debug)]
pub struct Confirmed {
    pub tenant: String,
    pub name: String,
    pub principal: String,
}
