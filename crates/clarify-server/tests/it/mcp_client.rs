//! `/mcp` at every protocol version it speaks, and the calling client as a place to answer:
//! tasks, form elicitation racing the other surfaces (2025-11-25), and on 2026-07-28 the
//! `input_required` round trip with its sealed `requestState`, driven by raw JSON-RPC so the
//! tampered states can be sent as a misbehaving client would.

use std::time::Duration;

use clarify_store::Role;
use clarify_testkit::mcp::{Declared, McpAgent, PATIENCE, finish, question, structured, text};
use reqwest::StatusCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ElicitationAction, GetTaskParams,
    ProtocolVersion, TaskStatus,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::fake_slack::FakeSlack;
use crate::support::TestServer;

const VERSIONS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

async fn connect(server: &TestServer, key: &str, declared: Declared) -> McpAgent {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url))
            .auth_header(key),
    );
    McpAgent::connect_as(transport, declared).await
}

fn form_client(version: ProtocolVersion) -> Declared {
    Declared {
        form: true,
        ..Declared::plain(version)
    }
}

async fn server() -> TestServer {
    TestServer::build("memory:", Default::default(), |config| {
        config.mcp.progress_interval = Duration::from_millis(200);
    })
    .await
}

/// The only pending request of the default tenant, once there is one.
async fn pending_id(server: &TestServer) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (_, page) = server
            .get("/v1/requests?status=pending&limit=1", &server.admin)
            .await;
        if let Some(id) = page["requests"][0]["id"].as_str() {
            return id.to_owned();
        }
        assert!(tokio::time::Instant::now() < deadline, "nothing pending");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

#[tokio::test]
async fn every_protocol_version_asks_and_gets_the_answer() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    for version in VERSIONS {
        let agent = connect(&server, &key, Declared::plain(version.clone())).await;
        let asked = agent.call("ask_human_async", question("Which one?")).await;
        let id = structured(&asked)["request_id"]
            .as_str()
            .expect("request_id")
            .to_owned();
        let (status, _) = server
            .post(
                &format!("/v1/requests/{id}/answer"),
                &server.admin,
                json!({"option": "sqlite"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let answered = agent.call("get_answer", json!({"request_id": id})).await;
        assert_eq!(structured(&answered)["status"], "answered", "{version}");
        assert!(text(&answered).ends_with(": SQLite"), "{version}");
    }
}

#[tokio::test]
async fn ask_human_is_a_task_that_outlives_a_restart() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let tasks = Declared {
            tasks: true,
            ..Declared::plain(version.clone())
        };
        let agent = connect(&server, &key, tasks).await;
        let created = agent
            .client
            .call_tool_once(
                CallToolRequestParams::new("ask_human").with_arguments(args(question("Task?"))),
            )
            .await
            .expect("tools/call");
        let CallToolResponse::Task(created) = created else {
            panic!("not a task: {created:?}")
        };
        let id = created.task.task_id.clone();
        assert_eq!(created.task.status, TaskStatus::Working);
        assert!(
            server
                .store
                .get("default", &id)
                .await
                .expect("read")
                .is_some(),
            "the task is the request"
        );
        let polled = agent
            .client
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        assert_eq!(polled.task.status(), TaskStatus::Working, "{version}");
        server
            .post(
                &format!("/v1/requests/{id}/answer"),
                &server.admin,
                json!({"option": "postgres"}),
            )
            .await;
        let done = agent
            .client
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        let wire = serde_json::to_value(&done).expect("JSON");
        assert_eq!(wire["status"], "completed", "{wire}");
        assert_eq!(
            wire["result"]["structuredContent"]["request_id"],
            id.as_str()
        );
        assert_eq!(
            wire["result"]["structuredContent"]["questions"][0]["answer"],
            "Postgres"
        );

        let unknown = agent
            .client
            .get_task(GetTaskParams::new("no-such-task"))
            .await;
        assert!(unknown.is_err(), "an unknown task id is an error");

        // tasks/cancel cancels the request behind the task.
        let second = agent
            .client
            .call_tool_once(
                CallToolRequestParams::new("ask_human").with_arguments(args(question("Drop?"))),
            )
            .await
            .expect("tools/call");
        let CallToolResponse::Task(second) = second else {
            panic!("not a task")
        };
        agent
            .client
            .cancel_task(CancelTaskParams::new(second.task.task_id.clone()))
            .await
            .expect("tasks/cancel");
        let record = server
            .store
            .get("default", &second.task.task_id)
            .await
            .expect("read")
            .expect("exists");
        assert_eq!(record.status, clarify_core::Status::Cancelled);
        let cancelled = agent
            .client
            .get_task(GetTaskParams::new(second.task.task_id.clone()))
            .await
            .expect("tasks/get");
        assert_eq!(cancelled.task.status(), TaskStatus::Cancelled);
    }

    // The same task, polled from a new client after the server restarted.
    let (_, page) = server
        .get("/v1/requests?status=answered&limit=1", &server.admin)
        .await;
    let id = page["requests"][0]["id"].as_str().expect("id").to_owned();
    let (store, address) = server.halt().await;
    let server = TestServer::at(&address, store, |_| {}).await;
    let agent = connect(
        &server,
        &key,
        Declared {
            tasks: true,
            ..Declared::plain(ProtocolVersion::V_2026_07_28)
        },
    )
    .await;
    let again = agent
        .client
        .get_task(GetTaskParams::new(id))
        .await
        .expect("tasks/get after a restart");
    assert_eq!(again.task.status(), TaskStatus::Completed);
}

