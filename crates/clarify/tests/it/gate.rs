//! `clarify gate` in front of a real MCP server (the `upstream_mcp` example, started by the gate
//! as a child process), driven by an MCP client, with approvals answered over HTTP.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clarify_testkit::mcp::{Declared, McpAgent, finish, text};
use rmcp::model::ProtocolVersion;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::support::{Api, BIN, Server, temp_dir};

/// The gated server: built by `cargo test` (which builds the package's examples) next to the
/// binary.
fn upstream_path() -> std::path::PathBuf {
    let bin = std::path::Path::new(BIN);
    let path = bin
        .parent()
        .expect("target dir")
        .join("examples")
        .join("upstream_mcp");
    assert!(
        path.exists(),
        "{} is missing: a filtered test run does not build examples; run `cargo build -p clarify --example upstream_mcp` first",
        path.display()
    );
    path
}

struct Gated {
    agent: McpAgent,
    stderr: Arc<Mutex<String>>,
}

impl Gated {
    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The upstream's process id, as it reported it.
    async fn upstream_pid(&self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(pid) = self
                .stderr()
                .lines()
                .find_map(|l| l.strip_prefix("upstream: pid "))
                .and_then(|p| p.trim().parse().ok())
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "the upstream never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn gate(server: &Server, key: &str) -> Gated {
    gate_with(
        server,
        key,
        &[],
        Declared::plain(ProtocolVersion::V_2025_06_18),
    )
    .await
}

/// The gate in front of `upstream_mcp UPSTREAM_ARGS`, to a client declaring `declared`.
async fn gate_with(
    server: &Server,
    key: &str,
    upstream_args: &[&str],
    declared: Declared,
) -> Gated {
    let dir = temp_dir("gate");
    // The policy is the `[gate]` section of the configuration file CLARIFY_CONFIG names (the
    // `[claude_code]` one is the hook's, and would allow everything).
    let config = dir.join("clarify.toml");
    std::fs::write(
        &config,
        "[gate]\nallow = [\"count\", \"wait\", \"confirm\"]\ndeny = [\"delete_*\"]\n\n[claude_code]\nallow = [\"*\"]\n",
    )
    .expect("configuration written");
    let mut command = tokio::process::Command::new(BIN);
    command
        .arg("gate")
        .env("CLARIFY_CONFIG", &config)
        .arg("--progress-interval")
        .arg("100ms")
        .arg("--")
        .arg(upstream_path())
        .args(upstream_args)
        .env("CLARIFY_URL", &server.url)
        .env("CLARIFY_TOKEN", key)
        .env("NO_COLOR", "1");
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("clarify gate starts");
    let sink = Arc::new(Mutex::new(String::new()));
    if let Some(stderr) = stderr {
        let sink = Arc::clone(&sink);
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        });
    }
    Gated {
        agent: McpAgent::connect_as(transport, declared).await,
        stderr: sink,
    }
}

async fn server() -> (Server, Api) {
    let server = Server::start("memory:", &[]).await;
    let key = server.admin_key().await;
    let api = Api::new(&server.url, &key);
    (server, api)
}

async fn pending(api: &Api) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, page) = api.get("/v1/requests?status=pending&limit=1").await;
        if let Some(r) = page["requests"].get(0) {
            return r.clone();
        }
        assert!(Instant::now() < deadline, "no approval appeared");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

async fn answer(api: &Api, record: &Value, body: Value) {
    let id = record["id"].as_str().expect("id");
    let (status, reply) = api.post(&format!("/v1/requests/{id}/answer"), body).await;
    assert_eq!(status, 200, "{reply}");
}

