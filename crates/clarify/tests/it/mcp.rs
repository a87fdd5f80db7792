//! `clarify mcp` driven as an MCP client drives it: the real binary on stdio, spoken to through
//! rmcp's client (initialize, tools/list, tools/call, progress, cancellation), and once byte by
//! byte to check that stdout carries nothing but JSON-RPC. Answers come from a second party: the
//! same SQLite file opened by the test (embedded mode), or a `clarify serve` process (remote
//! mode, `CLARIFY_URL`).

use std::process::Stdio;
use std::time::Duration;

use clarify_store::{Actor, Clarify, ListQuery, RequestRecord, Store, StoreOptions};
use clarify_testkit::mcp::{
    CLIENT_NAME, Declared, McpAgent, PATIENCE, finish, question, structured, text,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetTaskParams, ProtocolVersion, TaskStatus,
};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::{self, Api, BIN, Server};

/// Starts `clarify mcp ARGS` with `env` and initializes a session; also returns its pid.
async fn start_process(args: &[&str], env: &[(&str, &str)]) -> (McpAgent, u32) {
    let mut command = tokio::process::Command::new(BIN);
    command
        .arg("mcp")
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("CLARIFY_URL")
        .env_remove("CLARIFY_TOKEN")
        .env_remove("CLARIFY_DB");
    for (name, value) in env {
        command.env(name, value);
    }
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("clarify mcp starts");
    let pid = transport.id().expect("the process runs");
    (McpAgent::connect(transport).await, pid)
}

/// Starts `clarify mcp ARGS` with `env` and initializes a session.
async fn start(args: &[&str], env: &[(&str, &str)]) -> McpAgent {
    start_process(args, env).await.0
}

/// A second party on the same store as the `clarify mcp` process.
struct Person {
    clarify: Clarify,
}

impl Person {
    async fn open(db: &str) -> Self {
        let store = Store::open(db, StoreOptions::default())
            .await
            .expect("store opens");
        Self {
            clarify: Clarify::new(store).with_actor(Actor::new("alice", "test")),
        }
    }

    async fn pending(&self) -> Vec<RequestRecord> {
        let query = ListQuery {
            status: Some(clarify_core::Status::Pending),
            ..ListQuery::default()
        };
        self.clarify.list(&query).await.expect("listed").records
    }

    /// Waits until a request with `text` is pending; returns it.
    async fn wait_pending(&self, text: &str) -> RequestRecord {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(r) = self
                .pending()
                .await
                .into_iter()
                .find(|r| r.request.questions[0].text == text)
            {
                return r;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no pending request {text:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until request `id` is resolved; returns its status.
    async fn wait_resolved(&self, id: &str) -> RequestRecord {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let record = self.clarify.get(id).await.expect("read").expect("exists");
            if record.status.is_resolved() {
                return record;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "request {id} still pending"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn temp_db(name: &str) -> String {
    support::sqlite_url(&support::temp_dir(name))
}

#[tokio::test]
async fn lists_the_three_tools_with_the_committed_schema() {
    let db = temp_db("mcp-list");
    let agent = start(&["--db", &db], &[]).await;
    let info = agent.client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("clarify")
    );
    assert!(info.capabilities.tools.is_some());
    let tools = agent.client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "ask_human",
            "ask_human_async",
            "get_answer",
            "approve_tool_use"
        ]
    );
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tools/ask_human.mcp.json"
        ))
        .expect("committed definition"),
    )
    .expect("JSON");
    assert_eq!(tools[0].schema_as_json_value(), committed["inputSchema"]);
    assert_eq!(tools[1].schema_as_json_value(), committed["inputSchema"]);
    assert_eq!(
        tools[0].description.as_deref(),
        committed["description"].as_str()
    );
    assert_eq!(
        tools[2].schema_as_json_value()["properties"]["wait_seconds"]["maximum"],
        50
    );
}

