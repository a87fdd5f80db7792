//! Each coding agent's hook as its agent runs it: one process per event, the event (recorded in
//! the agent's documented format, under `tests/fixtures/hooks/`) as JSON on stdin, the decision
//! as JSON on stdout, against a real `clarify serve` answered over HTTP. And `clarify hook
//! install` into each agent's settings file.

mod claude_code;
mod codex;
mod copilot;
mod cursor;
mod gemini;
mod install;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::support::{Api, BIN, Server, free_port, unique};

/// A server on a memory store and an admin client of it.
pub async fn server() -> (Server, Api) {
    let server = Server::start("memory:", &[]).await;
    let key = server.admin_key().await;
    let api = Api::new(&server.url, &key);
    (server, api)
}

/// What a hook process did.
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Stdout parsed: it must be one JSON object and nothing else.
    pub fn json(&self) -> Value {
        assert_eq!(self.code, 0, "exit code; stderr: {}", self.stderr);
        serde_json::from_str(self.stdout.trim_end())
            .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {:?}", self.stdout))
    }

    /// Blocked the way a failing hook blocks: exit 2, the reason on stderr, nothing on stdout.
    pub fn assert_blocked(&self, reason_has: &str) {
        assert_eq!(self.code, 2, "{self:?}");
        assert_eq!(self.stdout, "", "no partial decision: {self:?}");
        assert!(self.stderr.contains(reason_has), "{self:?}");
    }
}

/// Starts `clarify hook AGENT ARGS` with `event` on stdin.
pub fn hook(
    agent: &str,
    url: &str,
    key: &str,
    args: &[&str],
    event: &Value,
) -> tokio::task::JoinHandle<Ran> {
    hook_raw(agent, url, key, args, event.to_string())
}

/// Starts `clarify hook AGENT ARGS` with `input` as it is on stdin.
pub fn hook_raw(
    agent: &str,
    url: &str,
    key: &str,
    args: &[&str],
    input: String,
) -> tokio::task::JoinHandle<Ran> {
    let mut command = tokio::process::Command::new(BIN);
    command
        .args(["hook", agent])
        .args(args)
        .env("CLARIFY_URL", url)
        .env("CLARIFY_TOKEN", key)
        .env("NO_COLOR", "1")
        .env_remove("CLARIFY_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    tokio::spawn(async move {
        let mut child = command.spawn().expect("clarify hook starts");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.as_bytes())
            .await
            .expect("event written");
        drop(stdin);
        let out = child.wait_with_output().await.expect("clarify hook ends");
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    })
}

pub async fn finished(task: tokio::task::JoinHandle<Ran>) -> Ran {
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the hook decided in time")
        .expect("hook task")
}

/// The recorded event `tests/fixtures/hooks/NAME` for `session`, with a fresh tool call id.
pub fn fixture(name: &str, session: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .replace("\"SESSION\"", &Value::from(session).to_string())
        .replace("TOOL_USE_ID", &format!("call_{}", unique()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The pending request of `session`, once it exists.
pub async fn pending(api: &Api, session: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, page) = api
            .get(&format!("/v1/requests?status=pending&session={session}"))
            .await;
        if let Some(r) = page["requests"].get(0) {
            return r.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no request appeared for {session}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

/// Every request of `session`, newest first.
pub async fn requests(api: &Api, session: &str) -> Vec<Value> {
    let (_, page) = api.get(&format!("/v1/requests?session={session}")).await;
    page["requests"].as_array().cloned().unwrap_or_default()
}

pub async fn answer(api: &Api, record: &Value, body: Value) {
    let id = record["id"].as_str().expect("id");
    let (status, reply) = api.post(&format!("/v1/requests/{id}/answer"), body).await;
    assert_eq!(status, 200, "{reply}");
}

/// Runs AGENT's hook on `event`, answers the request it raises with `body`, and returns what it
/// printed, with the request as it was raised.
pub async fn decided(
    server: &Server,
    api: &Api,
    agent: &str,
    event: &Value,
    session: &str,
    body: Value,
) -> (Ran, Value) {
    let running = hook(agent, &server.url, &api.key, &[], event);
    let record = pending(api, session).await;
    answer(api, &record, body).await;
    (finished(running).await, record)
}

pub fn session() -> String {
    format!("sess-{}", unique())
}

/// A URL nothing answers at.
pub fn nowhere() -> String {
    format!("http://127.0.0.1:{}", free_port())
}

/// The reason an approve gives, checked to name clarify and the person.
pub fn assert_approved(reason: &Value) {
    let reason = reason.as_str().unwrap_or_default();
    assert!(reason.starts_with("Approved in clarify by "), "{reason}");
}

/// The inputs that are not an agent's event: each blocks the call with exit 2 and a reason
/// naming the problem, and with `--fail-open` exits 0 printing nothing.
pub async fn bad_input_blocks(agent: &str, wrong_type: Value, field: &str) {
    let url = nowhere();
    for (input, reason) in [
        ("{not json".to_owned(), "not JSON"),
        ("[1, 2]".to_owned(), "not a JSON object"),
        (
            json!({"hook_event_name": "SessionStart", "session_id": "s"}).to_string(),
            "SessionStart",
        ),
        (wrong_type.to_string(), field),
    ] {
        let ran = finished(hook_raw(agent, &url, "ck_none", &[], input.clone())).await;
        ran.assert_blocked(reason);
        let open = finished(hook_raw(agent, &url, "ck_none", &["--fail-open"], input)).await;
        assert_eq!((open.code, open.stdout.as_str()), (0, ""), "{open:?}");
    }
}
