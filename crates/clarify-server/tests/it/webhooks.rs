//! Webhooks: outcomes POSTed to a receiver running in the test, signed, retried and recorded.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use chrono::{TimeDelta, Utc};
use clarify_server::{Config, OutboundGuard};
use clarify_store::{ManualClock, Role, StoreOptions};
use reqwest::StatusCode;
use serde_json::{Value, json};

use clarify_testkit::signature_valid;

use crate::support::{TestServer, code};

/// How long a test waits for a delivery to settle.
const PATIENCE: Duration = Duration::from_secs(4);

/// One POST the receiver got.
#[derive(Debug, Clone)]
struct Call {
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Call {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header: {:?}", self.headers))
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }
}

#[derive(Debug, Default)]
struct Inbox {
    calls: Mutex<Vec<Call>>,
    /// Answer 500 to this many calls before answering 200.
    failures_left: AtomicUsize,
}

/// A webhook receiver on 127.0.0.1; stops when dropped.
pub(crate) struct Receiver {
    pub(crate) url: String,
    inbox: Arc<Inbox>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// A receiver that answers 500 to its first `failures` calls.
    pub(crate) async fn start(failures: usize) -> Self {
        let inbox = Arc::new(Inbox {
            failures_left: AtomicUsize::new(failures),
            ..Inbox::default()
        });
        // The second route is where a Restate ingress takes an awakeable's resolution.
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .route(
                "/restate/awakeables/{id}/resolve",
                axum::routing::post(receive),
            )
            .with_state(inbox.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://{addr}/hook"),
            inbox,
            task,
        }
    }