#[tokio::test]
async fn ask_human_reports_progress_until_a_person_answers() {
    let db = temp_db("mcp-ask");
    let mut agent = start(&["--db", &db, "--progress-interval", "200ms"], &[]).await;
    let person = Person::open(&db).await;
    let call = agent.begin("ask_human", question("Which database?")).await;
    let token = call.progress_token.clone();
    let record = person.wait_pending("Which database?").await;
    assert_eq!(record.request.agent.as_deref(), Some(CLIENT_NAME));

    let first = agent.next_progress().await;
    let second = agent.next_progress().await;
    assert_eq!(first.progress_token, token);
    assert!(second.progress > first.progress, "progress increases");
    assert_eq!(first.total, Some(3600.0), "the request's time limit");
    assert!(
        first
            .message
            .as_deref()
            .is_some_and(|m| m.contains("waiting for a human")),
        "{first:?}"
    );

    person
        .clarify
        .answer(&record.id, &json!({"option": "postgres"}))
        .await
        .expect("answered");
    let result = finish(call).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), "answered by alice: Postgres");
    let outcome = structured(&result);
    assert_eq!(outcome["request_id"], record.id.as_str());
    assert_eq!(outcome["status"], "answered");
    assert_eq!(outcome["questions"][0]["answer"], "Postgres");
    assert_eq!(outcome["questions"][0]["mode"], "option");
}