async fn request_count(api: &Api) -> usize {
    let (_, page) = api.get("/v1/requests?limit=500").await;
    page["requests"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn the_gate_passes_the_server_through_and_gates_its_calls() {
    let (server, api) = server().await;
    let gated = gate(&server, &api.key).await;
    let agent = &gated.agent;

    let info = agent.client.peer().peer_info().expect("server info");
    let server = info.server_info.as_ref().expect("server info");
    assert_eq!(server.name, "files-test");
    assert_eq!(server.version, "1.2.3");
    assert_eq!(info.instructions.as_deref(), Some("a test server"));
    let tools = agent
        .client
        .peer()
        .list_tools(None)
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["echo", "delete_file", "wait", "count", "confirm"]);

    // Allowed by the policy: runs at once, no approval.
    let counted = agent.call("count", json!({})).await;
    assert_eq!(text(&counted), "0");
    // Denied by the policy: a tool error, never forwarded.
    let denied = agent
        .call("delete_file", json!({"path": "/etc/passwd"}))
        .await;
    assert_eq!(denied.is_error, Some(true));
    assert!(text(&denied).contains("not allowed"), "{}", text(&denied));
    assert_eq!(
        request_count(&api).await,
        0,
        "the policy decided without asking"
    );

    // Anything else waits for a human; an edit is what runs.
    let call = agent.begin("echo", json!({"msg": "hello"})).await;
    let record = pending(&api).await;
    assert_eq!(record["agent"], "files-test");
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "echo", "arguments": {"msg": "hello"}})
    );
    answer(
        &api,
        &record,
        json!({"decision": "approve", "edited_arguments": {"msg": "hi"}}),
    )
    .await;
    let ran = finish(call).await;
    assert_eq!(ran.is_error, Some(false));
    let echoed: Value =
        serde_json::from_str(&text(&ran)).expect("the upstream's result, unchanged");
    assert_eq!(echoed["tool"], "echo");
    assert_eq!(echoed["arguments"], json!({"msg": "hi"}));
    // The call arrives with the receipt of its approval in `_meta`: the gated server can check
    // that a person approved exactly these arguments, against the server's published keys.
    let receipt = echoed["receipt"]
        .as_str()
        .expect("the approval's receipt in _meta");
    let keys: jsonwebtoken::jwk::JwkSet = api
        .client
        .get(format!("{}/.well-known/jwks.json", api.url))
        .send()
        .await
        .expect("jwks")
        .json()
        .await
        .expect("a key set");
    let claims = clarify_model::receipt::verify(receipt, &keys).expect("the receipt verifies");
    claims
        .check(Some("echo"), Some(&json!({"msg": "hi"})))
        .expect("it approves the edited arguments that ran");
    assert!(
        claims
            .check(Some("echo"), Some(&json!({"msg": "hello"})))
            .is_err()
    );

    // A denial is a tool error with the reason, and nothing is forwarded.
    let call = agent.begin("echo", json!({"msg": "rm"})).await;
    let record = pending(&api).await;
    answer(
        &api,
        &record,
        json!({"decision": "deny", "reason": "not that one"}),
    )
    .await;
    let refused = finish(call).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("not that one"),
        "{}",
        text(&refused)
    );
    assert_eq!(
        text(&agent.call("count", json!({})).await),
        "2",
        "count, echo: the denied call never arrived"
    );

    // A request for changes is a tool error that says so, with what to change, and nothing is
    // forwarded either.
    let call = agent
        .begin("echo", json!({"msg": "DROP TABLE users"}))
        .await;
    let record = pending(&api).await;
    answer(
        &api,
        &record,
        json!({"decision": "revise", "reason": "select from a copy instead"}),
    )
    .await;
    let revised = finish(call).await;
    assert_eq!(revised.is_error, Some(true));
    assert!(
        text(&revised).starts_with("Changes requested: select from a copy instead"),
        "{}",
        text(&revised)
    );
    assert_eq!(
        text(&agent.call("count", json!({})).await),
        "3",
        "count, echo, count: the call sent back for changes never arrived"
    );

    // Approved with scope always: the same call runs again without asking.
    let call = agent.begin("echo", json!({"msg": "again"})).await;
    let record = pending(&api).await;
    answer(
        &api,
        &record,
        json!({"decision": "approve", "scope": "always"}),
    )
    .await;
    finish(call).await;
    let before = request_count(&api).await;
    let ran = agent.call("echo", json!({"msg": "again"})).await;
    assert_eq!(ran.is_error, Some(false), "{}", text(&ran));
    assert_eq!(request_count(&api).await, before, "no new approval");
}

