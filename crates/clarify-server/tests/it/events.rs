//! `/v1/events`: the Server-Sent Events stream, read raw off the socket.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use clarify_store::{ManualClock, Role, StoreOptions};
use futures_util::{Stream, StreamExt};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

/// How long a test waits for an event that should come.
const PATIENCE: Duration = Duration::from_secs(3);

/// One event as a client sees it.
#[derive(Debug, Clone)]
struct SseEvent {
    id: Option<String>,
    event: Option<String>,
    data: String,
}

impl SseEvent {
    fn seq(&self) -> u64 {
        self.id
            .as_deref()
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("event without a numeric id: {self:?}"))
    }

    fn name(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }

    fn record(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {self:?}"))
    }
}

/// The body of a response as it arrives (`axum::body::Bytes` is reqwest's chunk type).
type Chunks = Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

/// A minimal SSE client: `id`, `event` and `data` fields; comments and retries ignored.
struct Sse {
    chunks: Chunks,
    buffer: String,
}

impl Sse {
    /// Opens the stream; panics unless it is `200 text/event-stream`.
    async fn open(s: &TestServer, token: &str, last_event_id: Option<u64>) -> Self {
        let response = request(s, Some(token), last_event_id.map(|n| n.to_string())).await;
        assert_eq!(response.status(), StatusCode::OK);
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        Self {
            chunks: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The next event, or `None` when the server ended the stream.
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.parse_one() {
                return Some(event);
            }
            match tokio::time::timeout(PATIENCE, self.chunks.next()).await {
                Err(_) => panic!("no event within {PATIENCE:?}"),
                Ok(None) => return None,
                Ok(Some(Err(e))) => panic!("the stream failed: {e}"),
                Ok(Some(Ok(chunk))) => self
                    .buffer
                    .push_str(std::str::from_utf8(&chunk).expect("SSE is UTF-8")),
            }
        }
    }

    /// The next event, which must come.
    async fn expect(&mut self) -> SseEvent {
        self.next().await.expect("the stream ended early")
    }

    /// Takes the first complete event out of the buffer, skipping comment-only blocks.
    fn parse_one(&mut self) -> Option<SseEvent> {
        loop {
            let normalized = self.buffer.replace("\r\n", "\n");
            let end = normalized.find("\n\n")?;
            let block = normalized[..end].to_owned();
            self.buffer = normalized[end + 2..].to_owned();
            let mut event = SseEvent {
                id: None,
                event: None,
                data: String::new(),
            };
            let mut has_data = false;
            for line in block.lines() {
                if line.starts_with(':') {
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => event.id = Some(value.to_owned()),
                    "event" => event.event = Some(value.to_owned()),
                    "data" => {
                        if has_data {
                            event.data.push('\n');
                        }
                        event.data.push_str(value);
                        has_data = true;
                    }
                    _ => {}
                }
            }
            if has_data {
                return Some(event);
            }
        }
    }
}

