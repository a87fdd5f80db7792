//! Abuse: oversized bodies (with and without a length), deeply nested JSON, invalid UTF-8 in
//! bodies, paths, queries and headers, thousands of questions, options, tags, responders and
//! answers, and a flood of event streams. Every client gets the JSON error shape with a stable
//! code and a short message naming the problem; nothing reaches a handler's panic or a `500`.
//! (What this costs the server in memory is measured on a real process, in the `clarify`
//! crate's `flood` tests.)

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestServer, code};

/// The default body limit (256 KiB), and a body past it. Only a little past: a client still
/// writing a body when the server answers early and closes may see only the reset, and this
/// much fits in the socket's buffers.
const LIMIT: usize = 256 * 1024;
const OVER: usize = LIMIT + 64 * 1024;
/// Past what a create takes (its display blocks may carry images).
const OVER_CREATE: usize = clarify_server::api::CREATE_BODY_LIMIT + 64 * 1024;

/// One abusive call and the error it must get.
struct Case {
    what: &'static str,
    method: Method,
    /// `{id}` and `{link}` stand for a pending request's id and its answer link path.
    path: String,
    headers: Vec<(&'static str, Vec<u8>)>,
    body: Option<Vec<u8>>,
    status: u16,
    code: &'static str,
    /// A fragment the message must contain, so it names the problem.
    names: &'static str,
}

fn case(
    what: &'static str,
    method: Method,
    path: impl Into<String>,
    body: Option<Vec<u8>>,
    expect: (u16, &'static str, &'static str),
) -> Case {
    Case {
        what,
        method,
        path: path.into(),
        headers: Vec::new(),
        body,
        status: expect.0,
        code: expect.1,
        names: expect.2,
    }
}

fn with_header(mut c: Case, name: &'static str, value: &[u8]) -> Case {
    c.headers.push((name, value.to_vec()));
    c
}

fn json_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("serializable")
}

/// A JSON object whose one string field makes it `size` bytes or more.
fn padded(field: &str, size: usize) -> Vec<u8> {
    json_bytes(&json!({"question": "Big?", field: "x".repeat(size)}))
}

