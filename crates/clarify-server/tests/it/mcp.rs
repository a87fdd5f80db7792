//! `/mcp` driven as an MCP client drives it: rmcp's Streamable HTTP client against a server on
//! a real socket, with the API's keys. A person answers through `/v1`; the tests check
//! progress, cancellation, the pending result on shutdown, refusals of missing and unfit keys,
//! and that tenants (and their sessions) stay apart.

use std::time::Duration;

use clarify_store::{ListQuery, RequestRecord, Role, Store};
use clarify_testkit::mcp::{CLIENT_NAME, McpAgent, PATIENCE, finish, question, structured, text};
use reqwest::StatusCode;
use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

/// A session at `/mcp` with `key`, offering protocol `version`.
async fn connect_with(server: &TestServer, key: &str, version: ProtocolVersion) -> McpAgent {
    let transport = StreamableHttpClientTransport::with_client(
        clarify_client::http::client().expect("an HTTP client"),
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url))
            .auth_header(key),
    );
    McpAgent::connect_with(transport, version).await
}

/// A session at `/mcp` with `key`, on protocol 2025-06-18 (what clients speak today).
async fn connect(server: &TestServer, key: &str) -> McpAgent {
    connect_with(server, key, ProtocolVersion::V_2025_06_18).await
}

/// A server whose waiting calls report progress every 200 ms.
async fn server() -> TestServer {
    TestServer::build("memory:", Default::default(), |config| {
        config.mcp.progress_interval = Duration::from_millis(200);
    })
    .await
}