    fn calls(&self) -> Vec<Call> {
        self.inbox
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receive(
    State(inbox): State<Arc<Inbox>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> AxumStatus {
    inbox
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Call {
            path: uri.path().to_owned(),
            headers,
            body,
        });
    let failing = inbox
        .failures_left
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        AxumStatus::INTERNAL_SERVER_ERROR
    } else {
        AxumStatus::OK
    }
}

/// Retries quickly, so a test sees several attempts in well under a second; the receivers run
/// on 127.0.0.1, which the outbound guard allows only when told to.
fn fast(c: &mut Config) {
    c.outbound = OutboundGuard::allowing(&["127.0.0.0/8"]).expect("a range");
    c.webhooks.first_backoff = TimeDelta::milliseconds(50);
    c.webhooks.poll = Duration::from_millis(50);
}

async fn fast_server() -> TestServer {
    TestServer::build("memory:", StoreOptions::default(), fast).await
}

fn id_of(record: &Value) -> String {
    record["id"].as_str().expect("record id").to_owned()
}

/// The deliveries of request `id`, once none is pending any more.
async fn settled(s: &TestServer, id: &str) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (status, body) = s
            .get(&format!("/v1/requests/{id}/deliveries"), &s.admin)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let deliveries = body["deliveries"].as_array().cloned().unwrap_or_default();
        if !deliveries.is_empty() && deliveries.iter().all(|d| d["status"] != "pending") {
            return deliveries;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "deliveries of {id} still pending: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn secret_of(s: &TestServer, token: &str) -> String {
    let (status, body) = s.get("/v1/webhook-secret", token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["secret"].as_str().expect("secret").to_owned()
}

#[tokio::test]
async fn an_answer_is_posted_once_and_signed_with_the_tenant_secret() {
    let s = fast_server().await;
    let receiver = Receiver::start(0).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Deploy?", "choices": ["yes", "no"], "callback_url": receiver.url}),
        )
        .await;
    assert_eq!(record["callback_url"], receiver.url.as_str());
    let id = id_of(&record);
    let (status, outcome) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"option": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let deliveries = settled(&s, &id).await;
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    let delivery = &deliveries[0];
    assert_eq!(delivery["status"], "delivered");
    assert_eq!(delivery["url"], receiver.url.as_str());
    assert_eq!(delivery["attempts"].as_array().map(Vec::len), Some(1));
    assert_eq!(delivery["attempts"][0]["status_code"], 200);

    let calls = receiver.calls();
    assert_eq!(calls.len(), 1, "posted once");
    let call = &calls[0];
    assert_eq!(call.json(), outcome, "the body is the outcome");
    assert_eq!(call.header("clarify-event"), "request.answered");
    assert_eq!(call.header("clarify-delivery"), delivery["id"].to_string());
    assert!(call.header("content-type").starts_with("application/json"));

    let signature = call.header("clarify-signature");
    let t: i64 = signature
        .strip_prefix("t=")
        .and_then(|rest| rest.split_once(','))
        .and_then(|(t, _)| t.parse().ok())
        .unwrap_or_else(|| panic!("t=<unix>,v1=<hex>: {signature}"));
    assert!(
        (Utc::now().timestamp() - t).abs() < 60,
        "t is the send time: {signature}"
    );
    let secret = secret_of(&s, &s.admin).await;
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert!(
        signature_valid(&secret, signature, &call.body),
        "{signature}"
    );
    let mut altered = call.body.to_vec();
    altered.push(b' ');
    assert!(
        !signature_valid(&secret, signature, &altered),
        "the body is covered"
    );

    let acme = s.key(Role::Agent, "acme-bot", "acme").await;
    let other = secret_of(&s, &acme).await;
    assert_ne!(other, secret, "each tenant has its own secret");
    assert!(!signature_valid(&other, signature, &call.body));
    let responder = s.key(Role::Responder, "alice", "default").await;
    assert_eq!(
        s.get("/v1/webhook-secret", &responder).await.0,
        StatusCode::FORBIDDEN,
        "responders do not receive webhooks"
    );
}

#[tokio::test]
async fn a_failing_receiver_is_retried_until_it_accepts() {
    let s = fast_server().await;
    let receiver = Receiver::start(2).await;
    let id = id_of(
        &s.ask(
            &s.admin,
            json!({"question": "Anything?", "callback_url": receiver.url}),
        )
        .await,
    );
    s.post(
        &format!("/v1/requests/{id}/answer"),
        &s.admin,
        json!({"text": "ok"}),
    )
    .await;

    let deliveries = settled(&s, &id).await;
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    let delivery = &deliveries[0];
    assert_eq!(delivery["status"], "delivered", "{delivery}");
    assert!(delivery["next_attempt_at"].is_null());
    let attempts = delivery["attempts"].as_array().expect("attempts");
    let numbers: Vec<&Value> = attempts.iter().map(|a| &a["number"]).collect();
    let codes: Vec<&Value> = attempts.iter().map(|a| &a["status_code"]).collect();
    assert_eq!(numbers, [&json!(1), &json!(2), &json!(3)], "{delivery}");
    assert_eq!(codes, [&json!(500), &json!(500), &json!(200)], "{delivery}");
    assert!(attempts[0]["error"].is_string() && attempts[2]["error"].is_null());

    let calls = receiver.calls();
    assert_eq!(calls.len(), 3);
    for call in &calls[1..] {
        assert_eq!(
            call.header("clarify-delivery"),
            calls[0].header("clarify-delivery"),
            "retries carry the same delivery id, for deduplication"
        );
        assert_eq!(call.body, calls[0].body);
    }
}

#[tokio::test]
async fn a_busy_receiver_is_not_called_again_before_its_retry_after() {
    let s = fast_server().await;
    // Busy: every call answered 429, come back in two minutes.
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(|| async { (AxumStatus::TOO_MANY_REQUESTS, [("retry-after", "120")]) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let id = id_of(
        &s.ask(&s.admin, json!({"question": "Busy?", "callback_url": url}))
            .await,
    );
    s.post(
        &format!("/v1/requests/{id}/answer"),
        &s.admin,
        json!({"text": "ok"}),
    )
    .await;

    let deadline = tokio::time::Instant::now() + PATIENCE;
    let delivery = loop {
        let (_, body) = s
            .get(&format!("/v1/requests/{id}/deliveries"), &s.admin)
            .await;
        let delivery = body["deliveries"][0].clone();
        if delivery["attempts"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            break delivery;
        }
        assert!(tokio::time::Instant::now() < deadline, "no attempt: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    task.abort();
    let time = |v: &Value| {
        v.as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .unwrap_or_else(|| panic!("a time: {v}"))
    };
    let attempted = time(&delivery["attempts"][0]["at"]);
    let next = time(&delivery["next_attempt_at"]);
    assert_eq!(delivery["attempts"][0]["status_code"], 429, "{delivery}");
    assert!(
        next - attempted >= TimeDelta::seconds(119),
        "the next attempt waits for Retry-After, not the 50 ms backoff: {delivery}"
    );
}

#[tokio::test]
async fn a_receiver_that_never_accepts_ends_failed() {
    let s = TestServer::build("memory:", StoreOptions::default(), |c| {
        fast(c);
        c.webhooks.retry_for = TimeDelta::milliseconds(300);
    })
    .await;
    let receiver = Receiver::start(usize::MAX).await;
    // A port nothing listens on.
    let closed = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        format!("http://{}/hook", listener.local_addr().expect("addr"))
    };
    let refusing = id_of(
        &s.ask(
            &s.admin,
            json!({"question": "A?", "callback_url": receiver.url}),
        )
        .await,
    );
    let unreachable = id_of(
        &s.ask(&s.admin, json!({"question": "B?", "callback_url": closed}))
            .await,
    );
    for id in [&refusing, &unreachable] {
        s.post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"text": "ok"}),
        )
        .await;
    }

    let delivery = settled(&s, &refusing).await.remove(0);
    assert_eq!(delivery["status"], "failed", "{delivery}");
    assert!(delivery["next_attempt_at"].is_null());
    let attempts = delivery["attempts"].as_array().expect("attempts");
    assert!(attempts.len() >= 2, "retried before giving up: {delivery}");
    assert!(
        attempts
            .iter()
            .all(|a| a["status_code"] == 500 && a["error"].is_string()),
        "{delivery}"
    );
    assert_eq!(receiver.calls().len(), attempts.len(), "each try recorded");

    let delivery = settled(&s, &unreachable).await.remove(0);
    assert_eq!(delivery["status"], "failed", "{delivery}");
    let first = &delivery["attempts"][0];
    assert!(first["status_code"].is_null(), "{delivery}");
    assert!(
        first["error"]
            .as_str()
            .is_some_and(|e| e.contains("connect")),
        "{delivery}"
    );
}

#[tokio::test]
async fn cancellation_and_expiry_are_delivered_too() {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let options = StoreOptions {
        clock: clock.clone(),
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let s = TestServer::build("memory:", options, fast).await;
    let receiver = Receiver::start(0).await;
    let cancelled = id_of(
        &s.ask(
            &s.admin,
            json!({"question": "Cancel?", "callback_url": receiver.url}),
        )
        .await,
    );
    let expiring = id_of(
        &s.ask(
            &s.admin,
            json!({"question": "Expire?", "callback_url": receiver.url, "timeout_seconds": 60}),
        )
        .await,
    );

    let (status, _) = s
        .post(
            &format!("/v1/requests/{cancelled}/cancel"),
            &s.admin,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(settled(&s, &cancelled).await[0]["status"], "delivered");

    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.expire_due().await.expect("expired"), 1);
    // Expiry is not an HTTP write: the worker's poll finds it.
    assert_eq!(settled(&s, &expiring).await[0]["status"], "delivered");

    let calls = receiver.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let secret = secret_of(&s, &s.admin).await;
    for (call, id, status) in [
        (&calls[0], &cancelled, "cancelled"),
        (&calls[1], &expiring, "expired"),
    ] {
        assert_eq!(call.header("clarify-event"), format!("request.{status}"));
        let body = call.json();
        assert_eq!(body["request_id"], id.as_str());
        assert_eq!(body["status"], status);
        assert!(body["note"].is_string(), "the model is told: {body}");
        assert!(signature_valid(
            &secret,
            call.header("clarify-signature"),
            &call.body
        ));
    }
}

#[tokio::test]
async fn deliveries_exist_only_for_callbacks_and_only_for_their_tenant() {
    let s = fast_server().await;
    let receiver = Receiver::start(0).await;
    let plain = id_of(&s.ask(&s.admin, json!({"question": "No hook?"})).await);
    let hooked = id_of(
        &s.ask(
            &s.admin,
            json!({"question": "Hook?", "callback_url": receiver.url}),
        )
        .await,
    );
    for id in [&plain, &hooked] {
        s.post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"text": "ok"}),
        )
        .await;
    }
    assert_eq!(settled(&s, &hooked).await.len(), 1);
    let (status, body) = s
        .get(&format!("/v1/requests/{plain}/deliveries"), &s.admin)
        .await;
    assert_eq!((status, &body["deliveries"]), (StatusCode::OK, &json!([])));
    assert_eq!(
        receiver.calls().len(),
        1,
        "only the hooked request was sent"
    );

    let acme = s.key(Role::Admin, "acme-admin", "acme").await;
    let (status, err) = s
        .get(&format!("/v1/requests/{hooked}/deliveries"), &acme)
        .await;
    assert_eq!((status, code(&err)), (StatusCode::NOT_FOUND, "not_found"));
    let (status, _) = s
        .get("/v1/requests/no-such-request/deliveries", &s.admin)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn reminders_and_the_escalation_are_delivered_with_the_record() {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let options = StoreOptions {
        clock: clock.clone(),
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let s = TestServer::build("memory:", options, fast).await;
    let receiver = Receiver::start(0).await;
    let id = id_of(
        &s.ask(
            &s.admin,
            json!({"question": "Still want the refund?", "callback_url": receiver.url,
                   "remind_every_seconds": 60, "escalate_after_seconds": 90,
                   "escalate_to": ["oncall"], "responders": ["alice"]}),
        )
        .await,
    );
    clock.advance(TimeDelta::seconds(60));
    assert_eq!(s.store.remind_due().await.expect("remind"), 1);
    assert_eq!(s.store.escalate_due().await.expect("escalate"), 0);
    // Sent before the escalation, so its record shows the request not escalated yet.
    assert_eq!(settled(&s, &id).await.len(), 1);
    clock.advance(TimeDelta::seconds(30));
    assert_eq!(s.store.escalate_due().await.expect("escalate"), 1);
    let deliveries = settled(&s, &id).await;
    assert_eq!(deliveries.len(), 2, "{deliveries:?}");
    assert_eq!(deliveries[0]["event"], "request.reminded");
    assert_eq!(deliveries[1]["event"], "request.escalated");

    let calls = receiver.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let secret = secret_of(&s, &s.admin).await;
    for (call, event) in [
        (&calls[0], "request.reminded"),
        (&calls[1], "request.escalated"),
    ] {
        assert_eq!(call.header("clarify-event"), event);
        let body = call.json();
        assert_eq!(body["id"], id.as_str(), "the body is the record: {body}");
        assert_eq!(body["status"], "pending");
        assert!(signature_valid(
            &secret,
            call.header("clarify-signature"),
            &call.body
        ));
    }
    assert!(calls[0].json()["escalated_at"].is_null());
    assert!(calls[1].json()["escalated_at"].is_string());
    assert_eq!(calls[1].json()["escalate_to"], json!(["oncall"]));

    // The escalated responder may now answer; alice alone could before.
    let oncall = s.key(Role::Responder, "oncall", "default").await;
    let (status, outcome) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &oncall,
            json!({"text": "yes, refund"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_by"], "oncall");
}

/// A request that resumes a Restate workflow: its outcome resolves the awakeable through the
/// ingress, beside its `callback_url`, on every way it resolves and on every store.
async fn a_resume_target_gets_the_outcome_like_a_callback(url: &str) {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let options = StoreOptions {
        clock: clock.clone(),
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let s = TestServer::build(url, options, fast).await;
    let receiver = Receiver::start(0).await;
    let ingress = receiver.url.trim_end_matches("/hook").to_owned();
    let ask = |awakeable: &str, timeout: u64| {
        json!({"question": "Ship it?", "choices": ["yes", "no"], "callback_url": receiver.url,
               "timeout_seconds": timeout,
               "resume": {"restate": {"ingress": format!("{ingress}/"), "awakeable": awakeable}}})
    };
    let answered = s.ask(&s.admin, ask("sign_1answered-X", 600)).await;
    assert_eq!(
        answered["resume"],
        json!({"restate": {"ingress": ingress, "awakeable": "sign_1answered-X"}}),
        "stored and shown without the trailing slash"
    );
    let answered = id_of(&answered);
    let expiring = id_of(&s.ask(&s.admin, ask("sign_1expiring", 60)).await);
    let (status, body) = s
        .post(
            &format!("/v1/requests/{answered}/answer"),
            &s.admin,
            json!({"option": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let deliveries = settled(&s, &answered).await;
    assert_eq!(
        deliveries.len(),
        2,
        "the callback and the workflow: {deliveries:?}"
    );
    assert!(deliveries.iter().all(|d| d["status"] == "delivered"));
    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.expire_due().await.expect("expired"), 1);
    assert_eq!(settled(&s, &expiring).await.len(), 2);

    let calls = receiver.calls();
    let resumed: Vec<&Call> = calls.iter().filter(|c| c.path != "/hook").collect();
    assert_eq!(resumed.len(), 2, "{calls:?}");
    for (call, id, awakeable, status) in [
        (resumed[0], &answered, "sign_1answered-X", "answered"),
        (resumed[1], &expiring, "sign_1expiring", "expired"),
    ] {
        assert_eq!(
            call.path,
            format!("/restate/awakeables/{awakeable}/resolve")
        );
        // The awakeable's value is the outcome, as a webhook's body is, with its receipt.
        let outcome = call.json();
        assert_eq!(outcome["request_id"], id.as_str());
        assert_eq!(outcome["status"], status);
        assert!(outcome["receipt"].is_string(), "{outcome}");
    }
}

#[tokio::test]
async fn a_resume_target_gets_the_outcome_on_memory() {
    a_resume_target_gets_the_outcome_like_a_callback("memory:").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_target_gets_the_outcome_on_sqlite() {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    a_resume_target_gets_the_outcome_like_a_callback(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_target_gets_the_outcome_on_postgres() {
    let Some(pg) = clarify_testkit::postgres_url() else {
        return;
    };
    a_resume_target_gets_the_outcome_like_a_callback(&pg).await;
}

#[tokio::test]
async fn a_bad_resume_target_is_refused_by_name() {
    let s = fast_server().await;
    let guarded = TestServer::start().await;
    for (resume, problem) in [
        (json!({"temporal": {}}), "resume.temporal"),
        (
            json!({"restate": {"ingress": "http://127.0.0.1:9"}}),
            "resume.restate.awakeable",
        ),
        (
            json!({"restate": {"ingress": "ftp://x", "awakeable": "a"}}),
            "resume.restate.ingress",
        ),
        (
            json!({"restate": {"ingress": "http://x", "awakeable": "a/../b"}}),
            "resume.restate.awakeable",
        ),
        (
            json!({"restate": {"ingress": "http://x", "awakeable": "a", "extra": 1}}),
            "resume.restate.extra",
        ),
        (json!("restate"), "resume"),
    ] {
        let (status, body) = s
            .post(
                "/v1/requests",
                &s.admin,
                json!({"question": "Go?", "resume": resume}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{resume}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(problem)),
            "{resume}: {body}"
        );
    }
    // The outbound guard applies to the ingress as to a callback URL.
    let (status, body) = guarded
        .post(
            "/v1/requests",
            &guarded.admin,
            json!({"question": "Go?",
                   "resume": {"restate": {"ingress": "http://127.0.0.1:8080", "awakeable": "a"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(code(&body), "address_not_allowed");
}
