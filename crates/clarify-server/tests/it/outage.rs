//! PostgreSQL outage: the connections between one server and its database are cut under load
//! (a proxy closes every one and refuses new ones) and later restored. While the database is out
//! of reach the server answers `503 store_unavailable` within a bound, never `500` and never a
//! hang, `/readyz` fails and nothing is half-written; afterwards it recovers without a restart,
//! its LISTEN connection subscribes again, and no wake-up is lost, not even for a long-poll that
//! waited through the outage.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clarify_store::StoreOptions;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::proxy::Proxy;
use clarify_testkit::postgres_url;

use crate::support::{TestServer, code};

/// Longest any response may take while the database is out of reach: the store gives up on a
/// connection after 5 s, so anything near this bound is a hang.
const BOUND: Duration = Duration::from_secs(15);
/// A wake-up faster than this cannot come from polling (server A polls once a minute).
const NOTIFY_BOUND: Duration = Duration::from_millis(900);

/// One call, failing the test if it takes longer than [`BOUND`]; also returns how long it took.
async fn timed(
    s: &TestServer,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value, Duration) {
    let started = Instant::now();
    let (status, value) = tokio::time::timeout(BOUND, s.call(method, path, Some(&s.admin), body))
        .await
        .unwrap_or_else(|_| panic!("{path} hung for more than {BOUND:?}"));
    (status, value, started.elapsed())
}

fn id_of(record: &Value) -> String {
    record["id"].as_str().expect("record id").to_owned()
}

