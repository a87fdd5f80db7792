//! Chat transcripts of agents that speak the OpenAI chat-completions format.
//!
//! A [`Message`] is one chat message as the wire carries it (`system`, `developer`, `user`,
//! `assistant` with `tool_calls`, `tool` with `tool_call_id`); fields this crate does not know
//! (`name`, `refusal`, a provider's reasoning text, ...) are kept in `extra` and written back
//! unchanged, so a message read from a provider round-trips.
//!
//! A [`Transcript`] is what an agent stores: the model's messages plus **protocol messages**
//! (role `clarify`) recording that a tool call raised a clarify request (with the request as
//! shown to people) and how it resolved (the raw outcome). Protocol messages are for the agent
//! and its people, never for the model: [`Transcript::for_model`] leaves them out while the
//! stored history keeps them.
//!
//! The rules that keep a provider from rejecting what it is sent live here too:
//! - a request raised for tool call X resolves into a `tool` message for X, whatever id the
//!   request got ([`Transcript::answer`]);
//! - [`Transcript::for_model`] places each call's result right after the assistant message that
//!   made the call, so every call has its result and every result its call. A call still waiting
//!   on a pending request is an error ([`TranscriptError::AwaitingHuman`]): sending it would let
//!   the model go on without the answer. A call with neither result nor pending request (the
//!   agent stopped while running it) gets a synthetic `no_result` message saying so, since the
//!   model must decide whether to repeat it. A result without a call, or a second result for one
//!   call, means the history is corrupt, and is refused.
//!
//! Tool call ids are matched to the nearest earlier call with that id that has no result yet,
//! because some providers reuse ids (`call_0`) in every turn.

use std::collections::HashSet;
use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

/// Why a transcript operation was refused. The transcript is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranscriptError {
    #[error("no tool call {tool_call_id:?} without a result precedes this point in the transcript")]
    UnknownToolCall { tool_call_id: String },
    #[error("tool call {tool_call_id:?} already has a result")]
    DuplicateResult { tool_call_id: String },
    #[error(
        "tool call {tool_call_id:?} already raised request {request_id:?}; resolve that one instead of asking again"
    )]
    AlreadyAsked {
        tool_call_id: String,
        request_id: String,
    },
    #[error("request {request_id:?} was not raised by any tool call in this transcript")]
    UnknownRequest { request_id: String },
    #[error(
        "tool call {tool_call_id:?} waits for the answer to request {request_id:?}; wait for it (or cancel it) before calling the model"
    )]
    AwaitingHuman {
        tool_call_id: String,
        request_id: String,
    },
    #[error("the arguments of tool call {tool_call_id:?} are not a JSON object: {detail}")]
    Arguments {
        tool_call_id: String,
        detail: String,
    },
    #[error("cannot write the result as JSON: {0}")]
    Json(String),
}

/// Message content: plain text, or a list of typed parts (`{"type": "text", ...}`,
/// `{"type": "image_url", ...}`) kept as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Value>),
}

