//! What the end-to-end tests run against: a scripted chat-completions server and a clarify
//! server, each on a real socket, and the agent binary as a real process.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use clarify_client::{Answered, Client, ListFilter, RecordBody};
use clarify_server::{AppState, Config};
use clarify_store::{Role, Store, StoreOptions};
pub use clarify_testkit::assert_valid_for_provider;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub const BIN: &str = env!("CARGO_BIN_EXE_clarify-example-agent");

/// How long anything in these tests may take before it counts as hung; generous, because the
/// machine may be busy.
pub const PATIENCE: Duration = Duration::from_secs(90);

/// Decides the model's next message from the messages it was sent.
pub type Script = Arc<dyn Fn(&[Value]) -> Value + Send + Sync>;

/// One request the fake provider received.
#[derive(Debug, Clone)]
pub struct Received {
    pub authorization: Option<String>,
    pub body: Value,
}

impl Received {
    pub fn messages(&self) -> &[Value] {
        self.body["messages"].as_array().map_or(&[], Vec::as_slice)
    }
}

#[derive(Clone)]
struct Fake {
    script: Script,
    received: Arc<Mutex<Vec<Received>>>,
}

/// A chat-completions server that answers from a script and keeps every request it receives.
pub struct FakeProvider {
    /// What the agent's `OPENAI_BASE_URL` is set to.
    pub base_url: String,
    received: Arc<Mutex<Vec<Received>>>,
    stop: CancellationToken,
}

impl FakeProvider {
    pub async fn start(script: Script) -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let fake = Fake {
            script,
            received: Arc::clone(&received),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a free port");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("local addr"));
        let stop = CancellationToken::new();
        let signal = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { signal.cancelled().await })
                .await
        });
        Self {
            base_url,
            received,
            stop,
        }
    }

    /// Every request so far, oldest first.
    pub fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn complete(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let message = (fake.script)(&messages);
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    fake.received
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Received {
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body: body.clone(),
        });
    Json(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }))
}

/// An assistant message calling one tool, with a provider extra the agent must keep.
pub fn tool_call(id: &str, name: &str, arguments: &Value) -> Value {
    json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}
    ]})
}

pub fn text(content: &str) -> Value {
    json!({"role": "assistant", "content": content, "refusal": null})
}

/// The tool results in `messages`, oldest first, as (call id, content parsed as JSON).
pub fn results(messages: &[Value]) -> Vec<(String, Value)> {
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let content = m["content"].as_str().unwrap_or_default();
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                serde_json::from_str(content).unwrap_or_else(|_| Value::String(content.to_owned())),
            )
        })
        .collect()
}

/// A clarify server on a memory store, with an agent key and a responder key.
pub struct ClarifyServer {
    pub url: String,
    pub agent_key: String,
    /// The person: answers through the HTTP API with a responder key.
    pub person: Client,
    stop: CancellationToken,
}

impl ClarifyServer {
    pub async fn start() -> Self {
        let store = Store::open("memory:", StoreOptions::default())
            .await
            .expect("store opens");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a free port");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let agent_key = store
            .create_key(
                "agent",
                Role::Agent,
                "default",
                &clarify_store::Actor::system(),
            )
            .await
            .expect("agent key")
            .token;
        let responder = store
            .create_key(
                "alice",
                Role::Responder,
                "default",
                &clarify_store::Actor::system(),
            )
            .await
            .expect("responder key")
            .token;
        let state = AppState::new(store, Config::new(url.clone()))
            .await
            .expect("server state");
        let stop = CancellationToken::new();
        let signal = stop.clone();
        tokio::spawn(clarify_server::serve(listener, state, async move {
            signal.cancelled().await
        }));
        let person = Client::new(&url, Some(responder)).expect("a client");
        Self {
            url,
            agent_key,
            person,
            stop,
        }
    }

    /// Every request, newest first.
    pub async fn requests(&self) -> Vec<RecordBody> {
        let filter = ListFilter {
            limit: Some(500),
            ..ListFilter::default()
        };
        self.person.list(&filter).await.expect("list").requests
    }

