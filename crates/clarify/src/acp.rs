//! `clarify acp -- AGENT [ARGS...]`: an Agent Client Protocol proxy between an editor (this
//! process's stdin and stdout) and an agent (a child process), which sends the agent's
//! permission requests to clarify as well as to the editor.
//!
//! Every message passes through unchanged, byte for byte, except `session/request_permission`
//! (agent to editor). For that one the proxy asks the policy and clarify's grants first (a call
//! they settle is answered at once, and the editor never sees it); otherwise it forwards the
//! request to the editor under an id of its own and raises a clarify approval at the same time.
//! The first answer wins. When the editor answers first, its answer goes to the agent and the
//! clarify request is cancelled. When a person answers in clarify first, the agent gets the
//! matching option, and the editor is told to drop its prompt with `$/cancel_request` (ACP's
//! cancellation notification); the editor's answer to the cancelled request is then dropped. A
//! clarify request nobody answers in `--wait`, or one skipped or cancelled, leaves the editor's
//! prompt to decide alone.
//!
//! The permission options map to clarify's answers: `allow_once` is an approval for `once`,
//! `allow_always` one for `session` or `always`, `reject_once` (else `reject_always`) a denial;
//! with no option for a denial the agent hears `cancelled`, which it must not take as approval.
//! The action a person sees is the tool call's `kind` (`execute`, `edit`, ...) as the tool name,
//! with its `rawInput` as the arguments (or its title when the agent gave no input), gathered
//! from the request and the agent's earlier `session/update`s about that call; the session is
//! ACP's `sessionId`.
//!
//! The relay is written here on `serde_json` rather than on the `agent-client-protocol` crate:
//! that SDK types every message it handles and answers unknown methods itself, while a proxy
//! must hand on what it does not understand (other methods, newer protocol versions, `_meta`)
//! exactly as it came, and looks into one method only.
//!
//! The proxy keeps running when clarify is out of reach (the editor's prompt then decides), and
//! stops when either side closes: when the editor closes its stdin the agent's stdin is closed
//! and the agent given a few seconds to exit; when the agent's stdout closes, the proxy ends with
//! the agent's exit code. Either way the clarify requests still open are cancelled.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use clarify_core::Scope;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::client::Connection;
use crate::duration::parse_duration;
use crate::hook::decide::{self, Decider, OnTimeout, ToolCall, Verdict};

/// How long the agent has to exit after the editor closed its side.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// The most tool calls remembered from `session/update`s.
const TOOL_CALLS_KEPT: usize = 1_024;

#[derive(Debug, Args)]
pub struct AcpArgs {
    #[command(flatten)]
    conn: Connection,
    /// A TOML file with `allow` and `deny` lists of tool-name patterns (matched against the
    /// tool call's kind: `read`, `edit`, `execute`, ...).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// A configuration file whose `[claude_code]` section is the policy, unless `--policy` is
    /// given.
    #[arg(long, env = "CLARIFY_CONFIG")]
    config: Option<PathBuf>,
    /// How long a permission request waits in clarify; after that only the editor's prompt
    /// decides.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    wait: Duration,
    /// The agent to start, speaking ACP on stdio.
    #[arg(last = true, required = true, value_name = "AGENT")]
    command: Vec<String>,
}