impl Content {
    /// The text of the content: the text itself, or the text parts joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Self::Text(t) => t.clone(),
            Self::Parts(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

/// One chat message in the OpenAI chat-completions format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System(TextMessage),
    Developer(TextMessage),
    User(TextMessage),
    Assistant(AssistantMessage),
    Tool(ToolMessage),
}

/// A `system`, `developer` or `user` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextMessage {
    pub content: Content,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What the model said: text, tool calls, or both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Written as `null` when absent: some compatible servers insist on the key.
    #[serde(default)]
    pub content: Option<Content>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolMessage {
    pub tool_call_id: String,
    pub content: Content,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A call the model asks the agent to make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    /// `function` for every call the chat-completions API makes today.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The function a [`ToolCall`] names, with its arguments as the JSON text the model wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    #[serde(default)]
    pub arguments: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_kind() -> String {
    "function".to_owned()
}

impl ToolCall {
    /// A function call with `arguments` written as JSON text.
    pub fn function(id: &str, name: &str, arguments: &Value) -> Self {
        Self {
            id: id.to_owned(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.to_owned(),
                arguments: arguments.to_string(),
                extra: Map::new(),
            },
            extra: Map::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.function.name
    }

    /// The arguments parsed as a JSON object; empty text (some providers send it for a call
    /// without arguments) is `{}`.
    pub fn arguments(&self) -> Result<Value, TranscriptError> {
        let text = self.function.arguments.trim();
        if text.is_empty() {
            return Ok(Value::Object(Map::new()));
        }
        let error = |detail: String| TranscriptError::Arguments {
            tool_call_id: self.id.clone(),
            detail,
        };
        match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(other) => Err(error(format!("got {other}"))),
            Err(e) => Err(error(e.to_string())),
        }
    }
}

impl Message {
    pub fn system(content: impl Into<Content>) -> Self {
        Self::System(TextMessage::new(content))
    }

    pub fn user(content: impl Into<Content>) -> Self {
        Self::User(TextMessage::new(content))
    }

    /// An assistant message with text and no tool calls.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Self::Assistant(AssistantMessage {
            content: Some(content.into()),
            tool_calls: Vec::new(),
            extra: Map::new(),
        })
    }

    /// An assistant message that makes tool calls.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Self::Assistant(AssistantMessage {
            content: None,
            tool_calls: calls,
            extra: Map::new(),
        })
    }

    /// The result of tool call `tool_call_id`.
    pub fn tool_result(tool_call_id: &str, content: impl Into<Content>) -> Self {
        Self::Tool(ToolMessage {
            tool_call_id: tool_call_id.to_owned(),
            content: content.into(),
            extra: Map::new(),
        })
    }

    /// The result of tool call `tool_call_id` as JSON text: an outcome, or any other value.
    pub fn tool_json(tool_call_id: &str, value: &impl Serialize) -> Result<Self, TranscriptError> {
        let text =
            serde_json::to_string(value).map_err(|e| TranscriptError::Json(e.to_string()))?;
        Ok(Self::tool_result(tool_call_id, text))
    }

    /// The contract's role name.
    pub fn role(&self) -> &'static str {
        match self {
            Self::System(_) => "system",
            Self::Developer(_) => "developer",
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::Tool(_) => "tool",
        }
    }

    /// The tool calls an assistant message makes (none for other roles).
    pub fn calls(&self) -> &[ToolCall] {
        match self {
            Self::Assistant(a) => &a.tool_calls,
            _ => &[],
        }
    }
}

impl TextMessage {
    pub fn new(content: impl Into<Content>) -> Self {
        Self {
            content: content.into(),
            extra: Map::new(),
        }
    }
}

/// What a protocol message records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtocolEvent {
    /// A tool call raised a request; `body` is the request as people were shown it.
    Asked,
    /// The request resolved; `body` is the raw outcome.
    Resolved,
}

/// A message for the agent and its people, never sent to the model: role `clarify`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolMessage {
    role: ProtocolRole,
    pub event: ProtocolEvent,
    pub request_id: String,
    pub tool_call_id: String,
    pub body: Value,
}

/// The role of every protocol message; a unit type so no other role deserializes into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ProtocolRole {
    Clarify,
}

impl ProtocolMessage {
    /// The role protocol messages carry in a stored transcript.
    pub const ROLE: &'static str = "clarify";

    pub fn new(event: ProtocolEvent, request_id: &str, tool_call_id: &str, body: Value) -> Self {
        Self {
            role: ProtocolRole::Clarify,
            event,
            request_id: request_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            body,
        }
    }
}

/// One entry of a stored transcript: a model message or a protocol message.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Message(Message),
    Protocol(ProtocolMessage),
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Message(m) => m.serialize(s),
            Self::Protocol(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if value.get("role").and_then(Value::as_str) == Some(ProtocolMessage::ROLE) {
            serde_json::from_value(value)
                .map(Self::Protocol)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(value)
                .map(Self::Message)
                .map_err(D::Error::custom)
        }
    }
}

/// A tool call whose request is still waiting for a human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRequest {
    pub tool_call_id: String,
    pub request_id: String,
}

/// An agent's stored history: model messages and protocol messages, oldest first. Its serde
/// form is the list of entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Transcript {
    entries: Vec<Entry>,
}

/// Where one tool call stands, as the transcript records it.
#[derive(Debug)]
struct CallState<'a> {
    call: &'a ToolCall,
    /// Index of the assistant entry that made the call.
    entry: usize,
    /// Index of the entry holding the result.
    result: Option<usize>,
    request: Option<&'a str>,
    resolved: bool,
}

