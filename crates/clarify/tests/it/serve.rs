//! `clarify serve` and `clarify keys` as processes: first start, key management while serving,
//! graceful shutdown, a SIGKILL with work pending, and two servers sharing PostgreSQL.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use clarify_testkit::postgres_url;

use crate::support::{Api, Server, create_key, run, sqlite_url, temp_dir, unique};

fn find<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let start = text.find(prefix)?;
    let rest = &text[start..];
    let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    Some(&rest[..end])
}

#[tokio::test]
async fn first_start_prints_an_admin_key_and_a_one_time_login_link() {
    let dir = temp_dir("first-start");
    let db = sqlite_url(&dir);
    let mut server = Server::start(&db, &[]).await;
    let stderr = server.stderr();
    let key = find(&stderr, "ck_")
        .expect("an admin key is printed")
        .to_owned();
    let link = find(&stderr, &format!("{}/login/", server.url))
        .expect("a login link is printed")
        .to_owned();

    let api = Api::new(&server.url, &key);
    assert_eq!(
        api.get("/v1/keys").await.0,
        200,
        "the printed key is an admin key"
    );

    let no_redirects = clarify_client::http::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let first = no_redirects.get(&link).send().await.expect("sent");
    assert_eq!(first.status().as_u16(), 303);
    let cookie = first
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert!(
        cookie.starts_with("clarify_session=")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let again = no_redirects.get(&link).send().await.expect("sent");
    assert_eq!(again.status().as_u16(), 404, "the link works once");

    server.kill();
    let restarted = Server::start(&db, &[]).await;
    assert!(
        find(&restarted.stderr(), "ck_").is_none(),
        "no second admin key on a store with keys"
    );
    assert_eq!(Api::new(&restarted.url, &key).get("/v1/keys").await.0, 200);
}

#[tokio::test]
async fn keys_are_managed_on_the_store_while_the_server_runs() {
    let dir = temp_dir("keys");
    let db = sqlite_url(&dir);
    let server = Server::start(&db, &[]).await;
    let key = create_key(&db, "agent", "ci-bot", "default");
    let api = Api::new(&server.url, &key);
    let (status, _) = api.post("/v1/requests", json!({"question": "Go?"})).await;
    assert_eq!(status, 201, "a key created on the store works at once");

    let (code, listing, _) = run(&["keys", "list", "--db", &db]);
    assert_eq!(code, 0);
    assert!(
        listing.contains("ci-bot") && listing.contains("agent") && listing.contains("active"),
        "{listing}"
    );
    assert!(!listing.contains("ck_"), "secrets are never listed");
    // Every column starts where its heading does.
    let mut lines = listing.lines();
    let header = lines.next().unwrap_or_default();
    let row = lines
        .find(|l| l.starts_with("ci-bot"))
        .unwrap_or_else(|| panic!("{listing}"));
    for (heading, value) in [("ROLE", "agent"), ("TENANT", "default"), ("CREATED", "20")] {
        assert_eq!(
            header.find(heading),
            row.find(value),
            "{heading} lines up:\n{listing}"
        );
    }

    let (code, _, stderr) = run(&[
        "keys", "create", "--db", &db, "--role", "agent", "--name", "ci-bot",
    ]);
    assert_eq!(code, 1, "a taken name is refused");
    assert!(stderr.contains("already exists"), "{stderr}");

    let (code, _, _) = run(&["keys", "revoke", "ci-bot", "--db", &db]);
    assert_eq!(code, 0);
    // The server trusts a key it verified for half a second; a revocation reaches it within one.
    eventually(
        "the revoked key is refused",
        Duration::from_millis(1100),
        || async { api.get("/v1/requests").await.0 == 401 },
    )
    .await;
    let (code, listing, _) = run(&["keys", "list", "--db", &db]);
    assert_eq!(code, 0);
    assert!(listing.contains("revoked"), "{listing}");
    let (code, _, stderr) = run(&["keys", "revoke", "nobody", "--db", &db]);
    assert_eq!(code, 1);
    assert!(stderr.contains("nobody"), "{stderr}");
}

#[tokio::test]
async fn sigterm_ends_long_polls_and_loses_nothing() {
    let dir = temp_dir("sigterm");
    let db = sqlite_url(&dir);
    let key = create_key(&db, "admin", "root", "default");
    let mut server = Server::start(&db, &[]).await;
    let api = Api::new(&server.url, &key);
    let (_, record) = api
        .post("/v1/requests", json!({"question": "Still there?"}))
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let poll = {
        let api = api.clone();
        let id = id.clone();
        tokio::spawn(async move {
            api.get(&format!("/v1/requests/{id}/wait?timeout_seconds=60"))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopping = Instant::now();
    server.terminate();
    let (status, body) = poll.await.expect("poll task");
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("pending")),
        "the long-poll is handed back"
    );
    assert!(stopping.elapsed() < Duration::from_secs(5));
    assert_eq!(
        server.wait_exit(Duration::from_secs(10)),
        Some(0),
        "a clean exit"
    );

    let server = Server::start(&db, &[]).await;
    let (status, again) = Api::new(&server.url, &key)
        .get(&format!("/v1/requests/{id}"))
        .await;
    assert_eq!((status, again["status"].as_str()), (200, Some("pending")));
}

/// A webhook receiver that fails while `failing` is set and records what it was sent.
struct Receiver {
    url: String,
    failing: Arc<std::sync::atomic::AtomicBool>,
    received: Arc<std::sync::Mutex<Vec<Value>>>,
}

async fn receiver() -> Receiver {
    use axum::http::StatusCode;
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let received = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (f, r) = (failing.clone(), received.clone());
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let (f, r) = (f.clone(), r.clone());
            async move {
                if f.load(Ordering::SeqCst) {
                    return StatusCode::INTERNAL_SERVER_ERROR;
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                    r.lock().unwrap_or_else(|p| p.into_inner()).push(v);
                }
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Receiver {
        url,
        failing,
        received,
    }
}

async fn eventually<F, Fut>(what: &str, within: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn sigkill_with_pending_requests_and_a_queued_webhook_loses_nothing() {
    let dir = temp_dir("sigkill");
    let db = sqlite_url(&dir);
    let key = create_key(&db, "admin", "root", "default");
    let hook = receiver().await;
    // The receiver listens on 127.0.0.1, which the outbound guard refuses unless allowed.
    let retry = [
        "--webhook-first-retry",
        "300ms",
        "--webhook-timeout",
        "1s",
        "--outbound-allow",
        "127.0.0.0/8",
    ];
    let mut server = Server::start(&db, &retry).await;
    let api = Api::new(&server.url, &key);

    let mut pending = Vec::new();
    for i in 0..20 {
        let (status, r) = api
            .post(
                "/v1/requests",
                json!({"question": format!("Pending {i}?"), "choices": ["a", "b"]}),
            )
            .await;
        assert_eq!(status, 201);
        pending.push(r["id"].as_str().expect("id").to_owned());
    }
    let (_, hooked) = api
        .post(
            "/v1/requests",
            json!({"question": "Notify me", "callback_url": hook.url}),
        )
        .await;
    let hooked = hooked["id"].as_str().expect("id").to_owned();
    let (status, answered) = api
        .post(
            &format!("/v1/requests/{hooked}/answer"),
            json!({"text": "done"}),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    // The receiver seeing the attempt is not enough: the server records it only once the
    // receiver's reply is in, and the kill must come after that record.
    eventually(
        "the server has recorded one failed attempt",
        Duration::from_secs(10),
        || {
            let api = api.clone();
            let path = format!("/v1/requests/{hooked}/deliveries");
            async move {
                let (_, deliveries) = api.get(&path).await;
                deliveries["deliveries"][0]["attempts"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
            }
        },
    )
    .await;

    server.kill();
    hook.failing.store(false, Ordering::SeqCst);
    let server = Server::start(&db, &retry).await;
    let api = Api::new(&server.url, &key);

    for id in &pending {
        let (status, r) = api.get(&format!("/v1/requests/{id}")).await;
        assert_eq!(
            (status, r["status"].as_str()),
            (200, Some("pending")),
            "{id} survived"
        );
    }
    let (_, page) = api.get("/v1/requests?status=pending&limit=100").await;
    assert_eq!(page["requests"].as_array().map_or(0, Vec::len), 20);
    let (_, r) = api.get(&format!("/v1/requests/{hooked}")).await;
    assert_eq!(r["status"], "answered");
    assert_eq!(
        r["outcome"]["questions"][0]["answer"], "done",
        "the answer is stored as acknowledged"
    );

    eventually(
        "the queued webhook is delivered after the restart",
        Duration::from_secs(15),
        || {
            let received = hook.received.clone();
            async move {
                !received
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_empty()
            }
        },
    )
    .await;
    let body = hook.received.lock().unwrap_or_else(|p| p.into_inner())[0].clone();
    assert_eq!(body["request_id"], hooked.as_str());
    assert_eq!(body["status"], "answered");
    // The worker records the attempt once the receiver's answer is back, just after the
    // receiver has the body.
    let path = format!("/v1/requests/{hooked}/deliveries");
    eventually(
        "the delivery is recorded as delivered",
        Duration::from_secs(15),
        || async {
            let (_, deliveries) = api.get(&path).await;
            deliveries["deliveries"][0]["status"] == "delivered"
        },
    )
    .await;
    let (_, deliveries) = api.get(&path).await;
    let delivery = &deliveries["deliveries"][0];
    let attempts = delivery["attempts"].as_array().map_or(0, Vec::len);
    assert!(
        attempts >= 2,
        "the failed attempt before the kill is recorded too: {deliveries}"
    );
}

#[tokio::test]
async fn two_servers_on_one_postgres_database_wake_each_other() {
    let Some(pg) = postgres_url() else { return };
    let tenant = format!("two-{}", unique());
    let key = create_key(&pg, "admin", &format!("root-{tenant}"), &tenant);
    let a = Server::start(&pg, &[]).await;
    let b = Server::start(&pg, &[]).await;
    let (api_a, api_b) = (Api::new(&a.url, &key), Api::new(&b.url, &key));

    for (asker, waiter) in [(&api_a, &api_b), (&api_b, &api_a)] {
        let (status, r) = asker
            .post(
                "/v1/requests",
                json!({"question": "Which way?", "choices": ["left", "right"]}),
            )
            .await;
        assert_eq!(status, 201);
        let id = r["id"].as_str().expect("id").to_owned();
        let poll = {
            let waiter = waiter.clone();
            let id = id.clone();
            tokio::spawn(async move {
                let r = waiter
                    .get(&format!("/v1/requests/{id}/wait?timeout_seconds=30"))
                    .await;
                (r, Instant::now())
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let answered = Instant::now();
        let (status, _) = asker
            .post(
                &format!("/v1/requests/{id}/answer"),
                json!({"option": "right"}),
            )
            .await;
        assert_eq!(status, 200);
        let ((status, record), woke) = poll.await.expect("poll");
        assert_eq!((status, record["status"].as_str()), (200, Some("answered")));
        assert_eq!(record["outcome"]["questions"][0]["answer"], "right");
        let latency = woke.duration_since(answered);
        assert!(
            latency < Duration::from_millis(900),
            "woke through NOTIFY, not the 1 s backstop: {latency:?}"
        );
    }
}
