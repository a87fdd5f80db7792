//! Records and outcomes are read into the wire types, keeping what this version does not know.

use clarify_client::{Answered, Client, ClientError};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server answering every call with `status` and `body`; its URL.
async fn replying(status: u16, body: Value) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bound");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = body.to_string();
            tokio::spawn(async move {
                read_request(&mut stream).await;
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    url
}

/// Reads one request, head and body, so the reply does not cut the client off mid-send.
async fn read_request(stream: &mut tokio::net::TcpStream) {
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Ok(n) = stream.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        seen.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&seen);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())
                        .flatten()
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return;
            }
        }
    }
}

/// An answered request as a server writes it, with fields no version of this client knows.
fn from_a_newer_server() -> Value {
    json!({
        "id": "req_01",
        "status": "answered",
        "questions": [{
            "id": "q1", "header": null, "text": "Which database?", "kind": "single",
            "options": [{"id": "pg", "label": "Postgres"}, {"id": "lite", "label": "SQLite"}],
            "allow_other": false, "recommended": "pg", "weight": 2
        }],
        "context": null, "session": null, "agent": "planner", "tags": [],
        "tool_call_id": null, "allow_skip": true, "responders": null, "callback_url": null,
        "timeout_seconds": 600, "approvals_required": 1, "votes": [],
        "created_at": "2026-11-02T10:00:00.000Z", "expires_at": "2026-11-02T10:10:00.000Z",
        "resolved_at": "2026-11-02T10:01:00.000Z", "answered_by": "alice",
        "outcome": {
            "request_id": "req_01", "status": "answered",
            "questions": [{"id": "q1", "question": "Which database?", "kind": "single",
                           "choices_offered": ["Postgres", "SQLite"], "answer": "Postgres",
                           "mode": "option"}],
            "answered_by": "alice", "answered_via": "inbox",
            "resolved_at": "2026-11-02T10:01:00.000Z",
            "receipt": "eyJhbGciOiJFZERTQSJ9.eyJqdGkiOiJyMSJ9.c2ln",
            "signed_by": "key-2026"
        },
        "summary": "Which database?", "display": [], "risk": "normal",
        "receipt": "eyJhbGciOiJFZERTQSJ9.eyJqdGkiOiJyMSJ9.c2ln",
        "priority": {"level": 3}
    })
}

#[tokio::test]
async fn a_record_keeps_the_fields_this_client_does_not_know() {
    let sent = from_a_newer_server();
    let client = Client::new(&replying(200, sent.clone()).await, None).expect("a client");
    let record = client.get("req_01").await.expect("the record");
    assert_eq!(record.extra["priority"], json!({"level": 3}));
    assert_eq!(record.questions[0].extra["weight"], 2);
    assert_eq!(
        serde_json::to_value(&record).expect("JSON"),
        sent,
        "written back as it came"
    );
}

#[tokio::test]
async fn an_answer_is_its_outcome_receipt_included_or_a_vote_counted() {
    let record = from_a_newer_server();
    let client =
        Client::new(&replying(200, record["outcome"].clone()).await, None).expect("a client");
    match client.answer("req_01", &json!({"option": "pg"})).await {
        Ok(Answered::Resolved(outcome)) => {
            assert_eq!(outcome.answered_by.as_deref(), Some("alice"));
            assert_eq!(
                outcome.receipt.as_deref(),
                Some("eyJhbGciOiJFZERTQSJ9.eyJqdGkiOiJyMSJ9.c2ln")
            );
            assert_eq!(outcome.extra["signed_by"], "key-2026");
        }
        other => panic!("an outcome, got {other:?}"),
    }

    let mut voted = record.clone();
    voted["status"] = json!("pending");
    voted["outcome"] = Value::Null;
    voted["approvals_required"] = json!(2);
    voted["votes"] = json!([{"by": "alice", "decision": "approve", "scope": "once",
                             "reason": null, "at": "2026-11-02T10:01:00.000Z"}]);
    let client = Client::new(&replying(202, voted).await, None).expect("a client");
    match client
        .answer("req_01", &json!({"decision": "approve"}))
        .await
    {
        Ok(Answered::Voted(record)) => {
            assert!(!record.is_resolved());
            assert_eq!(record.votes[0].by, "alice");
        }
        other => panic!("a vote counted, got {other:?}"),
    }
}

#[tokio::test]
async fn a_conflict_carries_the_record_as_resolved_first() {
    let refusal = json!({
        "error": {"code": "already_resolved", "message": "request req_01 is already answered"},
        "record": from_a_newer_server()
    });
    let client = Client::new(&replying(409, refusal).await, None).expect("a client");
    match client.cancel("req_01").await {
        Err(ClientError::Api {
            status: 409,
            code,
            record: Some(record),
            ..
        }) => {
            assert_eq!(code, "already_resolved");
            let outcome = record.outcome.expect("the first resolution's outcome");
            assert_eq!(outcome.answered_by.as_deref(), Some("alice"));
        }
        other => panic!("a conflict with its record, got {other:?}"),
    }
}

#[tokio::test]
async fn a_body_that_is_not_a_record_is_a_protocol_error() {
    let client =
        Client::new(&replying(200, json!({"id": "req_01"})).await, None).expect("a client");
    match client.get("req_01").await {
        Err(ClientError::Protocol(message)) => {
            assert!(message.contains("cannot read"), "{message}");
        }
        other => panic!("a protocol error, got {other:?}"),
    }
}
