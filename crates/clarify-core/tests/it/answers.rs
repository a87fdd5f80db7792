//! Answers checked against the live request: what is accepted (and its canonical body), and every
//! kind of answer the contract says must be refused, after which a corrected answer still fits.

use clarify_core::{Answer, Limits, NewRequest, Submission, parse_request, parse_submission};
use serde_json::{Value, json};

/// The requests the tables answer, by name.
fn fixture(name: &str) -> NewRequest {
    let body = match name {
        "single" => json!({"questions": [{"text": "Deploy to?", "options": [
            {"id": "prod", "label": "Production"}, {"id": "staging", "label": "Staging"}]}]}),
        "single-strict" => json!({"allow_skip": false, "questions": [{"text": "Deploy to?",
            "allow_other": false, "options": [{"id": "prod", "label": "Production"}, "Staging"]}]}),
        "multi" => json!({"questions": [{"text": "Which colours?", "kind": "multi",
            "options": [{"id": "r", "label": "Red"}, {"id": "g", "label": "Green"}, {"id": "b", "label": "Blue"}]}]}),
        "multi-strict" => json!({"questions": [{"text": "Which colours?", "kind": "multi",
            "allow_other": false, "options": ["Red", "Green"]}]}),
        "open" => json!({"questions": [{"text": "Why?"}]}),
        "approval" => json!({"questions": [{"text": "Deploy?", "kind": "approval",
            "action": {"name": "deploy", "arguments": {"env": "prod"}},
            "scopes": ["once", "session"], "allow_edit": true}]}),
        "approval-plain" => json!({"questions": [{"text": "Deploy?", "kind": "approval",
            "action": {"name": "deploy"}}]}),
        "approval-session-only" => json!({"questions": [{"text": "Deploy?", "kind": "approval",
            "action": {"name": "deploy"}, "scopes": ["session"]}]}),
        "three" => json!({"questions": [
            {"id": "db", "text": "Which database?", "options": ["Postgres", "SQLite"]},
            {"id": "notes", "text": "Anything else?"},
            {"id": "go", "text": "Migrate?", "kind": "approval", "action": {"name": "migrate"}}]}),
        other => panic!("no fixture {other}"),
    };
    parse_request(&body, &Limits::default()).expect("fixture is valid")
}

/// The canonical body of a submission: `{"skip": true}` or `{"answers": {...}}`.
fn canonical(s: &Submission) -> Value {
    match s {
        Submission::Skipped => json!({"skip": true}),
        Submission::Answered(a) => json!({"answers": serde_json::to_value(a).expect("serializes")}),
    }
}

/// Submits `body` to the fixture `request`. On success, compares the canonical body with `want`
/// and checks that the canonical body is itself accepted as the same submission. On refusal,
/// compares the error code and that the message names `fragment`, checks that the request is
/// unchanged, and that `corrected` (when given) is then accepted.
fn check(request: &str, body: Value, want: Result<Value, (&str, &str, Option<Value>)>) {
    let request = fixture(request);
    let before = request.clone();
    let got = parse_submission(&request, &body);
    match (want, got) {
        (Ok(want), Ok(s)) => {
            assert_eq!(canonical(&s), want, "body {body}");
            let again = parse_submission(&request, &want).expect("the canonical body is accepted");
            assert_eq!(again, s, "canonical body {want} reads back differently");
        }
        (Err((code, fragment, corrected)), Err(e)) => {
            assert_eq!(e.code(), code, "body {body}: {e}");
            assert!(
                e.to_string().contains(fragment),
                "body {body}: {e:?} lacks {fragment:?}"
            );
            assert_eq!(request, before, "a refused answer changed the request");
            if let Some(corrected) = corrected {
                let fixed = parse_submission(&request, &corrected);
                assert!(
                    fixed.is_ok(),
                    "corrected body {corrected} after {body}: {fixed:?}"
                );
            }
        }
        (want, got) => panic!("body {body}:\n  want {want:?}\n  got  {got:?}"),
    }
}

