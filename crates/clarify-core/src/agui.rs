//! AG-UI (the Agent-User Interaction protocol) as clarify reads and writes it, without I/O: a
//! run's input (`RunAgentInput`) checked before it is forwarded, the interrupts a run ends with
//! (AG-UI 1.0's `RUN_FINISHED` `outcome.type = "interrupt"`, and LangGraph's older
//! `on_interrupt` custom event), each made a clarify request body, and a request's outcome made
//! the interrupt's resume entry.
//!
//! The mapping of an interrupt (`reason`) to a question: `tool_call` is an approval of that tool
//! call with its arguments (edits offered when the `responseSchema` has `editedArgs`);
//! `input_required` with a `responseSchema` is a form from that schema; `confirmation` is a
//! yes/no question; anything else (a framework's own reason such as `langgraph:interrupt`) is an
//! open question, or a form when it carries a `responseSchema` clarify can show. The payloads
//! resumed: an approval or a confirmation gives `{"approved": bool}` (with `editedArgs` when a
//! person edited the arguments, and `reason` when they gave one), a form its values object, an
//! open question the text typed. A request nobody answered (skipped, expired, cancelled) resumes
//! its interrupt as `cancelled`: AG-UI keeps denials in the payload, and abandonment in the
//! status.

use serde_json::{Map, Value, json};

/// A `RunAgentInput` that was checked: the fields clarify reads, and the whole object to forward
/// unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInput {
    pub thread_id: String,
    pub run_id: String,
    /// `resume[]`: answers to the interrupts of the thread's last run (empty: none).
    pub resume: Vec<ResumeEntry>,
    /// `forwardedProps.command.resume`, LangGraph's older resume, when given.
    pub legacy_resume: Option<Value>,
    pub raw: Map<String, Value>,
}

/// One entry of `resume[]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeEntry {
    pub interrupt_id: String,
    /// `resolved`, or `cancelled` (abandoned).
    pub cancelled: bool,
    pub payload: Option<Value>,
}

impl ResumeEntry {
    /// The entry as AG-UI writes it.
    pub fn to_json(&self) -> Value {
        let mut entry = json!({
            "interruptId": self.interrupt_id,
            "status": if self.cancelled { "cancelled" } else { "resolved" },
        });
        if let Some(payload) = &self.payload {
            entry["payload"] = payload.clone();
        }
        entry
    }
}

/// What kind of JSON value `v` is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn required_string(object: &Map<String, Value>, field: &str) -> Result<String, String> {
    match object.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(format!("{field}: must not be empty")),
        None | Some(Value::Null) => Err(format!("{field}: required")),
        Some(other) => Err(format!("{field}: must be a string, got {}", kind(other))),
    }
}

fn optional(object: &Map<String, Value>, field: &str, want: &str) -> Result<(), String> {
    let fits = match object.get(field) {
        None | Some(Value::Null) => true,
        Some(v) => match want {
            "string" => v.is_string(),
            "array" => v.is_array(),
            "object" => v.is_object(),
            _ => true,
        },
    };
    if fits {
        Ok(())
    } else {
        Err(format!(
            "{field}: must be {} {want}, got {}",
            if want == "array" || want == "object" {
                "an"
            } else {
                "a"
            },
            object.get(field).map_or("nothing", kind)
        ))
    }
}

/// Checks a `RunAgentInput` (AG-UI's run input: `threadId`, `runId` and `messages` required;
/// `state`, `tools`, `context`, `forwardedProps`, `resume` optional), naming the first field
/// that does not fit.
pub fn parse_input(value: &Value) -> Result<RunInput, String> {
    let Value::Object(object) = value else {
        return Err(format!(
            "the body must be a RunAgentInput object, got {}",
            kind(value)
        ));
    };
    let thread_id = required_string(object, "threadId")?;
    let run_id = required_string(object, "runId")?;
    let messages = match object.get("messages") {
        Some(Value::Array(m)) => m,
        None | Some(Value::Null) => {
            return Err("messages: required (the conversation so far; [] for none)".to_owned());
        }
        Some(other) => {
            return Err(format!("messages: must be an array, got {}", kind(other)));
        }
    };
    for (i, message) in messages.iter().enumerate() {
        let Value::Object(m) = message else {
            return Err(format!(
                "messages[{i}]: must be an object, got {}",
                kind(message)
            ));
        };
        match m.get("role") {
            Some(Value::String(_)) => {}
            _ => return Err(format!("messages[{i}].role: required, a string")),
        }
    }
    optional(object, "tools", "array")?;
    optional(object, "context", "array")?;
    optional(object, "protocolVersion", "string")?;
    optional(object, "parentRunId", "string")?;
    let mut resume = Vec::new();
    match object.get("resume") {
        None | Some(Value::Null) => {}
        Some(Value::Array(entries)) => {
            for (i, entry) in entries.iter().enumerate() {
                let Value::Object(e) = entry else {
                    return Err(format!(
                        "resume[{i}]: must be an object, got {}",
                        kind(entry)
                    ));
                };
                let interrupt_id =
                    required_string(e, "interruptId").map_err(|m| format!("resume[{i}].{m}"))?;
                let cancelled = match e.get("status") {
                    Some(Value::String(s)) if s == "resolved" => false,
                    Some(Value::String(s)) if s == "cancelled" => true,
                    _ => {
                        return Err(format!(
                            "resume[{i}].status: must be \"resolved\" or \"cancelled\""
                        ));
                    }
                };
                if resume
                    .iter()
                    .any(|r: &ResumeEntry| r.interrupt_id == interrupt_id)
                {
                    return Err(format!(
                        "resume[{i}].interruptId: {} is answered twice",
                        crate::quoted(&interrupt_id)
                    ));
                }
                resume.push(ResumeEntry {
                    interrupt_id,
                    cancelled,
                    payload: e.get("payload").cloned(),
                });
            }
        }
        Some(other) => return Err(format!("resume: must be an array, got {}", kind(other))),
    }
    let legacy_resume = object
        .get("forwardedProps")
        .and_then(|p| p.get("command"))
        .and_then(|c| c.get("resume"))
        .filter(|r| !r.is_null())
        .cloned();
    Ok(RunInput {
        thread_id,
        run_id,
        resume,
        legacy_resume,
        raw: object.clone(),
    })
}

