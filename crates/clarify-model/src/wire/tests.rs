//! The wire types read back what the server writes: a record and its outcome come through a
//! client's read and write unchanged, fields a newer server adds included, and an approval's
//! outcome reads as core reads it.

use clarify_core::policy::{ApprovalError, ApprovalReply};
use clarify_core::{Decision, Scope, Status};
use serde_json::{Value, json};

use super::{OutcomeBody, RecordBody};

/// A resolved approval as a server writes it, receipt and all.
fn approved() -> Value {
    json!({
        "id": "req_01",
        "status": "answered",
        "questions": [{
            "id": "q1",
            "header": null,
            "text": "Allow the agent to run deploy?",
            "kind": "approval",
            "action": {"name": "deploy", "arguments": {"env": "prod"}},
            "scopes": ["once", "session"],
            "allow_edit": true
        }],
        "context": null,
        "session": "s1",
        "agent": "deployer",
        "tags": [],
        "tool_call_id": null,
        "allow_skip": true,
        "responders": null,
        "callback_url": null,
        "timeout_seconds": 600,
        "approvals_required": 1,
        "votes": [],
        "created_at": "2026-11-02T10:00:00.000Z",
        "expires_at": "2026-11-02T10:10:00.000Z",
        "resolved_at": "2026-11-02T10:01:30.250Z",
        "answered_by": "alice",
        "outcome": {
            "request_id": "req_01",
            "status": "answered",
            "questions": [{
                "id": "q1",
                "question": "Allow the agent to run deploy?",
                "kind": "approval",
                "choices_offered": ["approve", "deny", "revise"],
                "answer": "approve",
                "mode": "decision",
                "decision": "approve",
                "scope": "session",
                "edited_arguments": {"env": "staging"}
            }],
            "answered_by": "alice",
            "answered_via": "inbox",
            "resolved_at": "2026-11-02T10:01:30.250Z",
            "receipt": "eyJhbGciOiJFZERTQSJ9.eyJqdGkiOiJyMSJ9.c2ln"
        },
        "summary": "deploy",
        "display": [{"type": "markdown", "text": "Ships **v2**."}],
        "risk": "normal",
        "receipt": "eyJhbGciOiJFZERTQSJ9.eyJqdGkiOiJyMSJ9.c2ln"
    })
}

fn read(value: &Value) -> RecordBody {
    serde_json::from_value(value.clone()).expect("the record reads")
}

#[test]
fn a_record_comes_back_as_the_server_wrote_it() {
    let written = approved();
    let record = read(&written);
    assert_eq!(serde_json::to_value(&record).expect("JSON"), written);
    assert_eq!(
        serde_json::to_string(&record).expect("JSON"),
        written.to_string(),
        "in the same order"
    );
}

#[test]
fn an_outcome_with_a_receipt_is_read() {
    let record = read(&approved());
    assert!(record.is_resolved());
    let outcome = record.outcome.as_ref().expect("an outcome");
    assert_eq!(outcome.receipt.as_deref(), record.receipt.as_deref());
    assert_eq!(
        outcome.receipt.as_deref(),
        Some("eyJhbGciOiJFZERTQSJ9.eyJqdGkiOiJyMSJ9.c2ln")
    );
    assert_eq!(outcome.answered_via.as_deref(), Some("inbox"));
    assert_eq!(
        super::parse_time(&outcome.resolved_at).map(|t| t.timestamp_millis()),
        Some(1_793_613_690_250)
    );
}

#[test]
fn fields_a_newer_server_adds_survive_a_round_trip() {
    let mut written = approved();
    written["priority"] = json!({"level": 3});
    written["questions"][0]["hint"] = json!("read the diff first");
    written["outcome"]["signed_by"] = json!("key-2026");
    written["outcome"]["questions"][0]["confidence"] = json!(0.9);
    written["display"][0]["collapsed"] = json!(true);
    let record = read(&written);
    assert_eq!(record.extra["priority"], json!({"level": 3}));
    assert_eq!(record.questions[0].extra["hint"], "read the diff first");
    assert_eq!(serde_json::to_value(&record).expect("JSON"), written);
}

