//! Receipts: a resolved request's decision as portable proof. A receipt is a compact JWS
//! (RFC 7515) signed with Ed25519 (`alg` `EdDSA`, a `kid` naming the key), whose claims say
//! who decided what about which exact arguments; an executor checks it against the server's
//! published keys (`/.well-known/jwks.json`) without asking the server, and spends it once.
//!
//! The claims are derived from the stored record alone, so signing is deterministic: the same
//! record and key give the same receipt on every instance and every read, and nothing but the
//! resolution's position in the audit chain (`seq`) has to be stored for it. Signing joins the
//! key's header, encoded once when the key is made, to the claims and signs with the key kept
//! ready: `jsonwebtoken::encode` would rebuild the key from its PKCS#8 form (an Ed25519
//! base-point multiplication, as costly as the signature) for each receipt, half of what
//! answering a request cost the server. The signature is `aws-lc-rs`'s: AWS-LC's Ed25519 takes
//! half the instructions of `ed25519-dalek`'s (about 133,000 against 271,000 a signature), still
//! a quarter of a round trip, and Ed25519 is deterministic, so the bytes are the same. A test
//! checks the receipts are exactly `jsonwebtoken::encode`'s; verifying is `jsonwebtoken`'s, and
//! the canonical JSON (RFC 8785) comes from `serde_json_canonicalizer`.

use std::fmt;
use std::sync::Arc;

use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair};
use chrono::{DateTime, Utc};
use clarify_core::text::hex;
use clarify_core::{Decision, Outcome, QuestionKind, Status};
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm,
    OctetKeyPairParameters, OctetKeyPairType, PublicKeyUse, ThumbprintHash,
};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::RequestRecord;

/// What a receipt says. Field names are the contract's claim names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptClaims {
    /// The server's public URL.
    pub iss: String,
    /// The request id.
    pub sub: String,
    /// The tenant.
    pub tid: String,
    /// When the request was resolved (Unix seconds).
    pub iat: i64,
    /// The decision's id: what `POST /v1/receipts/spend` uses up. One per resolution.
    pub jti: String,
    /// `answered`, `skipped`, `expired` or `cancelled`.
    pub status: String,
    /// Who resolved it: the authenticated principal (`key:NAME`, `oidc:ISSUER#SUB`, ...), else
    /// the responder's name, else `system` (expiry).
    pub by: String,
    /// The resolution's position in the audit chain (`clarify audit verify` lists it).
    pub seq: u64,
    /// One entry per approval question, in the request's order.
    #[serde(default)]
    pub approvals: Vec<ApprovalClaim>,
}

/// One approval question's decision, bound to the exact arguments decided on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalClaim {
    pub id: String,
    /// The tool or action name.
    pub action: String,
    /// `approve`, `deny`, `revise`, or `none` when nobody decided (skipped, expired,
    /// cancelled without a default).
    pub decision: String,
    /// Lowercase hex SHA-256 of the RFC 8785 canonical JSON of the arguments decided on: the
    /// person's edited arguments where they edited them, else the proposed ones.
    pub args_sha256: String,
}

impl ReceiptClaims {
    /// The claims of `record`'s resolution, issued by `iss`; `None` while it is pending or
    /// before its resolution has a place in the audit chain.
    pub fn of(record: &RequestRecord, iss: &str) -> Option<Self> {
        Self::of_outcome(record, &record.outcome()?, iss)
    }

    /// [`ReceiptClaims::of`], given `record`'s outcome where the caller has it already.
    pub fn of_outcome(record: &RequestRecord, outcome: &Outcome, iss: &str) -> Option<Self> {
        let resolution = record.resolution.as_ref()?;
        let seq = resolution.seq?;
        let mut approvals = Vec::new();
        for question in &record.request.questions {
            let QuestionKind::Approval(approval) = &question.kind else {
                continue;
            };
            let answered = outcome.questions.iter().find(|q| q.id == question.id);
            let decision = answered.and_then(|q| q.decision);
            let arguments = answered
                .and_then(|q| q.edited_arguments.as_ref())
                .unwrap_or(&approval.action.arguments);
            approvals.push(ApprovalClaim {
                id: question.id.clone(),
                action: approval.action.name.clone(),
                decision: decision.map_or("none", Decision::as_str).to_owned(),
                args_sha256: args_sha256(arguments),
            });
        }
        let actor = &resolution.actor;
        Some(Self {
            iss: iss.to_owned(),
            sub: record.id.clone(),
            tid: record.tenant.clone(),
            iat: resolution.resolved_at.timestamp(),
            jti: jti(&record.id, seq),
            status: record.status.to_string(),
            by: actor
                .principal
                .clone()
                .or_else(|| actor.name.clone())
                .unwrap_or_else(|| "system".to_owned()),
            seq,
            approvals,
        })
    }