#[test]
fn accepted_answers_and_their_canonical_body() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "single",
            json!({"answers": {"q1": {"option": "prod"}}}),
            json!({"answers": {"q1": {"option": "prod"}}}),
        ),
        (
            "single",
            json!({"answers": {"q1": {"option": "STAGING"}}}),
            json!({"answers": {"q1": {"option": "staging"}}}),
        ),
        (
            "single",
            json!({"answers": {"q1": {"option": " production "}}}),
            json!({"answers": {"q1": {"option": "prod"}}}),
        ),
        (
            "single",
            json!({"answers": {"q1": {"other": "  Canary first "}}}),
            json!({"answers": {"q1": {"other": "Canary first"}}}),
        ),
        (
            "single",
            json!({"answers": {"q1": {"options": ["staging"]}}}),
            json!({"answers": {"q1": {"option": "staging"}}}),
        ),
        (
            "single",
            json!({"option": "prod"}),
            json!({"answers": {"q1": {"option": "prod"}}}),
        ),
        (
            "single",
            json!({"other": "Neither"}),
            json!({"answers": {"q1": {"other": "Neither"}}}),
        ),
        (
            "single",
            json!({"skip": false, "answers": {"q1": {"option": "prod"}}}),
            json!({"answers": {"q1": {"option": "prod"}}}),
        ),
        ("single", json!({"skip": true}), json!({"skip": true})),
        (
            "single",
            json!({"skip": true, "answers": {"q1": {"option": "prod"}}}),
            json!({"skip": true}),
        ),
        (
            "multi",
            json!({"options": ["b", "r"]}),
            json!({"answers": {"q1": {"options": ["r", "b"]}}}),
        ),
        (
            "multi",
            json!({"options": ["green", "g", "RED"]}),
            json!({"answers": {"q1": {"options": ["r", "g"]}}}),
        ),
        (
            "multi",
            json!({"options": ["g"], "other": "Purple"}),
            json!({"answers": {"q1": {"options": ["g"], "other": "Purple"}}}),
        ),
        (
            "multi",
            json!({"other": "Purple"}),
            json!({"answers": {"q1": {"options": [], "other": "Purple"}}}),
        ),
        (
            "multi",
            json!({"option": "b"}),
            json!({"answers": {"q1": {"options": ["b"]}}}),
        ),
        (
            "open",
            json!({"text": " Because it is Friday. "}),
            json!({"answers": {"q1": {"text": "Because it is Friday."}}}),
        ),
        (
            "approval",
            json!({"decision": "approve"}),
            json!({"answers": {"q1": {"decision": "approve", "scope": "once"}}}),
        ),
        (
            "approval",
            json!({"decision": "Approve", "scope": "session"}),
            json!({"answers": {"q1": {"decision": "approve", "scope": "session"}}}),
        ),
        (
            "approval",
            json!({"decision": "approve", "edited_arguments": {"env": "staging"}, "reason": "staging first"}),
            json!({"answers": {"q1": {"decision": "approve", "scope": "once", "edited_arguments": {"env": "staging"}, "reason": "staging first"}}}),
        ),
        (
            "approval",
            json!({"decision": "deny", "reason": " not on Fridays "}),
            json!({"answers": {"q1": {"decision": "deny", "scope": "once", "reason": "not on Fridays"}}}),
        ),
        (
            "approval-plain",
            json!({"decision": "deny"}),
            json!({"answers": {"q1": {"decision": "deny", "scope": "once"}}}),
        ),
        (
            "approval",
            json!({"decision": " Revise ", "reason": " batch of 100, not 10,000 "}),
            json!({"answers": {"q1": {"decision": "revise", "scope": "once", "reason": "batch of 100, not 10,000"}}}),
        ),
        (
            "approval-session-only",
            json!({"decision": "deny"}),
            json!({"answers": {"q1": {"decision": "deny", "scope": "once"}}}),
        ),
        (
            "approval-session-only",
            json!({"decision": "approve", "scope": "session"}),
            json!({"answers": {"q1": {"decision": "approve", "scope": "session"}}}),
        ),
        (
            "three",
            json!({"answers": {"go": {"decision": "approve"}, "notes": {"text": "none"}, "db": {"option": "sqlite"}}}),
            json!({"answers": {"db": {"option": "sqlite"}, "notes": {"text": "none"}, "go": {"decision": "approve", "scope": "once"}}}),
        ),
    ];
    for (request, body, want) in cases {
        check(request, body, Ok(want));
    }
}

