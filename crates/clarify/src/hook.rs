//! `clarify hook claude-code`: a Claude Code command hook that sends tool calls to a human
//! through clarify; `clarify hook install`: registers it in a Claude Code settings file.
//!
//! The hook reads one `PreToolUse` or `PermissionRequest` event on stdin and decides, in order:
//! by the policy file (allow / deny tool-name patterns), by a grant the server remembers
//! (`/v1/grants/check`: an earlier `session` or `always` approval of the same call), or by a
//! human approval it raises and waits for (`--wait`). `AskUserQuestion` calls become a clarify
//! request with the same questions, and the choices come back as the tool's `answers`.
//!
//! Claude Code lets a call proceed when a hook fails in any way but exit code 2, so this hook
//! fails closed: whatever stops it from deciding (clarify out of reach, a bad policy file,
//! unreadable input) exits 2 with the reason on stderr, which blocks the call, unless
//! `--fail-open`, which prints no decision and leaves the call to Claude Code's own permission
//! rules and prompt. Stdout carries the decision JSON and nothing else.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use clarify_client::{Client, ClientError};
use clarify_core::policy::{ApprovalReply, ApprovalSpec, PolicyDecision, Verdict, settle};
use clarify_core::{Action, Scope, Status};
use serde_json::{Map, Value, json};

use crate::client::Connection;
use crate::duration::parse_duration;

/// The agent name requests raised by the hook carry.
const AGENT: &str = "claude-code";
/// The longest assistant text taken from the transcript as context.
const CONTEXT_CHARS: usize = 2_000;
/// The most of a transcript read, from its end.
const TRANSCRIPT_TAIL: u64 = 1 << 20;

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Decide one Claude Code hook event (PreToolUse or PermissionRequest) read on stdin.
    #[command(
        after_help = "Claude Code runs it for every matching tool call; register it with `clarify hook install`.\nExit 2 (stderr: the reason) blocks the call when clarify cannot decide."
    )]
    ClaudeCode(ClaudeCodeArgs),
    /// Add the hook to a Claude Code settings file (idempotent; keeps everything else).
    #[command(
        after_help = "Examples:\n  clarify hook install\n  clarify hook install --scope project --matcher 'Bash|Write|Edit|mcp__.*'"
    )]
    Install(InstallArgs),
}

#[derive(Debug, Args)]
pub struct ClaudeCodeArgs {
    #[command(flatten)]
    conn: Connection,
    /// A TOML file with `allow` and `deny` lists of tool-name patterns.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// A configuration file whose `[claude_code]` section is the policy, unless `--policy` is
    /// given.
    #[arg(long, env = "CLARIFY_CONFIG")]
    config: Option<PathBuf>,
    /// How long to wait for a human; keep it below the hook's timeout in the settings file.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    wait: Duration,
    /// What an unanswered call gets: `ask` (Claude Code asks in the terminal) or `deny`.
    #[arg(long, default_value = "ask", value_parser = ["ask", "deny"])]
    on_timeout: String,
    /// When clarify cannot be reached, print no decision (Claude Code's own rules and prompt
    /// decide) instead of blocking the call.
    #[arg(long)]
    fail_open: bool,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// `user` (~/.claude/settings.json), `project` (.claude/settings.json) or `local`
    /// (.claude/settings.local.json, not committed).
    #[arg(long, default_value = "user", value_parser = ["user", "project", "local"])]
    scope: String,
    /// The tools the hook sees: Claude Code's matcher (tool names separated by `|`, or a regex).
    #[arg(long, default_value = DEFAULT_MATCHER)]
    matcher: String,
    /// A policy file the hook reads (made absolute).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// A configuration file whose `[claude_code]` section the hook reads (made absolute;
    /// checked now).
    #[arg(long)]
    config: Option<PathBuf>,
}

const DEFAULT_MATCHER: &str = "Bash|Write|Edit|MultiEdit|NotebookEdit|AskUserQuestion|mcp__.*";
/// The hook's timeout in the settings file, in seconds: above the default `--wait` of 10 minutes,
/// so the hook always decides before Claude Code gives up on it.
const HOOK_TIMEOUT_SECONDS: u64 = 900;

pub async fn run(command: HookCommand) -> anyhow::Result<ExitCode> {
    match command {
        HookCommand::ClaudeCode(args) => Ok(claude_code(args).await),
        HookCommand::Install(args) => install(args),
    }
}

// ---------------------------------------------------------------------------------------------
// The hook

/// The hook events this hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    PreToolUse,
    PermissionRequest,
}