    /// The claims of `receipt` read without checking its signature: for showing which receipt
    /// a decision has (an evidence report), never for trusting it ([`verify`] does that).
    pub fn unverified(receipt: &str) -> Option<Self> {
        use base64::Engine;
        let payload = receipt.split('.').nth(1)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Checks that this receipt approves `action` (when given) with exactly `arguments` (when
    /// given): the request was answered, the approval's decision is `approve`, and the
    /// arguments' canonical digest is the one signed. Without `action`, `arguments` must match
    /// the receipt's only approval.
    pub fn check(&self, action: Option<&str>, arguments: Option<&Value>) -> Result<(), Mismatch> {
        if action.is_none() && arguments.is_none() {
            return Ok(());
        }
        let candidates: Vec<&ApprovalClaim> = match action {
            Some(name) => self.approvals.iter().filter(|a| a.action == name).collect(),
            None => self.approvals.iter().collect(),
        };
        let Some(first) = candidates.first() else {
            return Err(match action {
                Some(name) => Mismatch::NoSuchAction(name.to_owned()),
                None => Mismatch::NoApproval,
            });
        };
        if action.is_none() && candidates.len() > 1 {
            return Err(Mismatch::WhichAction(candidates.len()));
        }
        if self.status != Status::Answered.as_str() {
            return Err(Mismatch::NotApproved {
                action: first.action.clone(),
                decision: format!("none (the request was {})", self.status),
            });
        }
        let approved: Vec<&&ApprovalClaim> = candidates
            .iter()
            .filter(|a| a.decision == Decision::Approve.as_str())
            .collect();
        let Some(approved_first) = approved.first() else {
            return Err(Mismatch::NotApproved {
                action: first.action.clone(),
                decision: first.decision.clone(),
            });
        };
        match arguments {
            None => Ok(()),
            Some(arguments) => {
                let digest = args_sha256(arguments);
                if approved.iter().any(|a| a.args_sha256 == digest) {
                    Ok(())
                } else {
                    Err(Mismatch::ArgumentsDiffer {
                        action: approved_first.action.clone(),
                    })
                }
            }
        }
    }
}

/// The `jti` of the receipt of request `id`, whose resolution is event `seq` of the audit chain.
pub fn jti(id: &str, seq: u64) -> String {
    format!("{id}@{seq}")
}

/// How a valid receipt fails to cover an action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("the receipt has no approval of action {0:?}")]
    NoSuchAction(String),
    #[error("the receipt has no approval to check the arguments against")]
    NoApproval,
    #[error("the receipt has {0} approvals: name the action to check")]
    WhichAction(usize),
    #[error("action {action:?} was not approved: its decision is {decision}")]
    NotApproved { action: String, decision: String },
    #[error("the arguments differ from the ones approved for action {action:?}")]
    ArgumentsDiffer { action: String },
}

/// Lowercase hex SHA-256 of the RFC 8785 (JCS) canonical JSON of `arguments`.
pub fn args_sha256(arguments: &Value) -> String {
    // A `serde_json::Value` always serializes; the canonical form cannot fail on one.
    let canonical = serde_json_canonicalizer::to_vec(arguments).unwrap_or_default();
    hex(&crate::sign::sha256(&[&canonical]))
}

/// An Ed25519 signing key with its published form.
#[derive(Clone)]
pub struct ReceiptKey {
    kid: String,
    signing: Arc<Ed25519KeyPair>,
    /// The JWS protected header (`alg` `EdDSA`, `kid`), as JSON in URL-safe base64, as
    /// `jsonwebtoken::encode` writes it.
    header: String,
    public: Jwk,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// When a newer key replaced it; `None` for the key that signs now.
    pub retired_at: Option<DateTime<Utc>>,
}

impl fmt::Debug for ReceiptKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReceiptKey")
            .field("kid", &self.kid)
            .field("created_at", &self.created_at)
            .field("retired_at", &self.retired_at)
            .finish_non_exhaustive()
    }
}

