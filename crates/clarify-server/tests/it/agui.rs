//! The AG-UI proxy (`/agui/{name}`) against a small fake AG-UI agent on 127.0.0.1 that plays a
//! script per thread: bad input refused before anything is forwarded, a stream the agent
//! closes mid-run, resumes that name an unknown interrupt or leave one out, events passed on
//! as they come, and the emitter's `clarify.request` / `clarify.resolved` events. The real
//! agent (LangGraph through ag-ui-langgraph) is driven by `tests/agui-python`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::routing::post;
use clarify_server::state::AguiAgent;
use clarify_store::{Role, StoreOptions};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

/// The runs the fake agent was sent.
type Received = Arc<Mutex<Vec<Value>>>;

/// How long the `slow` script waits between its first event and the rest.
const PAUSE: Duration = Duration::from_millis(1500);

fn frame(event: &Value) -> Bytes {
    Bytes::from(format!("data: {event}\n\n"))
}

/// The fake agent: its script is chosen by the thread id's first word.
async fn agent(State(received): State<Received>, body: Bytes) -> axum::response::Response {
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Ok(mut r) = received.lock() {
        r.push(input.clone());
    }
    let thread = input["threadId"].as_str().unwrap_or_default().to_owned();
    let run = input["runId"].as_str().unwrap_or_default().to_owned();
    let started = json!({"type": "RUN_STARTED", "threadId": thread, "runId": run});
    let finished = json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run});
    let script = thread.split('-').next().unwrap_or_default().to_owned();
    let stream = async_stream(move |tx| async move {
        let _ = tx.send(frame(&started)).await;
        match script.as_str() {
            // Closes the stream mid-run, after an interrupt it never finishes.
            "close" => {
                let _ = tx
                    .send(frame(&json!({"type": "CUSTOM", "name": "on_interrupt",
                                        "value": "{\"message\": \"half-made\"}"})))
                    .await;
            }
            "two" if input.get("resume").is_none() => {
                let mut finished = finished;
                finished["outcome"] = json!({"type": "interrupt", "interrupts": [
                    {"id": "i1", "reason": "confirmation", "message": "Delete the branch?"},
                    {"id": "i2", "reason": "input_required", "message": "Why?"},
                ]});
                let _ = tx.send(frame(&finished)).await;
            }
            // Proposes a tool call and interrupts for its approval, edits allowed.
            "tool" if input.get("resume").is_none() => {
                for event in [
                    json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "deploy"}),
                    json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{\"env\": "}),
                    json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "\"prod\"}"}),
                    json!({"type": "TOOL_CALL_END", "toolCallId": "c1"}),
                    json!({"type": "STATE_SNAPSHOT", "snapshot": {"step": "approve"}}),
                ] {
                    let _ = tx.send(frame(&event)).await;
                }
                let mut finished = finished;
                finished["outcome"] = json!({"type": "interrupt", "interrupts": [
                    {"id": "approve-1", "reason": "tool_call", "toolCallId": "c1",
                     "message": "Deploy to prod?",
                     "responseSchema": {"type": "object", "properties": {
                        "approved": {"type": "boolean"}, "editedArgs": {"type": "object"}}}},
                ]});
                let _ = tx.send(frame(&finished)).await;
            }
            "slow" => {
                tokio::time::sleep(PAUSE).await;
                let _ = tx
                    .send(frame(
                        &json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                                        "delta": "done"}),
                    ))
                    .await;
                let _ = tx.send(frame(&finished)).await;
            }
            _ => {
                let _ = tx.send(frame(&finished)).await;
            }
        }
    });
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(stream)
        .unwrap_or_default()
}

/// A body fed by a task writing into a channel.
fn async_stream<F, Fut>(produce: F) -> Body
where
    F: FnOnce(tokio::sync::mpsc::Sender<Bytes>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(produce(tx));
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    }))
}

/// The fake agent on a free port, and clarify proxying it as `fake`.
async fn setup() -> (TestServer, Received, String) {
    let received: Received = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    let app = axum::Router::new()
        .route("/", post(agent))
        .with_state(received.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let agent_url = reqwest::Url::parse(&url).expect("url");
    let server = TestServer::build("memory:", StoreOptions::default(), |config| {
        config.agui = vec![Arc::new(AguiAgent::new("fake", agent_url, Vec::new()))];
    })
    .await;
    let key = server.key(Role::Agent, "frontend", "default").await;
    (server, received, key)
}

fn input(thread: &str) -> Value {
    json!({"threadId": thread, "runId": format!("r-{}", crate::support::suffix()),
           "messages": [], "state": {}, "tools": [], "context": [], "forwardedProps": {}})
}

/// Reads a proxied stream event by event.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
                return Some(serde_json::from_str(data).expect("each event is JSON"));
            }
            let chunk = self.response.chunk().await.expect("stream read")?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    async fn all(mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while let Some(e) = self.next().await {
            events.push(e);
        }
        events
    }
}

