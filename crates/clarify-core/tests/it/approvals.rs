//! Approval gating, the pure part: the approval question raised for a tool call, reading the
//! human's reply from an outcome (typed or as the server's JSON, which must agree), and what the
//! reply means for the call: run it (with edits, remembering grants) or refuse it with a reason.

use chrono::{DateTime, Utc};
use clarify_core::policy::{
    ApprovalError, ApprovalReply, ApprovalSpec, Grant, Verdict, approval_action, settle,
};
use clarify_core::{
    Action, Limits, Outcome, QuestionKind, Resolution, Scope, Submission, parse_request,
    parse_submission,
};
use serde_json::{Value, json};

fn action() -> Action {
    Action {
        name: "write_file".to_owned(),
        arguments: json!({"path": "hello.txt", "content": "Hello"}),
    }
}

#[test]
fn the_approval_question_for_a_call() {
    let spec = ApprovalSpec {
        allow_edit: true,
        timeout_seconds: Some(600),
        ..ApprovalSpec::default()
    };
    let cases = [
        (Some("s1"), vec![Scope::Once, Scope::Session, Scope::Always]),
        // A session grant needs a session, so it is not offered outside one.
        (None, vec![Scope::Once, Scope::Always]),
    ];
    for (session, scopes) in cases {
        let body = spec.request(&action(), Some("call_7"), session);
        let request = parse_request(&body, &Limits::default()).expect("a valid request");
        assert_eq!(request.tool_call_id.as_deref(), Some("call_7"));
        assert_eq!(request.session.as_deref(), session);
        assert_eq!(request.timeout_seconds, 600);
        assert_eq!(approval_action(&request), Some(&action()));
        let QuestionKind::Approval(approval) = &request.questions[0].kind else {
            panic!("an approval question: {body}");
        };
        assert_eq!(approval.scopes, scopes, "session {session:?}");
        assert!(approval.allow_edit);
        assert!(request.questions[0].text.contains("write_file"));
    }
    let only_session = ApprovalSpec {
        scopes: vec![Scope::Session],
        ..ApprovalSpec::default()
    };
    let request = parse_request(
        &only_session.request(&action(), None, None),
        &Limits::default(),
    )
    .expect("valid");
    let QuestionKind::Approval(approval) = &request.questions[0].kind else {
        panic!("an approval question");
    };
    assert_eq!(
        approval.scopes,
        vec![Scope::Once],
        "nothing left to offer but once"
    );
    let open = parse_request(&json!({"question": "Why?"}), &Limits::default()).expect("valid");
    assert_eq!(approval_action(&open), None);
}

/// The outcome of the approval question for `action()` resolved by `how` (an answer body, or
/// `"expired"`/`"cancelled"`; `{"skip": true}` skips).
fn resolve(how: Value) -> Outcome {
    let spec = ApprovalSpec {
        allow_edit: true,
        ..ApprovalSpec::default()
    };
    let request = parse_request(
        &spec.request(&action(), None, Some("s1")),
        &Limits::default(),
    )
    .expect("valid");
    let resolution = match how.as_str() {
        Some("expired") => Resolution::Expired,
        Some("cancelled") => Resolution::Cancelled,
        _ => match parse_submission(&request, &how).expect("a valid answer") {
            Submission::Answered(a) => Resolution::Answered(a),
            Submission::Skipped => Resolution::Skipped,
        },
    };
    let at: DateTime<Utc> = "2024-05-01T12:00:00Z".parse().expect("a time");
    Outcome::new("req_1", &request, &resolution, Some("alice"), at)
}

fn run(arguments: Value, edited: bool, grant: Option<(Scope, Option<&str>)>) -> Verdict {
    Verdict::Run {
        grant: grant
            .and_then(|(scope, session)| Grant::new("write_file", &arguments, scope, session)),
        arguments,
        edited,
    }
}

