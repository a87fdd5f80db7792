//! The tools the model is offered: `ask_human` (clarify's own definition) and `write_file`, which
//! writes a text file inside a sandbox directory and runs only with a human's approval.

use std::fs;
use std::path::{Component, Path, PathBuf};

use clarify_core::tool::{Format, definition};
use serde_json::{Value, json};

/// The gated tool's name.
pub const WRITE_FILE: &str = "write_file";

/// The largest file `write_file` writes.
const MAX_CONTENT_BYTES: usize = 1 << 20;

/// The tool definitions sent with every completion (OpenAI strict mode).
pub fn definitions() -> Vec<Value> {
    vec![
        definition(Format::OpenAi),
        json!({
            "type": "function",
            "function": {
                "name": WRITE_FILE,
                "description": "Write a text file in the working directory, replacing it if it \
                    exists. A human approves every write and may edit the path or the content \
                    first; the result says what was written, or why nothing was.",
                "strict": true,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "path": {
                            "type": "string",
                            "description": "A relative path such as notes/todo.txt."
                        },
                        "content": {
                            "type": "string",
                            "description": "The whole text of the file."
                        }
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }
            }
        }),
    ]
}

/// Why `write_file` did not write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error("`{0}` must be a string")]
    NotAString(&'static str),
    #[error("the path is empty")]
    EmptyPath,
    #[error("the path {0:?} must be relative and stay inside the working directory (no `..`)")]
    Outside(String),
    #[error("the content is {0} bytes; at most 1 MiB is written")]
    TooLarge(usize),
    #[error("writing {path:?} failed: {detail}")]
    Io { path: String, detail: String },
}

/// The directory `write_file` writes in; nothing outside it is ever touched.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Checks `write_file` arguments without writing: the path and content are usable. Asking a
    /// human to approve a write that cannot happen would waste their time.
    pub fn check(&self, arguments: &Value) -> Result<(PathBuf, String), SandboxError> {
        let path = arguments["path"]
            .as_str()
            .ok_or(SandboxError::NotAString("path"))?;
        let content = arguments["content"]
            .as_str()
            .ok_or(SandboxError::NotAString("content"))?;
        if content.len() > MAX_CONTENT_BYTES {
            return Err(SandboxError::TooLarge(content.len()));
        }
        Ok((self.resolve(path)?, content.to_owned()))
    }

    /// The file `path` names inside the sandbox.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, SandboxError> {
        let trimmed = path.trim();
        if trimmed.is_empty() {
            return Err(SandboxError::EmptyPath);
        }
        let relative = Path::new(trimmed);
        let mut parts = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(SandboxError::Outside(path.to_owned()));
                }
            }
        }
        if parts.is_empty() {
            return Err(SandboxError::EmptyPath);
        }
        Ok(parts.iter().fold(self.root.clone(), |p, part| p.join(part)))
    }

    /// Writes the file `arguments` describe; returns the result for the model (JSON text).
    pub fn write(&self, arguments: &Value) -> Result<String, SandboxError> {
        let (target, content) = self.check(arguments)?;
        let shown = arguments["path"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let io = |e: std::io::Error| SandboxError::Io {
            path: shown.clone(),
            detail: e.to_string(),
        };
        fs::create_dir_all(&self.root).map_err(io)?;
        // Directories are made one by one, and a symbolic link anywhere on the way is refused:
        // following one could write (or create directories) outside the sandbox.
        let relative = target.strip_prefix(&self.root).unwrap_or(&target);
        let mut here = self.root.clone();
        let mut parts = relative.components().peekable();
        while let Some(part) = parts.next() {
            here.push(part);
            match fs::symlink_metadata(&here) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(SandboxError::Outside(shown));
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if parts.peek().is_some() {
                        fs::create_dir(&here).map_err(io)?;
                    }
                }
                Err(e) => return Err(io(e)),
            }
        }
        fs::write(&target, content.as_bytes()).map_err(io)?;
        Ok(json!({"written": shown, "bytes": content.len()}).to_string())
    }
}
