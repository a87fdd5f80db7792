//! The one-line rendering that leads every outcome result.

use clarify_client::OutcomeBody;
use clarify_mcp::summary;
use serde_json::{Value, json};

/// `partial` is an outcome with only the fields a case is about; the rest are filled in as a
/// server writes them, so the outcome reads as the wire type.
fn check(partial: Value, expected: &str) {
    let mut outcome =
        json!({"request_id": "r1", "questions": [], "resolved_at": "2026-11-02T10:00:00.000Z"});
    for (field, value) in partial.as_object().into_iter().flatten() {
        outcome[field] = value.clone();
    }
    let questions = outcome["questions"].as_array_mut().into_iter().flatten();
    for question in questions.filter_map(Value::as_object_mut) {
        for (field, value) in [
            ("question", json!("?")),
            ("kind", json!("single")),
            ("choices_offered", json!([])),
        ] {
            question.entry(field).or_insert(value);
        }
    }
    let read: OutcomeBody = serde_json::from_value(outcome.clone()).expect("an outcome");
    assert_eq!(summary(&read), expected, "{outcome}");
}

fn answered(by: Value, questions: Value) -> Value {
    json!({"status": "answered", "answered_by": by, "questions": questions})
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