    /// Waits until exactly one request is pending and returns it; fails early if `agent` exits.
    pub async fn pending(&self, agent: &mut AgentRun) -> RecordBody {
        let filter = ListFilter {
            status: Some("pending".to_owned()),
            ..ListFilter::default()
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            let page = self.person.list(&filter).await.expect("list");
            match page.requests.as_slice() {
                [one] => return one.clone(),
                [] => {}
                many => panic!(
                    "one pending request at a time, got {}: {many:?}",
                    many.len()
                ),
            }
            if let Some(code) = agent.exit_code() {
                panic!(
                    "the agent exited ({code:?}) instead of asking: {}",
                    agent.stderr()
                );
            }
            assert!(
                Instant::now() < deadline,
                "nothing was asked: {}",
                agent.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The grants the server keeps, oldest first.
    pub async fn grants(&self) -> Vec<Value> {
        self.person.grants(None).await.expect("grants")
    }

    pub async fn answer(&self, id: &str, body: Value) -> Answered {
        self.person
            .answer(id, &body)
            .await
            .unwrap_or_else(|e| panic!("answering {id} with {body}: {e}"))
    }
}

impl Drop for ClarifyServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A directory for one test's state file and sandbox.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "clarify-agent-{name}-{}-{:x}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&path).expect("temp dir");
        Self(path)
    }

    pub fn state(&self) -> PathBuf {
        self.0.join("state.json")
    }

    pub fn sandbox(&self) -> PathBuf {
        self.0.join("sandbox")
    }

    /// The saved state, parsed.
    pub fn read_state(&self) -> Value {
        let text = std::fs::read_to_string(self.state()).expect("a state file");
        serde_json::from_str(&text).expect("the state file is JSON")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    u64::from(nanos) * 1000 + N.fetch_add(1, Ordering::Relaxed)
}

/// One run of the agent binary, its output collected as it comes.
pub struct AgentRun {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    /// The threads reading the pipes; they end when the process has exited.
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl AgentRun {
    /// Starts the agent with `task` (none: resume) against `provider` and `clarify`.
    pub fn start(
        dir: &TempDir,
        provider: &FakeProvider,
        clarify: Option<&ClarifyServer>,
        task: Option<&str>,
    ) -> Self {
        let mut command = Command::new(BIN);
        command
            .args(task)
            .env("OPENAI_BASE_URL", &provider.base_url)
            .env("OPENAI_API_KEY", "test-key")
            .env("OPENAI_MODEL", "fake-model")
            .env("CLARIFY_AGENT_STATE", dir.state())
            .env("CLARIFY_AGENT_SANDBOX", dir.sandbox())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for proxy in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
        ] {
            command.env_remove(proxy);
        }
        match clarify {
            Some(server) => command
                .env("CLARIFY_URL", &server.url)
                .env("CLARIFY_TOKEN", &server.agent_key),
            // A port nothing listens on: the run must not need clarify.
            None => command
                .env("CLARIFY_URL", "http://127.0.0.1:9")
                .env_remove("CLARIFY_TOKEN"),
        };
        let mut child = command.spawn().expect("the agent starts");
        let mut readers = Vec::new();
        let stdout = collect(child.stdout.take(), &mut readers);
        let stderr = collect(child.stderr.take(), &mut readers);
        Self {
            child,
            stdout,
            stderr,
            readers,
        }
    }

    pub fn stdout(&self) -> String {
        self.stdout
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The exit code, once the process has exited.
    pub fn exit_code(&mut self) -> Option<Option<i32>> {
        self.child.try_wait().ok().flatten().map(|s| s.code())
    }

    /// Waits for the process to exit; its exit code.
    pub async fn finish(&mut self) -> Option<i32> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(code) = self.exit_code() {
                self.drain();
                return code;
            }
            assert!(
                Instant::now() < deadline,
                "the agent did not finish: {}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL: the agent gets no chance to save anything more.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL sent");
        self.child.wait().expect("reaped");
        self.drain();
    }

    /// Waits until everything the exited process wrote has been collected.
    fn drain(&mut self) {
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
    }
}

impl Drop for AgentRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect(
    pipe: Option<impl Read + Send + 'static>,
    readers: &mut Vec<std::thread::JoinHandle<()>>,
) -> Arc<Mutex<String>> {
    let sink = Arc::new(Mutex::new(String::new()));
    if let Some(pipe) = pipe {
        let lines = Arc::clone(&sink);
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = lines.lock().unwrap_or_else(|p| p.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        }));
    }
    sink
}

/// Waits until `path` holds `needle` (the agent saved a step).
pub async fn file_contains(path: &Path, needle: &str, agent: &mut AgentRun) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return;
        }
        if let Some(code) = agent.exit_code() {
            panic!("the agent exited ({code:?}) early: {}", agent.stderr());
        }
        assert!(
            Instant::now() < deadline,
            "{} never held {needle:?}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The committed OpenAI definition of `ask_human`.
pub fn committed_ask_human() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/ask_human.openai.json");
    let text = std::fs::read_to_string(&path).expect("the committed tool definition");
    serde_json::from_str(&text).expect("JSON")
}