/// What the hook tells Claude Code.
#[derive(Debug, Clone, PartialEq)]
enum Decision {
    Allow {
        reason: String,
        updated_input: Option<Value>,
    },
    Deny {
        reason: String,
    },
    /// Claude Code's own prompt decides.
    Ask {
        reason: String,
    },
}

/// One hook event, as read from stdin.
#[derive(Debug)]
struct HookInput {
    event: Event,
    tool_name: String,
    tool_input: Value,
    session: Option<String>,
    tool_use_id: Option<String>,
    cwd: Option<String>,
    transcript_path: Option<PathBuf>,
}

async fn claude_code(args: ClaudeCodeArgs) -> ExitCode {
    match decide(&args).await {
        Ok((event, decision)) => {
            if let Some(output) = render(event, &decision) {
                println!("{output}");
            }
            ExitCode::SUCCESS
        }
        Err(e) if args.fail_open => {
            eprintln!("clarify hook: {e:#}; Claude Code decides instead (--fail-open)");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("clarify hook: {e:#}; the call was blocked");
            ExitCode::from(2)
        }
    }
}

async fn decide(args: &ClaudeCodeArgs) -> anyhow::Result<(Event, Decision)> {
    let policy =
        crate::policy::load_or_section(args.policy.as_deref(), args.config.as_deref(), |c| {
            c.claude_code
        })?;
    let mut raw = String::new();
    std::io::stdin()
        .read_to_string(&mut raw)
        .context("cannot read the hook event on stdin")?;
    let input = parse_input(&raw)?;
    let client = args.conn.client()?;
    let session = input.session.as_deref();
    match policy.decide(&input.tool_name, &input.tool_input, session, &[]) {
        PolicyDecision::Denied => {
            return Ok((
                input.event,
                Decision::Deny {
                    reason: format!(
                        "The policy does not allow {} here, so it was not run.",
                        input.tool_name
                    ),
                },
            ));
        }
        PolicyDecision::Allowed => {
            return Ok((
                input.event,
                Decision::Allow {
                    reason: format!("The policy allows {}.", input.tool_name),
                    updated_input: None,
                },
            ));
        }
        PolicyDecision::Granted(_) | PolicyDecision::Ask => {}
    }
    let decision = if input.tool_name == "AskUserQuestion" {
        ask_questions(&client, &input, args).await?
    } else {
        approve(&client, &input, args).await?
    };
    Ok((input.event, decision))
}

fn parse_input(raw: &str) -> anyhow::Result<HookInput> {
    let value: Value = serde_json::from_str(raw)
        .map_err(|e| anyhow::anyhow!("the hook event on stdin is not JSON: {e}"))?;
    let text = |key: &str| value[key].as_str().map(str::to_owned);
    let event = match value["hook_event_name"].as_str() {
        Some("PreToolUse") => Event::PreToolUse,
        Some("PermissionRequest") => Event::PermissionRequest,
        Some(other) => bail!(
            "the hook event {other:?} is not one this hook decides; register it for PreToolUse or PermissionRequest"
        ),
        None => bail!("the hook event on stdin has no hook_event_name"),
    };
    let tool_name = text("tool_name")
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| anyhow::anyhow!("the hook event on stdin has no tool_name"))?;
    let tool_input = match value.get("tool_input") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v) => v.clone(),
    };
    Ok(HookInput {
        event,
        tool_name,
        tool_input,
        session: text("session_id").filter(|s| !s.is_empty()),
        tool_use_id: text("tool_use_id").filter(|s| !s.is_empty()),
        cwd: text("cwd"),
        transcript_path: text("transcript_path").map(PathBuf::from),
    })
}