/// Waits until `tenant` has a pending request asking `text`.
async fn wait_pending(store: &Store, tenant: &str, text: &str) -> RequestRecord {
    let query = ListQuery {
        status: Some(clarify_core::Status::Pending),
        ..ListQuery::default()
    };
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let page = store.list(tenant, &query).await.expect("listed");
        if let Some(r) = page
            .records
            .into_iter()
            .find(|r| r.request.questions[0].text == text)
        {
            return r;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no pending {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn tools_work_over_http_with_progress_and_a_person_answering() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let alice = server.key(Role::Responder, "alice", "default").await;
    let mut agent = connect(&server, &key).await;
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

    let call = agent.begin("ask_human", question("Which database?")).await;
    let record = wait_pending(&server.store, "default", "Which database?").await;
    assert_eq!(record.request.agent.as_deref(), Some(CLIENT_NAME));
    let progress = agent.next_progress().await;
    assert_eq!(progress.progress_token, call.progress_token);
    let (status, _) = server
        .post(
            &format!("/v1/requests/{}/answer", record.id),
            &alice,
            json!({"option": "postgres"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let result = finish(call).await;
    assert_eq!(text(&result), "answered by alice: Postgres");
    assert_eq!(structured(&result)["request_id"], record.id.as_str());

    let asked = agent.call("ask_human_async", question("Deploy?")).await;
    let id = structured(&asked)["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    let pending = agent
        .call("get_answer", json!({"request_id": id, "wait_seconds": 0}))
        .await;
    assert_eq!(
        structured(&pending),
        &json!({"request_id": id, "status": "pending"})
    );
    server
        .post(
            &format!("/v1/requests/{id}/answer"),
            &alice,
            json!({"option": "sqlite"}),
        )
        .await;
    let answered = agent.call("get_answer", json!({"request_id": id})).await;
    assert_eq!(text(&answered), "answered by alice: SQLite");

    let invalid = agent
        .call(
            "ask_human",
            json!({"questions": [{"question": "", "kind": "open"}]}),
        )
        .await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(
        text(&invalid).contains("questions[0]"),
        "{}",
        text(&invalid)
    );

    // Changes made through MCP count like the API's own.
    let (_, metrics) = server
        .call(reqwest::Method::GET, "/metrics", None, None)
        .await;
    let metrics = metrics.as_str().unwrap_or_default().to_owned();
    assert!(
        metrics.contains("clarify_requests_created_total 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn cancelling_a_call_cancels_the_request() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let agent = connect(&server, &key).await;
    let call = agent.begin("ask_human", question("Drop the table?")).await;
    let record = wait_pending(&server.store, "default", "Drop the table?").await;
    call.cancel(None).await.expect("cancellation sent");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let now = server
            .store
            .get("default", &record.id)
            .await
            .expect("read")
            .expect("exists");
        if now.status.is_resolved() {
            assert_eq!(now.status, clarify_core::Status::Cancelled);
            let outcome = now.outcome().expect("outcome");
            assert_eq!(outcome.answered_by.as_deref(), Some("bot"));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "still pending");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_newest_protocol_works_without_sessions() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let agent = connect_with(&server, &key, ProtocolVersion::LATEST).await;
    let asked = agent.call("ask_human_async", question("Stateless?")).await;
    let id = structured(&asked)["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    assert!(
        server
            .store
            .get("default", &id)
            .await
            .expect("read")
            .is_some()
    );
    let pending = agent
        .call("get_answer", json!({"request_id": id, "wait_seconds": 0}))
        .await;
    assert_eq!(structured(&pending)["status"], "pending");
}

#[tokio::test]
async fn shutdown_returns_the_pending_request_id() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let store = server.store.clone();
    let agent = connect(&server, &key).await;
    let call = agent
        .begin("ask_human", question("Across a restart?"))
        .await;
    let record = wait_pending(&store, "default", "Across a restart?").await;
    let stopped = tokio::spawn(server.stop());
    let result = finish(call).await;
    assert_eq!(
        structured(&result)["request_id"],
        record.id.as_str(),
        "{result:?}"
    );
    assert_eq!(structured(&result)["status"], "pending");
    assert!(text(&result).contains("get_answer"), "{}", text(&result));
    tokio::time::timeout(PATIENCE, stopped)
        .await
        .expect("the server stops with MCP sessions open")
        .expect("stopped");
    let kept = store
        .get("default", &record.id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(kept.status, clarify_core::Status::Pending);
}

/// Sends an MCP `initialize` by hand; the status, error body and session id.
async fn initialize(
    server: &TestServer,
    auth: Option<&str>,
    session: Option<&str>,
) -> (StatusCode, Value, Option<String>) {
    let mut request = server
        .client
        .post(format!("{}/mcp", server.url))
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        );
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.expect("sent");
    let status = response.status();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = if status.is_success() {
        Value::Null
    } else {
        response.json().await.unwrap_or(Value::Null)
    };
    (status, body, session)
}

#[tokio::test]
async fn mcp_needs_an_agent_or_admin_key() {
    let server = server().await;
    let responder = server.key(Role::Responder, "alice", "default").await;
    let (status, body, _) = initialize(&server, None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(code(&body), "unauthorized");
    let (status, body, _) = initialize(&server, Some("Bearer ck_nope_nope"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, body, _) = initialize(&server, Some(&format!("Bearer {responder}")), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _, session) =
        initialize(&server, Some(&format!("Bearer {}", server.admin)), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(session.is_some(), "a session was opened");
}

#[tokio::test]
async fn tenants_and_their_sessions_stay_apart() {
    let server = server().await;
    let acme = server.key(Role::Agent, "acme-bot", "acme").await;
    let globex = server.key(Role::Agent, "globex-bot", "globex").await;
    let a = connect(&server, &acme).await;
    let b = connect(&server, &globex).await;
    let asked = a.call("ask_human_async", question("Acme only?")).await;
    let id = structured(&asked)["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    assert!(server.store.get("acme", &id).await.expect("read").is_some());
    let foreign = b
        .call("get_answer", json!({"request_id": id, "wait_seconds": 0}))
        .await;
    assert_eq!(foreign.is_error, Some(true));
    assert_eq!(structured(&foreign)["error"]["code"], "not_found");
    let own = a
        .call("get_answer", json!({"request_id": id, "wait_seconds": 0}))
        .await;
    assert_eq!(structured(&own)["status"], "pending");

    // A session belongs to the key that opened it.
    let (_, _, session) = initialize(&server, Some(&format!("Bearer {acme}")), None).await;
    let session = session.expect("a session id");
    let (status, body, _) =
        initialize(&server, Some(&format!("Bearer {globex}")), Some(&session)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(code(&body), "session_not_found");
}
