//! Web Push end to end: a fake push service on 127.0.0.1 that checks every push as a real one
//! would (the VAPID JWT verified against the key in the header, its audience, expiry and
//! subject; `aes128gcm`; `TTL`) and decrypts it with the keys of a browser the test plays; a tap
//! on an action answered exactly as the service worker does it; what the push service's answers
//! do (`410` and `404` remove the subscription, `429` waits for `Retry-After`, `5xx` is retried);
//! and every refusal of the subscription routes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::TimeDelta;
use clarify_server::{Config, OutboundGuard};
use clarify_store::{Role, StoreOptions};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::{TestServer, code};

/// The contact the server under test names.
const SUBJECT: &str = "mailto:ops@example.com";

/// A push as the fake service received it, checked and decrypted.
#[derive(Debug, Clone)]
struct Received {
    browser: String,
    payload: Value,
    ttl: u64,
    urgency: Option<String>,
    at: Instant,
}

/// What the fake service answers one push: a status and a `Retry-After`.
type Reply = (u16, Option<&'static str>);

#[derive(Default)]
struct Service {
    /// The server's VAPID public key, as `GET /v1/push/key` gave it.
    key: Mutex<String>,
    /// Each browser's private key and auth secret, by its endpoint's last segment.
    browsers: Mutex<HashMap<String, (p256::SecretKey, [u8; 16])>>,
    /// Answers to give a browser's next pushes (status, `Retry-After`); `201` when none is left.
    replies: Mutex<HashMap<String, VecDeque<Reply>>>,
    received: Mutex<Vec<Received>>,
    /// Every answer given, by browser: what the server was told.
    answered: Mutex<Vec<(String, u16)>>,
    /// What a push did wrong; the test fails on any.
    faults: Mutex<Vec<String>>,
    arrived: Notify,
}

struct FakePush {
    url: String,
    state: Arc<Service>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakePush {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A browser the test plays: a P-256 key pair and an auth secret, as `pushManager.subscribe`
/// makes them.
struct Browser {
    name: String,
    endpoint: String,
    public: String,
    auth: String,
}

impl Browser {
    fn subscription(&self) -> Value {
        json!({"endpoint": self.endpoint, "expirationTime": null,
               "keys": {"p256dh": self.public, "auth": self.auth}})
    }
}

impl FakePush {
    async fn start() -> Self {
        let state = Arc::new(Service::default());
        let app = axum::Router::new()
            .route("/push/{browser}", axum::routing::post(receive))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, state, task }
    }

    fn browser(&self, name: &str) -> Browser {
        let secret = loop {
            if let Ok(k) = p256::SecretKey::from_slice(&rand::random::<[u8; 32]>()) {
                break k;
            }
        };
        let auth: [u8; 16] = rand::random();
        let point = {
            use p256::elliptic_curve::sec1::ToEncodedPoint;
            secret
                .public_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec()
        };
        self.state
            .browsers
            .lock()
            .expect("lock")
            .insert(name.to_owned(), (secret, auth));
        Browser {
            name: name.to_owned(),
            endpoint: format!("{}/push/{name}", self.url),
            public: URL_SAFE_NO_PAD.encode(point),
            auth: URL_SAFE_NO_PAD.encode(auth),
        }
    }

    fn reply(&self, browser: &Browser, replies: &[(u16, Option<&'static str>)]) {
        self.state
            .replies
            .lock()
            .expect("lock")
            .entry(browser.name.clone())
            .or_default()
            .extend(replies.iter().copied());
    }

    /// Waits until `n` pushes were received in all; every push so far.
    async fn until(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let arrived = self.state.arrived.notified();
            let faults = self.state.faults.lock().expect("lock").clone();
            assert!(faults.is_empty(), "pushes the service refused: {faults:?}");
            let received = self.state.received.lock().expect("lock").clone();
            if received.len() >= n {
                return received;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} pushes arrived: {received:?}",
                received.len()
            );
            let _ = tokio::time::timeout(Duration::from_millis(200), arrived).await;
        }
    }

    /// Waits until the service has answered `n` times in all; the answers.
    async fn answers(&self, n: usize) -> Vec<(String, u16)> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let answered = self.state.answered.lock().expect("lock").clone();
            if answered.len() >= n {
                return answered;
            }
            assert!(Instant::now() < deadline, "only {answered:?} answered");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn receive(
    State(state): State<Arc<Service>>,
    Path(browser): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let checked = check(&state, &browser, &headers, &body);
    let status = match checked {
        Err(fault) => {
            state.faults.lock().expect("lock").push(fault);
            400
        }
        Ok(received) => {
            let reply = state
                .replies
                .lock()
                .expect("lock")
                .get_mut(&browser)
                .and_then(VecDeque::pop_front);
            state.received.lock().expect("lock").push(received);
            state
                .answered
                .lock()
                .expect("lock")
                .push((browser.clone(), reply.map_or(201, |r| r.0)));
            state.arrived.notify_waiters();
            match reply {
                Some((status, retry_after)) => {
                    let status = AxumStatus::from_u16(status).expect("a status");
                    let mut response = status.into_response();
                    if let Some(wait) = retry_after {
                        response
                            .headers_mut()
                            .insert("retry-after", wait.parse().expect("a header value"));
                    }
                    return response;
                }
                None => 201,
            }
        }
    };
    AxumStatus::from_u16(status)
        .expect("a status")
        .into_response()
}

/// What a push service and the browser check of a push, as RFC 8030, 8291 and 8292 say.
fn check(
    state: &Service,
    browser: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Received, String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    if header("content-encoding").as_deref() != Some("aes128gcm") {
        return Err(format!(
            "Content-Encoding is {:?}",
            header("content-encoding")
        ));
    }
    let ttl: u64 = header("ttl")
        .and_then(|t| t.parse().ok())
        .ok_or("no TTL header")?;
    let authorization = header("authorization").ok_or("no Authorization")?;
    let rest = authorization
        .strip_prefix("vapid ")
        .ok_or_else(|| format!("not a vapid Authorization: {authorization}"))?;
    let mut token = None;
    let mut key = None;
    for part in rest.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => token = Some(t.to_owned()),
            Some(("k", k)) => key = Some(k.to_owned()),
            _ => return Err(format!("an unknown vapid parameter: {part}")),
        }
    }
    let (token, key) = token.zip(key).ok_or("vapid without t or k")?;
    if key != *state.key.lock().expect("lock") {
        return Err(format!("k={key} is not the server's public key"));
    }
    // The JWT's ES256 signature, verified against k.
    let point = URL_SAFE_NO_PAD.decode(&key).map_err(|e| e.to_string())?;
    if point.len() != 65 {
        return Err(format!("k is {} bytes", point.len()));
    }
    let decoding = jsonwebtoken::DecodingKey::from_ec_components(
        &URL_SAFE_NO_PAD.encode(&point[1..33]),
        &URL_SAFE_NO_PAD.encode(&point[33..]),
    )
    .map_err(|e| e.to_string())?;
    let origin = format!(
        "http://{}",
        headers
            .get("host")
            .and_then(|h| h.to_str().ok())
            .ok_or("no Host")?
    );
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&[origin.as_str()]);
    validation.set_required_spec_claims(&["exp", "aud", "sub"]);
    let claims = jsonwebtoken::decode::<Value>(&token, &decoding, &validation)
        .map_err(|e| format!("the VAPID JWT does not verify for {origin}: {e}"))?
        .claims;
    let exp = claims["exp"].as_i64().ok_or("no exp")?;
    if exp > chrono::Utc::now().timestamp() + 86_400 {
        return Err(format!("exp {exp} is more than 24 hours ahead"));
    }
    if claims["sub"] != SUBJECT {
        return Err(format!("sub is {}", claims["sub"]));
    }
    // The payload, decrypted with the browser's private key and auth secret.
    let (secret, auth) = state
        .browsers
        .lock()
        .expect("lock")
        .get(browser)
        .cloned()
        .ok_or_else(|| format!("no browser {browser}"))?;
    let plain = web_push_native::decrypt(
        body.to_vec(),
        &secret,
        &web_push_native::Auth::clone_from_slice(&auth),
    )
    .map_err(|e| format!("the payload does not decrypt: {e}"))?;
    let payload: Value = serde_json::from_slice(&plain).map_err(|e| e.to_string())?;
    Ok(Received {
        browser: browser.to_owned(),
        payload,
        ttl,
        urgency: header("urgency"),
        at: Instant::now(),
    })
}

