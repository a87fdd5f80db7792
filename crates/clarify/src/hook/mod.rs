//! `clarify hook <agent>`: command hooks that send coding agents' tool calls to a person through
//! clarify, one per agent (Claude Code, Codex, Cursor, Gemini CLI, GitHub Copilot), and `clarify
//! hook install`, which registers one in its agent's settings file.
//!
//! Each hook reads one event on stdin, decides it through the shared core in [`decide`] (policy,
//! grant, person), and prints the JSON its agent reads on stdout, nothing else. The agent
//! modules only translate: their event into a [`decide::ToolCall`], and the
//! [`decide::Verdict`] into their agent's words, saying where the agent cannot hear an answer
//! (Codex's `PreToolUse` cannot approve; Gemini's `allow` does not skip its own prompt).
//!
//! The hooks fail closed: whatever stops one from deciding (clarify out of reach, a bad policy
//! file, input that is not the agent's event or has a field of the wrong type) exits 2 with the
//! reason on stderr, which blocks the call, unless `--fail-open`, which prints no decision and
//! leaves the call to the agent's own rules and prompt. (Copilot CLI ignores a failing hook, so
//! its hook blocks with a deny decision instead; see [`copilot`].) A partial decision is never
//! printed.

mod claude_code;
mod codex;
mod copilot;
mod cursor;
pub mod decide;
mod gemini;
mod install;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use crate::client::Connection;
use crate::duration::parse_duration;
use decide::{Decider, OnTimeout};

pub use install::InstallArgs;

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Decide one Claude Code hook event (PreToolUse, PermissionRequest or Elicitation) read on
    /// stdin.
    #[command(
        after_help = "Claude Code runs it for every matching tool call; register it with `clarify hook install`.\nExit 2 (stderr: the reason) blocks the call when clarify cannot decide."
    )]
    ClaudeCode(HookArgs),
    /// Decide one Codex hook event (PermissionRequest, or PreToolUse for the policy's denials)
    /// read on stdin.
    #[command(
        after_help = "Register it with `clarify hook install --agent codex`.\nExit 2 (stderr: the reason) blocks the call when clarify cannot decide."
    )]
    Codex(HookArgs),
    /// Decide one Cursor hook event (beforeShellExecution, beforeMCPExecution, preToolUse) read
    /// on stdin.
    #[command(
        after_help = "Register it with `clarify hook install --agent cursor`.\nExit 2 (stderr: the reason) blocks the call when clarify cannot decide."
    )]
    Cursor(HookArgs),
    /// Decide one Gemini CLI BeforeTool event read on stdin.
    #[command(
        after_help = "Register it with `clarify hook install --agent gemini`.\nExit 2 (stderr: the reason) blocks the call when clarify cannot decide."
    )]
    Gemini(HookArgs),
    /// Decide one GitHub Copilot PreToolUse event (VS Code, or Copilot CLI) read on stdin.
    #[command(
        after_help = "Register it with `clarify hook install --agent copilot`.\nWhen clarify cannot decide it blocks the call: exit 2 for VS Code, a deny for Copilot CLI\n(which lets a failing hook's call run)."
    )]
    Copilot(HookArgs),
    /// Add a hook to a coding agent's settings file (idempotent; keeps everything else).
    #[command(
        after_help = "Examples:\n  clarify hook install\n  clarify hook install --scope project --matcher 'Bash|Write|Edit|mcp__.*'\n  clarify hook install --agent codex\n  clarify hook install --agent gemini --scope project --policy policy.toml"
    )]
    Install(InstallArgs),
}

/// The flags every agent's hook takes.
#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(flatten)]
    conn: Connection,
    /// A TOML file with `allow` and `deny` lists of tool-name patterns.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// A configuration file whose `[claude_code]` section is the policy (for every coding
    /// agent), unless `--policy` is given.
    #[arg(long, env = "CLARIFY_CONFIG")]
    config: Option<PathBuf>,
    /// How long to wait for a person; keep it below the hook's timeout in the settings file.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    wait: Duration,
    /// What an unanswered call gets: `ask` (the agent asks in its own way) or `deny`.
    #[arg(long, default_value = "ask", value_parser = ["ask", "deny"])]
    on_timeout: String,
    /// When clarify cannot decide, print no decision (the agent's own rules and prompt decide)
    /// instead of blocking the call.
    #[arg(long)]
    fail_open: bool,
}

impl HookArgs {
    fn decider(&self) -> anyhow::Result<Decider> {
        let policy =
            crate::policy::load_or_section(self.policy.as_deref(), self.config.as_deref(), |c| {
                c.claude_code
            })?;
        let on_timeout = if self.on_timeout == "deny" {
            OnTimeout::Deny
        } else {
            OnTimeout::Ask
        };
        Ok(Decider::new(
            policy,
            self.conn.clone(),
            self.wait,
            on_timeout,
        ))
    }
}