impl Transcript {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The model messages, protocol messages left out, in stored order.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Message(m) => Some(m),
            Entry::Protocol(_) => None,
        })
    }

    /// The newest model message.
    pub fn last_message(&self) -> Option<&Message> {
        self.messages().last()
    }

    /// Appends a model message. A `tool` message must answer an earlier call that has no result
    /// yet; otherwise nothing is appended.
    pub fn push(&mut self, message: Message) -> Result<(), TranscriptError> {
        if let Message::Tool(t) = &message {
            let calls = self.calls()?;
            open_call(&calls, &t.tool_call_id)?;
        }
        self.entries.push(Entry::Message(message));
        Ok(())
    }

    /// Records that tool call `tool_call_id` raised request `request_id`, shown to people as
    /// `shown`. Recording the same pair again changes nothing, so a resumed agent may repeat it.
    pub fn record_asked(
        &mut self,
        tool_call_id: &str,
        request_id: &str,
        shown: Value,
    ) -> Result<(), TranscriptError> {
        let calls = self.calls()?;
        let index = open_call(&calls, tool_call_id)?;
        match calls[index].request {
            Some(existing) if existing == request_id => return Ok(()),
            Some(existing) => {
                return Err(TranscriptError::AlreadyAsked {
                    tool_call_id: tool_call_id.to_owned(),
                    request_id: existing.to_owned(),
                });
            }
            None => {}
        }
        self.entries.push(Entry::Protocol(ProtocolMessage::new(
            ProtocolEvent::Asked,
            request_id,
            tool_call_id,
            shown,
        )));
        Ok(())
    }

    /// Records the raw outcome of request `request_id` and returns the id of the tool call that
    /// raised it, whose result the caller then pushes (for an approval, the tool's own result).
    /// Recording a resolution twice changes nothing.
    pub fn record_resolved(
        &mut self,
        request_id: &str,
        outcome: Value,
    ) -> Result<String, TranscriptError> {
        let (tool_call_id, resolved) = {
            let calls = self.calls()?;
            let state = raised(&calls, request_id)?;
            (state.call.id.clone(), state.resolved)
        };
        if !resolved {
            self.entries.push(Entry::Protocol(ProtocolMessage::new(
                ProtocolEvent::Resolved,
                request_id,
                &tool_call_id,
                outcome,
            )));
        }
        Ok(tool_call_id)
    }

    /// Resolves an `ask_human`-style call: records the outcome of request `request_id` and
    /// answers the tool call that raised it with the outcome as JSON, under the call's own id.
    pub fn answer(
        &mut self,
        request_id: &str,
        outcome: &impl Serialize,
    ) -> Result<(), TranscriptError> {
        let raw =
            serde_json::to_value(outcome).map_err(|e| TranscriptError::Json(e.to_string()))?;
        {
            let calls = self.calls()?;
            let state = raised(&calls, request_id)?;
            if state.result.is_some() {
                return Err(TranscriptError::DuplicateResult {
                    tool_call_id: state.call.id.clone(),
                });
            }
        }
        let text = raw.to_string();
        let tool_call_id = self.record_resolved(request_id, raw)?;
        self.entries
            .push(Entry::Message(Message::tool_result(&tool_call_id, text)));
        Ok(())
    }

    /// Requests raised by tool calls that are still waiting for a human, oldest first.
    pub fn pending(&self) -> Result<Vec<PendingRequest>, TranscriptError> {
        Ok(self
            .calls()?
            .iter()
            .filter(|c| c.result.is_none() && !c.resolved)
            .filter_map(|c| {
                Some(PendingRequest {
                    tool_call_id: c.call.id.clone(),
                    request_id: c.request?.to_owned(),
                })
            })
            .collect())
    }

    /// Tool calls without a result yet, oldest first, each with the request it raised, if any.
    pub fn open_calls(&self) -> Result<Vec<(&ToolCall, Option<&str>)>, TranscriptError> {
        Ok(self
            .calls()?
            .into_iter()
            .filter(|c| c.result.is_none())
            .map(|c| (c.call, c.request))
            .collect())
    }

    /// The messages to send to the model: protocol messages left out, each result right after
    /// its call, and a synthetic `no_result` message for a call that will never get one (see
    /// the module documentation). Refused while a call waits on a pending request, or when the
    /// history is corrupt.
    pub fn for_model(&self) -> Result<Vec<Message>, TranscriptError> {
        let calls = self.calls()?;
        let mut out = Vec::with_capacity(self.entries.len());
        let mut by_entry = calls.iter().peekable();
        for (i, entry) in self.entries.iter().enumerate() {
            let Entry::Message(message) = entry else {
                continue;
            };
            if matches!(message, Message::Tool(_)) {
                continue;
            }
            out.push(message.clone());
            while let Some(state) = by_entry.next_if(|c| c.entry == i) {
                match (state.result.map(|r| &self.entries[r]), state.request) {
                    (Some(Entry::Message(result)), _) => out.push(result.clone()),
                    (_, Some(request)) if !state.resolved => {
                        return Err(TranscriptError::AwaitingHuman {
                            tool_call_id: state.call.id.clone(),
                            request_id: request.to_owned(),
                        });
                    }
                    _ => out.push(Message::tool_result(&state.call.id, no_result_text())),
                }
            }
        }
        Ok(out)
    }

    /// Walks the entries once, pairing every result and protocol message with its call.
    fn calls(&self) -> Result<Vec<CallState<'_>>, TranscriptError> {
        let mut calls: Vec<CallState<'_>> = Vec::new();
        let mut resolved: HashSet<&str> = HashSet::new();
        for (i, entry) in self.entries.iter().enumerate() {
            match entry {
                Entry::Message(Message::Assistant(a)) => {
                    calls.extend(a.tool_calls.iter().map(|call| CallState {
                        call,
                        entry: i,
                        result: None,
                        request: None,
                        resolved: false,
                    }));
                }
                Entry::Message(Message::Tool(t)) => {
                    let index = open_call(&calls, &t.tool_call_id)?;
                    calls[index].result = Some(i);
                }
                Entry::Message(_) => {}
                Entry::Protocol(p) => match p.event {
                    ProtocolEvent::Asked => {
                        let index = open_call(&calls, &p.tool_call_id)?;
                        calls[index].request = Some(&p.request_id);
                    }
                    ProtocolEvent::Resolved => {
                        resolved.insert(&p.request_id);
                    }
                },
            }
        }
        for state in &mut calls {
            state.resolved = state.request.is_some_and(|r| resolved.contains(r));
        }
        Ok(calls)
    }
}

