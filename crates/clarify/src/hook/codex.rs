//! `clarify hook codex`: OpenAI Codex's `PermissionRequest` and `PreToolUse` events.
//!
//! `PermissionRequest` runs where Codex would ask its user to approve a call (shell commands,
//! `apply_patch`, MCP tools), and is the one seam that can let a call run:
//! `decision.behavior` `allow`, or `deny` with a `message` for the model; printing nothing
//! leaves the call to Codex's own prompt. Codex refuses an `updatedInput` there (the hook then
//! fails closed), so a person is not offered edits for Codex calls; they can deny with a reason
//! saying what to run instead.
//!
//! `PreToolUse` runs before every matching call but cannot approve one: Codex honours only
//! `deny` (an `allow` without an input rewrite, and `ask`, are ignored and the call runs on). So
//! there the hook applies the policy's deny list and nothing else: a person asked there could
//! not let the call run, and would be asked again at `PermissionRequest`. Which calls reach
//! `PermissionRequest` is Codex's approval policy: as of Codex 0.169, `approval_policy =
//! "on-request"` sends a command the model asks to run outside the sandbox and a patch outside
//! the folders the sandbox may write (`"untrusted"` is refused at start). `codex exec` runs with
//! the policy `never` whatever the configuration says, so there `PermissionRequest` never runs
//! and only the policy's denials at `PreToolUse` apply. Codex runs hooks by default (`[features]
//! hooks`, which replaced `codex_hooks`) once the user trusts them (`/hooks`), or unreviewed for
//! one run with `--dangerously-bypass-hook-trust`.
//!
//! A shell command's `description` (the justification Codex writes for it) is shown as context
//! and is not part of the action, so a `session` grant covers the same command again however it
//! is justified.

use std::path::PathBuf;

use anyhow::bail;
use serde_json::{Value, json};

use super::decide::{Decider, ToolCall, Verdict};
use super::{Agent, EventJson};

pub struct Codex;

pub struct Event {
    kind: Kind,
    call: ToolCall,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PermissionRequest,
    PreToolUse,
}

impl Agent for Codex {
    const NAME: &'static str = "Codex";
    const COMMAND: &'static str = "codex";
    type Event = Event;

    fn parse(raw: &str) -> anyhow::Result<Event> {
        let event = EventJson::parse(raw, Self::NAME)?;
        let name = event
            .text("hook_event_name")?
            .ok_or_else(|| anyhow::anyhow!("the hook event on stdin has no hook_event_name"))?;
        let kind = match name.as_str() {
            "PermissionRequest" => Kind::PermissionRequest,
            "PreToolUse" => Kind::PreToolUse,
            other => bail!(
                "the hook event {other:?} is not one this hook decides; register it for PermissionRequest (and PreToolUse)"
            ),
        };
        let tool = event.required_text("tool_name")?;
        let mut arguments = event.input("tool_input", false)?;
        let mut call_context = serde_json::Map::new();
        if matches!(tool.as_str(), "Bash" | "NetworkAccess")
            && let Some(fields) = arguments.as_object_mut()
            && let Some(why) = fields.remove("description")
        {
            call_context.insert("justification".to_owned(), why);
        }
        let mut call = ToolCall::new(Self::COMMAND, tool, arguments);
        call.session = event.text("session_id")?;
        call.tool_call_id = event.text("tool_use_id")?;
        call.cwd = event.text("cwd")?;
        call.transcript = event.text("transcript_path")?.map(PathBuf::from);
        if let Some(turn) = event.text("turn_id")? {
            call_context.insert("turn".to_owned(), Value::String(turn));
        }
        call.context = call_context;
        Ok(Event { kind, call })
    }

    async fn decide(event: &Event, decider: &Decider) -> anyhow::Result<Option<Value>> {
        Ok(match event.kind {
            Kind::PermissionRequest => {
                let decision = match decider.decide(&event.call).await? {
                    Verdict::Allow { .. } => json!({"behavior": "allow"}),
                    Verdict::Deny { reason } => json!({"behavior": "deny", "message": reason}),
                    Verdict::Ask { .. } => return Ok(None),
                };
                Some(json!({"hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": decision,
                }}))
            }
            Kind::PreToolUse => match decider.by_policy(&event.call) {
                Some(Verdict::Deny { reason }) => Some(json!({"hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }})),
                _ => None,
            },
        })
    }
}