pub async fn run(args: AcpArgs) -> anyhow::Result<ExitCode> {
    let policy =
        crate::policy::load_or_section(args.policy.as_deref(), args.config.as_deref(), |c| {
            c.claude_code
        })?;
    let decider = Decider::new(policy, args.conn.clone(), args.wait, OnTimeout::Ask);
    let Some((program, rest)) = args.command.split_first() else {
        anyhow::bail!(
            "name the agent to start after `--`, e.g. clarify acp -- gemini --experimental-acp"
        );
    };
    let mut child = tokio::process::Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start the agent {program}"))?;
    let (Some(agent_in), Some(agent_out)) = (child.stdin.take(), child.stdout.take()) else {
        anyhow::bail!("the agent {program} started without pipes");
    };
    let agent_name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.clone());

    let (to_editor, editor_lines) = mpsc::unbounded_channel();
    let (to_agent, agent_lines) = mpsc::unbounded_channel();
    let editor_writer = tokio::spawn(write_lines(tokio::io::stdout(), editor_lines));
    tokio::spawn(write_lines(agent_in, agent_lines));
    let proxy = Proxy {
        decider: Arc::new(decider),
        agent_name,
        shared: Arc::new(Mutex::new(Shared::default())),
        to_editor,
        to_agent,
    };

    let (editor_closed_tx, editor_closed) = oneshot::channel();
    tokio::spawn(proxy.clone().relay_editor(editor_closed_tx));
    let from_agent = proxy.clone().relay_agent(agent_out);
    tokio::pin!(from_agent);
    tokio::select! {
        () = &mut from_agent => {}
        _ = editor_closed => {
            // The editor is gone: close the agent's stdin, and give it a moment to finish.
            let _ = proxy.to_agent.send(Vec::new());
            if tokio::time::timeout(EXIT_GRACE, &mut from_agent).await.is_err() {
                let _ = child.start_kill();
            }
        }
    }
    proxy.cancel_open_requests().await;
    let status = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
    // Everything queued for the editor is written before the proxy ends.
    let _ = proxy.to_editor.send(Vec::new());
    let _ = editor_writer.await;
    Ok(match status {
        Ok(Ok(status)) => ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1)),
        _ => {
            let _ = child.start_kill();
            ExitCode::from(1)
        }
    })
}

/// What the two directions share.
#[derive(Default)]
struct Shared {
    /// Permission requests forwarded to the editor and not answered by it yet, by the id the
    /// editor saw (as JSON text): where its answer goes.
    forwarded: HashMap<String, oneshot::Sender<Map<String, Value>>>,
    /// Ids the editor saw whose request clarify answered first: the editor's late answer is
    /// dropped.
    settled: HashSet<String>,
    /// The agent's id of each forwarded permission request (as JSON text) → the id the editor
    /// saw, so the agent's own `$/cancel_request` reaches the editor's prompt.
    by_agent_id: HashMap<String, String>,
    /// What the agent said about each tool call in `session/update`s, by `toolCallId`.
    tool_calls: HashMap<String, Map<String, Value>>,
    /// Clarify requests raised and not resolved yet, cancelled when the proxy stops.
    open_requests: HashSet<String>,
    /// Clarify requests being created: the proxy stopping waits for them, so that one created
    /// just as the agent exits is cancelled too.
    raising: usize,
    next_id: u64,
}

#[derive(Clone)]
struct Proxy {
    decider: Arc<Decider>,
    agent_name: String,
    shared: Arc<Mutex<Shared>>,
    /// Lines for the editor; an empty one ends the writer.
    to_editor: mpsc::UnboundedSender<Vec<u8>>,
    /// Lines for the agent; an empty one closes its stdin.
    to_agent: mpsc::UnboundedSender<Vec<u8>>,
}

