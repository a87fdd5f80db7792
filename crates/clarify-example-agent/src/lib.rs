//! An example agent built on clarify: a chat loop against any OpenAI-compatible
//! chat-completions endpoint that asks a human when the model calls `ask_human`, and runs its one
//! real tool, `write_file`, only with a human's approval.
//!
//! It reaches clarify over HTTP ([`clarify_client`]), as an agent beside a shared server does:
//! people answer in the server's inbox, by link or from the terminal, and the agent needs only a
//! URL and an agent key, never the database. Everything it knows lives in a state file rewritten
//! (atomically) after every step: the transcript, with the requests it raised recorded as
//! protocol messages, and its session id. So a restart, even after
//! `SIGKILL` while a question is pending, resumes waiting for the very same request, and a
//! request raised just before a crash is found again through its idempotency key rather than
//! asked twice.
//!
//! Approval grants are the server's: an approval answered with scope `session` (the state file's
//! session) or `always` is recorded by the server with the answer, and the agent asks
//! `POST /v1/grants/check` before raising an approval, as the Rust `Gate` asks the store.

mod agent;
mod error;
mod provider;
mod state;
mod tools;

pub use agent::{DEFAULT_SYSTEM, Settings, run};
pub use error::AgentError;
pub use provider::Provider;
pub use state::State;
pub use tools::{Sandbox, SandboxError, definitions};
