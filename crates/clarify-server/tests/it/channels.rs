//! Announcements on channels, against a fake ntfy server on 127.0.0.1 that speaks ntfy's JSON
//! publishing API: the push and its buttons, a tap that answers, retries after `429` with
//! `Retry-After`, a refused token, routes that pick which requests are announced, a restart
//! between creation and the push, and a forged tap.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::response::{IntoResponse, Response};
use chrono::TimeDelta;
use clarify_channels::{AnyPlatform, Channel, Route, ntfy::Ntfy};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

const TOKEN: &str = "tk_clarify_test";

#[derive(Default)]
struct Pushes {
    bodies: Mutex<Vec<Value>>,
    /// Answer 429 (Retry-After: 1) to this many pushes first.
    throttle: AtomicUsize,
}

/// A fake ntfy server; stops with the test's runtime.
struct FakeNtfy {
    url: String,
    pushes: Arc<Pushes>,
}

impl FakeNtfy {
    async fn start(throttle: usize) -> Self {
        let pushes = Arc::new(Pushes::default());
        pushes.throttle.store(throttle, Ordering::SeqCst);
        let app = axum::Router::new()
            .route("/", axum::routing::post(publish))
            .with_state(Arc::clone(&pushes));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, pushes }
    }

    fn bodies(&self) -> Vec<Value> {
        self.pushes
            .bodies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn channel(&self, name: &str, token: &str) -> Channel {
        Channel {
            name: name.to_owned(),
            platform: AnyPlatform::Ntfy(Ntfy {
                url: self.url.parse().expect("url"),
                topic: "clarify-ops".to_owned(),
                token: Some(token.to_owned()),
            }),
            allow_unmapped: false,
        }
    }
}

/// ntfy's publish endpoint: a bearer token, a JSON message with a topic; answers the message.
async fn publish(State(pushes): State<Arc<Pushes>>, headers: HeaderMap, body: String) -> Response {
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {TOKEN}"));
    if !authorized {
        let error = json!({"code": 40101, "http": 401, "error": "unauthorized"});
        return (AxumStatus::UNAUTHORIZED, Json(error)).into_response();
    }
    let Ok(message) = serde_json::from_str::<Value>(&body) else {
        return (
            AxumStatus::BAD_REQUEST,
            Json(json!({"error": "invalid JSON"})),
        )
            .into_response();
    };
    if message["topic"].as_str().is_none_or(str::is_empty) {
        return (AxumStatus::BAD_REQUEST, Json(json!({"error": "no topic"}))).into_response();
    }
    if pushes
        .throttle
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        let error =
            json!({"code": 42901, "http": 429, "error": "limit reached: too many requests"});
        return (
            AxumStatus::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            Json(error),
        )
            .into_response();
    }
    let mut bodies = pushes.bodies.lock().unwrap_or_else(|p| p.into_inner());
    bodies.push(message.clone());
    let id = format!("msg{}", bodies.len());
    Json(json!({"id": id, "time": 1_764_000_000, "event": "message", "topic": message["topic"]}))
        .into_response()
}

/// A server announcing on `channels`, by `routes`, retrying quickly.
async fn server(channels: Vec<Channel>, routes: Vec<Route>) -> TestServer {
    server_on("memory:", channels, routes).await
}

fn options(routes: Vec<Route>) -> StoreOptions {
    crate::support::announcing_by(routes)
}

async fn server_on(url: &str, channels: Vec<Channel>, routes: Vec<Route>) -> TestServer {
    TestServer::build(url, options(routes), |c| {
        c.channels = channels;
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
    })
    .await
}

fn route(channels: &[&str], kinds: &[&str]) -> Route {
    Route {
        channels: channels.iter().map(|c| (*c).to_owned()).collect(),
        kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
        ..Route::default()
    }
}

