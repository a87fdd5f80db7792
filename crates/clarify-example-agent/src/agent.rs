//! The chat loop: finish every open tool call, ask the model for its next message, repeat until
//! it answers in plain text.
//!
//! Every step is saved before the next one starts, so a run can stop anywhere and a later run
//! picks up from the state file:
//! - a request already raised and recorded is waited for again, by its id;
//! - a request raised but not yet recorded (a crash in between) is found again through its
//!   idempotency key, which names the session and the call, so the human is not asked twice;
//! - an approved write that ran but whose result was not saved runs again (it writes the same
//!   file with the same content).

use std::path::PathBuf;

use clarify_client::{Client, ClientError, OutcomeBody, RecordBody};
use clarify_core::policy::{
    ApprovalSpec, Policy, PolicyDecision, Refusal, Verdict, approval_action, edited_result, settle,
};
use clarify_core::tool::NAME as ASK_HUMAN;
use clarify_core::transcript::{Message, ToolCall};
use clarify_core::{Action, Scope};
use serde_json::{Value, json};

use crate::error::AgentError;
use crate::provider::Provider;
use crate::state::State;
use crate::tools::{Sandbox, WRITE_FILE, definitions};

/// What the model is told before the user's first message, unless replaced.
pub const DEFAULT_SYSTEM: &str = "You are a careful assistant working in a directory of text \
files. When the task is ambiguous or a decision belongs to the user, call ask_human instead of \
guessing. Write files with write_file; the user approves each write. When the task is done, \
reply with a short summary.";

/// The name requests are raised under.
const AGENT: &str = "clarify-example-agent";

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The user's message starting (or continuing) the conversation.
    pub task: Option<String>,
    pub state_path: PathBuf,
    pub sandbox: PathBuf,
    pub system: String,
    pub clarify_url: String,
    pub clarify_token: Option<String>,
    pub provider: Provider,
    /// At most this many completions in one run.
    pub max_turns: u32,
}

/// Runs the conversation in `settings.state_path` until the model answers in plain text, and
/// returns that answer.
pub async fn run(settings: Settings) -> Result<String, AgentError> {
    let clarify = Client::new(&settings.clarify_url, settings.clarify_token.clone())?;
    let state = match State::load(&settings.state_path)? {
        Some(mut state) => {
            if let Some(task) = &settings.task {
                if final_text(&state).is_none() {
                    return Err(AgentError::Usage(format!(
                        "{} holds a conversation that is not finished; run without a task to \
                         resume it, or remove the file to start over",
                        settings.state_path.display()
                    )));
                }
                state.transcript.push(Message::user(task.as_str()))?;
            } else {
                eprintln!(
                    "resuming the conversation in {}",
                    settings.state_path.display()
                );
            }
            state
        }
        None => {
            let Some(task) = &settings.task else {
                return Err(AgentError::Usage(format!(
                    "nothing to do: give a task, or point --state at a saved conversation \
                     ({} does not exist)",
                    settings.state_path.display()
                )));
            };
            let mut state = State::new();
            state
                .transcript
                .push(Message::system(settings.system.as_str()))?;
            state.transcript.push(Message::user(task.as_str()))?;
            state
        }
    };
    let mut agent = Agent {
        sandbox: Sandbox::new(&settings.sandbox),
        clarify,
        state,
        settings,
    };
    agent.save()?;
    agent.converse().await
}

struct Agent {
    settings: Settings,
    clarify: Client,
    sandbox: Sandbox,
    state: State,
}

impl Agent {
    async fn converse(&mut self) -> Result<String, AgentError> {
        let tools = definitions();
        let mut turns = 0;
        loop {
            self.finish_open_calls().await?;
            if let Some(text) = final_text(&self.state) {
                return Ok(text);
            }
            if turns == self.settings.max_turns {
                return Err(AgentError::TooManyTurns(turns));
            }
            turns += 1;
            let messages = self.state.transcript.for_model()?;
            let reply = self.settings.provider.complete(&messages, &tools).await?;
            eprintln!("{reply}");
            self.state.transcript.push(reply)?;
            self.save()?;
        }
    }

    fn save(&self) -> Result<(), AgentError> {
        self.state.save(&self.settings.state_path)
    }

