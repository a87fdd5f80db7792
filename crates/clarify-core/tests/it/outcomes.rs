//! Outcomes: the exact JSON an agent and its LLM receive for every way a request can resolve.

use chrono::{DateTime, Utc};
use clarify_core::{Limits, Outcome, Resolution, Submission, parse_request, parse_submission};
use serde_json::{Value, json};

const AT: &str = "2024-05-01T12:00:00Z";
const AT_JSON: &str = "2024-05-01T12:00:00.000Z";

/// Builds the outcome of `request` (a create body) resolved by `how`: an answer body, or one of
/// the strings `"expired"`, `"cancelled"` (`{"skip": true}` is a skip), and compares its JSON with
/// `want` exactly.
fn check(request: Value, how: Value, answered_by: Option<&str>, want: Value) {
    let request = parse_request(&request, &Limits::default()).expect("valid request");
    let resolution = match how.as_str() {
        Some("expired") => Resolution::Expired,
        Some("cancelled") => Resolution::Cancelled,
        _ => match parse_submission(&request, &how).expect("valid answer") {
            Submission::Answered(a) => Resolution::Answered(a),
            Submission::Skipped => Resolution::Skipped,
        },
    };
    let at: DateTime<Utc> = AT.parse().expect("a time");
    let outcome = Outcome::new("req_1", &request, &resolution, answered_by, at);
    let got = serde_json::to_value(&outcome).expect("serializes");
    assert_eq!(got, want, "resolved by {how}");
}

fn single() -> Value {
    json!({"question": "Deploy to?", "choices": [{"id": "prod", "label": "Production"}, "Staging"]})
}

fn answered(questions: Value) -> Value {
    json!({"request_id": "req_1", "status": "answered", "questions": questions,
           "answered_by": "alice", "answered_via": null, "resolved_at": AT_JSON})
}

#[test]
fn answered_outcomes() {
    let offered = json!(["Production", "Staging"]);
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        (
            "an option is returned as its label, not its id",
            single(),
            json!({"option": "prod"}),
            answered(
                json!([{"id": "q1", "question": "Deploy to?", "kind": "single",
                             "choices_offered": offered, "answer": "Production", "mode": "option"}]),
            ),
        ),
        (
            "other text",
            single(),
            json!({"other": "Canary"}),
            answered(
                json!([{"id": "q1", "question": "Deploy to?", "kind": "single",
                             "choices_offered": offered, "answer": "Canary", "mode": "other"}]),
            ),
        ),
        (
            "a label marked recommended is offered and returned without the mark",
            json!({"question": "DB?", "choices": ["Postgres (recommended)", "SQLite"]}),
            json!({"option": "postgres"}),
            answered(json!([{"id": "q1", "question": "DB?", "kind": "single",
                             "choices_offered": ["Postgres", "SQLite"], "answer": "Postgres", "mode": "option"}])),
        ),
        (
            "multi: the list of labels in the request's order",
            json!({"question": "Colours?", "multi_select": true, "choices": ["Red", "Green", "Blue"]}),
            json!({"options": ["blue", "red"]}),
            answered(json!([{"id": "q1", "question": "Colours?", "kind": "multi",
                             "choices_offered": ["Red", "Green", "Blue"], "answer": ["Red", "Blue"], "mode": "option"}])),
        ),
        (
            "multi with other text",
            json!({"question": "Colours?", "multi_select": true, "choices": ["Red", "Green"]}),
            json!({"options": ["green"], "other": "Purple"}),
            answered(json!([{"id": "q1", "question": "Colours?", "kind": "multi",
                             "choices_offered": ["Red", "Green"], "answer": ["Green", "Purple"], "mode": "other"}])),
        ),
        (
            "open text",
            json!({"question": "Why?"}),
            json!({"text": "Because."}),
            answered(json!([{"id": "q1", "question": "Why?", "kind": "open",
                             "choices_offered": [], "answer": "Because.", "mode": "text"}])),
        ),
        (
            "an approval with scope, edits and reason",
            json!({"questions": [{"text": "Deploy?", "kind": "approval", "allow_edit": true,
                                  "scopes": ["once", "always"],
                                  "action": {"name": "deploy", "arguments": {"env": "prod"}}}]}),
            json!({"decision": "approve", "scope": "always", "edited_arguments": {"env": "staging"},
                   "reason": "staging first"}),
            answered(
                json!([{"id": "q1", "question": "Deploy?", "kind": "approval",
                             "choices_offered": ["approve", "deny", "revise"], "answer": "approve", "mode": "decision",
                             "decision": "approve", "scope": "always",
                             "edited_arguments": {"env": "staging"}, "reason": "staging first"}]),
            ),
        ),
        (
            "a plain deny",
            json!({"questions": [{"text": "Deploy?", "action": {"name": "deploy"}}]}),
            json!({"decision": "deny"}),
            answered(
                json!([{"id": "q1", "question": "Deploy?", "kind": "approval",
                             "choices_offered": ["approve", "deny", "revise"], "answer": "deny", "mode": "decision",
                             "decision": "deny", "scope": "once"}]),
            ),
        ),
        (
            "several questions, in the request's order",
            json!({"questions": [{"id": "db", "text": "DB?", "options": ["Postgres", "SQLite"]},
                                 {"id": "why", "text": "Why?"}]}),
            json!({"answers": {"why": {"text": "speed"}, "db": {"option": "SQLite"}}}),
            answered(json!([
                {"id": "db", "question": "DB?", "kind": "single", "choices_offered": ["Postgres", "SQLite"],
                 "answer": "SQLite", "mode": "option"},
                {"id": "why", "question": "Why?", "kind": "open", "choices_offered": [],
                 "answer": "speed", "mode": "text"}])),
        ),
    ];
    for (name, request, how, want) in cases {
        eprintln!("case: {name}");
        check(request, how, Some("alice"), want);
    }
}