async fn run(server: &TestServer, key: &str, body: &Value) -> Events {
    let response = server
        .client
        .post(format!("{}/agui/fake", server.url))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    Events {
        response,
        buffer: String::new(),
    }
}

async fn pending(server: &TestServer, key: &str) -> Vec<Value> {
    let (status, page) = server.get("/v1/requests?status=pending", key).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["requests"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_malformed_run_input_is_refused_before_anything_is_forwarded() {
    let (server, received, key) = setup().await;
    let cases = [
        (json!([1, 2]), "RunAgentInput"),
        (json!({"runId": "r", "messages": []}), "threadId: required"),
        (json!({"threadId": "t", "messages": []}), "runId: required"),
        (json!({"threadId": "t", "runId": "r"}), "messages: required"),
        (
            json!({"threadId": "t", "runId": "r", "messages": [{"content": "hi"}]}),
            "messages[0].role",
        ),
        (
            json!({"threadId": "t", "runId": "r", "messages": [], "tools": {}}),
            "tools: must be an array",
        ),
        (
            json!({"threadId": "t", "runId": "r", "messages": [],
                   "resume": [{"interruptId": "i", "status": "maybe"}]}),
            "resume[0].status",
        ),
    ];
    for (body, names) in cases {
        let (status, error) = server.post("/agui/fake", &key, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {error}");
        assert_eq!(code(&error), "invalid_input");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(names), "{body}: {message}");
    }
    let (status, _) = server
        .call(
            reqwest::Method::POST,
            "/agui/fake",
            None,
            Some(input("plain-1")),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a key is needed");
    let (status, error) = server.post("/agui/nobody", &key, input("plain-1")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
    assert!(
        received.lock().map(|r| r.is_empty()).unwrap_or(false),
        "nothing reached the agent"
    );
}

#[tokio::test]
async fn an_agent_closing_the_stream_mid_run_ends_it_with_run_error_and_no_request() {
    let (server, _, key) = setup().await;
    let events = run(&server, &key, &input("close-1")).await.all().await;
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, ["RUN_STARTED", "CUSTOM", "RUN_ERROR"], "{events:?}");
    let error = &events[2];
    assert_eq!(error["code"], "clarify_agent_stream");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("closed the stream")),
        "{error}"
    );
    assert!(
        pending(&server, &server.admin).await.is_empty(),
        "no half-made request is left"
    );
}

#[tokio::test]
async fn a_resume_naming_an_unknown_interrupt_or_leaving_one_out_is_refused() {
    let (server, received, key) = setup().await;
    let thread = format!("two-{}", crate::support::suffix());
    let events = run(&server, &key, &input(&thread)).await.all().await;
    let announced = events
        .iter()
        .find(|e| e["name"] == "clarify.requests")
        .expect("clarify.requests");
    let requests = announced["value"]["requests"].as_array().expect("requests");
    assert_eq!(requests.len(), 2);
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("RUN_FINISHED"))
    );
    assert_eq!(pending(&server, &key).await.len(), 2);

    let mut partial = input(&thread);
    partial["resume"] =
        json!([{"interruptId": "i1", "status": "resolved", "payload": {"approved": true}}]);
    let (status, error) = server.post("/agui/fake", &key, partial).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(code(&error), "interrupt_not_covered");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"i2\"")
    );

    let mut unknown = input(&thread);
    unknown["resume"] = json!([
        {"interruptId": "i1", "status": "resolved", "payload": {"approved": true}},
        {"interruptId": "i2", "status": "resolved", "payload": "because"},
        {"interruptId": "i9", "status": "resolved", "payload": "?"},
    ]);
    let (status, error) = server.post("/agui/fake", &key, unknown).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(code(&error), "unknown_interrupt");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"i9\"")
    );

    assert_eq!(
        pending(&server, &key).await.len(),
        2,
        "both still wait for a person"
    );
    assert_eq!(
        received.lock().map(|r| r.len()).unwrap_or(0),
        1,
        "no refused resume reached the agent"
    );

    // A full resume answers both (the confirmation as yes) and is forwarded.
    let mut full = input(&thread);
    full["resume"] = json!([
        {"interruptId": "i1", "status": "resolved", "payload": {"approved": true}},
        {"interruptId": "i2", "status": "resolved", "payload": "because"},
    ]);
    let events = run(&server, &key, &full).await.all().await;
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("RUN_FINISHED"))
    );
    assert!(pending(&server, &key).await.is_empty());
    let forwarded = received.lock().map(|r| r.last().cloned()).ok().flatten();
    assert_eq!(forwarded, Some(full), "the resume is forwarded unchanged");
}

