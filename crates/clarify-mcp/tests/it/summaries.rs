//! The one-line rendering that leads every outcome result.

use clarify_mcp::summary;
use serde_json::{Value, json};

fn check(outcome: Value, expected: &str) {
    assert_eq!(summary(&outcome), expected, "{outcome}");
}

fn answered(by: Value, questions: Value) -> Value {
    json!({"request_id": "r1", "status": "answered", "answered_by": by, "questions": questions})
}

#[test]
fn summaries() {
    check(
        answered(
            json!("alice"),
            json!([{"id": "q1", "answer": "Postgres", "mode": "option"}]),
        ),
        "answered by alice: Postgres",
    );
    check(
        answered(
            Value::Null,
            json!([{"id": "q1", "answer": "yes", "mode": "option"}]),
        ),
        "answered: yes",
    );
    check(
        answered(
            json!("bob"),
            json!([
                {"id": "q1", "answer": ["eu", "us"], "mode": "option"},
                {"id": "when", "answer": "Friday", "mode": "text"},
            ]),
        ),
        "answered by bob: q1: eu, us; when: Friday",
    );
    check(
        answered(
            json!("alice"),
            json!([{"id": "q1", "answer": "approve", "mode": "decision",
                    "decision": "approve", "scope": "session"}]),
        ),
        "answered by alice: approve for this session",
    );
    check(
        answered(
            json!("alice"),
            json!([{"id": "q1", "answer": "approve", "mode": "decision", "scope": "once",
                    "edited_arguments": {"path": "/tmp"}}]),
        ),
        "answered by alice: approve with edited arguments",
    );
    check(
        answered(
            json!("alice"),
            json!([{"id": "q1", "answer": "deny", "mode": "decision", "scope": "once",
                    "reason": "not on Fridays"}]),
        ),
        "answered by alice: deny: not on Fridays",
    );
    check(
        json!({"status": "skipped", "note": "The human chose not to answer."}),
        "skipped: The human chose not to answer.",
    );
    check(json!({"status": "cancelled"}), "cancelled");
}