#[tokio::test]
async fn an_answer_in_the_client_resolves_the_request_and_edits_the_slack_message() {
    let fake = FakeSlack::start().await;
    let server = crate::slack::server(&fake).await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let mut agent = connect(&server, &key, form_client(ProtocolVersion::V_2025_11_25)).await;
    let call = agent.begin("ask_human", question("Which database?")).await;
    let first = agent.next_elicitation().await;
    let asked = first.json();
    assert_eq!(asked["message"], "Which database?");
    assert_eq!(
        asked["requestedSchema"]["properties"]["answer"]["oneOf"][0],
        json!({"const": "postgres", "title": "Postgres"})
    );
    crate::slack::announced(&fake, 1).await;

    // An answer that does not fit is shown again with what was wrong; the request waits.
    first.accept(json!({"answer": "mysql"}));
    let second = agent.next_elicitation().await;
    let message = second.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("did not fit"), "{message}");
    let id = pending_id(&server).await;

    second.accept(json!({"answer": "postgres"}));
    let result = finish(call).await;
    assert_eq!(text(&result), "answered by bot: Postgres");
    let record = server
        .store
        .get("default", &id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(record.status, clarify_core::Status::Answered);
    let update = fake.wait_for("chat.update", 1).await.remove(0);
    let shown = update["text"].as_str().unwrap_or_default();
    assert!(shown.contains("Postgres"), "{update}");
    // The log names the key the client called with as who was authenticated.
    let (_, audit) = server.get("/v1/audit", &server.admin).await;
    let answered = audit["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["kind"] == "answered" && e["request_id"] == id.as_str())
        .cloned()
        .expect("an answered event");
    assert_eq!(answered["channel"], "mcp");
    assert_eq!(answered["principal"], "key:bot", "{answered}");
}

/// Four eyes holds in the client too: the person a request acts for answering in their MCP
/// client is refused, and the request waits for someone else.
#[tokio::test]
async fn under_four_eyes_the_client_of_the_person_a_request_acts_for_cannot_answer_it() {
    let server = TestServer::build(
        "memory:",
        clarify_store::StoreOptions {
            forbid_self_approval: true,
            ..Default::default()
        },
        |config| config.mcp.progress_interval = Duration::from_millis(200),
    )
    .await;
    let key = server.key(Role::Agent, "alice", "default").await;
    let mut agent = connect(&server, &key, form_client(ProtocolVersion::V_2025_11_25)).await;
    let mut ask = question("Which database?");
    ask["on_behalf_of"] = json!("alice");
    let call = agent.begin("ask_human", ask).await;
    let form = agent.next_elicitation().await;
    let id = pending_id(&server).await;
    form.accept(json!({"answer": "postgres"}));
    // Refused: the request stays pending until someone else answers it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let record = server
        .store
        .get("default", &id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(record.status, clarify_core::Status::Pending);
    let bob = server.key(Role::Responder, "bob", "default").await;
    let (status, outcome) = server
        .post(
            &format!("/v1/requests/{id}/answer"),
            &bob,
            json!({"option": "sqlite"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    let result = finish(call).await;
    assert!(
        text(&result).contains("answered by bob"),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn an_answer_elsewhere_withdraws_the_clients_form() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let alice = server.key(Role::Responder, "alice", "default").await;
    let mut agent = connect(&server, &key, form_client(ProtocolVersion::V_2025_11_25)).await;
    let call = agent
        .begin(
            "approve_tool_use",
            json!({"tool_name": "Bash", "input": {"command": "rm -rf build"}}),
        )
        .await;
    let shown = agent.next_elicitation().await;
    let schema = shown.json()["requestedSchema"].clone();
    assert_eq!(
        schema["properties"]["decision"]["oneOf"][2]["const"], "revise",
        "{schema}"
    );
    let id = pending_id(&server).await;
    let (status, _) = server
        .post(
            &format!("/v1/requests/{id}/answer"),
            &alice,
            json!({"decision": "deny", "reason": "not today"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let withdrawn = agent.next_cancelled().await;
    assert_eq!(withdrawn.reason.as_deref(), Some("answered elsewhere"));
    let result = finish(call).await;
    let permission: Value = serde_json::from_str(&text(&result)).expect("JSON");
    assert_eq!(permission["behavior"], "deny");
    assert!(
        permission["message"]
            .as_str()
            .is_some_and(|m| m.contains("not today")),
        "{permission}"
    );
    drop(shown);

    // Declining in the client denies an approval.
    let call = agent
        .begin(
            "approve_tool_use",
            json!({"tool_name": "Bash", "input": {"command": "ls"}}),
        )
        .await;
    agent
        .next_elicitation()
        .await
        .answer(ElicitationAction::Decline);
    let result = finish(call).await;
    let permission: Value = serde_json::from_str(&text(&result)).expect("JSON");
    assert_eq!(permission["behavior"], "deny", "{permission}");
}

/// One JSON-RPC request to `/mcp` on 2026-07-28 with `key`; the response's JSON-RPC message.
async fn rpc(server: &TestServer, key: &str, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-client", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let response = server
        .client
        .post(format!("{}/mcp", server.url))
        .header("authorization", format!("Bearer {key}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", params["name"].as_str().unwrap_or_default())
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .send()
        .await
        .expect("sent");
    let body = response.text().await.expect("body");
    // A JSON body, or an event stream whose data lines carry the messages.
    let messages: Vec<Value> = match serde_json::from_str::<Value>(&body) {
        Ok(v) => vec![v],
        Err(_) => body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    messages
        .into_iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no response to {id}: {body}"))
}

#[tokio::test]
async fn the_2026_round_trip_answers_once_with_a_sealed_request_state() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let other = server.key(Role::Agent, "other-bot", "default").await;
    let call = json!({"name": "ask_human", "arguments": question("Which database?")});
    let first = rpc(&server, &key, 1, "tools/call", call.clone()).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let ask = &result["inputRequests"]["clarify"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Which database?");
    let state = result["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    let id = pending_id(&server).await;

    let retry = |state: &str, content: Value| {
        let mut params = call.clone();
        params["requestState"] = Value::String(state.to_owned());
        params["inputResponses"] = json!({"clarify": {"action": "accept", "content": content}});
        params
    };
    // Altered, made up, or another key's: refused, and nothing is answered.
    let mut altered = state.clone();
    altered.insert(altered.len() / 2, 'x');
    for (n, (who, bad)) in [
        (&key, altered.as_str()),
        (&key, "rs1.e30.AAAA"),
        (&other, state.as_str()),
    ]
    .into_iter()
    .enumerate()
    {
        let refused = rpc(
            &server,
            who,
            10 + n as u64,
            "tools/call",
            retry(bad, json!({"answer": "sqlite"})),
        )
        .await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("requestState")),
            "{refused}"
        );
    }
    let still = server
        .store
        .get("default", &id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(still.status, clarify_core::Status::Pending);

    // An answer that does not fit is asked again, with a new state.
    let misfit = rpc(
        &server,
        &key,
        2,
        "tools/call",
        retry(&state, json!({"answer": "nope"})),
    )
    .await;
    assert_eq!(misfit["result"]["resultType"], "input_required", "{misfit}");
    let again = misfit["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    assert_ne!(again, state);
    let replayed = rpc(
        &server,
        &key,
        3,
        "tools/call",
        retry(&state, json!({"answer": "sqlite"})),
    )
    .await;
    assert_eq!(
        replayed["error"]["code"], -32602,
        "a used state is refused: {replayed}"
    );

    let answered = rpc(
        &server,
        &key,
        4,
        "tools/call",
        retry(&again, json!({"answer": "sqlite"})),
    )
    .await;
    assert_eq!(
        answered["result"]["structuredContent"]["status"], "answered",
        "{answered}"
    );
    assert_eq!(
        answered["result"]["structuredContent"]["questions"][0]["answer"],
        "SQLite"
    );
    let replayed = rpc(
        &server,
        &key,
        5,
        "tools/call",
        retry(&again, json!({"answer": "postgres"})),
    )
    .await;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    let record = server
        .store
        .get("default", &id)
        .await
        .expect("read")
        .expect("exists");
    let outcome = record.outcome().expect("outcome");
    assert_eq!(outcome.answered_by.as_deref(), Some("bot"));
    assert_eq!(outcome.questions[0].answer, json!("SQLite"));
}