#[tokio::test]
async fn events_pass_through_as_they_come_and_the_threads_requests_join_the_stream() {
    let (server, _, key) = setup().await;
    let thread = format!("slow-{}", crate::support::suffix());
    let sent = Instant::now();
    let mut events = run(&server, &key, &input(&thread)).await;
    let first = events.next().await.expect("first event");
    assert_eq!(first["type"], "RUN_STARTED");
    assert!(
        sent.elapsed() < PAUSE,
        "RUN_STARTED arrived before the agent's pause ended ({:?})",
        sent.elapsed()
    );
    // Mid-run, the agent asks over the API (as over MCP) in its thread; a person answers.
    let asked = server
        .ask(&key, json!({"question": "Proceed?", "session": thread}))
        .await;
    server
        .ask(
            &key,
            json!({"question": "Another thread's", "session": "elsewhere"}),
        )
        .await;
    let person = server.key(Role::Responder, "alice", "default").await;
    let (status, _) = server
        .post(
            &format!(
                "/v1/requests/{}/answer",
                asked["id"].as_str().unwrap_or_default()
            ),
            &person,
            json!({"text": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let rest = events.all().await;
    let custom: Vec<&Value> = rest.iter().filter(|e| e["type"] == "CUSTOM").collect();
    assert_eq!(custom.len(), 2, "{rest:?}");
    assert_eq!(custom[0]["name"], "clarify.request");
    assert_eq!(custom[0]["value"]["id"], asked["id"]);
    assert_eq!(custom[0]["value"]["session"], json!(thread));
    assert_eq!(custom[1]["name"], "clarify.resolved");
    assert_eq!(custom[1]["value"]["request_id"], asked["id"]);
    assert_eq!(custom[1]["value"]["questions"][0]["answer"], "yes");
    assert_eq!(
        rest.last().map(|e| e["type"].clone()),
        Some(json!("RUN_FINISHED"))
    );
}

#[tokio::test]
async fn a_tool_call_approved_elsewhere_with_edits_is_resumed_by_clarify_and_replayed() {
    let (server, received, key) = setup().await;
    let thread = format!("tool-{}", crate::support::suffix());
    let events = run(&server, &key, &input(&thread)).await.all().await;
    let announced = events
        .iter()
        .find(|e| e["name"] == "clarify.requests")
        .expect("clarify.requests");
    let id = announced["value"]["requests"][0]["requestId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (status, record) = server.get(&format!("/v1/requests/{id}"), &key).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    let question = &record["questions"][0];
    assert_eq!(question["kind"], "approval");
    assert_eq!(question["action"]["name"], "deploy");
    assert_eq!(question["action"]["arguments"], json!({"env": "prod"}));
    assert_eq!(question["allow_edit"], true);
    assert_eq!(record["session"], json!(thread));

    // Approved in the inbox, with the arguments edited; the frontend is gone.
    let person = server.key(Role::Responder, "alice", "default").await;
    let (status, _) = server
        .post(
            &format!("/v1/requests/{id}/answer"),
            &person,
            json!({"decision": "approve", "edited_arguments": {"env": "staging"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(10);
    let resumed = loop {
        let last = received.lock().ok().and_then(|r| r.last().cloned());
        if let Some(last) = last.filter(|l| l.get("resume").is_some()) {
            break last;
        }
        assert!(Instant::now() < deadline, "clarify did not resume the run");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(resumed["threadId"], json!(thread));
    assert_ne!(resumed["runId"], input(&thread)["runId"], "a new run");
    assert_eq!(
        resumed["state"],
        json!({"step": "approve"}),
        "from the last snapshot"
    );
    assert_eq!(
        resumed["resume"],
        json!([{"interruptId": "approve-1", "status": "resolved",
                "payload": {"approved": true, "editedArgs": {"env": "staging"}}}])
    );

    // A frontend coming back reads the resumed run's events.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let response = server
            .client
            .get(format!("{}/agui/fake/threads/{thread}/events", server.url))
            .bearer_auth(&key)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        let text = response.text().await.expect("text");
        if text.contains("RUN_FINISHED") {
            assert!(text.starts_with("data: {"), "{text}");
            assert!(
                text.contains(&format!("\"runId\":{}", resumed["runId"])),
                "{text}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the resumed run's events were not kept"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Resuming it through the proxy now is a conflict naming who answered.
    let mut late = input(&thread);
    late["resume"] = json!([{"interruptId": "approve-1", "status": "resolved",
                              "payload": {"approved": false}}]);
    let (status, error) = server.post("/agui/fake", &key, late).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert_eq!(code(&error), "already_resolved");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("alice")),
        "{error}"
    );
}
