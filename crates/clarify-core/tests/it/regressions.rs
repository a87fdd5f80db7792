//! Inputs that fuzzing or the property tests found breaking a property, kept as plain tests so the
//! bug stays fixed. Each test names the property it broke; the fuzz targets are in `fuzz/`.

use clarify_core::reply::{Reply, ReplyError, parse_reply};
use clarify_core::{Limits, Submission, parse_request, parse_submission};
use serde_json::json;

/// A bare `approve` meant scope `once` even where the request offered only wider scopes, so the
/// typed reply was an answer `parse_submission` refused (found by the reply property). It is now
/// refused up front, naming the scopes to choose from; `approve session` still works and both
/// paths agree on it.
#[test]
fn bare_approve_where_once_is_not_offered() {
    let request = parse_request(
        &json!({"questions": [{"text": "Deploy?", "action": {"name": "deploy"},
                               "scopes": ["session", "always"]}]}),
        &Limits::default(),
    )
    .expect("valid request");
    let question = &request.questions[0];

    for reply in ["approve", "yes", "y", "1"] {
        let got = parse_reply(question, true, reply);
        assert_eq!(
            got,
            Err(ReplyError::ScopeNeeded {
                offered: "session, always".to_owned()
            }),
            "{reply:?}"
        );
    }
    assert_eq!(
        parse_reply(question, true, "approve")
            .map_err(|e| e.to_string())
            .expect_err("refused"),
        "this action cannot be approved just once; reply approve followed by one of session, always"
    );

    let Ok(Reply::Answer(answer)) = parse_reply(question, true, "approve session") else {
        panic!("approve session is accepted");
    };
    let body = json!({"answers": {"q1": &answer}});
    let Ok(Submission::Answered(answers)) = parse_submission(&request, &body) else {
        panic!("{body} is accepted");
    };
    assert_eq!(answers.get("q1"), Some(&answer));

    // A deny needs no scope, whatever is offered.
    assert!(matches!(
        parse_reply(question, true, "deny"),
        Ok(Reply::Answer(_))
    ));
}