/// `GET /v1/events` with optional credentials and `Last-Event-ID`.
async fn request(s: &TestServer, token: Option<&str>, last: Option<String>) -> reqwest::Response {
    let mut req = s.client.get(format!("{}/v1/events", s.url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(last) = last {
        req = req.header("last-event-id", last);
    }
    req.send().await.expect("request sent")
}

fn id_of(record: &Value) -> String {
    record["id"].as_str().expect("record id").to_owned()
}

fn question(text: &str) -> Value {
    json!({"question": text, "choices": ["yes", "no"]})
}

/// Asserts the event's name, the id and status of its record, and returns its sequence.
fn check(event: &SseEvent, name: &str, id: &str, status: &str) -> u64 {
    assert_eq!(event.name(), name, "{event:?}");
    let record = event.record();
    assert_eq!(record["id"], id, "{event:?}");
    assert_eq!(record["status"], status, "{event:?}");
    event.seq()
}

#[tokio::test]
async fn each_creation_and_resolution_is_an_event_with_the_record() {
    let s = TestServer::start().await;
    let mut sse = Sse::open(&s, &s.admin, None).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(id_of(&s.ask(&s.admin, question(&format!("Q{i}"))).await));
    }
    let mut seqs = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let event = sse.expect().await;
        seqs.push(check(&event, "request.created", id, "pending"));
        assert_eq!(event.record()["questions"][0]["text"], format!("Q{i}"));
    }

    let (status, _) = s
        .post(
            &format!("/v1/requests/{}/answer", ids[0]),
            &s.admin,
            json!({"option": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let answered = sse.expect().await;
    seqs.push(check(&answered, "request.answered", &ids[0], "answered"));
    assert_eq!(
        answered.record()["outcome"]["questions"][0]["answer"],
        "yes",
        "the data carries the outcome"
    );

    s.post(
        &format!("/v1/requests/{}/answer", ids[1]),
        &s.admin,
        json!({"skip": true}),
    )
    .await;
    seqs.push(check(
        &sse.expect().await,
        "request.skipped",
        &ids[1],
        "skipped",
    ));

    s.post(
        &format!("/v1/requests/{}/cancel", ids[2]),
        &s.admin,
        json!({}),
    )
    .await;
    seqs.push(check(
        &sse.expect().await,
        "request.cancelled",
        &ids[2],
        "cancelled",
    ));

    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "ids strictly increase: {seqs:?}"
    );
}

#[tokio::test]
async fn an_expiry_is_an_event() {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let s = TestServer::with_clock(clock.clone()).await;
    let mut sse = Sse::open(&s, &s.admin, None).await;
    let mut body = question("Still there?");
    body["timeout_seconds"] = json!(60);
    let id = id_of(&s.ask(&s.admin, body).await);
    let created = check(&sse.expect().await, "request.created", &id, "pending");

    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.expire_due().await.expect("expired"), 1);
    // Nothing on this server's HTTP side wrote: the tailer's poll must find it.
    let expired = sse.expect().await;
    assert!(check(&expired, "request.expired", &id, "expired") > created);
    assert_eq!(expired.record()["outcome"]["status"], "expired");
}

#[tokio::test]
async fn last_event_id_resumes_with_no_gap_and_no_repeat() {
    let s = TestServer::start().await;
    let mut sse = Sse::open(&s, &s.admin, None).await;
    let first = id_of(&s.ask(&s.admin, question("first")).await);
    let seen = check(&sse.expect().await, "request.created", &first, "pending");
    drop(sse);

    // Written while no stream is open.
    let second = id_of(&s.ask(&s.admin, question("second")).await);
    s.post(
        &format!("/v1/requests/{first}/answer"),
        &s.admin,
        json!({"option": "no"}),
    )
    .await;
    s.post(
        &format!("/v1/requests/{second}/cancel"),
        &s.admin,
        json!({}),
    )
    .await;

    let mut resumed = Sse::open(&s, &s.admin, Some(seen)).await;
    let replay = [
        resumed.expect().await,
        resumed.expect().await,
        resumed.expect().await,
    ];
    let seqs: Vec<u64> = replay.iter().map(SseEvent::seq).collect();
    assert_eq!(seqs, [seen + 1, seen + 2, seen + 3], "{replay:?}");
    assert_eq!(replay[0].name(), "request.created");
    assert_eq!(replay[0].record()["id"], second);
    check(&replay[1], "request.answered", &first, "answered");
    check(&replay[2], "request.cancelled", &second, "cancelled");

    // Live events follow the replay directly.
    let third = id_of(&s.ask(&s.admin, question("third")).await);
    let live = resumed.expect().await;
    assert_eq!(check(&live, "request.created", &third, "pending"), seen + 4);

    // Resuming from the newest id replays nothing: the next event is a new one.
    let mut caught_up = Sse::open(&s, &s.admin, Some(seen + 4)).await;
    s.post(&format!("/v1/requests/{third}/cancel"), &s.admin, json!({}))
        .await;
    let next = caught_up.expect().await;
    assert_eq!(
        check(&next, "request.cancelled", &third, "cancelled"),
        seen + 5
    );

    // An id beyond the log's end (the log started again): the whole log is new to the client.
    // (Its first request event comes after the admin key's `key.created`, which only the audit
    // chain shows.)
    let mut restarted = Sse::open(&s, &s.admin, Some(seen + 1_000)).await;
    assert_eq!(
        restarted.expect().await.seq(),
        seen,
        "replayed from the start"
    );
}

#[tokio::test]
async fn a_tenant_sees_only_its_own_events() {
    let s = TestServer::start().await;
    let acme = s.key(Role::Admin, "acme-admin", "acme").await;
    let mut mine = Sse::open(&s, &s.admin, None).await;
    let mut theirs = Sse::open(&s, &acme, None).await;

    let ours = id_of(&s.ask(&s.admin, question("ours")).await);
    let acmes = id_of(&s.ask(&acme, question("acme's")).await);
    // Had `ours` leaked, it would come first on acme's stream.
    check(&theirs.expect().await, "request.created", &acmes, "pending");
    check(&mine.expect().await, "request.created", &ours, "pending");
    s.post(&format!("/v1/requests/{acmes}/cancel"), &acme, json!({}))
        .await;
    let later = id_of(&s.ask(&s.admin, question("later")).await);
    // Had acme's cancellation leaked, it would come before `later`.
    check(&mine.expect().await, "request.created", &later, "pending");
    check(
        &theirs.expect().await,
        "request.cancelled",
        &acmes,
        "cancelled",
    );

    // Replaying the whole log shows acme only its own events.
    let mut replay = Sse::open(&s, &acme, Some(0)).await;
    check(
        &replay.expect().await,
        "request.created",
        &acmes,
        "cancelled",
    );
    check(
        &replay.expect().await,
        "request.cancelled",
        &acmes,
        "cancelled",
    );
    let newest = id_of(&s.ask(&acme, question("newest")).await);
    check(
        &replay.expect().await,
        "request.created",
        &newest,
        "pending",
    );
}

#[tokio::test]
async fn a_bad_last_event_id_or_no_credentials_is_refused() {
    let s = TestServer::start().await;
    for bad in ["abc", "-1", "1.5"] {
        let response = request(&s, Some(&s.admin), Some(bad.to_owned())).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        let err: Value = response.json().await.expect("a JSON error");
        assert_eq!(code(&err), "invalid_last_event_id", "{bad:?}");
    }
    let response = request(&s, None, None).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let err: Value = response.json().await.expect("a JSON error");
    assert_eq!(code(&err), "unauthorized");
}

#[tokio::test]
async fn open_streams_are_capped_and_a_closed_stream_frees_its_slot() {
    let s = TestServer::build("memory:", StoreOptions::default(), |c| c.max_waiters = 2).await;
    let first = Sse::open(&s, &s.admin, None).await;
    let mut second = Sse::open(&s, &s.admin, None).await;
    let refused = request(&s, Some(&s.admin), None).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let err: Value = refused.json().await.expect("a JSON error");
    assert_eq!(code(&err), "too_many_waiters");

    drop(first);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut third = loop {
        let response = request(&s, Some(&s.admin), None).await;
        if response.status() == StatusCode::OK {
            break Sse {
                chunks: Box::pin(response.bytes_stream()),
                buffer: String::new(),
            };
        }
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the closed stream's slot was not freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    // Both open streams still work.
    let id = id_of(&s.ask(&s.admin, question("still live?")).await);
    check(&second.expect().await, "request.created", &id, "pending");
    check(&third.expect().await, "request.created", &id, "pending");
}

#[tokio::test]
async fn a_graceful_stop_ends_open_streams() {
    let s = TestServer::start().await;
    let mut sse = Sse::open(&s, &s.admin, None).await;
    let id = id_of(&s.ask(&s.admin, question("before the stop")).await);
    check(&sse.expect().await, "request.created", &id, "pending");

    let reader = tokio::spawn(async move { sse.next().await.map(|e| e.data) });
    tokio::time::timeout(PATIENCE, s.stop())
        .await
        .expect("the server stops while a stream is open");
    let rest = tokio::time::timeout(PATIENCE, reader)
        .await
        .expect("the stream ends")
        .expect("reader");
    assert_eq!(rest, None, "the stream ended without another event");
}

#[tokio::test]
async fn revoking_a_key_ends_its_open_streams() {
    let s = TestServer::start().await;
    let bot = s.key(Role::Agent, "bot", "default").await;
    let mut revoked = Sse::open(&s, &bot, None).await;
    let mut admin = Sse::open(&s, &s.admin, None).await;
    let before = id_of(&s.ask(&s.admin, question("before")).await);
    check(
        &revoked.expect().await,
        "request.created",
        &before,
        "pending",
    );
    check(&admin.expect().await, "request.created", &before, "pending");

    let (status, _) = s.post("/v1/keys/bot/revoke", &s.admin, json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let after = id_of(&s.ask(&s.admin, question("after")).await);
    let leaked = revoked.next().await;
    assert!(
        leaked.is_none(),
        "a revoked key's stream ends instead of receiving {leaked:?}"
    );
    check(&admin.expect().await, "request.created", &after, "pending");
    assert_eq!(
        request(&s, Some(&bot), None).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a_two_of_two_approval_counts_votes_and_says_so_everywhere() {
    let s = TestServer::start().await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let mut sse = Sse::open(&s, &s.admin, None).await;
    let record = s
        .ask(
            &agent,
            json!({"questions": [{"text": "Rotate the root keys?", "kind": "approval",
                                  "action": {"name": "rotate_keys", "arguments": {}}}],
                   "approvals_required": 2}),
        )
        .await;
    let id = id_of(&record);
    assert_eq!(record["approvals_required"], 2);
    assert_eq!(record["votes"], json!([]));
    check(&sse.expect().await, "request.created", &id, "pending");
    let answer = format!("/v1/requests/{id}/answer");

    // A link holder is nobody in particular: the link cannot vote.
    let link = record["answer_url"].as_str().expect("answer link");
    let refused = clarify_client::http::client()
        .expect("an HTTP client")
        .post(link)
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .expect("link answer");
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let refused: Value = refused.json().await.expect("error body");
    assert_eq!(code(&refused), "quorum_needs_identity");

    let (status, counted) = s
        .post(&answer, &alice, json!({"decision": "approve"}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{counted}");
    assert_eq!(counted["status"], "pending");
    assert_eq!(counted["votes"][0]["by"], "alice");
    assert_eq!(counted["votes"][0]["decision"], "approve");
    assert_eq!(counted["votes"][0]["scope"], "once");
    let voted = sse.expect().await;
    check(&voted, "request.voted", &id, "pending");
    assert_eq!(voted.record()["votes"][0]["by"], "alice");

    let (status, again) = s.post(&answer, &alice, json!({"decision": "deny"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(code(&again), "already_voted");

    let (status, outcome) = s.post(&answer, &bob, json!({"decision": "approve"})).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["status"], "answered");
    assert_eq!(outcome["questions"][0]["decision"], "approve");
    let voters: Vec<&str> = outcome["votes"]
        .as_array()
        .expect("votes in the outcome")
        .iter()
        .filter_map(|v| v["by"].as_str())
        .collect();
    assert_eq!(voters, ["alice", "bob"]);
    check(&sse.expect().await, "request.voted", &id, "answered");
    check(&sse.expect().await, "request.answered", &id, "answered");
}

/// The stall rule: a client that stops reading while events keep coming has its stream closed
/// (instead of the server holding its connection, and events for it, for ever); a client that
/// reads is not touched, and the stopped one, reconnecting with `Last-Event-ID`, loses nothing.
#[tokio::test]
async fn a_stream_whose_client_stopped_reading_is_closed_and_resumes_without_loss() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let s = TestServer::build("memory:", StoreOptions::default(), |config| {
        config.stream_stall = Duration::from_secs(1);
    })
    .await;
    let mut reader = Sse::open(&s, &s.admin, None).await;
    // The stalled client: a small receive buffer, the request sent, the head read, then nothing.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("buffer size");
    let address = s
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    let mut stalled = socket.connect(address).await.expect("connected");
    stalled
        .write_all(
            format!(
                "GET /v1/events HTTP/1.1\r\nhost: clarify\r\nauthorization: Bearer {}\r\n\r\n",
                s.admin
            )
            .as_bytes(),
        )
        .await
        .expect("request sent");
    let mut head = vec![0u8; 256];
    let n = stalled.read(&mut head).await.expect("head read");
    assert!(
        String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head[..n])
    );
    assert_eq!(
        s.metric("clarify_waiters").await,
        2.0,
        "both streams are open"
    );
    // Events of 16 KiB each until the stalled client's buffers are full and it has taken
    // nothing for the stall time; the reader keeps up all along.
    let text = "A line of the change to review, long enough to fill buffers.\n".repeat(260);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut made = Vec::new();
    let mut read = 0;
    while s.metric("clarify_waiters").await > 1.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the stalled stream was not closed after {} events",
            made.len()
        );
        for _ in 0..20 {
            let record = s
                .ask(
                    &s.admin,
                    json!({"question": "Apply?", "display": [{"type": "markdown", "text": text}]}),
                )
                .await;
            made.push(id_of(&record));
        }
        while read < made.len() {
            let event = reader.expect().await;
            assert_eq!(event.record()["id"], made[read].as_str());
            read += 1;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The reader was not cut off: it still receives.
    let last = id_of(&s.ask(&s.admin, question("after the stall")).await);
    check(&reader.expect().await, "request.created", &last, "pending");
    // The stalled client finds its connection closed after what was sent, and resumes from
    // the last event it got with nothing missing.
    let mut received = head[..n].to_vec();
    tokio::time::timeout(Duration::from_secs(10), stalled.read_to_end(&mut received))
        .await
        .expect("the closed connection ends")
        .ok();
    // Complete events end in a blank line: the text after the last one is cut short (and
    // hyper's chunk sizes sit between events, on lines of their own).
    let got = String::from_utf8_lossy(&received);
    let complete = got.rsplit_once("\n\n").map_or("", |(whole, _)| whole);
    let last_id = complete
        .split("\n\n")
        .filter(|block| block.contains("\ndata: "))
        .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("id: ")))
        .filter_map(|id| id.trim().parse::<u64>().ok())
        .last();
    let mut resumed = Sse::open(&s, &s.admin, last_id).await;
    let first = resumed.expect().await;
    let ids: Vec<&str> = made
        .iter()
        .map(String::as_str)
        .chain([last.as_str()])
        .collect();
    let at = ids
        .iter()
        .position(|id| first.record()["id"] == *id)
        .expect("a request of this test");
    assert!(at > 0, "the stalled client had received some events");
    let mut expected = ids[at..].iter();
    assert_eq!(
        expected.next(),
        Some(&first.record()["id"].as_str().unwrap_or(""))
    );
    for id in expected {
        assert_eq!(
            resumed.expect().await.record()["id"],
            *id,
            "no gap after resuming"
        );
    }
}
