//! `clarify hook gemini`: Gemini CLI's `BeforeTool` event.
//!
//! Gemini CLI reads `decision` `deny` (the call fails and the model is told `reason`), `ask`
//! (Gemini CLI's own confirmation is forced) and `allow`, with `hookSpecificOutput.tool_input`
//! replacing the arguments (a person's edit), and shows `systemMessage` to its user.
//!
//! An `allow` does not approve the call in Gemini CLI: the call then goes on to Gemini CLI's own
//! policy, which may still ask in the terminal. Clarify says `allow` for what a person (or the
//! policy, or a grant) approved, and the tools the hook gates should be ones Gemini CLI's own
//! policy lets run without asking (for example `--approval-mode=yolo`, or its `tools.allowed`
//! list); otherwise a call approved in clarify is asked about a second time at the terminal.

use std::path::PathBuf;

use anyhow::bail;
use serde_json::{Value, json};

use super::decide::{Decider, ToolCall, Verdict};
use super::{Agent, EventJson};

pub struct Gemini;

impl Agent for Gemini {
    const NAME: &'static str = "Gemini CLI";
    const COMMAND: &'static str = "gemini";
    type Event = ToolCall;

    fn parse(raw: &str) -> anyhow::Result<ToolCall> {
        let event = EventJson::parse(raw, Self::NAME)?;
        let name = event
            .text("hook_event_name")?
            .ok_or_else(|| anyhow::anyhow!("the hook event on stdin has no hook_event_name"))?;
        if name != "BeforeTool" {
            bail!(
                "the hook event {name:?} is not one this hook decides; register it for BeforeTool"
            );
        }
        let tool = event.required_text("tool_name")?;
        let mut call = ToolCall::new(Self::COMMAND, tool, event.input("tool_input", false)?);
        call.session = event.text("session_id")?;
        call.cwd = event.text("cwd")?;
        call.transcript = event.text("transcript_path")?.map(PathBuf::from);
        call.editable = true;
        if let Some(Value::Object(mcp)) = event.value("mcp_context") {
            for key in ["server_name", "url", "command"] {
                if let Some(v) = mcp.get(key).filter(|v| v.is_string()) {
                    call.context.insert(format!("mcp_{key}"), v.clone());
                }
            }
        }
        Ok(call)
    }

    async fn decide(call: &ToolCall, decider: &Decider) -> anyhow::Result<Option<Value>> {
        Ok(Some(match decider.decide(call).await? {
            Verdict::Allow {
                reason,
                updated_input,
                ..
            } => {
                let mut out =
                    json!({"decision": "allow", "reason": reason, "systemMessage": reason});
                if let Some(input) = updated_input {
                    out["hookSpecificOutput"] =
                        json!({"hookEventName": "BeforeTool", "tool_input": input});
                }
                out
            }
            Verdict::Deny { reason } => {
                json!({"decision": "deny", "reason": reason, "systemMessage": reason})
            }
            Verdict::Ask { reason } => {
                json!({"decision": "ask", "reason": reason, "systemMessage": reason})
            }
        }))
    }
}
