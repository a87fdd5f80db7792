//! `clarify hook claude-code`: Claude Code's `PreToolUse`, `PermissionRequest` and `Elicitation`
//! events.
//!
//! `PreToolUse` hears `permissionDecision` `allow` (with `updatedInput` for a person's edit),
//! `deny` and `ask`; `PermissionRequest` hears `decision.behavior` `allow` (with
//! `updatedInput`) or `deny`, and printing nothing shows Claude Code's own dialog. An
//! `AskUserQuestion` call becomes a clarify request with the same questions, whose choices come
//! back in `updatedInput.answers`, keyed by question text. An `Elicitation` (an MCP server asking
//! for input mid-call) becomes a form question built from the server's `requested_schema`; the
//! values come back as the elicitation's `content` (`accept`), a skip as `decline`, a request
//! cancelled in clarify as `cancel`.

use std::path::PathBuf;

use anyhow::bail;
use clarify_client::ClientError;
use clarify_client::wire::FieldBody;
use clarify_core::text::cut;
use serde_json::{Map, Value, json};

use super::decide::{self, Decider, OnTimeout, ToolCall, Verdict};
use super::{Agent, EventJson};

/// The longest question text clarify takes.
const TEXT_CHARS: usize = 4_000;
/// The longest question header clarify takes.
const HEADER_CHARS: usize = 32;

pub struct ClaudeCode;

pub enum Event {
    Tool { kind: ToolEvent, call: ToolCall },
    Elicitation(Elicitation),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolEvent {
    PreToolUse,
    PermissionRequest,
}

/// An MCP server's request for input, as Claude Code hands it to the hook.
pub struct Elicitation {
    server: String,
    message: String,
    /// `form` (a schema to fill in) or `url` (a page to visit, left to Claude Code).
    mode: String,
    schema: Option<Value>,
    /// Where the request's context and session come from.
    call: ToolCall,
}

impl Agent for ClaudeCode {
    const NAME: &'static str = "Claude Code";
    const COMMAND: &'static str = "claude-code";
    type Event = Event;

    fn parse(raw: &str) -> anyhow::Result<Event> {
        let event = EventJson::parse(raw, Self::NAME)?;
        let name = event
            .text("hook_event_name")?
            .ok_or_else(|| anyhow::anyhow!("the hook event on stdin has no hook_event_name"))?;
        let kind = match name.as_str() {
            "PreToolUse" => ToolEvent::PreToolUse,
            "PermissionRequest" => ToolEvent::PermissionRequest,
            "Elicitation" => return elicitation(&event).map(Event::Elicitation),
            other => bail!(
                "the hook event {other:?} is not one this hook decides; register it for PreToolUse, PermissionRequest or Elicitation"
            ),
        };
        let tool = event.required_text("tool_name")?;
        let mut call = ToolCall::new(Self::COMMAND, tool, event.input("tool_input", false)?);
        call.session = event.text("session_id")?;
        call.tool_call_id = event.text("tool_use_id")?;
        call.cwd = event.text("cwd")?;
        call.transcript = event.text("transcript_path")?.map(PathBuf::from);
        call.editable = true;
        Ok(Event::Tool { kind, call })
    }