/// A tool call: granted earlier, or approved (or not) by a human now.
async fn approve(
    client: &Client,
    input: &HookInput,
    args: &ClaudeCodeArgs,
) -> anyhow::Result<Decision> {
    let action = Action {
        name: input.tool_name.clone(),
        arguments: input.tool_input.clone(),
    };
    let session = input.session.as_deref();
    let checked = client
        .check_grant(
            &json!({"name": action.name, "arguments": action.arguments}),
            session,
        )
        .await?;
    if checked["granted"] == true {
        let grant = &checked["grant"];
        let by = grant["granted_by"].as_str().unwrap_or("a reviewer");
        let scope = grant["scope"].as_str().unwrap_or("always");
        return Ok(Decision::Allow {
            reason: format!("Approved earlier in clarify by {by} (scope {scope})."),
            updated_input: None,
        });
    }
    let spec = ApprovalSpec {
        scopes: Scope::ALL.to_vec(),
        allow_edit: true,
        timeout_seconds: Some(args.wait.as_secs().max(1)),
    };
    let mut body = spec.request(&action, input.tool_use_id.as_deref(), session);
    add_context(&mut body, input);
    let Some(outcome) = ask_and_wait(client, &body, args.wait).await? else {
        return Ok(on_timeout(args));
    };
    let reply = ApprovalReply::from_json(&outcome)?;
    let by = outcome["answered_by"].as_str().unwrap_or("a reviewer");
    Ok(match (reply.status, settle(&action, session, &reply)) {
        (
            _,
            Verdict::Run {
                arguments, edited, ..
            },
        ) => Decision::Allow {
            reason: if edited {
                format!("Approved in clarify by {by}, with edited arguments.")
            } else {
                format!("Approved in clarify by {by}.")
            },
            updated_input: edited.then_some(arguments),
        },
        (Status::Expired, _) => on_timeout(args),
        (Status::Skipped, _) => Decision::Ask {
            reason: format!("{by} skipped this in clarify; decide here."),
        },
        (_, Verdict::Refuse(refusal)) => Decision::Deny {
            reason: refusal.reason,
        },
    })
}

/// `AskUserQuestion`: the same questions as a clarify request; the choices come back keyed by
/// question text, several choices joined with ", ".
async fn ask_questions(
    client: &Client,
    input: &HookInput,
    args: &ClaudeCodeArgs,
) -> anyhow::Result<Decision> {
    let asked = input.tool_input["questions"]
        .as_array()
        .filter(|qs| !qs.is_empty())
        .ok_or_else(|| anyhow::anyhow!("AskUserQuestion came without questions"))?;
    let mut questions = Vec::new();
    for (i, q) in asked.iter().enumerate() {
        let text = q["question"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("AskUserQuestion question {} has no text", i + 1))?;
        let options: Vec<Value> = q["options"]
            .as_array()
            .map(|os| {
                os.iter()
                    .filter_map(|o| {
                        let label = o["label"].as_str()?;
                        let mut option = json!({"label": label});
                        if let Some(d) = o["description"].as_str().filter(|d| !d.is_empty()) {
                            option["description"] = Value::from(d);
                        }
                        Some(option)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut question = json!({
            "id": format!("q{}", i + 1),
            "text": text,
            "kind": if q["multiSelect"] == true { "multi" } else { "single" },
            "options": options,
            "allow_other": true,
        });
        if let Some(header) = q["header"].as_str().filter(|h| !h.trim().is_empty()) {
            question["header"] = Value::from(header.chars().take(32).collect::<String>());
        }
        questions.push(question);
    }
    let mut body = json!({
        "questions": questions,
        "timeout_seconds": args.wait.as_secs().max(1),
    });
    if let Some(session) = &input.session {
        body["session"] = Value::from(session.as_str());
    }
    if let Some(id) = &input.tool_use_id {
        body["tool_call_id"] = Value::from(id.as_str());
    }
    add_context(&mut body, input);
    let Some(outcome) = ask_and_wait(client, &body, args.wait).await? else {
        return Ok(on_timeout(args));
    };
    let by = outcome["answered_by"].as_str().unwrap_or("a reviewer");
    match outcome["status"].as_str() {
        Some("answered") => {}
        Some("expired") => return Ok(on_timeout(args)),
        Some("skipped") => {
            return Ok(Decision::Ask {
                reason: format!("{by} skipped these questions in clarify; answer them here."),
            });
        }
        _ => {
            return Ok(Decision::Deny {
                reason: "The questions were cancelled in clarify.".to_owned(),
            });
        }
    }
    let mut answers = Map::new();
    for (i, q) in asked.iter().enumerate() {
        let id = format!("q{}", i + 1);
        let answered = outcome["questions"]
            .as_array()
            .and_then(|qs| qs.iter().find(|a| a["id"] == id.as_str()))
            .map(|a| &a["answer"]);
        let text = match answered {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            _ => continue,
        };
        if let Some(question) = q["question"].as_str() {
            answers.insert(question.to_owned(), Value::String(text));
        }
    }
    let mut updated = input.tool_input.clone();
    if let Some(fields) = updated.as_object_mut() {
        fields.insert("answers".to_owned(), Value::Object(answers));
    }
    Ok(Decision::Allow {
        reason: format!("Answered in clarify by {by}."),
        updated_input: Some(updated),
    })
}

/// Raises the request and waits up to `wait` for its outcome; `None` when nobody answered in
/// time (the request is then cancelled, so a late answer cannot grant anything).
async fn ask_and_wait(
    client: &Client,
    body: &Value,
    wait: Duration,
) -> Result<Option<Value>, ClientError> {
    let (record, _) = client
        .create_retrying(body, Duration::from_secs(10), |_| {})
        .await?;
    let id = record.id().to_owned();
    match tokio::time::timeout(wait, client.wait_resolved(&id, |_| {})).await {
        Ok(resolved) => Ok(resolved?.outcome().cloned()),
        Err(_) => {
            // Best effort: the request also expires on its own at the same time.
            let _ = client.cancel(&id).await;
            Ok(None)
        }
    }
}

fn on_timeout(args: &ClaudeCodeArgs) -> Decision {
    let waited = clarify_core::humanize_seconds(args.wait.as_secs());
    if args.on_timeout == "deny" {
        Decision::Deny {
            reason: format!("Nobody answered in clarify within {waited}, so the call was not run."),
        }
    } else {
        Decision::Ask {
            reason: format!("Nobody answered in clarify within {waited}; decide here."),
        }
    }
}

/// The request's agent and context: the working directory and the assistant's last words.
fn add_context(body: &mut Value, input: &HookInput) {
    let mut context = Map::new();
    if let Some(cwd) = &input.cwd {
        context.insert("working_directory".to_owned(), Value::from(cwd.as_str()));
    }
    if let Some(said) = input
        .transcript_path
        .as_deref()
        .and_then(last_assistant_text)
    {
        context.insert("assistant".to_owned(), Value::String(said));
    }
    body["agent"] = Value::from(AGENT);
    if !context.is_empty() {
        body["context"] = Value::Object(context);
    }
}

/// The text of the last assistant message in a Claude Code transcript (JSON lines), when the
/// file is readable; cut to [`CONTEXT_CHARS`].
fn last_assistant_text(path: &Path) -> Option<String> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TRANSCRIPT_TAIL)))
        .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().rev().find_map(|line| {
        let entry: Value = serde_json::from_str(line).ok()?;
        let message = &entry["message"];
        if entry["type"] != "assistant" && message["role"] != "assistant" {
            return None;
        }
        let said = match &message["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => return None,
        };
        let said = said.trim();
        if said.is_empty() {
            return None;
        }
        let mut cut: String = said.chars().take(CONTEXT_CHARS).collect();
        if cut.len() < said.len() {
            cut.push('…');
        }
        Some(cut)
    })
}

