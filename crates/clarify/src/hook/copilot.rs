//! `clarify hook copilot`: GitHub Copilot's `PreToolUse`, in VS Code and in Copilot CLI.
//!
//! Both read the hook files in `.github/hooks/`, and the event comes in one of three shapes:
//!
//! - VS Code: `hookEventName`, `sessionId`, `tool_name`, `tool_input`, `tool_use_id`; it reads
//!   `hookSpecificOutput` (`permissionDecision` `allow`, `deny`, `ask`, with
//!   `permissionDecisionReason` and `updatedInput`), and exit 2 blocks the call.
//! - Copilot CLI for a hook registered as `PreToolUse` (its VS Code-compatible form):
//!   `hook_event_name`, `session_id`, `tool_name`, `tool_input`.
//! - Copilot CLI for a hook registered as `preToolUse`: `sessionId`, `toolName`, `toolArgs` (the
//!   arguments, as JSON text).
//!
//! Copilot CLI documents its decision as flat fields (`permissionDecision`,
//! `permissionDecisionReason`, `modifiedArgs` for edited arguments), so those are printed for its
//! events, beside `hookSpecificOutput` for the form it shares with VS Code. Copilot CLI lets a
//! call run when its hook fails (any non-zero exit), so for its events this hook blocks a call it
//! cannot decide with a `deny` instead of exit 2.

use std::path::PathBuf;

use anyhow::bail;
use serde_json::{Value, json};

use super::decide::{Decider, ToolCall, Verdict};
use super::{Agent, EventJson};

pub struct Copilot;

pub struct Event {
    host: Host,
    call: ToolCall,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Host {
    VsCode,
    /// Copilot CLI, a hook registered as `PreToolUse`.
    CliCompatible,
    /// Copilot CLI, a hook registered as `preToolUse`.
    Cli,
}

impl Agent for Copilot {
    const NAME: &'static str = "Copilot";
    const COMMAND: &'static str = "copilot";
    type Event = Event;

    fn parse(raw: &str) -> anyhow::Result<Event> {
        let event = EventJson::parse(raw, Self::NAME)?;
        let (host, mut call) = if event.has("toolName") {
            let tool = event.required_text("toolName")?;
            (
                Host::Cli,
                ToolCall::new(Self::COMMAND, tool, event.input("toolArgs", true)?),
            )
        } else {
            let (host, name) = match event.text("hookEventName")? {
                Some(name) => (Host::VsCode, name),
                None => match event.text("hook_event_name")? {
                    Some(name) => (Host::CliCompatible, name),
                    None => bail!(
                        "the hook event on stdin has no hookEventName (VS Code), hook_event_name or toolName (Copilot CLI)"
                    ),
                },
            };
            if name != "PreToolUse" {
                bail!(
                    "the hook event {name:?} is not one this hook decides; register it for PreToolUse"
                );
            }
            let tool = event.required_text("tool_name")?;
            let mut call = ToolCall::new(Self::COMMAND, tool, event.input("tool_input", true)?);
            call.tool_call_id = event.text("tool_use_id")?;
            (host, call)
        };
        call.session = event.text_of(&["sessionId", "session_id"])?;
        call.cwd = event.text("cwd")?;
        call.transcript = event
            .text_of(&["transcript_path", "transcriptPath"])?
            .map(PathBuf::from);
        call.editable = true;
        Ok(Event { host, call })
    }

    async fn decide(event: &Event, decider: &Decider) -> anyhow::Result<Option<Value>> {
        let verdict = decider.decide(&event.call).await?;
        Ok(Some(render(event.host, &verdict)))
    }

    fn blocked(event: &Event, reason: &str) -> Option<Value> {
        match event.host {
            Host::VsCode => None,
            Host::Cli | Host::CliCompatible => Some(render(
                event.host,
                &Verdict::Deny {
                    reason: format!(
                        "clarify could not decide this call ({reason}), so it was not run."
                    ),
                },
            )),
        }
    }
}

fn render(host: Host, verdict: &Verdict) -> Value {
    let (decision, reason, edited) = match verdict {
        Verdict::Allow {
            reason,
            updated_input,
            ..
        } => ("allow", reason, updated_input.as_ref()),
        Verdict::Deny { reason } => ("deny", reason, None),
        Verdict::Ask { reason } => ("ask", reason, None),
    };
    let mut specific = json!({
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    });
    let mut flat = json!({
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    });
    if let Some(input) = edited {
        specific["updatedInput"] = input.clone();
        flat["modifiedArgs"] = input.clone();
    }
    match host {
        Host::VsCode => json!({"hookSpecificOutput": specific}),
        Host::Cli => flat,
        Host::CliCompatible => {
            flat["hookSpecificOutput"] = specific;
            flat
        }
    }
}