#[test]
fn answers_that_do_not_fit_are_refused_and_the_request_stays_answerable() {
    type Row = (&'static str, &'static str, Value, &'static str, Value);
    let cases: Vec<Row> = vec![
        // (name, request, body, code, corrected body); the message must name the fragment
        (
            "unknown question id",
            "single",
            json!({"answers": {"q1": {"option": "prod"}, "q9": {"option": "prod"}}}),
            "unknown_question",
            json!({"answers": {"q1": {"option": "prod"}}}),
        ),
        (
            "misspelt question id",
            "three",
            json!({"answers": {"DB": {"option": "postgres"}, "notes": {"text": "x"}, "go": {"decision": "deny"}}}),
            "unknown_question",
            json!({"answers": {"db": {"option": "postgres"}, "notes": {"text": "x"}, "go": {"decision": "deny"}}}),
        ),
        (
            "text on single",
            "single",
            json!({"text": "prod"}),
            "wrong_kind",
            json!({"option": "prod"}),
        ),
        (
            "decision on single",
            "single",
            json!({"decision": "approve"}),
            "wrong_kind",
            json!({"option": "prod"}),
        ),
        (
            "empty answer on single",
            "single",
            json!({}),
            "wrong_kind",
            json!({"option": "prod"}),
        ),
        (
            "option on open",
            "open",
            json!({"option": "a"}),
            "wrong_kind",
            json!({"text": "a"}),
        ),
        (
            "option on approval",
            "approval",
            json!({"option": "approve"}),
            "wrong_kind",
            json!({"decision": "approve"}),
        ),
        (
            "text on multi",
            "multi",
            json!({"text": "red"}),
            "wrong_kind",
            json!({"options": ["r"]}),
        ),
        (
            "decision on multi",
            "multi",
            json!({"decision": "approve", "options": ["r"]}),
            "wrong_kind",
            json!({"options": ["r"]}),
        ),
        (
            "unknown option on single",
            "single",
            json!({"option": "dev"}),
            "unknown_option",
            json!({"option": "staging"}),
        ),
        (
            "unknown option on multi",
            "multi",
            json!({"options": ["r", "purple"]}),
            "unknown_option",
            json!({"options": ["r"], "other": "purple"}),
        ),
        (
            "two options on single",
            "single",
            json!({"options": ["prod", "staging"]}),
            "not_single",
            json!({"options": ["prod"]}),
        ),
        (
            "an option and other on single",
            "single",
            json!({"option": "prod", "other": "x"}),
            "not_single",
            json!({"other": "x"}),
        ),
        (
            "a missing question",
            "three",
            json!({"answers": {"db": {"option": "postgres"}, "notes": {"text": "x"}}}),
            "missing_answer",
            json!({"answers": {"db": {"option": "postgres"}, "notes": {"text": "x"}, "go": {"decision": "approve"}}}),
        ),
        (
            "a null answer",
            "three",
            json!({"answers": {"db": {"option": "postgres"}, "notes": null, "go": {"decision": "deny"}}}),
            "missing_answer",
            json!({"answers": {"db": {"option": "postgres"}, "notes": {"text": "-"}, "go": {"decision": "deny"}}}),
        ),
        (
            "the shorthand body on a three-question request",
            "three",
            json!({"option": "postgres"}),
            "missing_answer",
            json!({"answers": {"db": {"option": "postgres"}, "notes": {"text": "x"}, "go": {"decision": "deny"}}}),
        ),
        (
            "other when allow_other is false (single)",
            "single-strict",
            json!({"other": "Canary"}),
            "other_not_allowed",
            json!({"option": "prod"}),
        ),
        (
            "other when allow_other is false (multi)",
            "multi-strict",
            json!({"options": ["red"], "other": "Blue"}),
            "other_not_allowed",
            json!({"options": ["red"]}),
        ),
        (
            "a scope not offered",
            "approval",
            json!({"decision": "approve", "scope": "always"}),
            "scope_not_offered",
            json!({"decision": "approve", "scope": "session"}),
        ),
        (
            "the default scope not offered",
            "approval-session-only",
            json!({"decision": "approve"}),
            "scope_not_offered",
            json!({"decision": "approve", "scope": "session"}),
        ),
        (
            "an unknown scope",
            "approval",
            json!({"decision": "approve", "scope": "forever"}),
            "scope_not_offered",
            json!({"decision": "approve"}),
        ),
        (
            "a session grant on a once-only approval",
            "approval-plain",
            json!({"decision": "approve", "scope": "session"}),
            "scope_not_offered",
            json!({"decision": "approve", "scope": "once"}),
        ),
        (
            "edits when allow_edit is false",
            "approval-plain",
            json!({"decision": "approve", "edited_arguments": {"env": "dev"}}),
            "edit_not_allowed",
            json!({"decision": "approve"}),
        ),
        (
            "edits with a deny",
            "approval",
            json!({"decision": "deny", "edited_arguments": {"env": "dev"}}),
            "edit_with_deny",
            json!({"decision": "deny"}),
        ),
        (
            "skip when allow_skip is false",
            "single-strict",
            json!({"skip": true}),
            "skip_not_allowed",
            json!({"option": "staging"}),
        ),
        (
            "changes requested without saying which",
            "approval",
            json!({"decision": "revise"}),
            "reason_required",
            json!({"decision": "revise", "reason": "use staging"}),
        ),
        (
            "changes requested with a blank reason",
            "approval",
            json!({"decision": "revise", "reason": "   "}),
            "empty_text",
            json!({"decision": "revise", "reason": "use staging"}),
        ),
        (
            "edits with a request for changes",
            "approval",
            json!({"decision": "revise", "reason": "x", "edited_arguments": {"env": "dev"}}),
            "edit_with_deny",
            json!({"decision": "revise", "reason": "x"}),
        ),
        (
            "a grant scope with a request for changes",
            "approval",
            json!({"decision": "revise", "reason": "x", "scope": "session"}),
            "scope_not_offered",
            json!({"decision": "revise", "reason": "x"}),
        ),
        (
            "not a decision",
            "approval",
            json!({"decision": "maybe"}),
            "invalid_decision",
            json!({"decision": "deny"}),
        ),
        (
            "empty text",
            "open",
            json!({"text": "  "}),
            "empty_text",
            json!({"text": "ok"}),
        ),
        (
            "empty other",
            "single",
            json!({"other": ""}),
            "empty_text",
            json!({"other": "ok"}),
        ),
        (
            "text over 10000 characters",
            "open",
            json!({"text": "x".repeat(10_001)}),
            "text_too_long",
            json!({"text": "x".repeat(10_000)}),
        ),
        (
            "an empty selection",
            "multi",
            json!({"options": []}),
            "empty_selection",
            json!({"options": ["g"]}),
        ),
        (
            "not an object",
            "open",
            json!("because"),
            "not_an_object",
            json!({"text": "because"}),
        ),
        (
            "answers as a list",
            "open",
            json!({"answers": [{"text": "x"}]}),
            "invalid_type",
            json!({"answers": {"q1": {"text": "x"}}}),
        ),
        (
            "skip as text",
            "single",
            json!({"skip": "yes"}),
            "invalid_type",
            json!({"skip": true}),
        ),
        (
            "option as an object",
            "single",
            json!({"option": {"id": "prod"}}),
            "invalid_type",
            json!({"option": "prod"}),
        ),
    ];
    for (name, request, body, code, corrected) in cases {
        let fragment = match code {
            "unknown_question" => "has no question",
            "missing_answer" => "has no answer",
            "unknown_option" => "is not an option",
            "other_not_allowed" => "does not accept a free-text answer",
            "scope_not_offered" => "is not offered",
            _ => "",
        };
        eprintln!("case: {name}");
        check(request, body, Err((code, fragment, Some(corrected))));
    }
}

/// Error messages point at the exact problem, so a model can correct itself.
#[test]
fn refusal_messages() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "single",
            json!({"answers": {"q9": {"option": "prod"}}}),
            "answers: the request has no question \"q9\"; its questions are q1",
        ),
        (
            "three",
            json!({"answers": {"db": {"option": "postgres"}}}),
            "answers: question \"notes\" has no answer; every question must be answered",
        ),
        (
            "single",
            json!({"option": "dev"}),
            "answers.q1: \"dev\" is not an option of this question; its options are prod, staging",
        ),
        (
            "single",
            json!({"options": ["prod", "staging"]}),
            "answers.q1: a single question takes exactly one option or one other text",
        ),
        (
            "single-strict",
            json!({"other": "x"}),
            "answers.q1: this question does not accept a free-text answer; choose an option",
        ),
        (
            "approval",
            json!({"decision": "approve", "scope": "always"}),
            "answers.q1.scope: \"always\" is not offered; choose one of once, session",
        ),
        (
            "approval-plain",
            json!({"decision": "approve", "edited_arguments": {}}),
            "answers.q1.edited_arguments: this action's arguments may not be edited",
        ),
        (
            "single-strict",
            json!({"skip": true}),
            "this request cannot be skipped; answer its questions",
        ),
        (
            "open",
            json!({"option": "x"}),
            "answers.q1: question \"q1\" is open; answer with {\"text\": \"...\"}",
        ),
    ];
    for (request, body, message) in cases {
        let err = parse_submission(&fixture(request), &body).expect_err("refused");
        assert_eq!(err.to_string(), message, "body {body}");
    }
}

#[test]
fn answer_values_serialize_as_the_per_kind_body() {
    let answer = |request: &str, body: Value| -> Value {
        let Ok(Submission::Answered(a)) = parse_submission(&fixture(request), &body) else {
            panic!("{body} is not an answer");
        };
        let one: &Answer = a.get("q1").expect("q1 answered");
        serde_json::to_value(one).expect("serializes")
    };
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "single",
            json!({"option": "Production"}),
            json!({"option": "prod"}),
        ),
        ("single", json!({"other": "x"}), json!({"other": "x"})),
        (
            "multi",
            json!({"options": ["r"]}),
            json!({"options": ["r"]}),
        ),
        ("open", json!({"text": "t"}), json!({"text": "t"})),
        (
            "approval",
            json!({"decision": "deny"}),
            json!({"decision": "deny", "scope": "once"}),
        ),
    ];
    for (request, body, want) in cases {
        assert_eq!(answer(request, body.clone()), want, "{request}: {body}");
    }
}