#[tokio::test]
async fn ask_human_async_then_get_answer() {
    let db = temp_db("mcp-async");
    let mut agent = start(&["--db", &db, "--progress-interval", "200ms"], &[]).await;
    let person = Person::open(&db).await;
    let asked = agent.call("ask_human_async", question("Deploy?")).await;
    assert_eq!(asked.is_error, Some(false));
    let id = structured(&asked)["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    assert_eq!(structured(&asked), &json!({"request_id": id}));

    let pending = agent
        .call("get_answer", json!({"request_id": id, "wait_seconds": 0}))
        .await;
    assert_eq!(
        structured(&pending),
        &json!({"request_id": id, "status": "pending"})
    );

    // A get_answer that is waiting (it reports progress) returns as soon as the answer arrives.
    let waiting = agent
        .begin("get_answer", json!({"request_id": id, "wait_seconds": 50}))
        .await;
    assert_eq!(
        agent.next_progress().await.progress_token,
        waiting.progress_token
    );
    person
        .clarify
        .answer(&id, &json!({"option": "sqlite"}))
        .await
        .expect("answered");
    let answered = finish(waiting).await;
    assert_eq!(structured(&answered)["status"], "answered");
    assert_eq!(text(&answered), "answered by alice: SQLite");

    let too_long = agent
        .call("get_answer", json!({"request_id": id, "wait_seconds": 120}))
        .await;
    assert_eq!(too_long.is_error, Some(true));
    assert!(text(&too_long).contains("0 to 50"), "{}", text(&too_long));
    let unknown = agent
        .call("get_answer", json!({"request_id": "nope"}))
        .await;
    assert_eq!(unknown.is_error, Some(true));
    assert_eq!(structured(&unknown)["error"]["code"], "not_found");
}

#[tokio::test]
async fn invalid_input_is_a_tool_error_and_stores_nothing() {
    let db = temp_db("mcp-invalid");
    let agent = start(&["--db", &db], &[]).await;
    let person = Person::open(&db).await;
    let five = json!({"questions": [{
        "question": "Which one?", "kind": "single",
        "options": ["a", "b", "c", "d", "e"],
    }]});
    for tool in ["ask_human", "ask_human_async"] {
        let result = agent.call(tool, five.clone()).await;
        assert_eq!(result.is_error, Some(true));
        let message = text(&result);
        assert!(
            message.contains("questions[0].options") && message.contains("at most 4"),
            "{message}"
        );
    }
    let empty = agent.call("ask_human", json!({})).await;
    assert_eq!(empty.is_error, Some(true));
    assert!(text(&empty).contains("question"), "{}", text(&empty));
    assert!(person.pending().await.is_empty(), "nothing was stored");
}

#[tokio::test]
async fn cancelling_ask_human_cancels_the_request() {
    let db = temp_db("mcp-cancel");
    let agent = start(&["--db", &db], &[]).await;
    let person = Person::open(&db).await;
    let call = agent.begin("ask_human", question("Drop the table?")).await;
    let record = person.wait_pending("Drop the table?").await;
    call.cancel(Some("the user changed their mind".to_owned()))
        .await
        .expect("cancellation sent");
    let resolved = person.wait_resolved(&record.id).await;
    assert_eq!(resolved.status, clarify_core::Status::Cancelled);
    let outcome = resolved.outcome().expect("outcome");
    assert_eq!(outcome.answered_by.as_deref(), Some(CLIENT_NAME));
}

/// SIGTERM (a client or supervisor stopping the process) ends the session like the client
/// going away: the waiting `ask_human` is answered with its cancelled outcome, the request is
/// cancelled in the store, and the process exits 0.
#[tokio::test]
async fn sigterm_cancels_the_waiting_ask_human_and_exits() {
    let db = temp_db("mcp-sigterm");
    let (agent, pid) = start_process(&["--db", &db], &[]).await;
    let person = Person::open(&db).await;
    let call = agent.begin("ask_human", question("Deploy now?")).await;
    let record = person.wait_pending("Deploy now?").await;
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let result = finish(call).await;
    assert_eq!(structured(&result)["status"], "cancelled", "{result:?}");
    assert_eq!(
        person.wait_resolved(&record.id).await.status,
        clarify_core::Status::Cancelled
    );
    let quit = tokio::time::timeout(PATIENCE, agent.client.waiting())
        .await
        .expect("the process exits and the session ends");
    assert!(quit.is_ok(), "{quit:?}");
}

/// A `clarify serve` process with an agent key for the MCP side and a responder key.
pub(crate) async fn remote(name: &str) -> (Server, String, Api) {
    let dir = support::temp_dir(name);
    let db = support::sqlite_url(&dir);
    let agent_key = support::create_key(&db, "agent", "bot", "default");
    let responder = support::create_key(&db, "responder", "alice", "default");
    let server = Server::start(&db, &[]).await;
    let api = Api::new(&server.url, &responder);
    (server, agent_key, api)
}

pub(crate) async fn wait_remote(api: &Api, text: &str) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (_, page) = api.get("/v1/requests?status=pending").await;
        if let Some(r) = page["requests"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["questions"][0]["text"] == text))
        {
            return r.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no pending {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn remote_mode_asks_through_the_server() {
    let (server, key, api) = remote("mcp-remote").await;
    let env = [
        ("CLARIFY_URL", server.url.as_str()),
        ("CLARIFY_TOKEN", key.as_str()),
    ];
    let mut agent = start(&["--progress-interval", "200ms"], &env).await;

    let call = agent.begin("ask_human", question("Which database?")).await;
    let record = wait_remote(&api, "Which database?").await;
    assert_eq!(record["agent"], CLIENT_NAME);
    let progress = agent.next_progress().await;
    assert_eq!(progress.total, Some(3600.0));
    let id = record["id"].as_str().expect("id");
    let (status, _) = api
        .post(
            &format!("/v1/requests/{id}/answer"),
            json!({"option": "postgres"}),
        )
        .await;
    assert_eq!(status, 200);
    let result = finish(call).await;
    assert_eq!(text(&result), "answered by alice: Postgres");
    assert_eq!(structured(&result)["request_id"], id);

    let asked = agent.call("ask_human_async", question("Deploy?")).await;
    let id = structured(&asked)["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let pending = agent
        .call("get_answer", json!({"request_id": id, "wait_seconds": 0}))
        .await;
    assert_eq!(structured(&pending)["status"], "pending");
    api.post(
        &format!("/v1/requests/{id}/answer"),
        json!({"option": "sqlite"}),
    )
    .await;
    let answered = agent
        .call("get_answer", json!({"request_id": id, "wait_seconds": "5"}))
        .await;
    assert_eq!(structured(&answered)["questions"][0]["answer"], "SQLite");

    // The server's own limits and messages apply.
    let invalid = agent
        .call(
            "ask_human",
            json!({"questions": [{"question": " ", "kind": "open"}]}),
        )
        .await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(
        text(&invalid).contains("questions[0]"),
        "{}",
        text(&invalid)
    );
}

#[tokio::test]
async fn remote_mode_cancels_on_the_server() {
    let (server, key, api) = remote("mcp-remote-cancel").await;
    let env = [
        ("CLARIFY_URL", server.url.as_str()),
        ("CLARIFY_TOKEN", key.as_str()),
    ];
    let agent = start(&[], &env).await;
    let call = agent.begin("ask_human", question("Drop the table?")).await;
    let record = wait_remote(&api, "Drop the table?").await;
    let id = record["id"].as_str().expect("id");
    call.cancel(None).await.expect("cancellation sent");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (_, record) = api.get(&format!("/v1/requests/{id}")).await;
        if record["status"] == "cancelled" {
            assert_eq!(record["outcome"]["answered_by"], "bot");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{record}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Speaks JSON-RPC by hand, with debug logging on: every stdout line must be a JSON-RPC message
/// (logs go to stderr), and closing stdin ends the process and cancels the `ask_human` still
/// waiting, while a request asked with `ask_human_async` stays open.
#[tokio::test]
async fn stdout_carries_only_json_rpc_and_closing_stdin_cancels_the_wait() {
    let db = temp_db("mcp-raw");
    let person = Person::open(&db).await;
    let mut child = tokio::process::Command::new(BIN)
        .args(["mcp", "--db", &db])
        .env("RUST_LOG", "debug")
        .env("NO_COLOR", "1")
        .env_remove("CLARIFY_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("clarify mcp starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut stderr = child.stderr.take().expect("stderr");
    let stderr_text = tokio::spawn(async move {
        let mut text = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text).await;
        text
    });

    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "ask_human_async", "arguments": question("Kept open?")}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "ask_human", "arguments": question("Still there?")}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "no_such_tool", "arguments": {}}}),
    ];
    for message in &messages {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("written");
    }
    stdin.flush().await.expect("flushed");

    let mut lines = Vec::new();
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < 4 {
        let line = tokio::time::timeout(PATIENCE, stdout.next_line())
            .await
            .expect("a reply in time")
            .expect("stdout readable")
            .expect("stdout open");
        let reply: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        if let Some(id) = reply["id"].as_u64() {
            answered.insert(id);
        }
        lines.push(reply);
    }
    assert_eq!(answered.into_iter().collect::<Vec<_>>(), [1, 2, 3, 5]);
    let unknown = lines.iter().find(|l| l["id"] == 5).expect("reply 5");
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    let waiting = person.wait_pending("Still there?").await;
    let kept = person.wait_pending("Kept open?").await;
    drop(stdin);
    // An MCP client closes stdin to end the session and waits a little before it kills the
    // process, so the exit must not wait out the session's 5 s drain of calls in flight.
    let status = tokio::time::timeout(Duration::from_secs(3), child.wait())
        .await
        .expect("exits promptly after stdin closes")
        .expect("exit status");
    assert!(status.success(), "{status}");
    while let Some(line) = stdout.next_line().await.expect("stdout readable") {
        lines.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}")));
    }
    let cancelled = lines
        .iter()
        .find(|l| l["id"] == 4)
        .expect("the waiting ask_human is answered before the exit");
    assert_eq!(
        cancelled["result"]["structuredContent"]["status"], "cancelled",
        "{cancelled}"
    );
    for line in &lines {
        assert_eq!(line["jsonrpc"], "2.0", "{line}");
    }
    let stderr = stderr_text.await.expect("stderr read");
    assert!(stderr.contains("DEBUG"), "logs go to stderr: {stderr}");

    assert_eq!(
        person.wait_resolved(&waiting.id).await.status,
        clarify_core::Status::Cancelled
    );
    let kept = person
        .clarify
        .get(&kept.id)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(kept.status, clarify_core::Status::Pending);
}