impl Proxy {
    fn shared(&self) -> MutexGuard<'_, Shared> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters more than stopping would, so a poisoned lock is used as it is.
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads the agent's messages until its stdout closes.
    async fn relay_agent(self, out: tokio::process::ChildStdout) {
        let mut reader = BufReader::new(out);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let text = trim_line(&line);
            if text.is_empty() {
                continue;
            }
            let Some(message) = json_object(text) else {
                let _ = self.to_editor.send(text.to_vec());
                continue;
            };
            match message.get("method").and_then(Value::as_str) {
                Some("session/request_permission") if message.contains_key("id") => {
                    tokio::spawn(self.clone().permission(message));
                    continue;
                }
                Some("$/cancel_request") => {
                    if let Some(rewritten) = self.cancellation_for_editor(&message) {
                        let _ = self.to_editor.send(rewritten);
                        continue;
                    }
                }
                Some("session/update") => self.remember_tool_call(&message),
                _ => {}
            }
            let _ = self.to_editor.send(text.to_vec());
        }
    }

    /// Reads the editor's messages until its stdout closes, then says so.
    async fn relay_editor(self, closed: oneshot::Sender<()>) {
        let mut reader = BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = trim_line(&line);
            if text.is_empty() {
                continue;
            }
            if let Some(message) = json_object(text)
                && !message.contains_key("method")
                && let Some(id) = message.get("id")
            {
                let key = id.to_string();
                let mut shared = self.shared();
                if let Some(waiting) = shared.forwarded.remove(&key) {
                    drop(shared);
                    let _ = waiting.send(message);
                    continue;
                }
                if shared.settled.remove(&key) {
                    continue;
                }
            }
            let _ = self.to_agent.send(text.to_vec());
        }
        let _ = closed.send(());
    }

    /// The agent's `$/cancel_request` for a permission request the editor knows under another
    /// id, rewritten to that id; `None` for any other cancellation (passed through unchanged).
    fn cancellation_for_editor(&self, message: &Map<String, Value>) -> Option<Vec<u8>> {
        let request_id = message.get("params")?.get("requestId")?;
        let editor_id = self
            .shared()
            .by_agent_id
            .get(&request_id.to_string())?
            .clone();
        let mut rewritten = message.clone();
        rewritten.insert("params".to_owned(), json!({"requestId": editor_id}));
        serde_json::to_vec(&rewritten).ok()
    }

    /// Keeps what a `session/update` says about a tool call (title, kind, input), which a later
    /// permission request for it may leave out.
    fn remember_tool_call(&self, message: &Map<String, Value>) {
        let update = &message.get("params").unwrap_or(&Value::Null)["update"];
        if !matches!(
            update["sessionUpdate"].as_str(),
            Some("tool_call" | "tool_call_update")
        ) {
            return;
        }
        let Some(id) = update["toolCallId"].as_str() else {
            return;
        };
        let mut shared = self.shared();
        if shared.tool_calls.len() >= TOOL_CALLS_KEPT && !shared.tool_calls.contains_key(id) {
            shared.tool_calls.clear();
        }
        let known = shared.tool_calls.entry(id.to_owned()).or_default();
        for key in ["title", "kind", "rawInput", "locations"] {
            if let Some(v) = update.get(key).filter(|v| !v.is_null()) {
                known.insert(key.to_owned(), v.clone());
            }
        }
    }

    /// One `session/request_permission`: settled by the policy or a grant, or raced between the
    /// editor's prompt and a clarify approval.
    async fn permission(self, request: Map<String, Value>) {
        let agent_id = request.get("id").cloned().unwrap_or(Value::Null);
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        let options: Vec<Value> = params["options"].as_array().cloned().unwrap_or_default();
        let call = self.tool_call(&params, &options);

        let mut clarify_reachable = true;
        match self.decider.screen(&call).await {
            Ok(Some(verdict)) => {
                if let Some(result) = result_for(&verdict, &options) {
                    self.answer_agent(&agent_id, result);
                    return;
                }
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!(
                    "clarify acp: {e:#}; the editor decides on {} alone",
                    call.tool
                );
                clarify_reachable = false;
            }
        }

        let (editor_id, from_editor) = self.forward(&agent_id, request);
        let asked = if clarify_reachable && !call.scopes.is_empty() {
            self.raise(&call).await
        } else {
            None
        };
        let decided_in_clarify = async {
            match &asked {
                Some(id) => match self.decider.client() {
                    Ok(client) => decide::wait_for(client, id, self.decider.wait).await.ok(),
                    Err(_) => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        tokio::pin!(from_editor);
        tokio::select! {
            answer = &mut from_editor => {
                self.editor_answered(&agent_id, answer.ok());
                if let Some(id) = &asked {
                    self.cancel_request(id).await;
                }
            }
            outcome = decided_in_clarify => {
                // Only a person's answer competes with the editor: a request that expired, was
                // skipped or was cancelled (also by this proxy stopping) leaves the prompt to it.
                let outcome = outcome.flatten().filter(|o| o.status == "answered");
                let verdict = decide::verdict_of(&call, outcome.as_ref(), &self.decider)
                    .unwrap_or_else(|e| Verdict::Ask { reason: format!("{e:#}") });
                let result = result_for(&verdict, &options);
                let won = result.is_some() && {
                    let mut shared = self.shared();
                    // The editor may have answered in the meantime; then its answer stands.
                    let pending = shared.forwarded.remove(&editor_id).is_some();
                    if pending {
                        shared.settled.insert(editor_id.clone());
                    }
                    pending
                };
                match result {
                    Some(result) if won => {
                        self.answer_agent(&agent_id, result);
                        let cancel = json!({
                            "jsonrpc": "2.0",
                            "method": "$/cancel_request",
                            "params": {"requestId": serde_json::from_str::<Value>(&editor_id).unwrap_or(Value::Null)},
                        });
                        let _ = self.to_editor.send(cancel.to_string().into_bytes());
                    }
                    _ => self.editor_answered(&agent_id, from_editor.await.ok()),
                }
            }
        }
        let mut shared = self.shared();
        shared.by_agent_id.remove(&agent_id.to_string());
        if let Some(id) = &asked {
            shared.open_requests.remove(id);
        }
    }

    /// The call a person is asked about, from the request and what the agent said about it
    /// before.
    fn tool_call(&self, params: &Value, options: &[Value]) -> ToolCall {
        let described = &params["toolCall"];
        let id = described["toolCallId"].as_str().map(str::to_owned);
        let mut known = id
            .as_deref()
            .and_then(|id| self.shared().tool_calls.get(id).cloned())
            .unwrap_or_default();
        if let Some(fields) = described.as_object() {
            for (key, value) in fields.iter().filter(|(_, v)| !v.is_null()) {
                known.insert(key.clone(), value.clone());
            }
        }
        let title = known
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let tool = known
            .get("kind")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .unwrap_or("other")
            .to_owned();
        // Without an input the title is what was proposed; never an empty argument list, which
        // a grant would then match for every call of the kind.
        let arguments = match known.get("rawInput") {
            Some(input) => input.clone(),
            None => json!({"title": title.clone().unwrap_or_default()}),
        };
        let mut call = ToolCall::new(&self.agent_name, tool, arguments);
        call.session = params["sessionId"].as_str().map(str::to_owned);
        call.tool_call_id = id;
        if let Some(title) = title {
            call.context
                .insert("title".to_owned(), Value::String(title));
        }
        if let Some(locations) = known.get("locations") {
            call.context
                .insert("locations".to_owned(), locations.clone());
        }
        let kinds: Vec<&str> = options.iter().filter_map(|o| o["kind"].as_str()).collect();
        call.scopes = Vec::new();
        if kinds.contains(&"allow_once") {
            call.scopes.push(Scope::Once);
        }
        if kinds.contains(&"allow_always") {
            call.scopes.extend([Scope::Session, Scope::Always]);
        }
        call
    }

    /// Sends the request to the editor under an id of the proxy's own; the receiver gets the
    /// editor's answer.
    fn forward(
        &self,
        agent_id: &Value,
        mut request: Map<String, Value>,
    ) -> (String, oneshot::Receiver<Map<String, Value>>) {
        let (tx, rx) = oneshot::channel();
        let editor_id = {
            let mut shared = self.shared();
            shared.next_id += 1;
            let editor_id = Value::String(format!("clarify-acp-{}", shared.next_id));
            let key = editor_id.to_string();
            shared.forwarded.insert(key.clone(), tx);
            shared
                .by_agent_id
                .insert(agent_id.to_string(), editor_id_text(&editor_id));
            request.insert("id".to_owned(), editor_id);
            key
        };
        if let Ok(line) = serde_json::to_vec(&request) {
            let _ = self.to_editor.send(line);
        }
        (editor_id, rx)
    }

    /// Raises the clarify approval; `None` when it could not be raised (the editor then decides
    /// alone).
    async fn raise(&self, call: &ToolCall) -> Option<String> {
        let body = decide::approval_request(call, self.decider.wait);
        self.shared().raising += 1;
        let created = match self.decider.client() {
            Ok(client) => client
                .create_retrying(&body, Duration::from_secs(10), |_| {})
                .await
                .map_err(anyhow::Error::from),
            Err(e) => Err(e),
        };
        let mut shared = self.shared();
        shared.raising -= 1;
        match created {
            Ok((record, _)) => {
                let id = record.id;
                shared.open_requests.insert(id.clone());
                Some(id)
            }
            Err(e) => {
                drop(shared);
                eprintln!(
                    "clarify acp: {e:#}; the editor decides on {} alone",
                    call.tool
                );
                None
            }
        }
    }

    fn answer_agent(&self, agent_id: &Value, result: Value) {
        let response = json!({"jsonrpc": "2.0", "id": agent_id, "result": result});
        let _ = self.to_agent.send(response.to_string().into_bytes());
    }

    /// The editor's answer, passed to the agent under the agent's id; without one (the editor
    /// went away) the agent hears `cancelled`.
    fn editor_answered(&self, agent_id: &Value, answer: Option<Map<String, Value>>) {
        match answer {
            Some(mut answer) => {
                answer.insert("id".to_owned(), agent_id.clone());
                if let Ok(line) = serde_json::to_vec(&answer) {
                    let _ = self.to_agent.send(line);
                }
            }
            None => self.answer_agent(agent_id, json!({"outcome": {"outcome": "cancelled"}})),
        }
    }

    async fn cancel_request(&self, id: &str) {
        self.shared().open_requests.remove(id);
        if let Ok(client) = self.decider.client() {
            let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel(id)).await;
        }
    }

    async fn cancel_open_requests(&self) {
        // A request still being created is waited for (at most as long as its creation may
        // retry), then cancelled with the rest.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.shared().raising > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let open: Vec<String> = self.shared().open_requests.drain().collect();
        if open.is_empty() {
            return;
        }
        let Ok(client) = self.decider.client() else {
            return;
        };
        let cancel_all = async {
            for id in &open {
                let _ = client.cancel(id).await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), cancel_all).await;
    }
}

/// The id the editor saw, as the JSON text `by_agent_id` keeps.
fn editor_id_text(id: &Value) -> String {
    id.as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| id.to_string())
}

