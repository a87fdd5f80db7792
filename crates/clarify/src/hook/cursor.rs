//! `clarify hook cursor`: Cursor's `beforeShellExecution`, `beforeMCPExecution` and
//! `preToolUse` events.
//!
//! Cursor reads a flat object: `permission` `allow`, `deny` or `ask` (its own prompt), with
//! `user_message` and `agent_message`; a deny's reason goes in both, since Cursor hands the
//! model the `user_message` of a denied call. `preToolUse` also takes `updated_input` (a
//! person's edit) but does not act on `ask`, which there leaves the call to Cursor's usual
//! flow; the shell and MCP events act on `ask` and take no edits. The installer registers the
//! hook with `failClosed`, under which Cursor blocks a call whose hook printed nothing, so with
//! `--fail-open` this hook prints `ask` rather than nothing.
//!
//! Tools are named as Cursor names them in `preToolUse`: a shell command is `Shell` with
//! `{"command"}`, an MCP tool `MCP:<tool>`; the session is the conversation.

use std::path::PathBuf;

use anyhow::bail;
use serde_json::{Value, json};

use super::decide::{Decider, ToolCall, Verdict};
use super::{Agent, EventJson};

pub struct Cursor;

pub struct Event {
    kind: Kind,
    call: ToolCall,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shell,
    Mcp,
    PreToolUse,
}

impl Agent for Cursor {
    const NAME: &'static str = "Cursor";
    const COMMAND: &'static str = "cursor";
    type Event = Event;

    fn parse(raw: &str) -> anyhow::Result<Event> {
        let event = EventJson::parse(raw, Self::NAME)?;
        let name = event
            .text("hook_event_name")?
            .ok_or_else(|| anyhow::anyhow!("the hook event on stdin has no hook_event_name"))?;
        let mut context = serde_json::Map::new();
        let (kind, mut call) = match name.as_str() {
            "beforeShellExecution" => {
                let command = event.required_text("command")?;
                let call = ToolCall::new(
                    Self::COMMAND,
                    "Shell".to_owned(),
                    json!({"command": command}),
                );
                (Kind::Shell, call)
            }
            "beforeMCPExecution" => {
                let tool = event.required_text("tool_name")?;
                for key in ["url", "command"] {
                    if let Some(server) = event.text(key)? {
                        context.insert(format!("mcp_server_{key}"), Value::String(server));
                    }
                }
                let call = ToolCall::new(
                    Self::COMMAND,
                    format!("MCP:{tool}"),
                    event.input("tool_input", true)?,
                );
                (Kind::Mcp, call)
            }
            "preToolUse" => {
                let tool = event.required_text("tool_name")?;
                let mut call = ToolCall::new(Self::COMMAND, tool, event.input("tool_input", true)?);
                call.tool_call_id = event.text("tool_use_id")?;
                call.editable = true;
                (Kind::PreToolUse, call)
            }
            other => bail!(
                "the hook event {other:?} is not one this hook decides; register it for beforeShellExecution, beforeMCPExecution or preToolUse"
            ),
        };
        call.session = event.text_of(&["conversation_id", "session_id"])?;
        call.cwd = match event.text("cwd")? {
            Some(cwd) => Some(cwd),
            None => event
                .value("workspace_roots")
                .and_then(|roots| roots.get(0))
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        call.transcript = event.text("transcript_path")?.map(PathBuf::from);
        call.context = context;
        Ok(Event { kind, call })
    }

    async fn decide(event: &Event, decider: &Decider) -> anyhow::Result<Option<Value>> {
        Ok(Some(match decider.decide(&event.call).await? {
            Verdict::Allow {
                reason,
                updated_input,
                ..
            } => {
                let mut out = json!({"permission": "allow", "user_message": reason});
                if let (Kind::PreToolUse, Some(input)) = (event.kind, updated_input) {
                    out["updated_input"] = input;
                }
                out
            }
            Verdict::Deny { reason } => json!({
                "permission": "deny",
                "user_message": reason,
                "agent_message": reason,
            }),
            Verdict::Ask { reason } => json!({"permission": "ask", "user_message": reason}),
        }))
    }

    fn undecided(_event: &Event) -> Option<Value> {
        Some(json!({"permission": "ask"}))
    }
}