#[tokio::test]
async fn a_request_asked_over_stdio_is_announced_and_warned_by_the_servers_routes() {
    let (ntfy, pushes) = support::fake_ntfy().await;
    let dir = support::temp_dir("mcp-announce");
    let db = support::sqlite_url(&dir);
    let config = dir.join("clarify.toml");
    std::fs::write(
        &config,
        format!(
            "[[channels]]\nname = \"phone\"\ntype = \"ntfy\"\nurl = \"{ntfy}\"\ntopic = \"ops\"\n\n\
             [[routes]]\nchannels = [\"phone\"]\nwarn_before = \"5m\"\n"
        ),
    )
    .expect("write");
    let config = config.display().to_string();
    // The server sends what the stdio process queues in their shared store.
    let server = Server::start(&db, &["--config", &config]).await;
    let agent = start(&["--db", &db, "--config", &config], &[]).await;
    let asked = agent
        .call("ask_human_async", question("Rotate the keys?"))
        .await;
    assert_eq!(asked.is_error, Some(false));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let seen = pushes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(push) = seen.first() {
            assert_eq!(push["title"], "Rotate the keys?", "{push}");
            assert_eq!(seen.len(), 1, "announced once: {seen:?}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the request made over stdio was not announced"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And it is warned as the server's own requests are: the route's period, not the default.
    let api = support::Api::new(&server.url, &server.admin_key().await);
    let (_, page) = api.get("/v1/requests?status=pending").await;
    assert_eq!(page["requests"][0]["warn_before_seconds"], 300, "{page}");
}

/// Starts `clarify mcp --db DB` as a client declaring `declared`; also returns its pid.
async fn start_as(db: &str, declared: Declared) -> (McpAgent, u32) {
    let mut command = tokio::process::Command::new(BIN);
    command
        .args(["mcp", "--db", db])
        .env("NO_COLOR", "1")
        .env_remove("CLARIFY_URL")
        .env_remove("CLARIFY_TOKEN")
        .env_remove("CLARIFY_DB");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("clarify mcp starts");
    let pid = transport.id().expect("the process runs");
    (McpAgent::connect_as(transport, declared).await, pid)
}

#[tokio::test]
async fn every_protocol_version_is_spoken_on_stdio() {
    let db = temp_db("mcp-versions");
    let person = Person::open(&db).await;
    for version in [
        ProtocolVersion::V_2025_06_18,
        ProtocolVersion::V_2025_11_25,
        ProtocolVersion::V_2026_07_28,
    ] {
        let (agent, _) = start_as(&db, Declared::plain(version.clone())).await;
        let text_of = format!("Version {version}?");
        let call = agent.begin("ask_human", question(&text_of)).await;
        let record = person.wait_pending(&text_of).await;
        assert_eq!(
            record.request.agent.as_deref(),
            Some(CLIENT_NAME),
            "{version}"
        );
        person
            .clarify
            .answer(&record.id, &json!({"option": "postgres"}))
            .await
            .expect("answered");
        let result = finish(call).await;
        assert_eq!(text(&result), "answered by alice: Postgres", "{version}");
    }
}

#[tokio::test]
async fn a_task_is_polled_to_its_answer_and_again_after_a_restart() {
    let db = temp_db("mcp-task");
    let person = Person::open(&db).await;
    let tasks = Declared {
        tasks: true,
        ..Declared::plain(ProtocolVersion::V_2026_07_28)
    };
    let (agent, pid) = start_as(&db, tasks.clone()).await;
    let created = agent
        .client
        .call_tool_once(
            CallToolRequestParams::new("ask_human").with_arguments(
                question("As a task?")
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = created else {
        panic!("not a task: {created:?}")
    };
    let id = created.task.task_id.clone();
    let record = person.wait_pending("As a task?").await;
    assert_eq!(record.id, id, "the task id is the request id");
    let polled = agent
        .client
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get");
    assert_eq!(polled.task.status(), TaskStatus::Working);
    person
        .clarify
        .answer(&id, &json!({"option": "sqlite"}))
        .await
        .expect("answered");
    let done = agent
        .client
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get");
    let wire = serde_json::to_value(&done).expect("JSON");
    assert_eq!(wire["status"], "completed", "{wire}");
    assert_eq!(
        wire["result"]["structuredContent"]["questions"][0]["answer"],
        "SQLite"
    );

    // The process ends (as at a restart); a new one still knows the task.
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
    drop(agent);
    let (agent, _) = start_as(&db, tasks).await;
    let again = agent
        .client
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get after a restart");
    let wire = serde_json::to_value(&again).expect("JSON");
    assert_eq!(wire["status"], "completed", "{wire}");
    assert_eq!(
        wire["result"]["structuredContent"]["request_id"],
        id.as_str()
    );
    assert!(
        agent
            .client
            .get_task(GetTaskParams::new("nope"))
            .await
            .is_err(),
        "an unknown task id is an error"
    );
}

/// A raw JSON-RPC session with `clarify mcp` on 2026-07-28: each request carries its own
/// metadata, with form elicitation declared.
struct Raw {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Raw {
    async fn start(db: &str) -> Self {
        let mut child = tokio::process::Command::new(BIN)
            .args(["mcp", "--db", db])
            .env("NO_COLOR", "1")
            .env_remove("CLARIFY_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("clarify mcp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    async fn call(&mut self, id: u64, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        });
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        self.stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("written");
        self.stdin.flush().await.expect("flushed");
        loop {
            let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
                .await
                .expect("a reply in time")
                .expect("stdout readable")
                .expect("stdout open");
            let reply: Value = serde_json::from_str(&line).expect("JSON");
            if reply["id"] == id {
                return reply;
            }
        }
    }
}

#[tokio::test]
async fn the_2026_round_trip_on_stdio_refuses_forged_and_replayed_states() {
    let db = temp_db("mcp-mrtr");
    let person = Person::open(&db).await;
    let mut raw = Raw::start(&db).await;
    let call = json!({"name": "ask_human", "arguments": question("Stateless?")});
    let first = raw.call(1, call.clone()).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    let record = person.wait_pending("Stateless?").await;
    let retry = |state: &str| {
        let mut params = call.clone();
        params["requestState"] = Value::String(state.to_owned());
        params["inputResponses"] =
            json!({"clarify": {"action": "accept", "content": {"answer": "postgres"}}});
        params
    };
    let mut forged = state.clone();
    forged.push('A');
    let refused = raw.call(2, retry(&forged)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // Another process (another client) cannot use this one's state.
    let mut elsewhere = Raw::start(&db).await;
    let refused = elsewhere.call(3, retry(&state)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let _ = elsewhere.child.kill().await;
    assert_eq!(
        person
            .clarify
            .get(&record.id)
            .await
            .expect("read")
            .expect("exists")
            .status,
        clarify_core::Status::Pending
    );
    let answered = raw.call(4, retry(&state)).await;
    assert_eq!(
        answered["result"]["structuredContent"]["questions"][0]["answer"], "Postgres",
        "{answered}"
    );
    let replayed = raw.call(5, retry(&state)).await;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    let _ = raw.child.kill().await;
}

#[tokio::test]
async fn an_answer_elsewhere_withdraws_the_form_shown_in_the_client() {
    let db = temp_db("mcp-withdraw");
    let person = Person::open(&db).await;
    let (mut agent, _) = start_as(
        &db,
        Declared {
            form: true,
            ..Declared::plain(ProtocolVersion::V_2025_11_25)
        },
    )
    .await;
    let call = agent.begin("ask_human", question("Withdrawn?")).await;
    let shown = agent.next_elicitation().await;
    assert_eq!(shown.json()["message"], "Withdrawn?");
    let record = person.wait_pending("Withdrawn?").await;
    person
        .clarify
        .answer(&record.id, &json!({"option": "sqlite"}))
        .await
        .expect("answered");
    let withdrawn = agent.next_cancelled().await;
    assert_eq!(withdrawn.reason.as_deref(), Some("answered elsewhere"));
    let result = finish(call).await;
    assert_eq!(text(&result), "answered by alice: SQLite");
    drop(shown);
}

#[tokio::test]
async fn a_form_answered_in_the_client_on_2025_06_18_resolves_the_request() {
    let db = temp_db("mcp-form-2025-06-18");
    let person = Person::open(&db).await;
    let (mut agent, _) = start_as(
        &db,
        Declared {
            form: true,
            ..Declared::plain(ProtocolVersion::V_2025_06_18)
        },
    )
    .await;
    let call = agent.begin("ask_human", question("Oldest form?")).await;
    let shown = agent.next_elicitation().await;
    // 2025-06-18 has no titled choices: the options are an enumeration with their names beside.
    let answer = shown.json()["requestedSchema"]["properties"]["answer"].clone();
    assert_eq!(answer["enum"], json!(["postgres", "sqlite"]), "{answer}");
    assert_eq!(
        answer["enumNames"],
        json!(["Postgres", "SQLite"]),
        "{answer}"
    );
    let record = person.wait_pending("Oldest form?").await;
    shown.accept(json!({"answer": "sqlite"}));
    let result = finish(call).await;
    assert_eq!(text(&result), format!("answered by {CLIENT_NAME}: SQLite"));
    assert_eq!(structured(&result)["answered_via"], "mcp");
    let resolved = person.wait_resolved(&record.id).await;
    assert_eq!(resolved.status, clarify_core::Status::Answered);
}
