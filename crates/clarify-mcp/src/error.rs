//! Why a tool call failed.
//!
//! Every failure of a tool call reaches the client as a tool result with `isError: true` and a
//! message written for the model that made the call, so it can correct itself (a question too
//! long, an unknown request id) or tell its user what is wrong (the store is unreachable).
//! Protocol mistakes (an unknown tool name) are JSON-RPC errors instead; those are made by the
//! handler, not here.

use clarify_client::ClientError;
use clarify_core::ValidationError;
use clarify_store::{ResolveError, StoreError};

/// A tool call that could not be carried out. Nothing was half-done: a request is either stored
/// whole or not at all.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not make a valid request; nothing was stored.
    #[error("{0}")]
    Invalid(#[from] ValidationError),
    /// The arguments of `get_answer` do not fit its schema.
    #[error("{0}")]
    Arguments(String),
    #[error("no request {0:?} is known here; use the request_id that ask_human_async returned")]
    NotFound(String),
    #[error("the clarify store failed: {0}; nothing was changed, try again shortly")]
    Store(#[from] StoreError),
    /// The remote server refused the call; the message is the server's.
    #[error("the clarify server refused: {message}")]
    Refused { code: String, message: String },
    /// The remote server could not be reached or answered nonsense.
    #[error("{0}")]
    Unreachable(String),
    /// `/mcp` was reached without an authenticated caller (a wiring mistake of the host).
    #[error("this MCP endpoint has no authenticated caller")]
    NoCaller,
}

impl ToolError {
    /// A stable snake_case code, like the HTTP API's error codes.
    pub fn code(&self) -> &str {
        match self {
            Self::Invalid(e) => e.code(),
            Self::Arguments(_) => "invalid_arguments",
            Self::NotFound(_) => "not_found",
            Self::Store(StoreError::DiskFull(_)) => "disk_full",
            Self::Store(_) => "store_unavailable",
            Self::Refused { code, .. } => code,
            Self::Unreachable(_) => "server_unreachable",
            Self::NoCaller => "unauthorized",
        }
    }

    /// Whether waiting a little and trying again may succeed.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            Self::Store(StoreError::Unavailable(_) | StoreError::DiskFull(_))
            | Self::Unreachable(_) => true,
            Self::Refused { code, .. } => code == "store_unavailable" || code == "disk_full",
            _ => false,
        }
    }

    pub(crate) fn from_resolve(e: ResolveError, id: &str) -> Self {
        match e {
            ResolveError::NotFound => Self::NotFound(id.to_owned()),
            ResolveError::Store(e) => Self::Store(e),
            e @ (ResolveError::SelfApproval { .. }
            | ResolveError::SelfApprovalNeedsIdentity { .. }) => Self::Refused {
                code: "self_approval".to_owned(),
                message: e.to_string(),
            },
            other => Self::Refused {
                code: "conflict".to_owned(),
                message: other.to_string(),
            },
        }
    }

    pub(crate) fn from_client(e: ClientError, id: Option<&str>) -> Self {
        match (e, id) {
            (ClientError::Api { status: 404, .. }, Some(id)) => Self::NotFound(id.to_owned()),
            (ClientError::Api { code, message, .. }, _) => Self::Refused { code, message },
            (e, _) => Self::Unreachable(e.to_string()),
        }
    }
}

/// Why serving MCP on stdio stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "no MCP session was opened ({0}); `clarify mcp` speaks MCP on stdin and stdout, for an MCP client to start"
    )]
    Initialize(String),
    #[error("the MCP session ended abnormally: {0}")]
    Session(String),
    /// `clarify gate` could not start or reach the server it stands in front of.
    #[error("the gated MCP server did not start a session: {0}")]
    Upstream(String),
}