impl ReceiptKey {
    /// The key whose 32-byte Ed25519 seed is `seed`. Its `kid` is its RFC 7638 thumbprint.
    pub fn from_seed(
        seed: &[u8; 32],
        created_at: DateTime<Utc>,
        retired_at: Option<DateTime<Utc>>,
    ) -> Result<Self, ReceiptError> {
        let signing = Ed25519KeyPair::from_seed_unchecked(seed)
            .map_err(|e| ReceiptError::Key(e.to_string()))?;
        let x = base64url(signing.public_key().as_ref());
        let mut public = Jwk {
            common: CommonParameters {
                public_key_use: Some(PublicKeyUse::Signature),
                key_algorithm: Some(KeyAlgorithm::EdDSA),
                ..Default::default()
            },
            algorithm: AlgorithmParameters::OctetKeyPair(OctetKeyPairParameters {
                key_type: OctetKeyPairType::OctetKeyPair,
                curve: EllipticCurve::Ed25519,
                x,
            }),
        };
        let kid = public
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|e| ReceiptError::Key(e.to_string()))?;
        public.common.key_id = Some(kid.clone());
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid.clone());
        let header = serde_json::to_vec(&header).map_err(|e| ReceiptError::Key(e.to_string()))?;
        Ok(Self {
            kid,
            signing: Arc::new(signing),
            header: base64url(&header),
            public,
            created_at,
            retired_at,
        })
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as a JWK (`kty` `OKP`, `crv` `Ed25519`, `kid`, `alg` `EdDSA`, `use` `sig`).
    pub fn jwk(&self) -> &Jwk {
        &self.public
    }

    /// `claims` as a compact JWS signed with this key.
    pub fn sign(&self, claims: &ReceiptClaims) -> Result<String, ReceiptError> {
        let claims = serde_json::to_vec(claims).map_err(|e| ReceiptError::Key(e.to_string()))?;
        let mut jws = format!("{}.{}", self.header, base64url(&claims));
        let signature = self.signing.sign(jws.as_bytes());
        jws.push('.');
        jws.push_str(&base64url(signature.as_ref()));
        Ok(jws)
    }
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Checks `receipt`'s signature against the key of `jwks` its `kid` names and returns its
/// claims. Receipts do not expire: what they prove stays true; an executor that must act at
/// most once spends them.
pub fn verify(receipt: &str, jwks: &JwkSet) -> Result<ReceiptClaims, ReceiptError> {
    let header = jsonwebtoken::decode_header(receipt.trim())
        .map_err(|e| ReceiptError::Malformed(e.to_string()))?;
    if header.alg != Algorithm::EdDSA {
        return Err(ReceiptError::Malformed(format!(
            "its algorithm is {:?}, not EdDSA",
            header.alg
        )));
    }
    let kid = header
        .kid
        .ok_or_else(|| ReceiptError::Malformed("its header names no key (kid)".to_owned()))?;
    let jwk = jwks
        .find(&kid)
        .ok_or_else(|| ReceiptError::UnknownKey(kid.clone()))?;
    let AlgorithmParameters::OctetKeyPair(params) = &jwk.algorithm else {
        return Err(ReceiptError::UnknownKey(kid));
    };
    let key =
        DecodingKey::from_ed_components(&params.x).map_err(|e| ReceiptError::Key(e.to_string()))?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    jsonwebtoken::decode::<ReceiptClaims>(receipt.trim(), &key, &validation)
        .map(|data| data.claims)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => ReceiptError::BadSignature,
            _ => ReceiptError::Malformed(e.to_string()),
        })
}

/// Why a receipt was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    #[error("the receipt is malformed: {0}")]
    Malformed(String),
    #[error("the receipt was signed by key {0:?}, which the key set does not hold")]
    UnknownKey(String),
    #[error("the receipt's signature does not match its content")]
    BadSignature,
    #[error("the signing key is unusable: {0}")]
    Key(String),
}

#[cfg(test)]
mod tests;