/// Sends every case and checks status, error shape, code and message; reports all failures.
async fn check(s: &TestServer, cases: Vec<Case>) {
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Target?", "choices": ["yes", "no"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let link = record["answer_url"]
        .as_str()
        .and_then(|u| u.strip_prefix(&s.url))
        .expect("an answer link on this server")
        .to_owned();
    let mut failures = Vec::new();
    for c in cases {
        let path = c.path.replace("{id}", &id).replace("{link}", &link);
        let mut request = s
            .client
            .request(c.method.clone(), format!("{}{path}", s.url))
            .timeout(Duration::from_secs(30));
        if !c.headers.iter().any(|(name, _)| *name == "authorization") {
            request = request.bearer_auth(&s.admin);
        }
        for (name, value) in &c.headers {
            request = request.header(
                *name,
                reqwest::header::HeaderValue::from_bytes(value).expect("a header value"),
            );
        }
        if let Some(body) = c.body {
            request = request.body(body);
        }
        let response = request.send().await.expect("a response");
        let status = response.status().as_u16();
        let bytes = response.bytes().await.expect("a body");
        let body: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            Value::String(String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned())
        });
        let message = body["error"]["message"].as_str().unwrap_or("");
        let fits = status == c.status
            && code(&body) == c.code
            && message.contains(c.names)
            && message.len() <= 1_000;
        if !fits {
            failures.push(format!(
                "{}: expected {} {} naming {:?}, got {status} {}",
                c.what,
                c.status,
                c.code,
                c.names,
                if bytes.len() > 1_200 {
                    format!("a body of {} bytes", bytes.len())
                } else {
                    body.to_string()
                }
            ));
        }
    }
    let (_, after) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(after["status"], "pending", "no abusive call resolved it");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn oversized_nested_and_malformed_bodies_get_clear_errors() {
    let s = TestServer::start().await;
    let deep_list = "[".repeat(100_000).into_bytes();
    let deep_object = "{\"a\":".repeat(50_000).into_bytes();
    let mut bad_utf8 = b"{\"question\": \"caf".to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe, b'"', b'}']);
    let mut bad_utf8_answer = b"{\"text\": \"".to_vec();
    bad_utf8_answer.extend_from_slice(&[0xc3, 0x28, b'"', b'}']);
    let too_large = (413, "body_too_large", "too large");
    let not_json = (400, "malformed_json", "not valid JSON");
    use Method as M;
    check(
        &s,
        vec![
            case(
                "create, oversized",
                M::POST,
                "/v1/requests",
                Some(padded("context", OVER_CREATE)),
                too_large,
            ),
            case(
                "answer, oversized",
                M::POST,
                "/v1/requests/{id}/answer",
                Some(padded("text", OVER)),
                too_large,
            ),
            case(
                "key, oversized",
                M::POST,
                "/v1/keys",
                Some(padded("name", OVER)),
                too_large,
            ),
            case(
                "login, oversized",
                M::POST,
                "/v1/login",
                Some(padded("key", OVER)),
                too_large,
            ),
            case(
                "link answer, oversized",
                M::POST,
                "{link}",
                Some(padded("text", OVER)),
                too_large,
            ),
            case(
                "create, 100k [",
                M::POST,
                "/v1/requests",
                Some(deep_list.clone()),
                not_json,
            ),
            case(
                "create, 50k nested objects",
                M::POST,
                "/v1/requests",
                Some(deep_object.clone()),
                not_json,
            ),
            case(
                "answer, 100k [",
                M::POST,
                "/v1/requests/{id}/answer",
                Some(deep_list.clone()),
                not_json,
            ),
            case(
                "key, 100k [",
                M::POST,
                "/v1/keys",
                Some(deep_list.clone()),
                (422, "invalid_body", "does not fit"),
            ),
            case(
                "link answer, 100k [",
                M::POST,
                "{link}",
                Some(deep_list),
                not_json,
            ),
            case(
                "create, invalid UTF-8",
                M::POST,
                "/v1/requests",
                Some(bad_utf8),
                not_json,
            ),
            case(
                "answer, invalid UTF-8",
                M::POST,
                "/v1/requests/{id}/answer",
                Some(bad_utf8_answer.clone()),
                not_json,
            ),
            case(
                "link answer, invalid UTF-8",
                M::POST,
                "{link}",
                Some(bad_utf8_answer),
                not_json,
            ),
            case(
                "create, NUL bytes",
                M::POST,
                "/v1/requests",
                Some(vec![0; 1000]),
                not_json,
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn invalid_utf8_in_paths_queries_and_headers_gets_clear_errors() {
    let s = TestServer::start().await;
    use Method as M;
    check(
        &s,
        vec![
            case(
                "request id",
                M::GET,
                "/v1/requests/%FF%FE",
                None,
                (400, "invalid_path", "UTF-8"),
            ),
            case(
                "answer id",
                M::POST,
                "/v1/requests/%C3%28/answer",
                Some(b"{}".to_vec()),
                (400, "invalid_path", "UTF-8"),
            ),
            case(
                "wait id",
                M::GET,
                "/v1/requests/%FF/wait?timeout_seconds=1",
                None,
                (400, "invalid_path", "UTF-8"),
            ),
            case(
                "link token",
                M::GET,
                "/a/%FF%FE",
                None,
                (400, "invalid_path", "UTF-8"),
            ),
            case(
                "key name",
                M::POST,
                "/v1/keys/%FF/revoke",
                None,
                (400, "invalid_path", "UTF-8"),
            ),
            case(
                "list query",
                M::GET,
                "/v1/requests?status=%FF",
                None,
                (400, "invalid_status", "unknown status"),
            ),
            case(
                "wait query",
                M::GET,
                "/v1/requests/{id}/wait?timeout_seconds=%FF",
                None,
                (400, "invalid_timeout", "timeout_seconds"),
            ),
            with_header(
                case(
                    "idempotency key",
                    M::POST,
                    "/v1/requests",
                    Some(br#"{"question": "Go?"}"#.to_vec()),
                    (400, "invalid_header", "Idempotency-Key"),
                ),
                "idempotency-key",
                &[0xff, 0xfe],
            ),
            with_header(
                case(
                    "last event id",
                    M::GET,
                    "/v1/events",
                    None,
                    (400, "invalid_last_event_id", "Last-Event-ID"),
                ),
                "last-event-id",
                &[0xff],
            ),
            with_header(
                case(
                    "authorization",
                    M::GET,
                    "/v1/requests",
                    None,
                    (401, "unauthorized", ""),
                ),
                "authorization",
                b"Bearer \xff\xfe",
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn thousands_of_questions_options_tags_and_answers_get_the_limit_named() {
    let s = TestServer::start().await;
    let many = |n: usize, f: &dyn Fn(usize) -> Value| (0..n).map(f).collect::<Vec<_>>();
    let questions = json!({"questions": many(5_000, &|i| json!({"text": format!("Q{i}?")}))});
    let options =
        json!({"question": "Which?", "choices": many(5_000, &|i| json!(format!("option {i}")))});
    let tags = json!({"question": "Tagged?", "tags": many(5_000, &|i| json!(format!("t{i}")))});
    let responders =
        json!({"question": "Who?", "responders": many(5_000, &|i| json!(format!("r{i}")))});
    let answers = json!({"answers": serde_json::Map::from_iter(
        (0..5_000).map(|i| (format!("q{i}"), json!({"option": "yes"})))
    )});
    let selection = json!({"options": many(20_000, &|i| json!(format!("o{i}")))});
    let long_kind = json!({"questions": [{"text": "Kind?", "kind": "k".repeat(100_000)}]});
    let long_option = json!({"option": "y".repeat(100_000)});
    use Method as M;
    check(
        &s,
        vec![
            case(
                "5,000 questions",
                M::POST,
                "/v1/requests",
                Some(json_bytes(&questions)),
                (422, "too_many_questions", "at most 5 questions"),
            ),
            case(
                "5,000 options",
                M::POST,
                "/v1/requests",
                Some(json_bytes(&options)),
                (422, "too_many_options", "at most 4 options"),
            ),
            case(
                "5,000 tags",
                M::POST,
                "/v1/requests",
                Some(json_bytes(&tags)),
                (422, "too_many_tags", "at most 10 tags"),
            ),
            case(
                "5,000 responders",
                M::POST,
                "/v1/requests",
                Some(json_bytes(&responders)),
                (422, "too_many_responders", "at most 32 responders"),
            ),
            case(
                "100,000-character text",
                M::POST,
                "/v1/requests",
                Some(padded("question", 100_000)),
                (422, "too_long", "at most 4000 characters"),
            ),
            case(
                "100,000-character kind",
                M::POST,
                "/v1/requests",
                Some(json_bytes(&long_kind)),
                (
                    422,
                    "unknown_kind",
                    "use open, single, multi, approval or form",
                ),
            ),
            case(
                "5,000 answers",
                M::POST,
                "/v1/requests/{id}/answer",
                Some(json_bytes(&answers)),
                (422, "unknown_question", "has no question"),
            ),
            case(
                "20,000 options chosen",
                M::POST,
                "/v1/requests/{id}/answer",
                Some(json_bytes(&selection)),
                (422, "not_single", "exactly one option"),
            ),
            case(
                "50,000-character status",
                M::GET,
                format!("/v1/requests?status={}", "s".repeat(50_000)),
                None,
                (400, "invalid_status", "unknown status"),
            ),
            case(
                "100,000-character option",
                M::POST,
                "/v1/requests/{id}/answer",
                Some(json_bytes(&long_option)),
                (422, "unknown_option", "its options are"),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn a_body_without_a_length_is_cut_off_at_the_limit() {
    let s = TestServer::start().await;
    for (path, limit) in [
        ("/v1/requests", clarify_server::api::CREATE_BODY_LIMIT),
        ("/v1/login", LIMIT),
    ] {
        // Past the limit, sent with chunked encoding and no Content-Length, then nothing and no
        // end: the server must answer without waiting for one. (The client stops writing just
        // past the limit: a client still writing when the server closes may see only the reset.)
        let chunks =
            (0..limit / (64 * 1024) + 1).map(|_| Ok::<_, std::io::Error>(vec![b' '; 64 * 1024]));
        let endless = futures_util::stream::iter(chunks).chain(futures_util::stream::pending());
        let response = s
            .client
            .post(format!("{}{path}", s.url))
            .bearer_auth(&s.admin)
            .body(reqwest::Body::wrap_stream(endless))
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .expect("a response before the whole body is sent");
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE, "{path}");
        let body: Value = response.json().await.expect("a JSON error");
        assert_eq!(code(&body), "body_too_large", "{path}: {body}");
    }
}

#[tokio::test]
async fn a_flood_of_event_streams_is_refused_while_open_streams_keep_working() {
    const MAX: usize = 16;
    let s = TestServer::build("memory:", clarify_store::StoreOptions::default(), |c| {
        c.max_waiters = MAX;
    })
    .await;
    let open = |s: &TestServer| {
        s.client
            .get(format!("{}/v1/events", s.url))
            .bearer_auth(&s.admin)
            .timeout(Duration::from_secs(30))
            .send()
    };
    let mut streams = Vec::new();
    for _ in 0..MAX {
        let response = open(&s).await.expect("a stream opens");
        assert_eq!(response.status(), StatusCode::OK);
        streams.push(response);
    }
    let flood = futures_util::future::join_all((0..500).map(|_| open(&s))).await;
    for response in flood {
        let response = response.expect("a refusal, not a dropped connection");
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body: Value = response.json().await.expect("a JSON error");
        assert_eq!(code(&body), "too_many_waiters", "{body}");
    }

    let record = s
        .ask(&s.admin, json!({"question": "Still streaming?"}))
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    for stream in &mut streams {
        let mut seen = String::new();
        while !seen.contains(&id) {
            let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
                .await
                .expect("an open stream still gets events")
                .expect("the stream is readable")
                .expect("the stream is still open");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(seen.contains("event: request.created"), "{seen}");
    }

    // A client that goes away gives its place back.
    streams.truncate(MAX - 4);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut reopened = 0;
    while reopened < 4 {
        let response = open(&s).await.expect("a response");
        if response.status() == StatusCode::OK {
            streams.push(response);
            reopened += 1;
        } else {
            assert!(
                tokio::time::Instant::now() < deadline,
                "closed streams did not free their places"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert_eq!(
        open(&s).await.expect("a response").status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "the limit holds again"
    );
}