/// A server that may push to the fake service (loopback is allowed, as `outbound_allow` would)
/// and retries soon.
async fn server(push: &FakePush) -> TestServer {
    server_with(push, StoreOptions::default()).await
}

/// [`server`] on a store with `options` (a manual clock, say).
async fn server_with(push: &FakePush, options: StoreOptions) -> TestServer {
    // Step-up is on: a high-risk request is answered only with a passkey, in clarify.
    let options = StoreOptions {
        step_up: Some(clarify_core::Risk::High),
        ..options
    };
    let s = TestServer::build("memory:", options, |c: &mut Config| {
        c.outbound = OutboundGuard::allowing(&["127.0.0.1/32"]).expect("valid entries");
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
        c.push.subject = Some(SUBJECT.to_owned());
    })
    .await;
    let (status, body) = s.get("/v1/push/key", &s.admin).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    *push.state.key.lock().expect("lock") = body["key"].as_str().expect("a key").to_owned();
    s
}

async fn subscribe(s: &TestServer, token: &str, browser: &Browser) -> String {
    let (status, made) = s
        .post("/v1/push/subscriptions", token, browser.subscription())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    made["id"].as_str().expect("an id").to_owned()
}

/// Taps an action as the service worker does: its JSON body POSTed to its URL, no cookies.
async fn tap(action: &Value) -> (StatusCode, Value) {
    let response = clarify_client::http::client()
        .expect("an HTTP client")
        .post(action["url"].as_str().expect("a url"))
        .header("content-type", "application/json")
        .body(action["body"].to_string())
        .send()
        .await
        .expect("sent");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn titles(payload: &Value) -> Vec<&str> {
    payload["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["title"].as_str().expect("a title"))
        .collect()
}

#[tokio::test]
async fn a_push_is_signed_sealed_and_answers_as_its_person_when_tapped() {
    let push = FakePush::start().await;
    let s = server(&push).await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let carol = s.key(Role::Responder, "carol", "default").await;
    let bobs_phone = push.browser("bob-phone");
    let carols_laptop = push.browser("carol-laptop");
    let bobs_subscription = subscribe(&s, &bob, &bobs_phone).await;
    subscribe(&s, &carol, &carols_laptop).await;

    let record = s
        .ask(
            &s.admin,
            json!({"summary": "Deploy api to prod",
                   "questions": [{"text": "Deploy?", "kind": "approval",
                                  "action": {"name": "deploy", "arguments": {"env": "prod"}}}],
                   "responders": ["bob"], "timeout_seconds": 600}),
        )
        .await;
    let id = record["id"].as_str().expect("id");
    let received = push.until(1).await;
    let pushed = &received[0];
    assert_eq!(pushed.browser, "bob-phone", "carol may not answer it");
    assert_eq!(pushed.urgency.as_deref(), Some("high"));
    assert!(
        (590..=600).contains(&pushed.ttl),
        "TTL is the request's time left: {}",
        pushed.ttl
    );
    let payload = &pushed.payload;
    let mut keys: Vec<&str> = payload
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["actions", "id", "tag", "title", "url"],
        "nothing more than these: {payload}"
    );
    assert_eq!(payload["title"], "Deploy api to prod");
    assert_eq!(payload["id"], id);
    assert_eq!(payload["url"], format!("{}/#/requests/{id}", s.url));
    assert_eq!(titles(payload), ["Approve", "Deny"]);
    for action in payload["actions"].as_array().expect("actions") {
        let mut keys: Vec<&str> = action
            .as_object()
            .expect("an action")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["action", "body", "title", "url"]);
    }

    // A link sent to bob's subscription is bob's alone: pointed at another one, it is refused.
    let approve = payload["actions"][0].clone();
    let url = approve["url"].as_str().expect("a url");
    let mut forged = approve.clone();
    forged["url"] = json!(url.replace(&bobs_subscription, "someoneelse"));
    let (status, body) = tap(&forged).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    let (status, outcome) = tap(&approve).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    let (_, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(record["status"], "answered");
    assert_eq!(record["outcome"]["answered_by"], "bob");
    assert_eq!(record["outcome"]["answered_via"], "push");
    assert_eq!(
        record["outcome"]["questions"][0]["decision"], "approve",
        "{record}"
    );

    // A `single` of two options offers them; a tap on one answers it.
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Which region?", "choices": ["eu-west", "us-east"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id");
    let received = push.until(3).await;
    let to_carol = received
        .iter()
        .find(|r| r.browser == "carol-laptop")
        .expect("an open request is everyone's");
    assert_eq!(titles(&to_carol.payload), ["eu-west", "us-east"]);
    let (status, outcome) = tap(&to_carol.payload["actions"][1]).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_by"], "carol");
    assert_eq!(outcome["answered_via"], "push");
    assert_eq!(outcome["request_id"], id);

    // Once carol turns her notifications off, the links already pushed to her stop working.
    let mut unanswered = s
        .ask(
            &s.admin,
            json!({"question": "Anything else?", "choices": ["no", "yes"]}),
        )
        .await;
    let pending_id = unanswered["id"].take();
    let received = push.until(5).await;
    let to_carol = received
        .iter()
        .rev()
        .find(|r| r.browser == "carol-laptop")
        .expect("pushed to carol");
    assert_eq!(to_carol.payload["id"], pending_id);
    let (_, listed) = s.get("/v1/push/subscriptions", &carol).await;
    let carols = listed["items"][0]["id"].as_str().expect("an id").to_owned();
    let (status, _) = s
        .call(
            Method::DELETE,
            &format!("/v1/push/subscriptions/{carols}"),
            Some(&carol),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = tap(&to_carol.payload["actions"][0]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

#[tokio::test]
async fn what_the_push_service_answers_is_honoured() {
    let push = FakePush::start().await;
    let s = server(&push).await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let gone = push.browser("gone");
    let missing = push.browser("missing");
    let busy = push.browser("busy");
    let flaky = push.browser("flaky");
    push.reply(&gone, &[(410, None)]);
    push.reply(&missing, &[(404, None)]);
    push.reply(&busy, &[(429, Some("1"))]);
    push.reply(&flaky, &[(503, None), (502, None)]);
    for browser in [&gone, &missing, &busy, &flaky] {
        subscribe(&s, &bob, browser).await;
    }
    s.ask(
        &s.admin,
        json!({"question": "Ready?", "responders": ["bob"]}),
    )
    .await;

    // 410 and 404: answered once, and the subscription removed; 429 and 5xx: tried again, the
    // 429 not before its Retry-After.
    let received = push.until(4 + 1 + 2).await;
    let answered = push.answers(7).await;
    let of = |name: &str| -> Vec<u16> {
        answered
            .iter()
            .filter(|(b, _)| b == name)
            .map(|(_, status)| *status)
            .collect()
    };
    assert_eq!(of("gone"), [410]);
    assert_eq!(of("missing"), [404]);
    assert_eq!(of("busy"), [429, 201]);
    assert_eq!(of("flaky"), [503, 502, 201]);
    let times: Vec<Instant> = received
        .iter()
        .filter(|r| r.browser == "busy")
        .map(|r| r.at)
        .collect();
    assert!(
        times[1] - times[0] >= Duration::from_millis(950),
        "retried {:?} after a Retry-After of 1 s",
        times[1] - times[0]
    );
    let (_, listed) = s.get("/v1/push/subscriptions", &bob).await;
    let mut endpoints: Vec<&str> = listed["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["endpoint"].as_str().expect("an endpoint"))
        .collect();
    endpoints.sort_unstable();
    let mut expected = [busy.endpoint.as_str(), flaky.endpoint.as_str()];
    expected.sort_unstable();
    assert_eq!(endpoints, expected, "410 and 404 removed theirs");

    // The next request goes only to the browsers left.
    s.ask(
        &s.admin,
        json!({"question": "Still ready?", "responders": ["bob"]}),
    )
    .await;
    let received = push.until(9).await;
    let mut last: Vec<&str> = received[7..].iter().map(|r| r.browser.as_str()).collect();
    last.sort_unstable();
    assert_eq!(last, ["busy", "flaky"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(push.state.received.lock().expect("lock").len(), 9);
}

#[tokio::test]
async fn bad_subscriptions_and_other_peoples_are_refused() {
    let push = FakePush::start().await;
    let s = server(&push).await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let carol = s.key(Role::Responder, "carol", "default").await;
    let agent = s.key(Role::Agent, "robot", "default").await;
    let good = push.browser("good").subscription();
    let with = |path: &[&str], value: Value| {
        let mut body = good.clone();
        let mut at = &mut body;
        for key in &path[..path.len() - 1] {
            at = &mut at[*key];
        }
        at[path[path.len() - 1]] = value;
        body
    };
    let point = good["keys"]["p256dh"].as_str().expect("a key").to_owned();
    let mut off_curve = URL_SAFE_NO_PAD.decode(&point).expect("base64");
    off_curve[64] ^= 1;
    for (body, says) in [
        (
            with(&["endpoint"], json!("http://push.example.com/x")),
            "endpoint: must be an https URL",
        ),
        (
            with(&["endpoint"], json!("ftp://push.example.com/x")),
            "endpoint: must be an https URL",
        ),
        (
            with(&["endpoint"], json!("not a url")),
            "endpoint: is not a URL",
        ),
        (
            with(
                &["endpoint"],
                json!(format!("https://push.example.com/{}", "x".repeat(2_100))),
            ),
            "endpoint: is 2125 bytes long",
        ),
        (with(&["endpoint"], json!(7)), "endpoint: must be a string"),
        (with(&["keys"], json!(null)), "keys: is required"),
        (
            with(&["keys", "p256dh"], json!("***")),
            "keys.p256dh: is not URL-safe base64",
        ),
        (
            with(
                &["keys", "p256dh"],
                json!(URL_SAFE_NO_PAD.encode([4u8; 33])),
            ),
            "keys.p256dh: must be an uncompressed P-256 point of 65 bytes, got 33 bytes",
        ),
        (
            with(
                &["keys", "p256dh"],
                json!(URL_SAFE_NO_PAD.encode(&off_curve)),
            ),
            "keys.p256dh: is not a point on the P-256 curve",
        ),
        (
            with(&["keys", "auth"], json!(URL_SAFE_NO_PAD.encode([1u8; 8]))),
            "keys.auth: must be 16 bytes, got 8",
        ),
        (
            json!([1, 2]),
            "body: must be a PushSubscription's JSON object",
        ),
    ] {
        let (status, refused) = s.post("/v1/push/subscriptions", &bob, body).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{says}: {refused}"
        );
        assert_eq!(code(&refused), "invalid_subscription");
        let message = refused["error"]["message"].as_str().expect("a message");
        assert!(
            message.starts_with(says),
            "{message:?} does not say {says:?}"
        );
    }

    // An agent is nobody to notify.
    let (status, refused) = s.post("/v1/push/subscriptions", &agent, good.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");

    // Loopback http is a test's push service; the same endpoint again replaces it.
    let first = subscribe(&s, &bob, &push.browser("bob")).await;
    let again = subscribe(&s, &bob, &push.browser("bob")).await;
    assert_ne!(first, again);
    let (_, listed) = s.get("/v1/push/subscriptions", &bob).await;
    assert_eq!(listed["items"].as_array().expect("items").len(), 1);

    // Carol cannot remove bob's, nor see it; bob can, once.
    let (_, hers) = s.get("/v1/push/subscriptions", &carol).await;
    assert_eq!(hers["items"], json!([]));
    let path = format!("/v1/push/subscriptions/{again}");
    let (status, _) = s.call(Method::DELETE, &path, Some(&carol), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, removed) = s.call(Method::DELETE, &path, Some(&bob), None).await;
    assert_eq!(status, StatusCode::OK, "{removed}");
    assert_eq!(removed["id"], again.as_str());
    let (status, _) = s.call(Method::DELETE, &path, Some(&bob), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // At most 20 browsers a person.
    for n in 0..20 {
        subscribe(&s, &carol, &push.browser(&format!("c{n}"))).await;
    }
    let (status, refused) = s
        .post(
            "/v1/push/subscriptions",
            &carol,
            push.browser("c20").subscription(),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(code(&refused), "too_many_subscriptions");

    // Each change is in the audit chain.
    s.store.sync_feed().await.expect("sync");
    let (_, audit) = s.get("/v1/audit", &s.admin).await;
    let kinds: Vec<&str> = audit["events"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .filter(|k| k.starts_with("push."))
        .collect();
    assert_eq!(kinds.len(), 2 + 1 + 20);
    assert_eq!(
        kinds.iter().filter(|k| **k == "push.unsubscribed").count(),
        1
    );
}

#[tokio::test]
async fn reminders_and_escalations_are_pushed_again() {
    let push = FakePush::start().await;
    let clock = Arc::new(clarify_store::ManualClock::new(chrono::Utc::now()));
    let options = StoreOptions {
        clock: Arc::clone(&clock) as Arc<dyn clarify_store::Clock>,
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let s = server_with(&push, options).await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    subscribe(&s, &bob, &push.browser("bob-phone")).await;
    s.ask(
        &s.admin,
        json!({"summary": "Renew the certificate", "question": "Renew it now?",
               "choices": ["yes", "no"], "responders": ["bob"],
               "remind_every_seconds": 60, "escalate_after_seconds": 90,
               "escalate_to": ["carol"]}),
    )
    .await;
    push.until(1).await;
    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.remind_due().await.expect("remind"), 1);
    let reminded = push.until(2).await;
    assert_eq!(
        reminded[1].payload["title"],
        "Reminder: Renew the certificate"
    );
    assert_eq!(
        titles(&reminded[1].payload),
        ["yes", "no"],
        "still answerable from it"
    );
    clock.advance(TimeDelta::seconds(30));
    assert_eq!(s.store.escalate_due().await.expect("escalate"), 1);
    let escalated = push.until(3).await;
    assert_eq!(
        escalated[2].payload["title"],
        "Escalated: Renew the certificate"
    );
    assert!(escalated.iter().all(|r| r.browser == "bob-phone"));
}

#[tokio::test]
async fn a_request_that_needs_a_passkey_is_pushed_without_buttons() {
    let push = FakePush::start().await;
    let s = server(&push).await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    subscribe(&s, &bob, &push.browser("bob-phone")).await;
    for risk in ["high", "normal"] {
        s.ask(
            &s.admin,
            json!({"summary": format!("Drop the {risk} table"), "risk": risk,
                   "questions": [{"text": "Drop it?", "kind": "approval",
                                  "action": {"name": "drop_table", "arguments": {}}}]}),
        )
        .await;
    }
    let received = push.until(2).await;
    let titled = |title: &str| {
        received
            .iter()
            .find(|r| r.payload["title"] == title)
            .unwrap_or_else(|| panic!("no push titled {title}: {received:?}"))
    };
    assert_eq!(
        titled("Drop the high table").payload["actions"],
        json!([]),
        "only the inbox, after a passkey, answers it"
    );
    assert_eq!(
        titles(&titled("Drop the normal table").payload),
        ["Approve", "Deny"]
    );
}

/// The payload the server pushed, delivered to the inbox's real service worker in Chromium (the
/// DevTools protocol stands in for the push service's connection to the browser): the
/// notification it shows is titled by the summary, tagged by the request, and offers the
/// actions the payload carries.
#[tokio::test]
async fn the_service_worker_shows_a_pushed_request_as_a_notification_with_its_actions() {
    let Some(browser) = clarify_testkit::browser::Browser::launch_phone(390, 844).await else {
        return;
    };
    let b = &browser;
    let push = FakePush::start().await;
    let s = server(&push).await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    subscribe(&s, &bob, &push.browser("bob-phone")).await;
    let record = s
        .ask(
            &s.admin,
            json!({"summary": "Rotate the signing key",
                   "questions": [{"text": "Rotate now?", "kind": "approval",
                                  "action": {"name": "rotate_key", "arguments": {}}}]}),
        )
        .await;
    let payload = push.until(1).await[0].payload.clone();
    b.run("push_notification", async {
        b.goto(&s.url).await;
        b.set_permission("notifications", "granted").await;
        b.until(
            "the service worker to control the page",
            "return navigator.serviceWorker.controller !== null",
            vec![],
        )
        .await;
        // A fresh profile's first service worker registration has id 0.
        b.cdp("ServiceWorker.enable", json!({})).await;
        // The notifications the service worker shows, read as the page sees them.
        let read = "window.shown = null; navigator.serviceWorker.ready \
             .then((r) => r.getNotifications()) \
             .then((n) => { window.shown = n.map((x) => ({title: x.title, body: x.body, \
               tag: x.tag, actions: Array.from(x.actions || [], (a) => a.title)})); }, \
               (e) => { window.shown = String(e); });";
        let poll = format!(
            "if (window.shown === undefined || (Array.isArray(window.shown) \
               && window.shown.length === 0)) {{ {read} }} const s = window.shown; \
             return (Array.isArray(s) && s.length) || typeof s === 'string' ? s : null"
        );
        // A message delivered while the worker is still starting can be lost (seen once in
        // CI): it is delivered again after 5 s without a notification, which at most replaces
        // the notification of the same tag.
        let mut shown = Value::Null;
        for _ in 0..6 {
            b.cdp(
                "ServiceWorker.deliverPushMessage",
                json!({"origin": s.url, "registrationId": "0", "data": payload.to_string()}),
            )
            .await;
            let deadline = Instant::now() + Duration::from_secs(5);
            while shown.is_null() && Instant::now() < deadline {
                shown = b.js(&poll, vec![]).await;
                if shown.is_null() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            if !shown.is_null() {
                break;
            }
        }
        assert_eq!(
            shown,
            json!([{"title": "Rotate the signing key",
                    "body": "Answer here, or tap to open it",
                    "tag": format!("clarify-{}", record["id"].as_str().expect("id")),
                    "actions": ["Approve", "Deny"]}])
        );
    })
    .await;
}