#[test]
fn unanswered_outcomes_carry_a_note() {
    const JUDGE: &str = "use your best judgement and say which assumption you made.";
    let unanswered = |status: &str, by: Option<&str>, note: String| {
        json!({"request_id": "req_1", "status": status,
               "questions": [{"id": "q1", "question": "Deploy to?", "kind": "single",
                              "choices_offered": ["Production", "Staging"], "answer": null, "mode": null}],
               "answered_by": by, "answered_via": null, "resolved_at": AT_JSON, "note": note})
    };
    let with_timeout = |t: u64| {
        let mut r = single();
        r["timeout_seconds"] = json!(t);
        r
    };
    let cases: Vec<(Value, Value, Option<&str>, Value)> = vec![
        (
            single(),
            json!({"skip": true}),
            Some("alice"),
            unanswered(
                "skipped",
                Some("alice"),
                format!("The human chose not to answer; {JUDGE}"),
            ),
        ),
        (
            with_timeout(600),
            json!("expired"),
            None,
            unanswered(
                "expired",
                None,
                format!("The human did not answer within 10 minutes; {JUDGE}"),
            ),
        ),
        (
            single(),
            json!("expired"),
            None,
            unanswered(
                "expired",
                None,
                format!("The human did not answer within 1 hour; {JUDGE}"),
            ),
        ),
        (
            with_timeout(5400),
            json!("expired"),
            None,
            unanswered(
                "expired",
                None,
                format!("The human did not answer within 1 hour 30 minutes; {JUDGE}"),
            ),
        ),
        (
            with_timeout(2 * 86_400),
            json!("expired"),
            None,
            unanswered(
                "expired",
                None,
                format!("The human did not answer within 2 days; {JUDGE}"),
            ),
        ),
        (
            with_timeout(0),
            json!("expired"),
            None,
            unanswered(
                "expired",
                None,
                format!("The human did not answer in time; {JUDGE}"),
            ),
        ),
        (
            single(),
            json!("cancelled"),
            Some("admin"),
            unanswered(
                "cancelled",
                Some("admin"),
                format!(
                    "The question was cancelled before the human answered; do not wait for an answer, {JUDGE}"
                ),
            ),
        ),
        (
            single(),
            json!("cancelled"),
            None,
            unanswered(
                "cancelled",
                None,
                format!(
                    "The question was cancelled before the human answered; do not wait for an answer, {JUDGE}"
                ),
            ),
        ),
    ];
    for (request, how, by, want) in cases {
        check(request, how, by, want);
    }
}

/// `answered_by`, `answered_via` and `resolved_at` are always present; `resolved_at` is RFC
/// 3339 in UTC.
#[test]
fn resolved_at_is_rfc3339_utc() {
    let request = parse_request(&single(), &Limits::default()).expect("valid");
    let at = DateTime::parse_from_rfc3339("2024-05-01T14:30:15.250+02:00")
        .expect("a time")
        .with_timezone(&Utc);
    for resolution in [
        Resolution::Expired,
        Resolution::Skipped,
        Resolution::Cancelled,
    ] {
        let v = serde_json::to_value(Outcome::new("r", &request, &resolution, None, at))
            .expect("serializes");
        let obj = v.as_object().expect("an object");
        assert!(obj.contains_key("answered_by"), "{v}");
        assert!(obj.contains_key("answered_via"), "{v}");
        assert_eq!(v["resolved_at"], json!("2024-05-01T12:30:15.250Z"));
        let back = DateTime::parse_from_rfc3339(v["resolved_at"].as_str().expect("a string"))
            .expect("RFC 3339");
        assert_eq!(back, at);
        assert!(v["note"].as_str().is_some_and(|n| !n.is_empty()), "{v}");
    }
}