/// The notifications of request `id`, once none is pending.
async fn settled(s: &TestServer, id: &str) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
    loop {
        let (status, body) = s
            .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let found = body["notifications"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !found.is_empty() && found.iter().all(|n| n["status"] != "pending") {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "notifications of {id} still pending: {body}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn an_approval_is_pushed_to_ntfy_and_answered_by_a_tap() {
    let ntfy = FakeNtfy::start(0).await;
    let s = server(
        vec![ntfy.channel("phone", TOKEN)],
        vec![route(&["phone"], &["approval"])],
    )
    .await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Deploy to prod?", "kind": "approval",
                                  "action": {"name": "deploy", "arguments": {"env": "prod"}}}],
                   "agent": "deployer", "session": "s1"}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let link = record["answer_url"].as_str().expect("link").to_owned();
    // Not an approval: no route matches, nothing is pushed.
    let quiet = s.ask(&s.admin, json!({"question": "Lunch?"})).await;

    let sent = settled(&s, &id).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["channel"], "phone");
    assert_eq!(sent[0]["event"], "request.created");
    assert_eq!(sent[0]["status"], "delivered");
    assert_eq!(sent[0]["message_ref"], "msg1", "ntfy's message id is kept");
    assert_eq!(sent[0]["attempts"].as_array().map(Vec::len), Some(1));

    let pushes = ntfy.bodies();
    assert_eq!(pushes.len(), 1, "{pushes:?}");
    let push = &pushes[0];
    assert_eq!(push["topic"], "clarify-ops");
    // The summary titles the push: for an approval, the tool and its arguments.
    assert_eq!(push["title"], "deploy: env=prod");
    assert_eq!(push["click"], link.as_str());
    let message = push["message"].as_str().expect("message");
    assert!(message.contains("Action: deploy"), "{message}");
    assert!(message.contains("env: prod"), "{message}");
    assert!(
        message.contains("Asked by deployer (session s1)."),
        "{message}"
    );
    let labels: Vec<&str> = push["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|a| a["label"].as_str())
        .collect();
    assert_eq!(labels, ["Approve", "Deny", "Open"]);

    // The phone taps Approve: ntfy sends the button's request.
    let approve = &push["actions"][0];
    assert_eq!(approve["action"], "http");
    let mut tap = s
        .client
        .post(approve["url"].as_str().expect("url"))
        .body(approve["body"].as_str().expect("body").to_owned());
    for (name, value) in approve["headers"].as_object().expect("headers") {
        tap = tap.header(name.as_str(), value.as_str().unwrap_or_default());
    }
    let tapped = tap.send().await.expect("tap");
    assert_eq!(tapped.status(), StatusCode::OK);
    let (_, done) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["outcome"]["questions"][0]["decision"], "approve");

    let quiet_id = quiet["id"].as_str().expect("id");
    let (_, none) = s
        .get(&format!("/v1/requests/{quiet_id}/notifications"), &s.admin)
        .await;
    assert_eq!(none["notifications"], json!([]));
    // ntfy cannot edit the push: a follow-up says how it ended.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while ntfy.bodies().len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "a follow-up push");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pushes = ntfy.bodies();
    assert_eq!(pushes.len(), 2, "{pushes:?}");
    assert_eq!(pushes[1]["title"], "Resolved: deploy: env=prod");
    assert!(
        pushes[1]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Answered") && m.ends_with(": approved")),
        "{}",
        pushes[1]
    );
    assert!(pushes[1].get("actions").is_none(), "nothing left to tap");
}

