//! `/mcp` at every protocol version it speaks, and the calling client as a place to answer:
//! tasks (on 2026-07-28 asking through `input_required` and answered with `tasks/update`), form
//! elicitation racing the other surfaces (2025-11-25), the answer link through URL mode, and on
//! 2026-07-28 the `input_required` round trip of `ask_human` and `approve_tool_use` with its
//! sealed `requestState`, driven by raw JSON-RPC so the tampered, replayed and expired states can
//! be sent as a misbehaving client would.

use std::sync::Arc;
use std::time::Duration;

use clarify_store::{ManualClock, Role, StoreOptions};
use clarify_testkit::mcp::{Declared, McpAgent, PATIENCE, finish, question, structured, text};
use reqwest::StatusCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ElicitationAction, GetTaskParams,
    InputResponses, ProtocolVersion, TaskStatus, UpdateTaskParams,
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
    let transport = StreamableHttpClientTransport::with_client(
        clarify_client::http::client().expect("an HTTP client"),
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

/// One JSON-RPC request to `/mcp` on 2026-07-28 with `key`, from a client declaring form
/// elicitation; the response's JSON-RPC message.
async fn rpc(server: &TestServer, key: &str, id: u64, method: &str, params: Value) -> Value {
    let form = json!({"elicitation": {"form": {}}});
    rpc_as(server, key, &form, id, method, params).await
}

/// [`rpc`] from a client declaring `capabilities`.
async fn rpc_as(
    server: &TestServer,
    key: &str,
    capabilities: &Value,
    id: u64,
    method: &str,
    mut params: Value,
) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-client", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
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

/// `params` of a 2026-07-28 retry: the same call with the sealed `state` and the client's
/// `response` to clarify's input request.
fn retry(call: &Value, state: &str, response: Value) -> Value {
    let mut params = call.clone();
    params["requestState"] = Value::String(state.to_owned());
    params["inputResponses"] = json!({ "clarify": response });
    params
}

fn accepted(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// The `requestState` of an `input_required` response.
fn state_of(response: &Value) -> String {
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "{response}"
    );
    response["result"]["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned()
}

/// What `approve_tool_use` answered: `{"behavior": ...}` from the result's text.
fn permission_of(response: &Value) -> Value {
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {response}"));
    serde_json::from_str(text).expect("permission JSON")
}

#[tokio::test]
async fn approve_tool_use_on_2026_asks_through_input_required_and_takes_each_decision() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let call = |command: &str| {
        json!({"name": "approve_tool_use",
               "arguments": {"tool_name": "Bash", "input": {"command": command}}})
    };

    // The form: approve, deny or request changes, a reason, and once or always.
    let make = call("make test");
    let first = rpc(&server, &key, 1, "tools/call", make.clone()).await;
    let state = state_of(&first);
    let ask = &first["result"]["inputRequests"]["clarify"];
    assert_eq!(ask["method"], "elicitation/create", "{first}");
    let schema = &ask["params"]["requestedSchema"];
    let decisions: Vec<&str> = schema["properties"]["decision"]["oneOf"]
        .as_array()
        .expect("decisions")
        .iter()
        .filter_map(|d| d["const"].as_str())
        .collect();
    assert_eq!(decisions, ["approve", "deny", "revise"], "{schema}");
    assert!(schema["properties"]["reason"].is_object(), "{schema}");
    assert!(schema["properties"]["scope"].is_object(), "{schema}");
    let id = pending_id(&server).await;

    // A state is bound to its tool: an approval's state does nothing for ask_human, and is
    // still good for the approval afterwards.
    let wrong_tool = json!({"name": "ask_human", "arguments": question("Other?")});
    let refused = rpc(
        &server,
        &key,
        2,
        "tools/call",
        retry(&wrong_tool, &state, accepted(json!({"answer": "postgres"}))),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    let approved = rpc(
        &server,
        &key,
        3,
        "tools/call",
        retry(&make, &state, accepted(json!({"decision": "approve"}))),
    )
    .await;
    let permission = permission_of(&approved);
    assert_eq!(permission["behavior"], "allow", "{permission}");
    assert_eq!(permission["updatedInput"], json!({"command": "make test"}));
    let record = server
        .store
        .get("default", &id)
        .await
        .expect("read")
        .expect("exists");
    let outcome = record.outcome().expect("outcome");
    assert_eq!(outcome.answered_by.as_deref(), Some("bot"));
    assert_eq!(outcome.answered_via.as_deref(), Some("mcp"));

    // Deny with a reason, request changes, and decline: each is a denial the agent can read.
    for (n, (command, response, said)) in [
        (
            "rm -rf /",
            accepted(json!({"decision": "deny", "reason": "never on this host"})),
            "never on this host",
        ),
        (
            "git push --force",
            accepted(json!({"decision": "revise", "reason": "push without --force"})),
            "Changes requested: push without --force",
        ),
        (
            "curl evil.example",
            json!({"action": "decline"}),
            "declined in the MCP client",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let asked = call(command);
        let n = 10 + 2 * n as u64;
        let first = rpc(&server, &key, n, "tools/call", asked.clone()).await;
        let state = state_of(&first);
        let settled = rpc(
            &server,
            &key,
            n + 1,
            "tools/call",
            retry(&asked, &state, response),
        )
        .await;
        let permission = permission_of(&settled);
        assert_eq!(permission["behavior"], "deny", "{command}: {permission}");
        assert!(
            permission["message"]
                .as_str()
                .is_some_and(|m| m.contains(said)),
            "{command}: {permission}"
        );
    }
}

#[tokio::test]
async fn an_expired_request_state_is_refused_and_answers_nothing() {
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let server = TestServer::build(
        "memory:",
        StoreOptions {
            clock: clock.clone(),
            ..StoreOptions::default()
        },
        |config| config.mcp.progress_interval = Duration::from_millis(200),
    )
    .await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let call = json!({"name": "ask_human", "arguments": question("Still there?")});
    let first = rpc(&server, &key, 1, "tools/call", call.clone()).await;
    let state = state_of(&first);
    let id = pending_id(&server).await;
    // States last 30 minutes; the request itself an hour.
    clock.advance(chrono::TimeDelta::minutes(31));
    let refused = rpc(
        &server,
        &key,
        2,
        "tools/call",
        retry(&call, &state, accepted(json!({"answer": "sqlite"}))),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("expired")),
        "{refused}"
    );
    let record = server
        .store
        .get("default", &id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(record.status, clarify_core::Status::Pending);
}

/// Answers request `id` through its signed answer link, as the page does.
async fn answer_through_link(server: &TestServer, link: &str, body: Value) {
    let response = server
        .client
        .post(link)
        .json(&body)
        .send()
        .await
        .expect("sent");
    assert!(
        response.status().is_success(),
        "{}: {}",
        response.status(),
        response.text().await.unwrap_or_default()
    );
}

/// A request no flat form holds: it names who may answer.
fn for_alice(text: &str) -> Value {
    let mut ask = question(text);
    ask["responders"] = json!(["alice"]);
    ask
}

#[tokio::test]
async fn a_question_no_form_holds_sends_the_answer_link_in_url_mode() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;

    // 2025-11-25: the link is sent while the call waits; once the person answered on the page,
    // the client is told the elicitation is complete and the call returns the outcome.
    let mut agent = connect(
        &server,
        &key,
        Declared {
            form: true,
            url: true,
            ..Declared::plain(ProtocolVersion::V_2025_11_25)
        },
    )
    .await;
    let call = agent.begin("ask_human", for_alice("Which region?")).await;
    let shown = agent.next_elicitation().await;
    let wire = shown.json();
    assert_eq!(wire["mode"], "url", "{wire}");
    let id = pending_id(&server).await;
    let (_, record) = server
        .get(&format!("/v1/requests/{id}"), &server.admin)
        .await;
    let link = record["answer_url"].as_str().expect("link").to_owned();
    assert_eq!(wire["url"], link.as_str());
    assert_eq!(wire["elicitationId"], id.as_str());
    assert!(
        wire["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Which region?")),
        "{wire}"
    );
    // The user agrees to open the link, and answers there. (The consent travels in a POST of
    // its own; an answer arriving before it would withdraw the elicitation instead.)
    shown.answer(ElicitationAction::Accept);
    tokio::time::sleep(Duration::from_millis(500)).await;
    answer_through_link(&server, &link, json!({"option": "sqlite"})).await;
    let complete = agent.next_notice().await;
    assert_eq!(complete.method, "notifications/elicitation/complete");
    assert_eq!(
        complete.params.as_ref().map(|p| p["elicitationId"].clone()),
        Some(json!(id))
    );
    let result = finish(call).await;
    assert_eq!(structured(&result)["status"], "answered");
    assert_eq!(structured(&result)["questions"][0]["answer"], "SQLite");
    assert_eq!(structured(&result)["answered_via"], "link");

    // 2026-07-28: the link comes in the input_required result; the retry after the user opened
    // it waits for the answer and returns it.
    let capabilities = json!({"elicitation": {"form": {}, "url": {}}});
    let call = json!({"name": "ask_human", "arguments": for_alice("Which zone?")});
    let first = rpc_as(&server, &key, &capabilities, 1, "tools/call", call.clone()).await;
    let state = state_of(&first);
    let ask = &first["result"]["inputRequests"]["clarify"]["params"];
    assert_eq!(ask["mode"], "url", "{first}");
    // 2026-07-28 has no elicitationId; rmcp's model always writes one, so it is the request's.
    let zone = pending_id(&server).await;
    assert!(
        ask.get("elicitationId")
            .is_none_or(|given| given == zone.as_str()),
        "{first}"
    );
    let link = ask["url"].as_str().expect("url").to_owned();
    let consented = retry(&call, &state, json!({"action": "accept"}));
    let (answered, ()) = tokio::join!(
        rpc_as(&server, &key, &capabilities, 2, "tools/call", consented),
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            answer_through_link(&server, &link, json!({"option": "postgres"})).await;
        }
    );
    assert_eq!(
        answered["result"]["structuredContent"]["questions"][0]["answer"], "Postgres",
        "{answered}"
    );
}