#[tokio::test]
async fn cancelling_cancels_the_approval_and_the_forwarded_call_and_leaving_ends_the_server() {
    let (server, api) = server().await;
    let gated = gate(&server, &api.key).await;
    let upstream = gated.upstream_pid().await;

    // Cancelled while waiting for a human: the approval is cancelled too.
    let call = gated.agent.begin("echo", json!({"msg": "slow"})).await;
    let record = pending(&api).await;
    call.cancel(None).await.expect("cancel sent");
    let id = record["id"].as_str().expect("id");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, now) = api.get(&format!("/v1/requests/{id}")).await;
        if now["status"] == "cancelled" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the approval was not cancelled: {now}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }

    // Cancelled while the upstream runs it: the upstream hears of it.
    let call = gated.agent.begin("wait", json!({})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    call.cancel(None).await.expect("cancel sent");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gated.stderr().contains("upstream: wait was cancelled") {
        assert!(
            Instant::now() < deadline,
            "the forwarded call was not cancelled: {}",
            gated.stderr()
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }

    // The client goes away: the gate ends the upstream's process.
    let Gated { agent, .. } = gated;
    agent.client.cancel().await.expect("session closed");
    let proc = std::path::PathBuf::from(format!("/proc/{upstream}"));
    let deadline = Instant::now() + Duration::from_secs(15);
    while proc.exists() && !zombie(&proc) {
        assert!(Instant::now() < deadline, "the upstream server still runs");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A process that ended but was not reaped yet.
fn zombie(proc: &std::path::Path) -> bool {
    std::fs::read_to_string(proc.join("stat"))
        .map(|s| s.split_whitespace().nth(2) == Some("Z"))
        .unwrap_or(true)
}

#[tokio::test]
async fn the_gated_servers_elicitations_become_clarify_form_requests() {
    let (server, api) = server().await;
    // An upstream on 2025-11-25 sends `elicitation/create`; one on 2026-07-28 returns
    // `input_required`, which the gate answers and retries.
    for (args, protocol) in [(&["--legacy"][..], "legacy"), (&[][..], "2026-07-28")] {
        let gated = gate_with(
            &server,
            &api.key,
            args,
            Declared::plain(ProtocolVersion::V_2025_11_25),
        )
        .await;
        let call = gated.agent.begin("confirm", json!({})).await;
        let record = pending(&api).await;
        assert_eq!(record["agent"], "files-test", "{record}");
        assert_eq!(record["questions"][0]["kind"], "form", "{record}");
        assert_eq!(
            record["questions"][0]["text"],
            "Delete the staging database?"
        );
        answer(
            &api,
            &record,
            json!({"answers": {"q1": {"values": {"confirm": true, "note": "go ahead"}}}}),
        )
        .await;
        let result = finish(call).await;
        let body: Value = serde_json::from_str(&text(&result)).expect("JSON");
        assert_eq!(body["protocol"], protocol, "{body}");
        assert_eq!(body["elicited"]["action"], "accept", "{body}");
        assert_eq!(
            body["elicited"]["content"],
            json!({"confirm": true, "note": "go ahead"})
        );
    }

    // A client that shows forms is asked too; its answer goes to the server and resolves the
    // clarify request.
    let mut gated = gate_with(
        &server,
        &api.key,
        &["--legacy"],
        Declared {
            form: true,
            ..Declared::plain(ProtocolVersion::V_2025_11_25)
        },
    )
    .await;
    let call = gated.agent.begin("confirm", json!({})).await;
    let shown = gated.agent.next_elicitation().await;
    assert_eq!(shown.json()["message"], "Delete the staging database?");
    let record = pending(&api).await;
    shown.accept(json!({"confirm": false}));
    let result = finish(call).await;
    let body: Value = serde_json::from_str(&text(&result)).expect("JSON");
    assert_eq!(
        body["elicited"]["content"],
        json!({"confirm": false}),
        "{body}"
    );
    let id = record["id"].as_str().expect("id");
    let (_, resolved) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(resolved["status"], "answered", "{resolved}");

    // Answered in clarify first: the client's form is withdrawn and the server gets clarify's
    // answer.
    let call = gated.agent.begin("confirm", json!({})).await;
    let shown = gated.agent.next_elicitation().await;
    let record = pending(&api).await;
    answer(
        &api,
        &record,
        json!({"answers": {"q1": {"values": {"confirm": true}}}}),
    )
    .await;
    let withdrawn = gated.agent.next_cancelled().await;
    assert_eq!(withdrawn.reason.as_deref(), Some("answered elsewhere"));
    let result = finish(call).await;
    let body: Value = serde_json::from_str(&text(&result)).expect("JSON");
    assert_eq!(
        body["elicited"]["content"],
        json!({"confirm": true}),
        "{body}"
    );
    drop(shown);
}

#[tokio::test]
async fn the_gate_speaks_every_protocol_version_to_its_client() {
    let (server, api) = server().await;
    for version in [
        ProtocolVersion::V_2025_06_18,
        ProtocolVersion::V_2025_11_25,
        ProtocolVersion::V_2026_07_28,
    ] {
        let gated = gate_with(&server, &api.key, &[], Declared::plain(version.clone())).await;
        let counted = gated.agent.call("count", json!({})).await;
        assert_eq!(text(&counted), "0", "{version}");
        // A call the policy leaves to a human waits for the approval at every version.
        let call = gated.agent.begin("echo", json!({"say": "hi"})).await;
        let record = pending(&api).await;
        answer(&api, &record, json!({"decision": "approve"})).await;
        let echoed = finish(call).await;
        assert!(
            text(&echoed).contains("\"say\":\"hi\""),
            "{version}: {}",
            text(&echoed)
        );
    }
}

/// A server at an `https://` URL is spoken to over TLS: the gate's MCP client is the
/// workspace's HTTP client, which has TLS, rather than one without it that refused every
/// `https://` URL ("scheme is not http"). The upstream here reads the TLS client hello and hangs
/// up, so the TLS handshake fails, and the gate says so. (Hanging up before reading it would
/// reset the connection instead, which a loaded machine sometimes shows as a failed connect.)
#[tokio::test]
async fn an_https_server_is_reached_over_tls() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("https://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut hello = [0u8; 4096];
            let _ = stream.read(&mut hello).await;
            drop(stream);
        }
    });
    let mut gate = tokio::process::Command::new(BIN)
        .args(["gate", "--url", &url, "--clarify-url", "http://127.0.0.1:9"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clarify gate starts");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    if let Some(mut stdin) = gate.stdin.take() {
        use tokio::io::AsyncWriteExt;
        stdin
            .write_all(format!("{initialize}\n").as_bytes())
            .await
            .expect("initialize sent");
    }
    let output = tokio::time::timeout(Duration::from_secs(30), gate.wait_with_output())
        .await
        .expect("the gate ends when its upstream cannot be reached")
        .expect("the gate's output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains(&url), "names the server: {stderr}");
    assert!(
        !stderr.contains("scheme is not http"),
        "https is spoken: {stderr}"
    );
    assert!(stderr.contains("tls handshake"), "{stderr}");
}