/// An interrupt a run ended with.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interrupt {
    pub id: String,
    pub reason: String,
    pub message: Option<String>,
    pub tool_call_id: Option<String>,
    pub response_schema: Option<Value>,
    pub expires_at: Option<String>,
}

/// The interrupts of a `RUN_FINISHED` event's `outcome`, when it is `interrupt`: `Ok(None)`
/// for any other outcome, an error naming what does not fit the AG-UI schema.
pub fn outcome_interrupts(finished: &Value) -> Result<Option<Vec<Interrupt>>, String> {
    let Some(outcome) = finished.get("outcome").filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    if outcome.get("type").and_then(Value::as_str) != Some("interrupt") {
        return Ok(None);
    }
    let Some(Value::Array(items)) = outcome.get("interrupts") else {
        return Err("outcome.interrupts: required, an array".to_owned());
    };
    if items.is_empty() {
        return Err("outcome.interrupts: at least one interrupt".to_owned());
    }
    let mut interrupts: Vec<Interrupt> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(o) = item else {
            return Err(format!("outcome.interrupts[{i}]: must be an object"));
        };
        let id = required_string(o, "id").map_err(|m| format!("outcome.interrupts[{i}].{m}"))?;
        if interrupts.iter().any(|x| x.id == id) {
            return Err(format!(
                "outcome.interrupts[{i}].id: {} twice in one run",
                crate::quoted(&id)
            ));
        }
        let text = |field: &str| o.get(field).and_then(Value::as_str).map(str::to_owned);
        interrupts.push(Interrupt {
            id,
            reason: text("reason").unwrap_or_else(|| "interrupt".to_owned()),
            message: text("message"),
            tool_call_id: text("toolCallId"),
            response_schema: o.get("responseSchema").filter(|s| s.is_object()).cloned(),
            expires_at: text("expiresAt"),
        });
    }
    Ok(Some(interrupts))
}

/// The interrupt of LangGraph's `on_interrupt` custom event (`value`: the interrupt's value as a
/// JSON string; `rawEvent.id`: LangGraph's interrupt id), the `n`-th of its run.
pub fn legacy_interrupt(event: &Value, n: usize) -> Interrupt {
    let value = match event.get("value") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!(s)),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let id = event
        .get("rawEvent")
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .map_or_else(|| format!("on_interrupt-{n}"), str::to_owned);
    let field = |names: [&str; 2]| {
        names
            .iter()
            .find_map(|n| value.get(*n).filter(|v| !v.is_null()).cloned())
    };
    let message = match &value {
        Value::String(s) => Some(s.clone()),
        _ => field(["message", "question"]).and_then(|v| v.as_str().map(str::to_owned)),
    };
    Interrupt {
        id,
        reason: field(["reason", "reason"])
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "langgraph:interrupt".to_owned()),
        message,
        tool_call_id: field(["toolCallId", "tool_call_id"])
            .and_then(|v| v.as_str().map(str::to_owned)),
        response_schema: field(["responseSchema", "response_schema"]).filter(Value::is_object),
        expires_at: field(["expiresAt", "expires_at"]).and_then(|v| v.as_str().map(str::to_owned)),
    }
}

/// What a request made from an interrupt asks, which decides the payload its outcome gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ask {
    Approval,
    Confirmation,
    Form,
    Open,
}

