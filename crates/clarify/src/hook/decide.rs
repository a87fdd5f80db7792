//! The decision every coding-agent hook (and `clarify acp`) makes about one tool call, whatever
//! the agent: the policy file first (deny wins, then allow), then the server's rules (`POST
//! /v1/policy/check`: when a rule allows or denies the call, the approval raised for it is
//! resolved at once by that rule, so the decision is in the server's log), then a grant the
//! server remembers (`POST /v1/grants/check`: an earlier `session` or `always` approval of the
//! same call), then a person, through an approval request raised and waited for up to `--wait`.
//!
//! The agents' adapters only translate: their event into a [`ToolCall`], and the [`Verdict`]
//! back into the JSON that agent reads. The request body a person sees is built in one place,
//! [`approval_request`], and what an answer means for the call in one place, [`verdict_of`], so
//! every agent is gated and shown its calls the same way.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clarify_client::{Client, ClientError, OutcomeBody};
use clarify_core::policy::{ApprovalSpec, Policy, PolicyDecision, Verdict as Settled};
use clarify_core::{Action, Scope, Status};
use serde_json::{Map, Value, json};

use crate::client::Connection;

/// The longest assistant text taken from a transcript as context.
const CONTEXT_CHARS: usize = 2_000;
/// The most of a transcript read, from its end.
const TRANSCRIPT_TAIL: u64 = 1 << 20;

/// One tool call an agent proposes, in the terms every adapter fills in.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The request's `agent`: `claude-code`, `codex`, `cursor`, `gemini`, `copilot`, or the name
    /// of the agent behind `clarify acp`.
    pub agent: String,
    /// The tool's name as the agent calls it; what policy patterns and grants match.
    pub tool: String,
    pub arguments: Value,
    /// The agent's session (conversation) id: the scope of `session` grants.
    pub session: Option<String>,
    /// The agent's id for this call, when it gives one.
    pub tool_call_id: Option<String>,
    pub cwd: Option<String>,
    /// A transcript whose last assistant words become context, when readable.
    pub transcript: Option<PathBuf>,
    /// Further facts shown with the request (such as the justification Codex gives).
    pub context: Map<String, Value>,
    /// Whether the agent can run the call with arguments a person changed.
    pub editable: bool,
    /// The scopes a person may approve with (`session` only inside a session).
    pub scopes: Vec<Scope>,
}

impl ToolCall {
    pub fn new(agent: &str, tool: String, arguments: Value) -> Self {
        Self {
            agent: agent.to_owned(),
            tool,
            arguments,
            session: None,
            tool_call_id: None,
            cwd: None,
            transcript: None,
            context: Map::new(),
            editable: false,
            scopes: Scope::ALL.to_vec(),
        }
    }

    fn action(&self) -> Action {
        Action {
            name: self.tool.clone(),
            arguments: self.arguments.clone(),
        }
    }
}

/// What becomes of a call, before each adapter says it in its agent's words.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Run it: `updated_input` carries a person's edit; `scope` is the one a person approved
    /// with (`None` when the policy or a grant decided).
    Allow {
        reason: String,
        updated_input: Option<Value>,
        scope: Option<Scope>,
    },
    /// Do not run it; the reason is for the model (and the person at the agent).
    Deny { reason: String },
    /// Clarify does not decide: the agent's own rules and prompt do.
    Ask { reason: String },
}

/// What an unanswered call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// The agent's own prompt decides.
    Ask,
    Deny,
}

/// The policy, the server and the time limit a call is decided with.
pub struct Decider {
    policy: Policy,
    conn: Connection,
    client: std::sync::OnceLock<Client>,
    pub wait: Duration,
    pub on_timeout: OnTimeout,
}

impl Decider {
    pub fn new(policy: Policy, conn: Connection, wait: Duration, on_timeout: OnTimeout) -> Self {
        Self {
            policy,
            conn,
            client: std::sync::OnceLock::new(),
            wait,
            on_timeout,
        }
    }