#[tokio::test]
async fn a_task_on_2026_asks_the_client_through_input_required_and_tasks_update() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let alice = server.key(Role::Responder, "alice", "default").await;
    let agent = connect(
        &server,
        &key,
        Declared {
            tasks: true,
            form: true,
            ..Declared::plain(ProtocolVersion::V_2026_07_28)
        },
    )
    .await;
    let start = |text: &str| {
        let params = CallToolRequestParams::new("ask_human").with_arguments(args(question(text)));
        let client = &agent.client;
        async move {
            match client.call_tool_once(params).await.expect("tools/call") {
                CallToolResponse::Task(created) => created.task,
                other => panic!("not a task: {other:?}"),
            }
        }
    };
    let get = |id: &str| {
        let params = GetTaskParams::new(id.to_owned());
        let client = &agent.client;
        async move {
            let task = client.get_task(params).await.expect("tasks/get");
            serde_json::to_value(&task).expect("JSON")
        }
    };
    let update = |id: &str, key: &str, response: Value| {
        let params = UpdateTaskParams::new(
            id.to_owned(),
            InputResponses::from([(key.to_owned(), response)]),
        );
        let client = &agent.client;
        async move { client.update_task(params).await.expect("tasks/update") }
    };

    let created = start("Which database?").await;
    assert_eq!(created.status, TaskStatus::Working);
    let id = created.task_id;
    let asking = get(&id).await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    let ask = &asking["inputRequests"]["clarify"];
    assert_eq!(ask["method"], "elicitation/create", "{asking}");
    assert_eq!(ask["params"]["message"], "Which database?");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["answer"]["oneOf"][0]["const"],
        "postgres"
    );

    // An answer that does not fit is acknowledged; the next poll asks again, under a new key,
    // saying what was wrong.
    update(&id, "clarify", accepted(json!({"answer": "mysql"}))).await;
    let again = get(&id).await;
    assert_eq!(again["status"], "input_required", "{again}");
    assert!(again["inputRequests"].get("clarify").is_none(), "{again}");
    let message = again["inputRequests"]["clarify-2"]["params"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.starts_with("That answer did not fit"), "{again}");
    assert!(
        again["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("did not fit")),
        "{again}"
    );
    let record = server
        .store
        .get("default", &id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(record.status, clarify_core::Status::Pending);

    // Responses under keys clarify never asked are ignored.
    update(&id, "other", accepted(json!({"answer": "sqlite"}))).await;
    assert_eq!(get(&id).await["status"], "input_required");

    update(&id, "clarify-2", accepted(json!({"answer": "sqlite"}))).await;
    let done = get(&id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let outcome = &done["result"]["structuredContent"];
    assert_eq!(outcome["questions"][0]["answer"], "SQLite", "{done}");
    assert_eq!(outcome["answered_by"], "bot");
    assert_eq!(outcome["answered_via"], "mcp");

    // Answered in the inbox first: the next poll shows that, and a late answer from the client
    // changes nothing.
    let second = start("Which cache?").await.task_id;
    assert_eq!(get(&second).await["status"], "input_required");
    let (status, _) = server
        .post(
            &format!("/v1/requests/{second}/answer"),
            &alice,
            json!({"option": "postgres"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    update(&second, "clarify", accepted(json!({"answer": "sqlite"}))).await;
    let done = get(&second).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["answered_by"], "alice");
    assert_eq!(
        done["result"]["structuredContent"]["questions"][0]["answer"],
        "Postgres"
    );

    // Dismissed in the client: not asked again; the task waits for the other surfaces.
    let third = start("Which queue?").await.task_id;
    update(&third, "clarify", json!({"action": "cancel"})).await;
    let waiting = get(&third).await;
    assert_eq!(waiting["status"], "working", "{waiting}");
    assert!(waiting.get("inputRequests").is_none(), "{waiting}");

    // A task that is no request of this tenant cannot be updated.
    let unknown = agent
        .client
        .update_task(UpdateTaskParams::new(
            "no-such-task",
            InputResponses::from([("clarify".to_owned(), json!({"action": "cancel"}))]),
        ))
        .await;
    assert!(unknown.is_err(), "an unknown task id is an error");
}