/// The longest question text clarify takes.
const MAX_TEXT: usize = 4000;

/// Where an interrupt came from: the `[[agui]]` agent, the run and, for a tool-call interrupt,
/// the tool call the run streamed (its name and arguments).
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    pub agent: &'a str,
    pub thread_id: &'a str,
    pub run_id: &'a str,
    pub tool_call: Option<(&'a str, &'a Value)>,
}

/// The clarify request body for `interrupt`, and what it asks. `session` is the thread, the
/// idempotency key names the run and the interrupt (so making it again returns the same
/// request), and a `fields` display block says which agent and thread ask.
pub fn request_body(interrupt: &Interrupt, origin: Origin<'_>) -> (Value, Ask) {
    let schema = interrupt.response_schema.as_ref();
    let edits = schema
        .and_then(|s| s.get("properties"))
        .is_some_and(|p| p.get("editedArgs").is_some());
    let default_text = |what: &str| {
        format!(
            "The agent {} {what} (AG-UI interrupt {}).",
            origin.agent,
            crate::quoted(&interrupt.reason)
        )
    };
    let text = crate::text::cut(
        interrupt
            .message
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .map_or_else(|| default_text("asks for input"), str::to_owned)
            .as_str(),
        MAX_TEXT,
    );
    let (question, ask) = match (interrupt.reason.as_str(), origin.tool_call) {
        ("tool_call", Some((name, arguments))) => {
            let arguments = if arguments.is_object() {
                arguments.clone()
            } else {
                json!({ "arguments": arguments })
            };
            (
                json!({"text": text, "kind": "approval",
                       "action": {"name": name, "arguments": arguments},
                       "allow_edit": edits}),
                Ask::Approval,
            )
        }
        ("confirmation", _) => (
            json!({"text": text, "kind": "single", "options": ["Yes", "No"], "allow_other": false}),
            Ask::Confirmation,
        ),
        ("tool_call", None) => (
            json!({"text": text, "kind": "single", "options": ["Approve", "Deny"], "allow_other": false}),
            Ask::Confirmation,
        ),
        _ => match schema {
            Some(schema) if crate::schema::fields(schema, "responseSchema").is_ok() => (
                json!({"text": text, "kind": "form", "schema": schema}),
                Ask::Form,
            ),
            _ => (json!({"text": text, "kind": "open"}), Ask::Open),
        },
    };
    let mut body = json!({
        "questions": [question],
        "session": origin.thread_id,
        "agent": origin.agent,
        "idempotency_key": format!("agui:{}:{}:{}:{}", origin.agent, origin.thread_id, origin.run_id, interrupt.id),
        "display": [{"type": "fields", "title": "AG-UI run", "items": [
            {"label": "Agent", "value": origin.agent},
            {"label": "Thread", "value": origin.thread_id},
            {"label": "Interrupt", "value": interrupt.reason},
        ]}],
    });
    if ask == Ask::Approval {
        // Without display blocks of its own an approval shows what clarify derives from the
        // tool call (a diff, a command, the arguments).
        if let Some(object) = body.as_object_mut() {
            object.remove("display");
        }
    }
    if let Some(id) = &interrupt.tool_call_id {
        body["tool_call_id"] = json!(id);
    }
    (body, ask)
}

/// The resume entry an outcome (the JSON of a resolved request's outcome) gives the interrupt
/// `interrupt_id` that asked `ask`.
pub fn resume_entry(interrupt_id: &str, ask: Ask, outcome: &Value) -> ResumeEntry {
    let cancelled = |_: ()| ResumeEntry {
        interrupt_id: interrupt_id.to_owned(),
        cancelled: true,
        payload: None,
    };
    if outcome.get("status").and_then(Value::as_str) != Some("answered") {
        return cancelled(());
    }
    let Some(question) = outcome
        .get("questions")
        .and_then(Value::as_array)
        .and_then(|q| q.first())
    else {
        return cancelled(());
    };
    let answer = question.get("answer").cloned().unwrap_or(Value::Null);
    let payload = match ask {
        Ask::Approval => {
            let decision = question.get("decision").and_then(Value::as_str);
            let mut payload = json!({"approved": decision == Some("approve")});
            if let Some(edited) = question.get("edited_arguments").filter(|e| !e.is_null()) {
                payload["editedArgs"] = edited.clone();
            }
            match (decision, question.get("reason").and_then(Value::as_str)) {
                (Some("revise"), Some(reason)) => {
                    payload["reason"] = json!(format!("Changes requested: {reason}"));
                }
                (_, Some(reason)) => payload["reason"] = json!(reason),
                _ => {}
            }
            payload
        }
        Ask::Confirmation => {
            let label = answer.as_str().unwrap_or_default();
            json!({"approved": label.eq_ignore_ascii_case("yes") || label.eq_ignore_ascii_case("approve")})
        }
        Ask::Form | Ask::Open => answer,
    };
    ResumeEntry {
        interrupt_id: interrupt_id.to_owned(),
        cancelled: false,
        payload: Some(payload),
    }
}