    /// Gives every tool call without a result its result, oldest first.
    async fn finish_open_calls(&mut self) -> Result<(), AgentError> {
        let open: Vec<(ToolCall, Option<String>, usize)> = {
            let transcript = &self.state.transcript;
            let all: Vec<&ToolCall> = transcript.messages().flat_map(Message::calls).collect();
            transcript
                .open_calls()?
                .into_iter()
                .map(|(call, request)| {
                    let ordinal = all
                        .iter()
                        .position(|c| std::ptr::eq(*c, call))
                        .unwrap_or_default();
                    (call.clone(), request.map(str::to_owned), ordinal)
                })
                .collect()
        };
        for (call, request, ordinal) in open {
            // Names the call for good: the same session and position give the same key, so a
            // request raised before a crash is returned again instead of asked twice.
            let key = format!("{}/{ordinal}/{}", self.state.session, call.id);
            let result = match call.name() {
                ASK_HUMAN => self.ask_human(&call, request, &key).await?,
                WRITE_FILE => self.write_file(&call, request, &key).await?,
                other => json!({
                    "status": "error",
                    "error": format!("there is no tool named {other:?}; use {ASK_HUMAN} or {WRITE_FILE}"),
                })
                .to_string(),
            };
            self.state
                .transcript
                .push(Message::tool_result(&call.id, result))?;
            self.save()?;
        }
        Ok(())
    }

    /// Asks the human the model's questions (or waits again for a request already raised);
    /// returns the outcome for the model.
    async fn ask_human(
        &mut self,
        call: &ToolCall,
        request: Option<String>,
        key: &str,
    ) -> Result<String, AgentError> {
        let id = match request {
            Some(id) => id,
            None => {
                let mut body = match call.arguments() {
                    Ok(arguments) => arguments,
                    Err(e) => return Ok(invalid(&e.to_string())),
                };
                if let Value::Object(map) = &mut body {
                    // Where outcomes are posted and who may answer are not the model's to choose.
                    map.remove("callback_url");
                    map.remove("responders");
                    map.insert("session".to_owned(), json!(self.state.session));
                    map.insert("agent".to_owned(), json!(AGENT));
                    map.insert("tool_call_id".to_owned(), json!(call.id));
                    map.insert("idempotency_key".to_owned(), json!(key));
                }
                match self.raise(call, &body).await {
                    Ok(id) => id,
                    // The model's request does not validate: tell it why, so it can fix it.
                    Err(AgentError::Clarify(ClientError::Api {
                        status: 400 | 422,
                        message,
                        ..
                    })) => return Ok(invalid(&message)),
                    Err(e) => return Err(e),
                }
            }
        };
        let record = self.wait(&id).await?;
        let outcome = json_of(outcome_of(&record)?);
        self.state
            .transcript
            .record_resolved(&id, outcome.clone())?;
        self.save()?;
        Ok(outcome.to_string())
    }

    /// Writes a file if the policy, a grant or a human allows it; returns the result for the
    /// model: what was written, or why nothing was.
    async fn write_file(
        &mut self,
        call: &ToolCall,
        request: Option<String>,
        key: &str,
    ) -> Result<String, AgentError> {
        let verdict = match request {
            Some(id) => self.settle(&id).await?,
            None => {
                let arguments = match call.arguments() {
                    Ok(arguments) => arguments,
                    Err(e) => return Ok(invalid(&e.to_string())),
                };
                if let Err(e) = self.sandbox.check(&arguments) {
                    return Ok(invalid(&e.to_string()));
                }
                let action = Action {
                    name: WRITE_FILE.to_owned(),
                    arguments,
                };
                let session = Some(self.state.session.as_str());
                // Grants (earlier `session` or `always` approvals) are the server's.
                let decision =
                    match Policy::default().decide(WRITE_FILE, &action.arguments, session, &[]) {
                        PolicyDecision::Ask if self.granted(&action, session).await? => {
                            PolicyDecision::Granted(Scope::Always)
                        }
                        decision => decision,
                    };
                match decision {
                    PolicyDecision::Allowed | PolicyDecision::Granted(_) => Verdict::Run {
                        arguments: action.arguments,
                        edited: false,
                        grant: None,
                    },
                    PolicyDecision::Denied => Verdict::Refuse(Refusal::blocked(WRITE_FILE)),
                    PolicyDecision::Ask => {
                        let spec = ApprovalSpec {
                            scopes: Scope::ALL.to_vec(),
                            allow_edit: true,
                            timeout_seconds: None,
                        };
                        let mut body = spec.request(&action, Some(&call.id), session);
                        if let Value::Object(map) = &mut body {
                            map.insert("agent".to_owned(), json!(AGENT));
                            map.insert("idempotency_key".to_owned(), json!(key));
                        }
                        let id = self.raise(call, &body).await?;
                        self.settle(&id).await?
                    }
                }
            }
        };
        Ok(match verdict {
            // A `session` or `always` grant was recorded by the server with the answer.
            Verdict::Run {
                arguments, edited, ..
            } => match self.sandbox.write(&arguments) {
                Ok(output) if edited => edited_result(&arguments, &output),
                Ok(output) => output,
                Err(e) => invalid(&e.to_string()),
            },
            Verdict::Refuse(refusal) => refusal.tool_result(),
        })
    }