/// Waits until `s` has more requests with waiters than `than`.
async fn until_waiting(s: &TestServer, than: usize) {
    let deadline = Instant::now() + BOUND;
    while s.store.waiting_requests() <= than {
        assert!(Instant::now() < deadline, "the long-poll never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Long-polls `id` on `s` in the background; returns the response and when it arrived.
fn long_poll(
    s: &TestServer,
    id: &str,
    seconds: u64,
) -> tokio::task::JoinHandle<(StatusCode, Value, Instant)> {
    let request = s
        .client
        .get(format!(
            "{}/v1/requests/{id}/wait?timeout_seconds={seconds}",
            s.url
        ))
        .bearer_auth(&s.admin)
        .timeout(Duration::from_secs(seconds) + BOUND);
    tokio::spawn(async move {
        let response = request.send().await.expect("the long-poll is answered");
        let status = response.status();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body, Instant::now())
    })
}

/// Creates a request on `a`, long-polls it there, answers it through `b` once the poll waits,
/// and returns how long the answer took to wake the poll (`None`: still pending at its end).
async fn wake_latency(a: &TestServer, b: &TestServer, seconds: u64) -> Option<Duration> {
    let id = id_of(&a.ask(&a.admin, json!({"question": "Wake up?"})).await);
    let waiting = a.store.waiting_requests();
    let poll = long_poll(a, &id, seconds);
    until_waiting(a, waiting).await;
    let answered = Instant::now();
    let (status, body) = b
        .post(
            &format!("/v1/requests/{id}/answer"),
            &b.admin,
            json!({"text": "awake"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, record, woke) = poll.await.expect("poll task");
    assert_eq!(status, StatusCode::OK, "{record}");
    (record["status"] == "answered").then(|| woke.duration_since(answered))
}

/// Creates requests on `s` until `stop`; every response's status, code and duration.
fn load(s: &TestServer, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<Vec<(u16, String)>> {
    let (client, url, key) = (s.client.clone(), s.url.clone(), s.admin.clone());
    tokio::spawn(async move {
        let mut seen = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let started = Instant::now();
            let sent = client
                .post(format!("{url}/v1/requests"))
                .bearer_auth(&key)
                .json(&json!({"question": "Under load?"}))
                .timeout(BOUND)
                .send()
                .await;
            let response = match sent {
                Ok(r) => r,
                Err(e) => panic!("a create got no response within {BOUND:?}: {e}"),
            };
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            assert!(started.elapsed() < BOUND);
            seen.push((status, code(&body).to_owned()));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        seen
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_is_a_clear_503_and_heals_without_a_restart() {
    let Some(pg) = postgres_url() else { return };
    let proxy = Proxy::start(&pg).await;
    // Server A reaches the database through the proxy and polls the event log only once a
    // minute, so every wake-up on A in this test comes from LISTEN/NOTIFY or from the wake-all
    // that follows a reconnection of the listener, never from polling. B reaches it directly.
    let options = StoreOptions {
        poll_interval: Some(Duration::from_secs(60)),
        ..StoreOptions::default()
    };
    let a = TestServer::build(&proxy.url, options, |_| {}).await;
    let b = TestServer::build(&pg, StoreOptions::default(), |_| {}).await;

    let latency = wake_latency(&a, &b, 10)
        .await
        .expect("woken before the outage");
    assert!(latency < NOTIFY_BOUND, "{latency:?}");

    let untouched = id_of(&a.ask(&a.admin, json!({"question": "Left alone?"})).await);
    let across = id_of(
        &a.ask(&a.admin, json!({"question": "Answered meanwhile?"}))
            .await,
    );
    let waiting = a.store.waiting_requests();
    let poll = long_poll(&a, &across, 60);
    until_waiting(&a, waiting).await;
    let stop = Arc::new(AtomicBool::new(false));
    let loads = [load(&a, stop.clone()), load(&a, stop.clone())];
    tokio::time::sleep(Duration::from_millis(200)).await;

    proxy.cut();
    let cut = Instant::now();
    // A create, an answer and the readiness probe, at once: each waits for the store to give up
    // on connecting, then refuses.
    let answer_path = format!("/v1/requests/{untouched}/answer");
    let (create, answer, ready) = tokio::join!(
        timed(
            &a,
            Method::POST,
            "/v1/requests",
            Some(json!({"question": "Lost?"}))
        ),
        timed(
            &a,
            Method::POST,
            &answer_path,
            Some(json!({"text": "never stored"}))
        ),
        timed(&a, Method::GET, "/readyz", None),
    );
    for (what, (status, body, took)) in [("create", create), ("answer", answer), ("readyz", ready)]
    {
        assert_eq!(
            (status, code(&body)),
            (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
            "{what}: {body}"
        );
        println!("outage: {what} refused after {took:?}");
    }
    let (status, _, _) = timed(&a, Method::GET, "/healthz", None).await;
    assert_eq!(status, StatusCode::OK, "the process itself is alive");
    // Answered through B, which still reaches the database; A cannot hear the notification.
    let (status, body) = b
        .post(
            &format!("/v1/requests/{across}/answer"),
            &b.admin,
            json!({"text": "answered during the outage"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        !poll.is_finished(),
        "the long-poll waits through the outage"
    );

    proxy.restore();
    let restored = Instant::now();
    println!(
        "outage: the database was out of reach for {:?}",
        restored - cut
    );
    let (status, record, woke) = tokio::time::timeout(BOUND, poll)
        .await
        .expect("the long-poll returns after the outage")
        .expect("poll task");
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["status"], "answered", "{record}");
    assert_eq!(
        record["outcome"]["questions"][0]["answer"],
        "answered during the outage"
    );
    println!(
        "outage: the long-poll got its outcome {:?} after the restore",
        woke.duration_since(restored)
    );

    let deadline = Instant::now() + BOUND;
    loop {
        let (status, _, _) = timed(&a, Method::GET, "/readyz", None).await;
        if status == StatusCode::OK {
            break;
        }
        assert!(Instant::now() < deadline, "/readyz never recovered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "outage: ready again {:?} after the restore",
        restored.elapsed()
    );
    let (status, record) = a.get(&format!("/v1/requests/{untouched}"), &a.admin).await;
    assert_eq!(
        (status, record["status"].as_str()),
        (StatusCode::OK, Some("pending")),
        "the refused answer changed nothing"
    );
    let (status, outcome) = a
        .post(
            &format!("/v1/requests/{untouched}/answer"),
            &a.admin,
            json!({"text": "after the outage"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "answers work again: {outcome}");

    // The listener subscribes again: within the bound a probe is woken faster than any poll
    // could, and so is every later one.
    let deadline = Instant::now() + BOUND;
    loop {
        match wake_latency(&a, &b, 2).await {
            Some(latency) if latency < NOTIFY_BOUND => break,
            _ => assert!(
                Instant::now() < deadline,
                "LISTEN never subscribed again after the outage"
            ),
        }
    }
    println!(
        "outage: LISTEN wakes again {:?} after the restore",
        restored.elapsed()
    );
    for _ in 0..3 {
        let latency = wake_latency(&a, &b, 10).await.expect("woken");
        assert!(latency < NOTIFY_BOUND, "woken through NOTIFY: {latency:?}");
    }

    stop.store(true, Ordering::SeqCst);
    let mut refused = 0;
    let mut created = 0;
    for task in loads {
        for (status, code) in task.await.expect("load task") {
            match (status, code.as_str()) {
                (201, _) => created += 1,
                (503, "store_unavailable") => refused += 1,
                other => panic!("under load during the outage: {other:?}"),
            }
        }
    }
    assert!(refused > 0, "the load ran into the outage");
    assert!(created > 0, "the load got through before and after it");
    println!("outage: under load, {created} creates acknowledged and {refused} refused with 503");
}
