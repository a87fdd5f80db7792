//! The properties the fuzz targets check. A property that fails panics with the input, which
//! libFuzzer reports as a crash and saves under `fuzz/artifacts/`.
//!
//! Beyond "no panic": coercion is idempotent and canonical form is a fixed point; an accepted
//! answer covers every question with labels, ids and scopes the request offers, and its canonical
//! body parses to the same answer; a typed reply that `parse_reply` accepts is accepted by
//! `parse_submission` as the same answer.

use chrono::DateTime;
use clarify_core::reply::{Reply, parse_reply};
use clarify_core::{
    Answer, Decision, Limits, Mode, NewRequest, Outcome, Question, QuestionKind, Resolution, Scope,
    Submission, coerce, parse_request, parse_submission,
};
use serde_json::{Value, json};

fn assert_code(code: &str, message: &str) {
    assert!(
        !code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
        "error code {code:?} is not snake_case"
    );
    assert!(!message.is_empty(), "error {code} has no message");
}

/// Coerces and validates `raw`; returns the request when it is accepted.
pub fn request(raw: &Value, limits: &Limits) -> Option<NewRequest> {
    if let Ok(once) = coerce::normalize(raw) {
        assert_eq!(
            coerce::normalize(&once).as_ref(),
            Ok(&once),
            "normalizing twice differs from once for {raw}"
        );
    }
    match parse_request(raw, limits) {
        Ok(request) => {
            let canonical = match serde_json::to_value(&request) {
                Ok(v) => v,
                Err(e) => panic!("{request:?} does not serialize: {e}"),
            };
            assert_eq!(
                parse_request(&canonical, limits).as_ref(),
                Ok(&request),
                "the canonical form {canonical} of {raw} is not a fixed point"
            );
            match serde_json::from_value::<NewRequest>(canonical.clone()) {
                Ok(stored) => assert_eq!(stored, request, "{canonical} reads back differently"),
                Err(e) => panic!("the canonical form {canonical} does not read back: {e}"),
            }
            Some(request)
        }
        Err(e) => {
            assert_code(e.code(), &e.to_string());
            None
        }
    }
}

/// Checks an answer body against `request`.
pub fn submission(request: &NewRequest, body: &Value) {
    match parse_submission(request, body) {
        Ok(Submission::Skipped) => {
            assert!(request.allow_skip, "{body} skipped an unskippable request")
        }
        Ok(Submission::Answered(answers)) => {
            let ids: Vec<&str> = answers.iter().map(|(id, _)| id).collect();
            let expected: Vec<&str> = request.questions.iter().map(|q| q.id.as_str()).collect();
            assert_eq!(
                ids, expected,
                "{body} does not answer each question once, in order"
            );
            for (question, (_, answer)) in request.questions.iter().zip(answers.iter()) {
                fits(question, answer, body);
            }
            let outcome = Outcome::new(
                "r",
                request,
                &Resolution::Answered(answers.clone()),
                Some("fuzz"),
                DateTime::UNIX_EPOCH,
            );
            for (question, out) in request.questions.iter().zip(&outcome.questions) {
                labels_offered(question, out.mode, &out.answer, &out.choices_offered, body);
            }
            if let Err(e) = serde_json::to_string(&outcome) {
                panic!("the outcome of {body} does not serialize: {e}");
            }
            let canonical = json!({ "answers": answers });
            assert_eq!(
                parse_submission(request, &canonical),
                Ok(Submission::Answered(answers)),
                "the canonical answer body {canonical} of {body} reads back differently"
            );
        }
        Err(e) => assert_code(e.code(), &e.to_string()),
    }
}