#[tokio::test]
async fn a_throttled_push_waits_for_retry_after_and_a_refused_token_fails_at_once() {
    let ntfy = FakeNtfy::start(1).await;
    let s = server(
        vec![
            ntfy.channel("phone", TOKEN),
            ntfy.channel("stale", "tk_revoked"),
        ],
        vec![route(&["phone", "stale"], &[])],
    )
    .await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Ship it?", "choices": ["yes", "no"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let sent = settled(&s, &id).await;
    let by_channel = |name: &str| {
        sent.iter()
            .find(|n| n["channel"] == name)
            .unwrap_or_else(|| panic!("no notification on {name}: {sent:?}"))
            .clone()
    };

    let phone = by_channel("phone");
    assert_eq!(phone["status"], "delivered", "{phone}");
    let attempts = phone["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{phone}");
    assert_eq!(attempts[0]["status_code"], 429);
    assert!(
        attempts[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("too many requests")),
        "{phone}"
    );
    let at = |i: usize| {
        chrono::DateTime::parse_from_rfc3339(attempts[i]["at"].as_str().expect("at"))
            .expect("a time")
    };
    assert!(
        at(1) - at(0) >= TimeDelta::milliseconds(950),
        "the retry waited for Retry-After (1 s), not the 50 ms backoff: {phone}"
    );

    let stale = by_channel("stale");
    assert_eq!(
        stale["status"], "failed",
        "a refused token is not retried: {stale}"
    );
    assert_eq!(stale["attempts"].as_array().map(Vec::len), Some(1));
    assert_eq!(stale["attempts"][0]["status_code"], 401);

    // Two options: one button each, then Open.
    let push = &ntfy.bodies()[0];
    let labels: Vec<&str> = push["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|a| a["label"].as_str())
        .collect();
    assert_eq!(labels, ["yes", "no", "Open"]);
    assert_eq!(push["actions"][1]["body"], r#"{"option":"no"}"#);
}

/// The approve button's tap, as ntfy sends it, to `url` (the button's, or another).
async fn tap(s: &TestServer, action: &Value, url: &str) -> StatusCode {
    let mut tap = s
        .client
        .post(url)
        .body(action["body"].as_str().expect("body").to_owned());
    for (name, value) in action["headers"].as_object().expect("headers") {
        tap = tap.header(name.as_str(), value.as_str().unwrap_or_default());
    }
    tap.send().await.expect("tap").status()
}

#[tokio::test]
async fn a_restart_pushes_once_and_a_forged_tap_changes_nothing() {
    let ntfy = FakeNtfy::start(0).await;
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    let routes = || vec![route(&["phone"], &[])];
    // Created while no server runs: queued with the request, not pushed.
    let store = clarify_store::Store::open(&url, options(routes()))
        .await
        .expect("open");
    let created = store
        .create(
            "default",
            clarify_core::parse_request(
                &json!({"questions": [{"text": "Restart the database?", "kind": "approval",
                                       "action": {"name": "restart", "arguments": {}}}]}),
                &clarify_core::Limits::default(),
            )
            .expect("valid"),
        )
        .await
        .expect("create");
    drop(store);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(ntfy.bodies().is_empty());

    let s = server_on(&url, vec![ntfy.channel("phone", TOKEN)], routes()).await;
    settled(&s, &created.record.id).await;
    let (store, _) = s.halt().await;
    drop(store);
    let s = server_on(&url, vec![ntfy.channel("phone", TOKEN)], routes()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(ntfy.bodies().len(), 1, "pushed exactly once");

    // A tap whose link was altered is refused and answers nothing.
    let approve = ntfy.bodies()[0]["actions"][0].clone();
    // The first server pushed its own address; the restarted one listens elsewhere.
    let pushed = approve["url"].as_str().expect("url");
    let link = format!(
        "{}{}",
        s.url,
        &pushed[pushed.find("/a/").expect("a link")..]
    );
    let last = link.chars().last().expect("a token");
    let forged = format!(
        "{}{}",
        &link[..link.len() - last.len_utf8()],
        if last == 'A' { 'B' } else { 'A' }
    );
    let status = tap(&s, &approve, &forged).await;
    assert!(status.is_client_error(), "{status}");
    let (_, record) = s
        .get(&format!("/v1/requests/{}", created.record.id), &s.admin)
        .await;
    assert_eq!(record["status"], "pending");

    assert_eq!(tap(&s, &approve, &link).await, StatusCode::OK);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while ntfy.bodies().len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "a follow-up push");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        ntfy.bodies()[1]["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("Resolved")),
        "{:?}",
        ntfy.bodies()
    );
}

/// Push to announcement, and tap to agent wake-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn latency() {
    let ntfy = FakeNtfy::start(0).await;
    let s = server(
        vec![ntfy.channel("phone", TOKEN)],
        vec![route(&["phone"], &[])],
    )
    .await;
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let started = std::time::Instant::now();
        let record = s
            .ask(
                &s.admin,
                json!({"questions": [{"text": "Ship?", "kind": "approval",
                                      "action": {"name": "ship", "arguments": {}}}]}),
            )
            .await;
        let id = record["id"].as_str().expect("id").to_owned();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while ntfy.bodies().len() < 2 * i + 1 {
            assert!(tokio::time::Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        announced.push(started.elapsed());
        let approve = ntfy.bodies()[2 * i]["actions"][0].clone();
        let waiting = {
            let client = s.client.clone();
            let url = format!("{}/v1/requests/{id}/wait?timeout_seconds=30", s.url);
            let key = s.admin.clone();
            tokio::spawn(async move {
                let r = client.get(url).bearer_auth(key).send().await.expect("wait");
                let woke = std::time::Instant::now();
                assert!(r.status().is_success());
                woke
            })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        let tapped = std::time::Instant::now();
        assert_eq!(
            tap(&s, &approve, approve["url"].as_str().expect("url")).await,
            StatusCode::OK
        );
        wake.push(waiting.await.expect("waiter").duration_since(tapped));
        // The follow-up push, before the next round counts pushes.
        while ntfy.bodies().len() < 2 * i + 2 {
            assert!(tokio::time::Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    for (name, v) in [("creation → push", announced), ("tap → agent wakes", wake)] {
        crate::support::print_percentiles(name, v);
    }
}