/// The agent's answer for `verdict`: the option of the matching kind, `cancelled` for a denial
/// without a reject option; `None` when clarify does not decide (or no option can say it).
fn result_for(verdict: &Verdict, options: &[Value]) -> Option<Value> {
    let pick = |kinds: &[&str]| {
        kinds.iter().find_map(|kind| {
            options
                .iter()
                .find(|o| o["kind"] == *kind)
                .and_then(|o| o["optionId"].as_str())
        })
    };
    let selected = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
    match verdict {
        Verdict::Allow { scope, .. } => {
            let kinds: &[&str] = match scope {
                Some(Scope::Session | Scope::Always) => &["allow_always", "allow_once"],
                _ => &["allow_once", "allow_always"],
            };
            pick(kinds).map(selected)
        }
        Verdict::Deny { .. } => Some(
            pick(&["reject_once", "reject_always"])
                .map(selected)
                .unwrap_or_else(|| json!({"outcome": {"outcome": "cancelled"}})),
        ),
        Verdict::Ask { .. } => None,
    }
}

/// Writes each line with its newline; an empty line ends the writer (and, for the agent's
/// stdin, closes it).
async fn write_lines<W: AsyncWrite + Unpin>(
    mut out: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(mut line) = lines.recv().await {
        if line.is_empty() {
            break;
        }
        line.push(b'\n');
        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
            break;
        }
    }
    let _ = out.shutdown().await;
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn json_object(line: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(line).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}