#[test]
fn a_record_missing_a_required_field_is_refused() {
    let mut written = approved();
    if let Some(fields) = written.as_object_mut() {
        fields.remove("status");
    }
    assert!(serde_json::from_value::<RecordBody>(written).is_err());
}

#[test]
fn an_approval_outcome_reads_as_core_reads_it() {
    let outcome = |status: &str, question: Value| -> Value {
        json!({
            "request_id": "req_01",
            "status": status,
            "questions": [question],
            "answered_by": null,
            "answered_via": null,
            "resolved_at": "2026-11-02T10:01:30.250Z",
            "note": "nobody answered"
        })
    };
    let approval = |extra: Value| {
        let mut q = json!({
            "id": "q1", "question": "Run it?", "kind": "approval",
            "choices_offered": ["approve", "deny", "revise"], "answer": null, "mode": null
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            q[k] = v.clone();
        }
        q
    };
    let cases = [
        outcome(
            "answered",
            approval(
                json!({"answer": "approve", "mode": "decision", "decision": "approve",
                            "scope": "session", "edited_arguments": {"env": "staging"}}),
            ),
        ),
        outcome(
            "answered",
            approval(
                json!({"answer": "deny", "mode": "decision", "decision": "deny",
                            "scope": "once", "reason": "not on Fridays"}),
            ),
        ),
        outcome("expired", approval(json!({}))),
        outcome("skipped", approval(json!({"edited_arguments": null}))),
        outcome("pending", approval(json!({}))),
        outcome(
            "answered",
            json!({"id": "q1", "question": "Which?", "kind": "single",
                   "choices_offered": ["a"], "answer": "a", "mode": "option"}),
        ),
        outcome("answered", approval(json!({"decision": "maybe"}))),
        outcome(
            "answered",
            approval(json!({"decision": "approve", "scope": "forever"})),
        ),
    ];
    for wire in cases {
        let typed: OutcomeBody = serde_json::from_value(wire.clone()).expect("the outcome reads");
        let typed = typed.approval();
        let by_json = ApprovalReply::from_json(&wire);
        match (&typed, &by_json) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{wire}"),
            (Err(ApprovalError::Malformed(_)), Err(ApprovalError::Malformed(_))) => {}
            (a, b) => assert_eq!(a, b, "{wire}"),
        }
    }
    let first: OutcomeBody = serde_json::from_value(outcome(
        "answered",
        approval(json!({"decision": "approve", "scope": "session"})),
    ))
    .expect("the outcome reads");
    let reply = first.approval().expect("an approval");
    assert_eq!(
        (reply.status, reply.decision, reply.scope),
        (
            Status::Answered,
            Some(Decision::Approve),
            Some(Scope::Session)
        )
    );
}

#[test]
fn blocks_read_as_core_holds_them_and_unknown_types_are_left_out() {
    use clarify_core::display::Content;
    let mut written = approved();
    written["display"] = json!([
        {"type": "markdown", "text": "Ships **v2**."},
        {"type": "image", "title": "Before", "alt": "the old page",
         "url": "/v1/requests/req_01/display/1", "media_type": "image/png", "bytes": 68},
        {"type": "hologram", "text": "from a newer server"},
        {"type": "link", "title": "The PR", "url": "https://example.com/pr/7"}
    ]);
    let blocks = read(&written).blocks();
    let contents: Vec<&Content> = blocks.iter().map(|b| &b.content).collect();
    assert_eq!(
        contents,
        [
            &Content::Markdown {
                text: "Ships **v2**.".to_owned()
            },
            &Content::Image {
                data: String::new(),
                alt: "the old page".to_owned()
            },
            &Content::Link {
                url: "https://example.com/pr/7".to_owned()
            },
        ]
    );
    assert_eq!(blocks[1].title.as_deref(), Some("Before"));
}

#[test]
fn the_request_reads_back_as_core_validates_it() {
    let request = read(&approved()).request().expect("a valid request");
    let action = clarify_core::policy::approval_action(&request).expect("an approval");
    assert_eq!(action.name, "deploy");
    assert_eq!(request.session.as_deref(), Some("s1"));
}