/// The JSON Claude Code expects; `None` prints nothing (a PermissionRequest left to Claude
/// Code's own dialog).
fn render(event: Event, decision: &Decision) -> Option<Value> {
    match event {
        Event::PreToolUse => {
            let (name, reason, updated) = match decision {
                Decision::Allow {
                    reason,
                    updated_input,
                } => ("allow", reason, updated_input.as_ref()),
                Decision::Deny { reason } => ("deny", reason, None),
                Decision::Ask { reason } => ("ask", reason, None),
            };
            let mut out = json!({
                "hookEventName": "PreToolUse",
                "permissionDecision": name,
                "permissionDecisionReason": reason,
            });
            if let Some(input) = updated {
                out["updatedInput"] = input.clone();
            }
            Some(json!({"hookSpecificOutput": out}))
        }
        Event::PermissionRequest => {
            let decision = match decision {
                Decision::Allow { updated_input, .. } => {
                    let mut d = json!({"behavior": "allow"});
                    if let Some(input) = updated_input {
                        d["updatedInput"] = input.clone();
                    }
                    d
                }
                Decision::Deny { reason } => json!({"behavior": "deny", "message": reason}),
                Decision::Ask { .. } => return None,
            };
            Some(json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": decision,
            }}))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Install

fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let path = settings_path(&args.scope)?;
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let mut command = format!("{} hook claude-code", shell_word(&exe.to_string_lossy()));
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
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    let merged = crate::settings::merge_hook(
        existing.as_deref(),
        &args.matcher,
        &command,
        HOOK_TIMEOUT_SECONDS,
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

fn settings_path(scope: &str) -> anyhow::Result<PathBuf> {
    Ok(match scope {
        "user" => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .ok_or_else(|| anyhow::anyhow!("HOME is not set; use --scope project or local"))?;
            PathBuf::from(home).join(".claude").join("settings.json")
        }
        "project" => PathBuf::from(".claude").join("settings.json"),
        _ => PathBuf::from(".claude").join("settings.local.json"),
    })
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