#[test]
fn what_a_reply_means_for_the_call() {
    let edited = json!({"path": "hello.txt", "content": "Hello, world"});
    // (name, answer, session the call was made in, want: a verdict, or a refusal's status and
    // words its reason must contain)
    type Want = Result<Verdict, (&'static str, &'static str)>;
    let cases: Vec<(&str, Value, Option<&str>, Want)> = vec![
        (
            "approve once runs the proposed call and remembers nothing",
            json!({"decision": "approve"}),
            Some("s1"),
            Ok(run(action().arguments, false, None)),
        ),
        (
            "approve for the session remembers a session grant",
            json!({"decision": "approve", "scope": "session"}),
            Some("s1"),
            Ok(run(
                action().arguments,
                false,
                Some((Scope::Session, Some("s1"))),
            )),
        ),
        (
            "a session grant outside any session is not remembered",
            json!({"decision": "approve", "scope": "session"}),
            None,
            Ok(run(action().arguments, false, None)),
        ),
        (
            "approve always remembers an always grant",
            json!({"decision": "approve", "scope": "always"}),
            Some("s1"),
            Ok(run(action().arguments, false, Some((Scope::Always, None)))),
        ),
        (
            "edited arguments run, and the grant covers them",
            json!({"decision": "approve", "scope": "always", "edited_arguments": edited}),
            Some("s1"),
            Ok(run(edited.clone(), true, Some((Scope::Always, None)))),
        ),
        (
            "an edit that changes nothing is not an edit",
            json!({"decision": "approve", "edited_arguments": action().arguments}),
            Some("s1"),
            Ok(run(action().arguments, false, None)),
        ),
        (
            "deny with a reason tells the model the reason",
            json!({"decision": "deny", "reason": "Not on Fridays."}),
            Some("s1"),
            Err((
                "denied",
                "The human denied this call: Not on Fridays. The tool was not run.",
            )),
        ),
        (
            "a request for changes says which, in the words every adapter starts with",
            json!({"decision": "revise", "reason": "write to hello.md instead"}),
            Some("s1"),
            Err((
                "revise",
                "Changes requested: write to hello.md instead The tool was not run.",
            )),
        ),
        (
            "deny without a reason says so",
            json!({"decision": "deny"}),
            Some("s1"),
            Err(("denied", "without giving a reason")),
        ),
        (
            "a skipped approval does not run the tool",
            json!({"skip": true}),
            Some("s1"),
            Err((
                "skipped",
                "The tool was not run. No approval was given: The human chose not",
            )),
        ),
        (
            "an expired approval does not run the tool",
            json!("expired"),
            Some("s1"),
            Err(("expired", "did not answer within 1 hour")),
        ),
        (
            "a cancelled approval does not run the tool",
            json!("cancelled"),
            Some("s1"),
            Err(("cancelled", "The tool was not run.")),
        ),
    ];
    let mut failures = Vec::new();
    for (name, how, session, want) in cases {
        let outcome = resolve(how);
        let typed = ApprovalReply::from_outcome(&outcome).expect("an approval outcome");
        let wire = serde_json::to_value(&outcome).expect("serializes");
        let from_json = ApprovalReply::from_json(&wire).expect("the server's JSON reads");
        if typed != from_json {
            failures.push(format!("{name}: typed {typed:?} but JSON {from_json:?}"));
        }
        let got = settle(&action(), session, &typed);
        match (&got, want) {
            (got, Ok(want)) if *got == want => {}
            (Verdict::Refuse(r), Err((status, words)))
                if r.status == status && r.reason.contains(words) =>
            {
                let result: Value =
                    serde_json::from_str(&r.tool_result()).expect("the result is JSON");
                assert_eq!(result["status"], status, "{name}");
                assert_eq!(result["reason"], r.reason.as_str(), "{name}");
            }
            (got, want) => failures.push(format!("{name}: want {want:?}, got {got:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn outcomes_that_are_not_approvals() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "a pending record",
            json!({"request_id": "r", "status": "pending", "questions": []}),
            "request r is still pending",
        ),
        (
            "no approval question",
            json!({"request_id": "r", "status": "answered",
                   "questions": [{"kind": "open", "answer": "x"}]}),
            "request r has no approval question",
        ),
        (
            "an unknown status",
            json!({"request_id": "r", "status": "sleeping", "questions": []}),
            "the outcome is malformed: status",
        ),
        (
            "an unknown decision",
            json!({"request_id": "r", "status": "answered",
                   "questions": [{"kind": "approval", "decision": "maybe"}]}),
            "unknown decision \"maybe\"",
        ),
        (
            "an unknown scope",
            json!({"request_id": "r", "status": "answered",
                   "questions": [{"kind": "approval", "decision": "approve", "scope": "forever"}]}),
            "unknown scope \"forever\"",
        ),
        (
            "not an object",
            json!("answered"),
            "the outcome is malformed",
        ),
    ];
    for (name, outcome, want) in cases {
        let error = ApprovalReply::from_json(&outcome)
            .expect_err(name)
            .to_string();
        assert!(error.contains(want), "{name}: want {want:?} in {error:?}");
    }
    let open = parse_request(&json!({"question": "Why?"}), &Limits::default()).expect("valid");
    let at: DateTime<Utc> = "2024-05-01T12:00:00Z".parse().expect("a time");
    let outcome = Outcome::new("r", &open, &Resolution::Expired, None, at);
    assert_eq!(
        ApprovalReply::from_outcome(&outcome),
        Err(ApprovalError::NotAnApproval {
            request_id: "r".to_owned()
        })
    );
}