    /// Whether the server holds a grant that lets `action` run in `session` without asking.
    async fn granted(&self, action: &Action, session: Option<&str>) -> Result<bool, AgentError> {
        let action = json!({"name": action.name, "arguments": action.arguments});
        Ok(self.clarify.check_grant(&action, session).await?["granted"] == true)
    }

    /// Creates a request for `call`, records it, and says where to answer it.
    async fn raise(&mut self, call: &ToolCall, body: &Value) -> Result<String, AgentError> {
        let (record, created) = self.clarify.create(body).await?;
        let id = record.id.clone();
        self.state
            .transcript
            .record_asked(&call.id, &id, json_of(&record))?;
        self.save()?;
        let text = record.questions.first().map_or("", |q| q.text.as_str());
        let link = record.answer_url.as_deref().unwrap_or("the inbox");
        let again = if created {
            ""
        } else {
            " (raised before a restart)"
        };
        eprintln!("asked a human{again}: {text} [request {id}; answer at {link}]");
        Ok(id)
    }

    /// Waits, as long as it takes, for request `id` to resolve.
    async fn wait(&self, id: &str) -> Result<RecordBody, AgentError> {
        eprintln!("waiting for the answer to request {id}");
        Ok(self
            .clarify
            .wait_resolved(id, |e| eprintln!("clarify is unreachable ({e}); retrying"))
            .await?)
    }

    /// Waits for approval request `id` and reads what its answer means for the call.
    async fn settle(&mut self, id: &str) -> Result<Verdict, AgentError> {
        let record = self.wait(id).await?;
        let outcome = outcome_of(&record)?;
        let request = record.request().map_err(|e| {
            ClientError::Protocol(format!(
                "the server sent a request this agent cannot read: {e}"
            ))
        })?;
        let action = approval_action(&request).ok_or_else(|| {
            ClientError::Protocol(format!("request {id} is not an approval request"))
        })?;
        let reply = outcome.approval()?;
        let verdict = settle(action, request.session.as_deref(), &reply);
        self.state
            .transcript
            .record_resolved(id, json_of(outcome))?;
        self.save()?;
        Ok(verdict)
    }
}

/// The model's final answer, when the conversation ends with one.
fn final_text(state: &State) -> Option<String> {
    match state.transcript.last_message()? {
        Message::Assistant(a) if a.tool_calls.is_empty() => {
            Some(a.content.as_ref().map(|c| c.text()).unwrap_or_default())
        }
        _ => None,
    }
}

fn outcome_of(record: &RecordBody) -> Result<&OutcomeBody, AgentError> {
    record.outcome.as_ref().ok_or_else(|| {
        AgentError::Clarify(ClientError::Protocol(format!(
            "request {} resolved without an outcome",
            record.id
        )))
    })
}

/// A record or outcome as the transcript keeps it and the model reads it: the JSON the server
/// sent. The wire types always serialize.
fn json_of<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// A tool result telling the model its call could not be carried out, and why.
fn invalid(why: &str) -> String {
    json!({"status": "invalid", "error": why}).to_string()
}