    async fn decide(event: &Event, decider: &Decider) -> anyhow::Result<Option<Value>> {
        match event {
            Event::Tool { kind, call } => {
                let verdict = if call.tool == "AskUserQuestion" {
                    match decider.by_policy(call) {
                        Some(verdict) => verdict,
                        None => ask_questions(call, decider).await?,
                    }
                } else {
                    decider.decide(call).await?
                };
                Ok(render(*kind, &verdict))
            }
            Event::Elicitation(elicitation) => elicit(elicitation, decider).await,
        }
    }
}

/// The JSON Claude Code reads; `None` prints nothing (a `PermissionRequest` left to Claude
/// Code's own dialog).
fn render(kind: ToolEvent, verdict: &Verdict) -> Option<Value> {
    match kind {
        ToolEvent::PreToolUse => {
            let (name, reason, updated) = match verdict {
                Verdict::Allow {
                    reason,
                    updated_input,
                    ..
                } => ("allow", reason, updated_input.as_ref()),
                Verdict::Deny { reason } => ("deny", reason, None),
                Verdict::Ask { reason } => ("ask", reason, None),
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
        ToolEvent::PermissionRequest => {
            let decision = match verdict {
                Verdict::Allow { updated_input, .. } => {
                    let mut d = json!({"behavior": "allow"});
                    if let Some(input) = updated_input {
                        d["updatedInput"] = input.clone();
                    }
                    d
                }
                Verdict::Deny { reason } => json!({"behavior": "deny", "message": reason}),
                Verdict::Ask { .. } => return None,
            };
            Some(json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": decision,
            }}))
        }
    }
}

/// `AskUserQuestion`: the same questions as a clarify request; the choices come back keyed by
/// question text, several choices joined with ", ".
async fn ask_questions(call: &ToolCall, decider: &Decider) -> anyhow::Result<Verdict> {
    let asked = call.arguments["questions"]
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
            question["header"] = Value::from(cut(header.trim(), HEADER_CHARS));
        }
        questions.push(question);
    }
    let mut body = json!({
        "questions": questions,
        "timeout_seconds": decider.wait.as_secs().max(1),
    });
    decide::add_context(&mut body, call);
    let Some(outcome) = decide::ask_and_wait(decider.client()?, &body, decider.wait).await? else {
        return Ok(decider.timed_out());
    };
    let by = outcome.answered_by.as_deref().unwrap_or("a reviewer");
    match outcome.status.as_str() {
        "answered" => {}
        "expired" => return Ok(decider.timed_out()),
        "skipped" => {
            return Ok(Verdict::Ask {
                reason: format!("{by} skipped these questions in clarify; answer them here."),
            });
        }
        _ => {
            return Ok(Verdict::Deny {
                reason: "The questions were cancelled in clarify.".to_owned(),
            });
        }
    }
    let mut answers = Map::new();
    for (i, q) in asked.iter().enumerate() {
        let id = format!("q{}", i + 1);
        let answered = outcome
            .questions
            .iter()
            .find(|a| a.id == id)
            .map(|a| &a.answer);
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
    let mut updated = call.arguments.clone();
    if let Some(fields) = updated.as_object_mut() {
        fields.insert("answers".to_owned(), Value::Object(answers));
    }
    Ok(Verdict::Allow {
        reason: format!("Answered in clarify by {by}."),
        updated_input: Some(updated),
        scope: None,
    })
}

fn elicitation(event: &EventJson) -> anyhow::Result<Elicitation> {
    let server = event.required_text("mcp_server_name")?;
    let mode = event.text("mode")?.unwrap_or_else(|| "form".to_owned());
    let schema = match event.value("requested_schema") {
        None => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(other) => bail!(
            "the hook event's `requested_schema` must be an object, got {}",
            super::json_type(other)
        ),
    };
    if mode == "form" && schema.is_none() {
        bail!("the form elicitation has no `requested_schema`");
    }
    let mut call = ToolCall::new(ClaudeCode::COMMAND, server.clone(), Value::Null);
    call.session = event.text("session_id")?;
    call.cwd = event.text("cwd")?;
    call.transcript = event.text("transcript_path")?.map(PathBuf::from);
    call.context
        .insert("mcp_server".to_owned(), Value::from(server.as_str()));
    Ok(Elicitation {
        message: event.text("message")?.unwrap_or_default(),
        server,
        mode,
        schema,
        call,
    })
}