    /// The HTTP client, made on first use: a call the policy settles never needs one.
    pub fn client(&self) -> anyhow::Result<&Client> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = self.conn.client()?;
        Ok(self.client.get_or_init(|| client))
    }

    /// The policy's verdict on `call`, if it names the tool; no HTTP.
    pub fn by_policy(&self, call: &ToolCall) -> Option<Verdict> {
        match self
            .policy
            .decide(&call.tool, &call.arguments, call.session.as_deref(), &[])
        {
            PolicyDecision::Denied => Some(Verdict::Deny {
                reason: format!(
                    "The policy does not allow {} here, so it was not run.",
                    call.tool
                ),
            }),
            PolicyDecision::Allowed => Some(Verdict::Allow {
                reason: format!("The policy allows {}.", call.tool),
                updated_input: None,
                scope: None,
            }),
            PolicyDecision::Granted(_) | PolicyDecision::Ask => None,
        }
    }

    /// The verdict of the policy file or of a grant, when either covers `call`; `None` means
    /// the approval is to be raised: for a person, or for the server's rule that decides it.
    pub async fn screen(&self, call: &ToolCall) -> anyhow::Result<Option<Verdict>> {
        if let Some(verdict) = self.by_policy(call) {
            return Ok(Some(verdict));
        }
        let action = json!({"name": call.tool, "arguments": call.arguments});
        if self.server_rule_decides(call, &action).await? {
            return Ok(None);
        }
        let checked = self
            .client()?
            .check_grant(&action, call.session.as_deref())
            .await?;
        if checked["granted"] != true {
            return Ok(None);
        }
        let grant = &checked["grant"];
        let by = grant["granted_by"].as_str().unwrap_or("a reviewer");
        let scope = grant["scope"].as_str().unwrap_or("always");
        Ok(Some(Verdict::Allow {
            reason: format!("Approved earlier in clarify by {by} (scope {scope})."),
            updated_input: None,
            scope: None,
        }))
    }

    /// Whether one of the server's rules allows or denies `call`; a grant then does not count,
    /// and the approval raised for the call is resolved by the rule when it is created. A server
    /// without the route has no rules.
    async fn server_rule_decides(&self, call: &ToolCall, action: &Value) -> anyhow::Result<bool> {
        let mut body = json!({"action": action, "agent": call.agent});
        if let Some(session) = &call.session {
            body["session"] = Value::from(session.as_str());
        }
        if let Some(cwd) = &call.cwd {
            body["cwd"] = Value::from(cwd.as_str());
        }
        match self.client()?.check_policy(&body).await {
            Ok(decided) => Ok(matches!(
                decided["decision"].as_str(),
                Some("allow" | "deny")
            )),
            Err(ClientError::Api { status: 404, .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Decides `call`: policy, the server's rules, grant, then a person.
    pub async fn decide(&self, call: &ToolCall) -> anyhow::Result<Verdict> {
        if let Some(verdict) = self.screen(call).await? {
            return Ok(verdict);
        }
        let body = approval_request(call, self.wait);
        let outcome = ask_and_wait(self.client()?, &body, self.wait).await?;
        verdict_of(call, outcome.as_ref(), self)
    }

    /// The verdict for a call nobody answered in time.
    pub fn timed_out(&self) -> Verdict {
        let waited = clarify_core::humanize_seconds(self.wait.as_secs());
        match self.on_timeout {
            OnTimeout::Deny => Verdict::Deny {
                reason: format!(
                    "Nobody answered in clarify within {waited}, so the call was not run."
                ),
            },
            OnTimeout::Ask => Verdict::Ask {
                reason: format!("Nobody answered in clarify within {waited}; decide here."),
            },
        }
    }
}

/// The approval request a person is asked to answer for `call`: the action, the session, the
/// tool call id, the agent and the context. Every hook and `clarify acp` build it here.
pub fn approval_request(call: &ToolCall, wait: Duration) -> Value {
    let spec = ApprovalSpec {
        scopes: call.scopes.clone(),
        allow_edit: call.editable,
        timeout_seconds: Some(wait.as_secs().max(1)),
    };
    let mut body = spec.request(
        &call.action(),
        call.tool_call_id.as_deref(),
        call.session.as_deref(),
    );
    add_context(&mut body, call);
    add_display(&mut body, call);
    body
}

/// What the person sees: the call's display blocks, derived by core as on every path, but with
/// the files it would change read from disk (so an `Edit` is a diff of the file, with its line
/// numbers), after the agent's last words as a "Why" block; and the summary.
fn add_display(body: &mut Value, call: &ToolCall) {
    use clarify_core::display::{self, ToolCall as Shown};
    let shown = Shown {
        name: &call.tool,
        arguments: &call.arguments,
        cwd: call.cwd.as_deref(),
    };
    let derived = display::derive(&shown, &|path| read_file(call.cwd.as_deref(), path));
    let mut blocks = Vec::new();
    if let Some(why) = call
        .transcript
        .as_deref()
        .and_then(last_assistant_text)
        .and_then(|said| display::why(&said))
    {
        blocks.push(why);
    }
    blocks.extend(derived.blocks);
    let blocks = display::fit(blocks);
    if !blocks.is_empty() {
        body["display"] = serde_json::to_value(blocks).unwrap_or(Value::Null);
    }
    body["summary"] = Value::String(derived.summary);
}

/// A file a tool names, as the hook finds it: relative paths from the agent's working
/// directory; too large or not text is not compared (it would be slow, and unreadable as a
/// diff).
fn read_file(cwd: Option<&str>, path: &str) -> clarify_core::display::FileState {
    use clarify_core::display::{FileState, derive::MAX_FILE_BYTES};
    let path = match (Path::new(path).is_absolute(), cwd) {
        (false, Some(cwd)) => Path::new(cwd).join(path),
        _ => PathBuf::from(path),
    };
    match std::fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileState::Missing,
        Ok(m) if m.is_file() && m.len() <= MAX_FILE_BYTES as u64 => std::fs::read(&path)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .map_or(FileState::Unknown, FileState::Content),
        _ => FileState::Unknown,
    }
}

/// What the outcome of `call`'s approval request means for it (`None`: nobody answered within
/// the wait). Every hook and `clarify acp` read answers here.
pub fn verdict_of(
    call: &ToolCall,
    outcome: Option<&OutcomeBody>,
    decider: &Decider,
) -> anyhow::Result<Verdict> {
    let Some(outcome) = outcome else {
        return Ok(decider.timed_out());
    };
    let reply = outcome.approval()?;
    let by = outcome.answered_by.as_deref().unwrap_or("a reviewer");
    // The decision's signed receipt goes to the hook's log (standard error; the agent reads
    // only standard output): proof of who decided what, checked with `clarify receipts verify`.
    if let Some(receipt) = &outcome.receipt {
        eprintln!(
            "clarify: the receipt of {} ({}): {receipt}",
            outcome.request_id, outcome.status,
        );
    }
    Ok(
        match (
            reply.status,
            clarify_core::policy::settle(&call.action(), call.session.as_deref(), &reply),
        ) {
            (
                _,
                Settled::Run {
                    arguments, edited, ..
                },
            ) => Verdict::Allow {
                reason: if edited {
                    format!("Approved in clarify by {by}, with edited arguments.")
                } else {
                    format!("Approved in clarify by {by}.")
                },
                updated_input: edited.then_some(arguments),
                scope: Some(reply.scope.unwrap_or(Scope::Once)),
            },
            (Status::Expired, _) => decider.timed_out(),
            (Status::Skipped, _) => Verdict::Ask {
                reason: format!("{by} skipped this in clarify; decide here."),
            },
            (_, Settled::Refuse(refusal)) => Verdict::Deny {
                reason: refusal.reason,
            },
        },
    )
}

/// Raises the request and waits up to `wait` for its outcome; `None` when nobody answered in
/// time (the request is then cancelled, so a late answer cannot grant anything).
pub async fn ask_and_wait(
    client: &Client,
    body: &Value,
    wait: Duration,
) -> Result<Option<OutcomeBody>, ClientError> {
    let (record, _) = client
        .create_retrying(body, Duration::from_secs(10), |_| {})
        .await?;
    wait_for(client, &record.id, wait).await
}

/// Waits up to `wait` for request `id`'s outcome; `None` when nobody answered in time (the
/// request is then cancelled, so a late answer cannot grant anything).
pub async fn wait_for(
    client: &Client,
    id: &str,
    wait: Duration,
) -> Result<Option<OutcomeBody>, ClientError> {
    match tokio::time::timeout(wait, client.wait_resolved(id, |_| {})).await {
        Ok(resolved) => Ok(resolved?.outcome),
        Err(_) => {
            // Best effort: the request also expires on its own at the same time.
            let _ = client.cancel(id).await;
            Ok(None)
        }
    }
}

/// The request's agent, session, tool call id and context: the working directory and the
/// call's own facts (an approval shows the assistant's last words as its "Why" block; other
/// requests have them here).
pub fn add_context(body: &mut Value, call: &ToolCall) {
    let mut context = Map::new();
    if let Some(cwd) = &call.cwd {
        context.insert("working_directory".to_owned(), Value::from(cwd.as_str()));
    }
    let approval = body["questions"][0]["kind"] == "approval";
    if !approval && let Some(said) = call.transcript.as_deref().and_then(last_assistant_text) {
        context.insert("assistant".to_owned(), Value::String(said));
    }
    context.extend(call.context.clone());
    body["agent"] = Value::from(call.agent.as_str());
    if let Some(session) = &call.session {
        body["session"] = Value::from(session.as_str());
    }
    if let Some(id) = &call.tool_call_id {
        body["tool_call_id"] = Value::from(id.as_str());
    }
    if !context.is_empty() {
        body["context"] = Value::Object(context);
    }
}

/// The text of the last assistant message in a transcript of JSON lines, when the file is
/// readable: Claude Code's (`{"type": "assistant", "message": {...}}`) and Codex's
/// (`{"payload": {"type": "message", "role": "assistant", ...}}`) shapes; cut to
/// [`CONTEXT_CHARS`].
pub fn last_assistant_text(path: &Path) -> Option<String> {
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
        let message = if entry["payload"]["role"] == "assistant" {
            &entry["payload"]
        } else if entry["type"] == "assistant" || entry["message"]["role"] == "assistant" {
            &entry["message"]
        } else {
            return None;
        };
        let said = match &message["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text" || b["type"] == "output_text")
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

/// Reads all of stdin, where an agent writes its hook event.
pub fn read_stdin() -> anyhow::Result<String> {
    let mut raw = String::new();
    std::io::stdin()
        .read_to_string(&mut raw)
        .context("cannot read the hook event on stdin")?;
    Ok(raw)
}
