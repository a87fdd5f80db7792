//! Floods against a real `clarify serve` process, with its memory (RSS, from `/proc`) measured
//! before and after: event streams far beyond the stream limit, a thousand concurrent
//! long-polls, and oversized bodies sent without a length. Every client gets an answer (its
//! event, its outcome, or a clear JSON error), and the server's memory stays bounded: what it
//! holds grows with the connections it accepted, not with the ones it refused, and a second
//! flood like the first costs nothing more.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::support::{Api, Server, create_key, sqlite_url, temp_dir};

/// The waiter limit the server is started with (`--max-waiters`): streams and long-polls
/// together.
const MAX_STREAMS: usize = 1024;
/// Long-polls held at once, within that limit.
const POLLS: usize = 1_000;
const MIB: u64 = 1024 * 1024;
const PATIENCE: Duration = Duration::from_secs(30);

/// The resident memory of process `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line");
    kib * 1024
}

/// How many file descriptors process `pid` has open (its sockets among them).
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

/// Waits until the server holds at least `n` open descriptors.
async fn until_fds(pid: u32, n: usize) {
    let deadline = Instant::now() + PATIENCE;
    while open_fds(pid) < n {
        assert!(
            Instant::now() < deadline,
            "the server holds {} descriptors, expected {n}",
            open_fds(pid)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn open_stream(api: &Api) -> reqwest::Response {
    api.client
        .get(format!("{}/v1/events", api.url))
        .bearer_auth(&api.key)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .expect("a response to an event stream request")
}

/// `attempts` stream requests, 100 at a time, each of which must be refused clearly.
async fn refused_streams(api: &Api, attempts: usize) {
    for _ in 0..attempts / 100 {
        for response in join_all((0..100).map(|_| open_stream(api))).await {
            assert_eq!(response.status().as_u16(), 503);
            let body: Value = response.json().await.expect("a JSON error");
            assert_eq!(body["error"]["code"], "too_many_waiters", "{body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_of_streams_long_polls_and_bodies_keep_memory_bounded() {
    let dir = temp_dir("flood");
    let db = sqlite_url(&dir);
    let key = create_key(&db, "admin", "root", "default");
    let server = Server::start(&db, &["--max-waiters", &MAX_STREAMS.to_string()]).await;
    let pid = server.pid();
    // No idle connections are kept, so every descriptor the server holds is a live client.
    let api = Api {
        client: clarify_client::http::builder()
            .pool_max_idle_per_host(0)
            .build()
            .expect("client"),
        ..Api::new(&server.url, &key)
    };
    for i in 0..50 {
        let (status, _) = api
            .post("/v1/requests", json!({"question": format!("Warm-up {i}?")}))
            .await;
        assert_eq!(status, 201);
    }
    let baseline = rss(pid);
    let idle_fds = open_fds(pid);

    // Event streams: the limit's worth held open, then thousands more refused, twice.
    let mut streams = Vec::with_capacity(MAX_STREAMS);
    for _ in 0..MAX_STREAMS / 64 {
        for response in join_all((0..64).map(|_| open_stream(&api))).await {
            assert_eq!(response.status().as_u16(), 200);
            streams.push(response);
        }
    }
    let held = rss(pid);
    refused_streams(&api, 3_000).await;
    let refused_once = rss(pid);
    refused_streams(&api, 3_000).await;
    let refused_twice = rss(pid);
    println!(
        "flood: {MAX_STREAMS} open streams took {}; 3,000 refused ones {} more, 3,000 again {} more",
        mib(held.saturating_sub(baseline)),
        mib(refused_once.saturating_sub(held)),
        mib(refused_twice.saturating_sub(refused_once)),
    );
    // Connections are served HTTP/1 only (98 KiB a stream under axum::serve's HTTP/1 + HTTP/2
    // connection): the bound keeps it small.
    assert!(
        held.saturating_sub(baseline) < 32 * MIB,
        "an open stream costs under 32 KiB"
    );
    assert!(
        refused_once.saturating_sub(held) < 16 * MIB,
        "refused streams hold nothing"
    );
    assert!(
        refused_twice.saturating_sub(refused_once) < 8 * MIB,
        "a second flood of refusals costs nothing more"
    );

    let (_, record) = api
        .post(
            "/v1/requests",
            json!({"question": "Heard by every stream?"}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let heard = join_all(streams.iter_mut().map(|stream| {
        let id = id.clone();
        async move {
            let mut seen = String::new();
            while !seen.contains(&id) {
                match tokio::time::timeout(PATIENCE, stream.chunk()).await {
                    Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                    _ => return false,
                }
            }
            true
        }
    }))
    .await;
    assert!(
        heard.iter().all(|h| *h),
        "{} of {MAX_STREAMS} open streams missed the event",
        heard.iter().filter(|h| !**h).count()
    );
    drop(streams);
    let deadline = Instant::now() + PATIENCE;
    while open_fds(pid) > idle_fds + 16 {
        assert!(
            Instant::now() < deadline,
            "the server still holds {} descriptors after its streams closed",
            open_fds(pid)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        open_stream(&api).await.status().as_u16(),
        200,
        "closed streams give their places back"
    );

    // Long-polls: 1,000 at once on 100 requests, each answered.
    let before_polls = rss(pid);
    let mut ids = Vec::new();
    for i in 0..100 {
        let (status, r) = api
            .post("/v1/requests", json!({"question": format!("Polled {i}?")}))
            .await;
        assert_eq!(status, 201);
        ids.push(r["id"].as_str().expect("id").to_owned());
    }
    let polls: Vec<_> = ids
        .iter()
        .cycle()
        .take(POLLS)
        .map(|id| {
            let request = api
                .client
                .get(format!(
                    "{}/v1/requests/{id}/wait?timeout_seconds=60",
                    api.url
                ))
                .bearer_auth(&api.key)
                .timeout(Duration::from_secs(90));
            tokio::spawn(async move {
                let response = request.send().await.expect("a long-poll response");
                let body: Value = response.json().await.expect("a record");
                body["status"].as_str().unwrap_or_default().to_owned()
            })
        })
        .collect();
    // A few descriptors of the idle count (database files, the reaper's reads) come and go.
    until_fds(pid, idle_fds + POLLS - 10).await;
    let polling = rss(pid);
    for id in &ids {
        let (status, _) = api
            .post(
                &format!("/v1/requests/{id}/answer"),
                json!({"text": "done"}),
            )
            .await;
        assert_eq!(status, 200);
    }
    for poll in polls {
        let status = tokio::time::timeout(PATIENCE, poll)
            .await
            .expect("every long-poll returns once answered")
            .expect("poll task");
        assert_eq!(status, "answered");
    }
    println!(
        "flood: {POLLS} concurrent long-polls took {}",
        mib(polling.saturating_sub(before_polls))
    );
    assert!(
        polling.saturating_sub(before_polls) < 64 * MIB,
        "a long-poll costs under 64 KiB"
    );

    // Bodies without a length that never end: just past the create route's 4 MiB limit (room
    // for display blocks' images), then nothing, never finished; 50 of them, 10 at a time. (The
    // client stops writing just past the limit: a client still writing when the server closes
    // may see only the reset.) At most the ten in flight are held at once, and none after.
    const CHUNK: usize = 64 * 1024;
    let chunks_past_limit = clarify_server::api::CREATE_BODY_LIMIT / CHUNK + 1;
    let before_bodies = rss(pid);
    for _ in 0..5 {
        let sends = (0..10).map(|_| {
            let chunks = (0..chunks_past_limit).map(|_| Ok::<_, std::io::Error>(vec![b' '; CHUNK]));
            let endless = futures_util::stream::iter(chunks).chain(futures_util::stream::pending());
            api.client
                .post(format!("{}/v1/requests", api.url))
                .bearer_auth(&api.key)
                .body(reqwest::Body::wrap_stream(endless))
                .timeout(PATIENCE)
                .send()
        });
        for response in join_all(sends).await {
            let response = response.expect("a response before the whole body is sent");
            assert_eq!(response.status().as_u16(), 413);
            let body: Value = response.json().await.expect("a JSON error");
            assert_eq!(body["error"]["code"], "body_too_large");
        }
    }
    let after_bodies = rss(pid);
    println!(
        "flood: 50 endless bodies without a length took {}; the server's RSS is {}",
        mib(after_bodies.saturating_sub(before_bodies)),
        mib(after_bodies)
    );
    // Ten bodies are read at once, each up to the 4 MiB limit (40 MiB in flight), and the
    // allocator may keep what they freed in its per-thread arenas; bodies buffered past the
    // limit or kept would be 200 MiB and more.
    assert!(
        after_bodies.saturating_sub(before_bodies) < 96 * MIB,
        "bodies are not buffered past the limit, nor kept: 50 bodies of 4 MiB would be 200 MiB"
    );
}
