//! `clarify hook install --agent NAME`: registers an agent's clarify hook in that agent's
//! settings file, through [`crate::settings`] (everything else in the file is kept, and
//! installing again changes nothing).
//!
//! Each agent's file, events and entry shape:
//!
//! | agent | user / project file | registered |
//! |---|---|---|
//! | `claude-code` | `~/.claude/settings.json` / `.claude/settings.json` (`local`: `.claude/settings.local.json`) | `PreToolUse` (matcher), `Elicitation` |
//! | `codex` | `$CODEX_HOME/hooks.json` (`~/.codex`) / `.codex/hooks.json` | `PermissionRequest`, `PreToolUse` (matcher) |
//! | `cursor` | `~/.cursor/hooks.json` / `.cursor/hooks.json` | `beforeShellExecution`, `beforeMCPExecution`, `preToolUse` (matcher), with `failClosed` |
//! | `gemini` | `~/.gemini/settings.json` / `.gemini/settings.json` | `BeforeTool` (matcher; timeout in milliseconds) |
//! | `copilot` | `~/.copilot/hooks/clarify.json` / `.github/hooks/clarify.json` | `PreToolUse` (VS Code's `command` and `timeout`, Copilot CLI's `bash` and `timeoutSec`) |
//!
//! The timeout written is `--wait` plus five minutes, so the hook always decides before the
//! agent gives up on it (Gemini CLI's default is 60 s, VS Code's and Copilot CLI's 30 s).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::duration::parse_duration;
use crate::settings::Registration;

/// The `--wait` a hook gets when none is given.
const DEFAULT_WAIT: Duration = Duration::from_secs(600);
/// How much longer than `--wait` the agent gives the hook.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(300);

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The coding agent whose settings get the hook.
    #[arg(long, default_value = "claude-code", value_parser = ["claude-code", "codex", "cursor", "gemini", "copilot"])]
    agent: String,
    /// `user` (the agent's settings in your home directory), `project` (in this directory), or
    /// for Claude Code `local` (.claude/settings.local.json, not committed).
    #[arg(long, default_value = "user", value_parser = ["user", "project", "local"])]
    scope: String,
    /// The tools the hook sees, as the agent's matcher (tool names separated by `|`, or a
    /// regex); each agent has a default. Copilot's hooks take none.
    #[arg(long)]
    matcher: Option<String>,
    /// A policy file the hook reads (made absolute).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// A configuration file whose `[claude_code]` section the hook reads (made absolute;
    /// checked now).
    #[arg(long)]
    config: Option<PathBuf>,
    /// How long the hook waits for a person (passed on as its `--wait`); the agent's timeout for
    /// the hook is set five minutes above it.
    #[arg(long, value_parser = parse_duration)]
    wait: Option<Duration>,
}

/// The agents, and what each one's settings file needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgentKind {
    ClaudeCode,
    Codex,
    Cursor,
    Gemini,
    Copilot,
}

impl AgentKind {
    fn parse(name: &str) -> Self {
        match name {
            "codex" => Self::Codex,
            "cursor" => Self::Cursor,
            "gemini" => Self::Gemini,
            "copilot" => Self::Copilot,
            _ => Self::ClaudeCode,
        }
    }