/// Asks the elicitation's form in clarify and gives Claude Code the person's answer.
async fn elicit(elicitation: &Elicitation, decider: &Decider) -> anyhow::Result<Option<Value>> {
    let Some(schema) = elicitation
        .schema
        .as_ref()
        .filter(|_| elicitation.mode == "form")
    else {
        // A page to visit: only Claude Code can open it for the person.
        return Ok(None);
    };
    let text = match elicitation.message.trim() {
        "" => format!("{} asks for some input.", elicitation.server),
        message => cut(message, TEXT_CHARS),
    };
    let mut body = json!({
        "questions": [{
            "id": "q1",
            "header": cut(elicitation.server.trim(), HEADER_CHARS),
            "text": text,
            "schema": schema,
        }],
        "timeout_seconds": decider.wait.as_secs().max(1),
    });
    decide::add_context(&mut body, &elicitation.call);
    let client = decider.client()?;
    let record = match client
        .create_retrying(&body, std::time::Duration::from_secs(10), |_| {})
        .await
    {
        Ok((record, _)) => record,
        Err(ClientError::Api {
            status: 422,
            message,
            ..
        }) => {
            // A schema clarify cannot show as a form: Claude Code's own dialog can.
            eprintln!(
                "clarify hook claude-code: {} asked for a form clarify cannot show ({message}); Claude Code asks instead",
                elicitation.server
            );
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let outcome = decide::wait_for(client, &record.id, decider.wait).await?;
    let action = match outcome.as_ref().map(|o| o.status.as_str()) {
        None | Some("expired") => match decider.on_timeout {
            OnTimeout::Ask => return Ok(None),
            OnTimeout::Deny => json!({"action": "decline"}),
        },
        Some("answered") => {
            let answered = outcome
                .as_ref()
                .and_then(|o| o.questions.first())
                .map(|q| &q.answer);
            let Some(Value::Object(values)) = answered else {
                bail!("the answered form came back without its values");
            };
            let fields = record
                .questions
                .first()
                .and_then(|q| q.fields.as_deref())
                .unwrap_or_default();
            json!({"action": "accept", "content": schema_values(schema, fields, values)})
        }
        Some("skipped") => json!({"action": "decline"}),
        Some(_) => json!({"action": "cancel"}),
    };
    let mut out = json!({"hookEventName": "Elicitation"});
    if let (Some(out), Value::Object(action)) = (out.as_object_mut(), action) {
        out.extend(action);
    }
    Ok(Some(json!({"hookSpecificOutput": out})))
}

/// The form's values as the MCP server's schema spells them: a choice answered with an option id
/// becomes the enumeration value in the option's place (clarify derives ids for values that are
/// not valid ids).
fn schema_values(schema: &Value, fields: &[FieldBody], values: &Map<String, Value>) -> Value {
    let mut content = Map::new();
    for (name, value) in values {
        let field = fields.iter().find(|f| f.id == *name);
        let ids: Vec<&str> = field
            .and_then(|f| f.options.as_ref())
            .map(|os| os.iter().map(|o| o.id.as_str()).collect())
            .unwrap_or_default();
        let property = &schema["properties"][name];
        let enumerated = enumeration(property)
            .or_else(|| enumeration(&property["items"]))
            .unwrap_or_default();
        let original = |v: &Value| -> Value {
            v.as_str()
                .and_then(|id| ids.iter().position(|o| *o == id))
                .and_then(|i| enumerated.get(i).cloned())
                .unwrap_or_else(|| v.clone())
        };
        let value = match value {
            Value::Array(items) => Value::Array(items.iter().map(original).collect()),
            other => original(other),
        };
        content.insert(name.clone(), value);
    }
    Value::Object(content)
}

/// The values of an enumeration (`enum`, or `oneOf` / `anyOf` of `{const}`), in order.
fn enumeration(property: &Value) -> Option<Vec<Value>> {
    if let Some(values) = property["enum"].as_array() {
        return Some(values.clone());
    }
    let alternatives = property["oneOf"]
        .as_array()
        .or_else(|| property["anyOf"].as_array())?;
    Some(alternatives.iter().map(|a| a["const"].clone()).collect())
}