/// What a run streamed that its interrupts and its resume need, noted event by event: the last
/// state and messages snapshots, the tool calls with their arguments (from `TOOL_CALL_*`
/// events and from messages snapshots), and LangGraph's `on_interrupt` events.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    pub started: bool,
    pub state: Option<Value>,
    pub messages: Option<Value>,
    /// Tool call id → (name, arguments as streamed).
    tool_calls: std::collections::HashMap<String, (String, String)>,
    pub legacy: Vec<Interrupt>,
}

impl Trace {
    /// Notes one event of the run.
    pub fn note(&mut self, event: &Value) {
        let text = |f: &str| event.get(f).and_then(Value::as_str).unwrap_or_default();
        match text("type") {
            "RUN_STARTED" => self.started = true,
            "STATE_SNAPSHOT" => self.state = event.get("snapshot").cloned(),
            "MESSAGES_SNAPSHOT" => {
                self.messages = event.get("messages").cloned();
                let calls = self
                    .messages
                    .iter()
                    .flat_map(|m| m.as_array().into_iter().flatten())
                    .flat_map(|m| {
                        m.get("toolCalls")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    });
                let mut found = Vec::new();
                for call in calls {
                    let id = call.get("id").and_then(Value::as_str);
                    let function = call.get("function");
                    let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
                    let arguments = function
                        .and_then(|f| f.get("arguments"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if let (Some(id), Some(name)) = (id, name) {
                        found.push((id.to_owned(), (name.to_owned(), arguments.to_owned())));
                    }
                }
                self.tool_calls.extend(found);
            }
            "TOOL_CALL_START" => {
                self.tool_calls.insert(
                    text("toolCallId").to_owned(),
                    (text("toolCallName").to_owned(), String::new()),
                );
            }
            "TOOL_CALL_ARGS" => {
                if let Some((_, args)) = self.tool_calls.get_mut(text("toolCallId")) {
                    args.push_str(text("delta"));
                }
            }
            "CUSTOM" if text("name") == "on_interrupt" => {
                let n = self.legacy.len();
                self.legacy.push(legacy_interrupt(event, n));
            }
            _ => {}
        }
    }

    /// The tool call `id` the run streamed: its name and arguments (JSON when they parse).
    pub fn tool_call(&self, id: &str) -> Option<(String, Value)> {
        let (name, args) = self.tool_calls.get(id)?;
        let arguments = serde_json::from_str::<Value>(args).unwrap_or_else(|_| json!(args));
        Some((name.clone(), arguments))
    }

    /// The interrupts a `RUN_FINISHED` ends the run with, and whether they came from LangGraph's
    /// `on_interrupt` events only (then the resume goes in `forwardedProps.command.resume`);
    /// `Ok(None)` for a run that finished otherwise.
    pub fn interrupts(&self, finished: &Value) -> Result<Option<(Vec<Interrupt>, bool)>, String> {
        match outcome_interrupts(finished)? {
            Some(found) => Ok(Some((found, false))),
            None if !self.legacy.is_empty() => Ok(Some((self.legacy.clone(), true))),
            None => Ok(None),
        }
    }

    /// The next run's input: `input` with the run's last state and messages, and without a
    /// resume (the caller adds the new one and a new `runId`).
    pub fn next_input(&self, input: &Map<String, Value>) -> Value {
        let mut next = Value::Object(input.clone());
        if let Some(state) = &self.state {
            next["state"] = state.clone();
        }
        if let Some(messages) = &self.messages {
            next["messages"] = messages.clone();
        }
        if let Some(object) = next.as_object_mut() {
            object.remove("resume");
            if let Some(Value::Object(props)) = object.get_mut("forwardedProps") {
                props.remove("command");
            }
        }
        next
    }
}

/// A resume input from `next` (see [`Trace::next_input`]): run `run_id`, with `entries` as
/// `resume[]`, or, for a `legacy` run whose one entry is resolved, as
/// `forwardedProps.command.resume`.
pub fn resume_input(mut next: Value, run_id: &str, entries: &[ResumeEntry], legacy: bool) -> Value {
    next["runId"] = json!(run_id);
    match (legacy, entries) {
        (
            true,
            [
                ResumeEntry {
                    cancelled: false,
                    payload: Some(payload),
                    ..
                },
            ],
        ) => {
            if !next.get("forwardedProps").is_some_and(Value::is_object) {
                next["forwardedProps"] = json!({});
            }
            next["forwardedProps"]["command"] = json!({ "resume": payload });
        }
        _ => next["resume"] = Value::Array(entries.iter().map(ResumeEntry::to_json).collect()),
    }
    next
}
