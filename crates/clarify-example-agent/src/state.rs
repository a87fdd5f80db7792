//! The state file: everything the agent needs to resume, written after every step.
//!
//! It is replaced atomically (written beside, synced, renamed over), so a crash leaves either the
//! old state or the new one, never a torn file. A file that cannot be read is reported and left
//! alone: overwriting it would lose the conversation.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use clarify_core::transcript::Transcript;
use serde::{Deserialize, Serialize};

use crate::error::AgentError;

/// What the agent keeps between runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The layout of this file; only version 1 exists.
    pub version: u32,
    /// The session of every request the agent raises, and the home of its `session` grants
    /// (which the server keeps).
    pub session: String,
    /// The conversation, with the requests raised for tool calls as protocol messages.
    pub transcript: Transcript,
}

impl State {
    const VERSION: u32 = 1;

    /// A new conversation in a fresh session.
    pub fn new() -> Self {
        Self {
            version: Self::VERSION,
            session: format!("agent-{:016x}", rand::random::<u64>()),
            transcript: Transcript::new(),
        }
    }

    /// The state at `path`, or `None` when there is no file yet.
    pub fn load(path: &Path) -> Result<Option<Self>, AgentError> {
        let error = |detail: String| AgentError::StateRead {
            path: path.to_owned(),
            detail,
        };
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(error(e.to_string())),
        };
        let state: Self = serde_json::from_str(&text).map_err(|e| error(e.to_string()))?;
        if state.version != Self::VERSION {
            return Err(error(format!(
                "version {} is not one this agent reads (it reads {})",
                state.version,
                Self::VERSION
            )));
        }
        // A transcript that cannot be paired up would fail later, at the model; say so now.
        state
            .transcript
            .open_calls()
            .map_err(|e| error(e.to_string()))?;
        Ok(Some(state))
    }

    /// Replaces the file at `path` with this state.
    pub fn save(&self, path: &Path) -> Result<(), AgentError> {
        let error = |detail: String| AgentError::StateWrite {
            path: path.to_owned(),
            detail,
        };
        let text = serde_json::to_vec_pretty(self).map_err(|e| error(e.to_string()))?;
        let temporary = sibling(path);
        let written = (|| {
            let mut file = fs::File::create(&temporary)?;
            file.write_all(&text)?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            fs::rename(&temporary, path)?;
            // The rename itself is durable only once the directory is synced.
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                fs::File::open(dir)?.sync_all()?;
            }
            Ok::<(), std::io::Error>(())
        })();
        written.map_err(|e| {
            let _ = fs::remove_file(&temporary);
            error(e.to_string())
        })
    }
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the next state is written before it replaces the current one.
fn sibling(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    path.with_file_name(name)
}
