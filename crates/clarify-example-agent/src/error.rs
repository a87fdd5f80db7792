//! What can stop the agent. Problems the model can fix (bad arguments, a refused write) are not
//! errors: they go back to the model as tool results.

use std::path::PathBuf;

use clarify_client::ClientError;
use clarify_core::policy::ApprovalError;
use clarify_core::transcript::TranscriptError;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The command line asks for something that cannot be done; exit code 2.
    #[error("{0}")]
    Usage(String),
    #[error(
        "cannot read the state file {}: {detail}; fix or remove it to start over",
        path.display()
    )]
    StateRead { path: PathBuf, detail: String },
    #[error("cannot write the state file {}: {detail}", path.display())]
    StateWrite { path: PathBuf, detail: String },
    #[error("clarify: {0}")]
    Clarify(#[from] ClientError),
    #[error("the model provider at {url} failed: {detail}")]
    Provider { url: String, detail: String },
    #[error(
        "the model made {0} requests in this run without finishing; raise --max-turns or check the model"
    )]
    TooManyTurns(u32),
    #[error("the stored transcript cannot be used: {0}")]
    Transcript(#[from] TranscriptError),
    #[error("clarify sent an approval outcome this agent cannot read: {0}")]
    Approval(#[from] ApprovalError),
}