/// An accepted answer is one the question offers.
fn fits(question: &Question, answer: &Answer, body: &Value) {
    let free_text = |text: &str| {
        assert!(
            !text.is_empty() && text.trim() == text,
            "{body}: free text {text:?} is empty or untrimmed"
        );
        assert!(
            text.chars().count() <= Limits::MAX_ANSWER_CHARS,
            "{body}: text too long"
        );
    };
    match (&question.kind, answer) {
        (QuestionKind::Open, Answer::Text(text)) => free_text(text),
        (QuestionKind::Single(c), Answer::Option(id)) => {
            assert!(c.by_id(id).is_some(), "{body}: {id:?} is not an option id");
        }
        (QuestionKind::Single(c), Answer::Other(text)) => {
            assert!(
                c.allow_other,
                "{body}: other text on a question without allow_other"
            );
            free_text(text);
        }
        (QuestionKind::Multi(c), Answer::Options { ids, other }) => {
            assert!(
                !ids.is_empty() || other.is_some(),
                "{body}: empty selection accepted"
            );
            let in_order: Vec<&String> = c
                .options
                .iter()
                .map(|o| &o.id)
                .filter(|id| ids.contains(id))
                .collect();
            assert_eq!(
                in_order,
                ids.iter().collect::<Vec<_>>(),
                "{body}: ids are not distinct option ids in the request's order"
            );
            if let Some(text) = other {
                assert!(
                    c.allow_other,
                    "{body}: other text on a question without allow_other"
                );
                free_text(text);
            }
        }
        (QuestionKind::Approval(a), Answer::Approval(answer)) => {
            let deny_once = answer.decision == Decision::Deny && answer.scope == Scope::Once;
            assert!(
                a.scopes.contains(&answer.scope) || deny_once,
                "{body}: scope {} was not offered",
                answer.scope
            );
            if answer.edited_arguments.is_some() {
                assert!(
                    a.allow_edit && answer.decision == Decision::Approve,
                    "{body}: edits accepted where they are not allowed"
                );
            }
            if let Some(reason) = &answer.reason {
                free_text(reason);
            }
        }
        (QuestionKind::Form(form), Answer::Form(values)) => {
            for (id, value) in values {
                let field = form.field(id).unwrap_or_else(|| panic!("{body}: no field {id:?}"));
                assert_eq!(
                    clarify_core::form::check_value(field, value).as_ref(),
                    Ok(value),
                    "{body}: value of {id:?} is not canonical"
                );
            }
        }
        (kind, answer) => panic!("{body}: a {} question got {answer:?}", kind.name()),
    }
}

/// The labels an outcome reports as chosen options are labels the request offered.
fn labels_offered(
    question: &Question,
    mode: Option<Mode>,
    answer: &Value,
    offered: &[String],
    body: &Value,
) {
    let is_offered = |v: &Value| v.as_str().is_some_and(|s| offered.iter().any(|o| o == s));
    match (&question.kind, mode) {
        (QuestionKind::Single(_), Some(Mode::Option)) => {
            assert!(
                is_offered(answer),
                "{body}: outcome answer {answer} was not offered"
            );
        }
        (QuestionKind::Multi(_), Some(Mode::Option)) => {
            let all = answer
                .as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(is_offered));
            assert!(all, "{body}: outcome answer {answer} was not offered");
        }
        (QuestionKind::Multi(_), Some(Mode::Other)) => {
            // The labels first, then the one free text.
            let items = answer.as_array().map(Vec::as_slice).unwrap_or_default();
            let Some((_, labels)) = items.split_last() else {
                panic!("{body}: outcome answer {answer} lacks the other text");
            };
            assert!(
                labels.iter().all(is_offered),
                "{body}: {answer} was not offered"
            );
        }
        (_, None) => panic!("{body}: an answered question has no mode"),
        _ => {}
    }
}

/// Checks a typed reply to `question`, one of `request`'s questions.
pub fn reply(request: &NewRequest, question: &Question, input: &str) {
    match parse_reply(question, request.allow_skip, input) {
        Ok(Reply::Skip) => assert!(
            request.allow_skip,
            "{input:?} skipped an unskippable request"
        ),
        Ok(Reply::Answer(answer)) => {
            let alone = NewRequest {
                questions: vec![question.clone()],
                ..request.clone()
            };
            let body = json!({ "answers": { question.id.clone(): &answer } });
            match parse_submission(&alone, &body) {
                Ok(Submission::Answered(answers)) => assert_eq!(
                    answers.get(&question.id),
                    Some(&answer),
                    "reply {input:?} and its answer body {body} differ"
                ),
                other => panic!(
                    "reply {input:?} to {question:?} was read as {answer:?}, but its answer body {body} gives {other:?}"
                ),
            }
        }
        Err(e) => assert!(!e.to_string().is_empty(), "a reply error has no message"),
    }
}