pub async fn run(command: HookCommand) -> anyhow::Result<ExitCode> {
    Ok(match command {
        HookCommand::ClaudeCode(args) => hook::<claude_code::ClaudeCode>(&args).await,
        HookCommand::Codex(args) => hook::<codex::Codex>(&args).await,
        HookCommand::Cursor(args) => hook::<cursor::Cursor>(&args).await,
        HookCommand::Gemini(args) => hook::<gemini::Gemini>(&args).await,
        HookCommand::Copilot(args) => hook::<copilot::Copilot>(&args).await,
        HookCommand::Install(args) => return install::run(args),
    })
}

/// One agent's side of a hook: its event, and its words for a verdict.
trait Agent {
    /// The agent's name in messages.
    const NAME: &'static str;
    /// The hook's subcommand (`clarify hook <COMMAND>`).
    const COMMAND: &'static str;
    type Event;
    /// Reads the agent's event from stdin's text; an error names what is wrong with it.
    fn parse(raw: &str) -> anyhow::Result<Self::Event>;
    /// Decides the event; `None` prints nothing (the agent decides as if no hook had spoken).
    async fn decide(event: &Self::Event, decider: &Decider) -> anyhow::Result<Option<Value>>;
    /// What blocks the call when clarify cannot decide: `None` exits 2 with the reason on
    /// stderr, the way most agents hear a blocking hook.
    fn blocked(_event: &Self::Event, _reason: &str) -> Option<Value> {
        None
    }
    /// What `--fail-open` prints when clarify cannot decide: `None` prints nothing.
    fn undecided(_event: &Self::Event) -> Option<Value> {
        None
    }
}

async fn hook<A: Agent>(args: &HookArgs) -> ExitCode {
    let mut event = None;
    let decided = async {
        let raw = decide::read_stdin()?;
        let parsed = event.insert(A::parse(&raw)?);
        // After the event is read, so that an agent blocked by an answer rather than an exit
        // code (Copilot CLI) is blocked by a bad policy file too.
        let decider = args.decider()?;
        A::decide(parsed, &decider).await
    }
    .await;
    match decided {
        Ok(output) => {
            if let Some(output) = output {
                println!("{output}");
            }
            ExitCode::SUCCESS
        }
        Err(e) if args.fail_open => {
            eprintln!(
                "clarify hook {}: {e:#}; {} decides instead (--fail-open)",
                A::COMMAND,
                A::NAME
            );
            if let Some(output) = event.as_ref().and_then(A::undecided) {
                println!("{output}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let reason = format!("{e:#}");
            eprintln!(
                "clarify hook {}: {reason}; the call was blocked",
                A::COMMAND
            );
            match event.as_ref().and_then(|e| A::blocked(e, &reason)) {
                Some(output) => {
                    println!("{output}");
                    ExitCode::SUCCESS
                }
                None => ExitCode::from(2),
            }
        }
    }
}

/// A hook event's JSON object, read field by field: a field of the wrong type is an error
/// naming it, never a value quietly taken as absent.
struct EventJson {
    fields: Map<String, Value>,
}

impl EventJson {
    fn parse(raw: &str, agent: &str) -> anyhow::Result<Self> {
        let value: Value = serde_json::from_str(raw).map_err(|e| {
            anyhow::anyhow!(
                "the hook event on stdin is not JSON ({e}); {agent} writes one JSON object"
            )
        })?;
        match value {
            Value::Object(fields) => Ok(Self { fields }),
            other => anyhow::bail!(
                "the hook event on stdin is {}, not a JSON object",
                json_type(&other)
            ),
        }
    }

    fn has(&self, key: &str) -> bool {
        self.fields.get(key).is_some_and(|v| !v.is_null())
    }

    /// A string field; absent, null and empty are `None`.
    fn text(&self, key: &str) -> anyhow::Result<Option<String>> {
        match self.fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => anyhow::bail!(
                "the hook event's `{key}` must be a string, got {}",
                json_type(other)
            ),
        }
    }

    /// A string field that must be there and not blank.
    fn required_text(&self, key: &str) -> anyhow::Result<String> {
        self.text(key)?
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| anyhow::anyhow!("the hook event has no `{key}`"))
    }

    /// The first of `keys` that is there, as a string.
    fn text_of(&self, keys: &[&str]) -> anyhow::Result<Option<String>> {
        for key in keys {
            if let Some(text) = self.text(key)? {
                return Ok(Some(text));
            }
        }
        Ok(None)
    }

    /// A tool's input: an object (absent or null: `{}`). With `json_text`, a string holding
    /// JSON is read too (agents that send the arguments as text); a string that is not JSON is
    /// kept as the arguments.
    fn input(&self, key: &str, json_text: bool) -> anyhow::Result<Value> {
        match self.fields.get(key) {
            None | Some(Value::Null) => Ok(Value::Object(Map::new())),
            Some(v @ Value::Object(_)) => Ok(v.clone()),
            Some(Value::String(s)) if json_text => Ok(serde_json::from_str::<Value>(s)
                .ok()
                .filter(|v| v.is_object() || v.is_array())
                .unwrap_or_else(|| Value::String(s.clone()))),
            Some(other) => anyhow::bail!(
                "the hook event's `{key}` must be an object, got {}",
                json_type(other)
            ),
        }
    }

    fn value(&self, key: &str) -> Option<&Value> {
        self.fields.get(key).filter(|v| !v.is_null())
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