    fn command(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Cursor => "cursor",
            Self::Gemini => "gemini",
            Self::Copilot => "copilot",
        }
    }

    fn default_matcher(self) -> Option<&'static str> {
        match self {
            Self::ClaudeCode => {
                Some("Bash|Write|Edit|MultiEdit|NotebookEdit|AskUserQuestion|mcp__.*")
            }
            Self::Codex => Some("Bash|apply_patch|mcp__.*"),
            Self::Cursor => Some("Write"),
            Self::Gemini => Some("run_shell_command|write_file|replace|mcp_.*"),
            Self::Copilot => None,
        }
    }

    /// The settings file of `scope`.
    fn path(self, scope: &str) -> anyhow::Result<PathBuf> {
        let home = || -> anyhow::Result<PathBuf> {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .ok_or_else(|| anyhow::anyhow!("HOME is not set; use --scope project"))
        };
        if scope == "local" && self != Self::ClaudeCode {
            bail!("--scope local is Claude Code's; use user or project");
        }
        let user = scope == "user";
        Ok(match self {
            Self::ClaudeCode => match scope {
                "user" => home()?.join(".claude").join("settings.json"),
                "project" => PathBuf::from(".claude").join("settings.json"),
                _ => PathBuf::from(".claude").join("settings.local.json"),
            },
            Self::Codex if user => match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
                Some(codex_home) => PathBuf::from(codex_home).join("hooks.json"),
                None => home()?.join(".codex").join("hooks.json"),
            },
            Self::Codex => PathBuf::from(".codex").join("hooks.json"),
            Self::Cursor if user => home()?.join(".cursor").join("hooks.json"),
            Self::Cursor => PathBuf::from(".cursor").join("hooks.json"),
            Self::Gemini if user => home()?.join(".gemini").join("settings.json"),
            Self::Gemini => PathBuf::from(".gemini").join("settings.json"),
            Self::Copilot if user => home()?.join(".copilot").join("hooks").join("clarify.json"),
            Self::Copilot => PathBuf::from(".github").join("hooks").join("clarify.json"),
        })
    }

    /// The top-level keys the file needs, where it has none.
    fn defaults(self) -> Vec<(&'static str, Value)> {
        match self {
            Self::Cursor | Self::Copilot => vec![("version", json!(1))],
            _ => Vec::new(),
        }
    }

    /// The hooks to register for `command`, with `timeout` (seconds) and `matcher`.
    fn registrations(
        self,
        command: &str,
        timeout: u64,
        matcher: Option<&str>,
    ) -> Vec<Registration> {
        let register = |event: &str, entry: Value| Registration {
            event: event.to_owned(),
            entry,
        };
        let group = |matcher: Option<&str>, hook: Value| {
            let mut group = json!({});
            if let Some(matcher) = matcher {
                group["matcher"] = Value::from(matcher);
            }
            group["hooks"] = json!([hook]);
            group
        };
        let hook = json!({"type": "command", "command": command, "timeout": timeout});
        match self {
            Self::ClaudeCode => vec![
                register("PreToolUse", group(matcher, hook.clone())),
                register("Elicitation", group(None, hook)),
            ],
            Self::Codex => {
                let mut waiting = hook.clone();
                waiting["statusMessage"] = json!("Waiting for approval in clarify");
                vec![
                    register("PermissionRequest", group(matcher, waiting)),
                    register("PreToolUse", group(matcher, hook)),
                ]
            }
            Self::Cursor => {
                let entry = json!({"command": command, "timeout": timeout, "failClosed": true});
                let mut tools = entry.clone();
                if let Some(matcher) = matcher {
                    tools["matcher"] = Value::from(matcher);
                }
                vec![
                    register("beforeShellExecution", entry.clone()),
                    register("beforeMCPExecution", entry),
                    register("preToolUse", tools),
                ]
            }
            Self::Gemini => vec![register(
                "BeforeTool",
                group(
                    matcher,
                    json!({
                        "type": "command",
                        "name": "clarify",
                        "command": command,
                        "timeout": timeout * 1_000,
                        "description": "Asks a person through clarify before a tool runs",
                    }),
                ),
            )],
            Self::Copilot => vec![register(
                "PreToolUse",
                json!({
                    "type": "command",
                    "command": command,
                    "bash": command,
                    "timeout": timeout,
                    "timeoutSec": timeout,
                }),
            )],
        }
    }
}

pub fn run(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let agent = AgentKind::parse(&args.agent);
    let path = agent.path(&args.scope)?;
    let matcher = match (&args.matcher, agent.default_matcher()) {
        (Some(_), None) => bail!("Copilot's hooks take no matcher; leave out --matcher"),
        (Some(given), Some(_)) => Some(given.as_str()),
        (None, default) => default,
    };
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let mut command = format!(
        "{} hook {}",
        shell_word(&exe.to_string_lossy()),
        agent.command()
    );
    if let Some(policy) = &args.policy {
        let policy = std::path::absolute(policy)
            .with_context(|| format!("cannot resolve {}", policy.display()))?;
        if !policy.is_file() {
            bail!("the policy file {} does not exist", policy.display());
        }
        command.push_str(" --policy ");
        command.push_str(&shell_word(&policy.to_string_lossy()));
    }
    if let Some(config) = &args.config {
        let config = std::path::absolute(config)
            .with_context(|| format!("cannot resolve {}", config.display()))?;
        crate::config::load(&config).map_err(anyhow::Error::msg)?;
        command.push_str(" --config ");
        command.push_str(&shell_word(&config.to_string_lossy()));
    }
    let wait = args.wait.unwrap_or(DEFAULT_WAIT);
    if wait != DEFAULT_WAIT {
        command.push_str(&format!(" --wait {}s", wait.as_secs().max(1)));
    }
    let timeout = (wait + TIMEOUT_MARGIN).as_secs();
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    let marker = format!(" hook {}", agent.command());
    let merged = crate::settings::merge_hooks(
        existing.as_deref(),
        &agent.defaults(),
        &agent.registrations(&command, timeout, matcher),
        &marker,
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}; fix or move the file, then try again",
            path.display()
        )
    })?;
    if existing.as_deref() == Some(merged.as_str()) {
        println!("{} already has the clarify hook", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    crate::settings::write_atomically(&path, &merged)
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("added the clarify hook to {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `word` as one shell word: unchanged when it is plain, single-quoted otherwise.
fn shell_word(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c));
    if plain && !word.is_empty() {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