/// The newest call with this id that has no result yet.
fn open_call(calls: &[CallState<'_>], tool_call_id: &str) -> Result<usize, TranscriptError> {
    let mut seen = false;
    for (index, state) in calls.iter().enumerate().rev() {
        if state.call.id == tool_call_id {
            if state.result.is_none() {
                return Ok(index);
            }
            seen = true;
        }
    }
    Err(if seen {
        TranscriptError::DuplicateResult {
            tool_call_id: tool_call_id.to_owned(),
        }
    } else {
        TranscriptError::UnknownToolCall {
            tool_call_id: tool_call_id.to_owned(),
        }
    })
}

/// The newest call that raised request `request_id`.
fn raised<'s, 'a>(
    calls: &'s [CallState<'a>],
    request_id: &str,
) -> Result<&'s CallState<'a>, TranscriptError> {
    calls
        .iter()
        .rev()
        .find(|c| c.request == Some(request_id))
        .ok_or_else(|| TranscriptError::UnknownRequest {
            request_id: request_id.to_owned(),
        })
}

/// What the model is told about a call the agent never finished.
fn no_result_text() -> String {
    json!({
        "status": "no_result",
        "note": "No result was recorded for this call: the agent stopped while it ran, so it may \
                 or may not have taken effect. Check before repeating it.",
    })
    .to_string()
}

impl fmt::Display for Message {
    /// One line for logs: the role and the text, or the calls made.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::System(m) | Self::Developer(m) | Self::User(m) => {
                write!(f, "{}: {}", self.role(), m.content.text())
            }
            Self::Assistant(a) if a.tool_calls.is_empty() => write!(
                f,
                "assistant: {}",
                a.content.as_ref().map(Content::text).unwrap_or_default()
            ),
            Self::Assistant(a) => {
                let names: Vec<&str> = a.tool_calls.iter().map(ToolCall::name).collect();
                write!(f, "assistant calls {}", names.join(", "))
            }
            Self::Tool(t) => write!(f, "tool {}: {}", t.tool_call_id, t.content.text()),
        }
    }
}
