//! What every platform's inbound reader shares: one error type. Each platform's
//! `<platform>::inbound::read` turns what the platform sent (after its signature, token or
//! secret was checked) into that platform's `Inbound`, or refuses it with an [`InboundError`]
//! that says whether the call was not the platform's (`401`) or not something clarify reads
//! (`400`), so the server's routes answer every platform the same way.

use serde_json::Value;

/// Why an inbound call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InboundError {
    /// The signature, token or secret is missing, wrong, or too old: `401`, nothing read.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// Verified, but not something clarify understands: `400`, nothing changed.
    #[error("{0}")]
    Malformed(String),
}

pub(crate) fn malformed(message: impl Into<String>) -> InboundError {
    InboundError::Malformed(message.into())
}

/// A verified body read as JSON.
pub fn json(body: &[u8]) -> Result<Value, InboundError> {
    serde_json::from_slice(body).map_err(|e| malformed(format!("the body is not JSON: {e}")))
}
