//! Decisions that hold up: forms (fields, schema coercion, values), unknown fields, quorum,
//! reminders and escalation, and the default on timeout. Each table names the rule a case
//! checks; every failing case is reported at once.

use chrono::{TimeZone, Utc};
use clarify_core::form::{check_value, value_from_text};
use clarify_core::quorum::{Vote, decide};
use clarify_core::{
    Answer, Limits, Mode, NewRequest, Outcome, QuestionKind, Resolution, Submission, parse_request,
    parse_submission,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Parses each request; `Ok(pattern)` must match the canonical form partially (see
/// `coercion::matches`), `Err((code, message))` exactly (an empty message checks the code only).
/// A case: its name, the raw request, and the canonical pattern or the error (code, message).
type RequestCase<'a> = (&'a str, Value, Result<Value, (&'a str, &'a str)>);

fn check_requests(cases: Vec<RequestCase<'_>>) {
    let mut failures = Vec::new();
    for (name, input, want) in cases {
        let got = parse_request(&input, &Limits::default());
        let ok = match (&want, &got) {
            (Ok(pattern), Ok(r)) => {
                crate::coercion::matches(pattern, &serde_json::to_value(r).expect("serializes"))
            }
            (Err((code, msg)), Err(e)) => {
                e.code() == *code && (msg.is_empty() || e.to_string() == *msg)
            }
            _ => false,
        };
        if !ok {
            let got = got
                .map(|r| serde_json::to_value(r).expect("serializes"))
                .map_err(|e| format!("{}: {e}", e.code()));
            failures.push(format!("{name}:\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn form(fields: Value) -> Value {
    json!({"questions": [{"text": "Trip details", "kind": "form", "fields": fields}]})
}

fn parsed(raw: Value) -> NewRequest {
    parse_request(&raw, &Limits::default()).expect("a valid request")
}

#[test]
fn form_fields_are_validated() {
    let twenty_one: Vec<Value> = (0..21)
        .map(|i| json!({"id": format!("f{i}"), "label": format!("F{i}"), "type": "boolean"}))
        .collect();
    check_requests(vec![
        (
            "every type, with limits and defaults, canonical",
            form(json!([
                {"id": "budget", "label": "Budget", "type": "number", "minimum": 0, "maximum": 5000, "default": 100},
                {"id": "nights", "label": "Nights", "type": "integer", "minimum": 1},
                {"id": "email", "label": "E-mail", "type": "text", "format": "email", "required": false},
                {"label": "Start date", "type": "text", "format": "date"},
                {"id": "ok", "label": "Agree", "type": "boolean", "default": false},
                {"id": "plan", "label": "Plan", "type": "choice", "options": ["Basic", "Pro"]},
                {"id": "extras", "label": "Extras", "type": "choices", "options": ["Wifi", "Breakfast"], "min_items": 1, "max_items": 2}
            ])),
            Ok(json!({"questions": [{"kind": "form", "fields": [
                {"id": "budget", "type": "number", "required": true, "minimum": 0, "maximum": 5000, "default": 100},
                {"id": "nights", "type": "integer", "minimum": 1},
                {"id": "email", "required": false, "format": "email"},
                {"id": "start-date", "label": "Start date", "format": "date"},
                {"id": "ok", "default": false},
                {"id": "plan", "options": [{"id": "basic", "label": "Basic"}, {"id": "pro", "label": "Pro"}]},
                {"id": "extras", "min_items": 1, "max_items": 2}
            ]}]})),
        ),
        (
            "fields without kind make a form",
            json!({"question": "Where?", "fields": [{"id": "city", "label": "City", "type": "text"}]}),
            Ok(json!({"questions": [{"kind": "form"}]})),
        ),
        (
            "no fields",
            form(json!([])),
            Err((
                "no_fields",
                "questions[0].fields: a form question needs at least 1 field",
            )),
        ),
        (
            "more than 20 fields",
            form(Value::Array(twenty_one)),
            Err((
                "too_many_fields",
                "questions[0].fields: at most 20 fields are allowed, got 21",
            )),
        ),
        (
            "duplicate field id",
            form(
                json!([{"id": "a", "label": "A", "type": "text"}, {"id": "a", "label": "B", "type": "text"}]),
            ),
            Err((
                "duplicate_id",
                "questions[0].fields[1].id: the id \"a\" appears twice",
            )),
        ),
        (
            "minimum above maximum",
            form(json!([{"id": "n", "label": "N", "type": "number", "minimum": 10, "maximum": 5}])),
            Err((
                "invalid_range",
                "questions[0].fields[0]: minimum 10 is above maximum 5",
            )),
        ),
        (
            "min_length above max_length",
            form(
                json!([{"id": "t", "label": "T", "type": "text", "min_length": 9, "max_length": 3}]),
            ),
            Err((
                "invalid_range",
                "questions[0].fields[0]: min_length 9 is above max_length 3",
            )),
        ),
        (
            "min_items above max_items",
            form(
                json!([{"id": "c", "label": "C", "type": "choices", "options": ["a", "b", "c"], "min_items": 3, "max_items": 2}]),
            ),
            Err((
                "invalid_range",
                "questions[0].fields[0]: min_items 3 is above max_items 2",
            )),
        ),
        (
            "min_items above the options",
            form(
                json!([{"id": "c", "label": "C", "type": "choices", "options": ["a", "b"], "min_items": 3}]),
            ),
            Err((
                "limit_too_large",
                "questions[0].fields[0].min_items: must be at most 2, got 3",
            )),
        ),
        (
            "invalid pattern",
            form(json!([{"id": "t", "label": "T", "type": "text", "pattern": "([a-z"}])),
            Err(("invalid_pattern", "")),
        ),
        (
            "default outside its own limits",
            form(json!([{"id": "n", "label": "N", "type": "integer", "maximum": 5, "default": 9}])),
            Err((
                "invalid_default",
                "questions[0].fields[0].default: the default does not fit its own field: must be at most 5, got 9",
            )),
        ),
        (
            "default of the wrong type",
            form(json!([{"id": "b", "label": "B", "type": "boolean", "default": "yes"}])),
            Err(("invalid_default", "")),
        ),
        (
            "a limit of another type",
            form(json!([{"id": "b", "label": "B", "type": "boolean", "maximum": 3}])),
            Err((
                "limit_not_allowed",
                "questions[0].fields[0].maximum: a boolean field takes no such limit",
            )),
        ),
        (
            "unknown field type",
            form(json!([{"id": "b", "label": "B", "type": "money"}])),
            Err(("unknown_field_type", "")),
        ),
        (
            "unknown format",
            form(json!([{"id": "b", "label": "B", "type": "text", "format": "phone"}])),
            Err(("unknown_format", "")),
        ),
        (
            "unknown key in a field",
            form(json!([{"id": "b", "label": "B", "type": "text", "maxLength": 3}])),
            Err((
                "unknown_field",
                "questions[0].fields[0].maxLength: unknown field; did you mean max_length?",
            )),
        ),
        (
            "max_length above the answer limit",
            form(json!([{"id": "t", "label": "T", "type": "text", "max_length": 20000}])),
            Err(("limit_too_large", "")),
        ),
        (
            "a choice without options",
            form(json!([{"id": "c", "label": "C", "type": "choice"}])),
            Err(("no_options", "")),
        ),
        (
            "fields on a single question",
            json!({"questions": [{"text": "?", "kind": "single", "options": ["a"], "fields": []}]}),
            Err(("fields_not_allowed", "")),
        ),
        (
            "options on a form",
            json!({"questions": [{"text": "?", "kind": "form", "options": ["a"], "fields": [{"id": "a", "label": "A", "type": "text"}]}]}),
            Err(("options_not_allowed", "")),
        ),
    ]);
}

#[test]
fn a_json_schema_becomes_fields() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 50},
            "email": {"type": "string", "format": "email"},
            "when": {"type": "string", "format": "date-time", "description": "Start"},
            "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
            "tier": {"type": "string", "oneOf": [{"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro"}]},
            "count": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
            "ratio": {"type": "number", "maximum": 1.5},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2}
        },
        "required": ["name", "email"]
    });
    check_requests(vec![
        (
            "elicitation's subset, in the order written",
            json!({"question": "Sign up", "schema": schema}),
            Ok(json!({"questions": [{"kind": "form", "fields": [
                {"id": "name", "label": "Name", "type": "text", "required": true, "min_length": 1, "max_length": 50},
                {"id": "email", "label": "email", "type": "text", "required": true, "format": "email"},
                {"id": "when", "type": "text", "required": false, "format": "datetime", "description": "Start"},
                {"id": "size", "type": "choice", "options": [{"id": "s", "label": "Small"}, {"id": "m", "label": "Medium"}]},
                {"id": "tier", "type": "choice", "options": [{"id": "free", "label": "Free"}, {"id": "pro", "label": "Pro"}]},
                {"id": "count", "type": "integer", "minimum": 1, "maximum": 9, "default": 2},
                {"id": "ratio", "type": "number", "maximum": 1.5},
                {"id": "ok", "type": "boolean"},
                {"id": "tags", "type": "choices", "min_items": 1, "max_items": 2}
            ]}]})),
        ),
        (
            "a nested object",
            json!({"question": "?", "schema": {"type": "object", "properties": {"a": {"type": "object"}}}}),
            Err((
                "unsupported_schema",
                "questions[0].schema.properties.a.type: is not supported in a form; use string, number, integer, boolean or array",
            )),
        ),
        (
            "an exclusive bound is not dropped",
            json!({"question": "?", "schema": {"type": "object", "properties": {"a": {"type": "number", "exclusiveMinimum": 0}}}}),
            Err((
                "unsupported_schema",
                "questions[0].schema.properties.a.exclusiveMinimum: this keyword is not supported for this type in a form",
            )),
        ),
        (
            "an unknown format",
            json!({"question": "?", "schema": {"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}}),
            Err(("unsupported_schema", "")),
        ),
        (
            "required names a missing property",
            json!({"question": "?", "schema": {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["b"]}}),
            Err(("unsupported_schema", "")),
        ),
        (
            "array of objects",
            json!({"question": "?", "schema": {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}}}),
            Err(("unsupported_schema", "")),
        ),
        (
            "a schema's limits still hold",
            json!({"question": "?", "schema": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 1}}}}),
            Err(("invalid_range", "")),
        ),
        (
            "both fields and schema",
            json!({"question": "?", "fields": [], "schema": {"type": "object", "properties": {"a": {"type": "boolean"}}}}),
            Err(("unsupported_schema", "")),
        ),
    ]);
}

#[test]
fn unknown_fields_are_refused_by_name() {
    check_requests(vec![
        (
            "a misspelt quorum",
            json!({"question": "Deploy?", "approval_required": 2}),
            Err((
                "unknown_field",
                "approval_required: unknown field; did you mean approvals_required?",
            )),
        ),
        (
            "unknown in a question",
            json!({"questions": [{"text": "?", "hint": "x"}]}),
            Err(("unknown_field", "questions[0].hint: unknown field")),
        ),
        (
            "shorthand question fields need the shorthand",
            json!({"questions": [{"text": "?"}], "header": "H"}),
            Err(("unknown_field", "header: unknown field")),
        ),
        (
            "the shorthand keeps its fields",
            json!({"question": "Pick", "choices": ["a", "b"], "header": "H", "recommended": "a"}),
            Ok(json!({"questions": [{"header": "H", "recommended": "a"}]})),
        ),
        (
            "LLM shapes stay accepted",
            json!({"questions": [{"question": "?", "type": "multiple_choice", "choices": [{"title": "x", "value": 1}], "multi_select": true}]}),
            Ok(json!({"questions": [{"kind": "multi"}]})),
        ),
        (
            "nulls are absent, not unknown",
            json!({"question": "?", "choices": null, "header": null}),
            Ok(json!({})),
        ),
    ]);
}

fn approval_q() -> Value {
    json!({"text": "Deploy?", "kind": "approval", "action": {"name": "deploy", "arguments": {}}})
}

#[test]
fn quorum_reminders_escalation_and_defaults_are_validated() {
    let approvals = |extra: Value| {
        let mut body = json!({"questions": [approval_q()]});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        body
    };
    check_requests(vec![
        (
            "a 2-of-2 approval",
            approvals(json!({"approvals_required": 2, "responders": ["alice", "bob"]})),
            Ok(json!({"approvals_required": 2})),
        ),
        (
            "quorum 1 is the default and not echoed",
            approvals(json!({"approvals_required": 1})),
            Ok(json!({"approvals_required": null})),
        ),
        (
            "quorum above 10",
            approvals(json!({"approvals_required": 11})),
            Err((
                "invalid_quorum",
                "approvals_required: must be a whole number from 1 to 10, got 11",
            )),
        ),
        (
            "quorum 0",
            approvals(json!({"approvals_required": 0})),
            Err(("invalid_quorum", "")),
        ),
        (
            "quorum on a non-approval",
            json!({"question": "Why?", "approvals_required": 2}),
            Err((
                "quorum_needs_approvals",
                "approvals_required: a quorum of 2 needs every question to be an approval; questions[0] is open",
            )),
        ),
        (
            "quorum with edits",
            json!({"questions": [{"text": "?", "kind": "approval", "action": {"name": "x"}, "allow_edit": true}], "approvals_required": 2}),
            Err(("quorum_with_edit", "")),
        ),
        (
            "quorum above the responders",
            approvals(json!({"approvals_required": 3, "responders": ["alice", "bob"]})),
            Err((
                "quorum_unreachable",
                "approvals_required: 3 approvals can never be reached with only 2 allowed responders",
            )),
        ),
        (
            "escalation counts towards reachability",
            approvals(
                json!({"approvals_required": 3, "responders": ["alice", "bob"], "escalate_after_seconds": 60, "escalate_to": ["carol"]}),
            ),
            Ok(json!({"approvals_required": 3})),
        ),
        (
            "a reminder under 60 s",
            approvals(json!({"remind_every_seconds": 30})),
            Err((
                "invalid_schedule",
                "remind_every_seconds: must be a whole number of seconds from 60 to 31536000, got 30",
            )),
        ),
        (
            "a reminder",
            approvals(json!({"remind_every_seconds": 600})),
            Ok(json!({"remind_every_seconds": 600})),
        ),
        (
            "escalate_to empty",
            approvals(json!({"escalate_after_seconds": 60, "escalate_to": []})),
            Err(("empty_field", "escalate_to: must not be empty")),
        ),
        (
            "escalation without whom",
            approvals(json!({"escalate_after_seconds": 60})),
            Err(("invalid_schedule", "")),
        ),
        (
            "escalation without when",
            approvals(json!({"escalate_to": ["carol"]})),
            Err(("invalid_schedule", "")),
        ),
        (
            "escalate after 0 s",
            approvals(json!({"escalate_after_seconds": 0, "escalate_to": ["carol"]})),
            Err(("invalid_schedule", "")),
        ),
        (
            "default deny",
            approvals(json!({"on_timeout": {"decision": "deny", "reason": "nobody answered"}})),
            Ok(json!({"on_timeout": {"decision": "deny", "reason": "nobody answered"}})),
        ),
        (
            "default decision on a single",
            json!({"question": "Pick", "choices": ["a", "b"], "on_timeout": {"decision": "approve"}}),
            Err(("invalid_on_timeout", "")),
        ),
        (
            "default option",
            json!({"question": "Pick", "choices": ["Alpha", "Beta"], "on_timeout": {"option": "Beta"}}),
            Ok(json!({"on_timeout": {"option": "beta"}})),
        ),
        (
            "default option that does not exist",
            json!({"question": "Pick", "choices": ["a", "b"], "on_timeout": {"option": "c"}}),
            Err((
                "invalid_on_timeout",
                "on_timeout: \"c\" is not an option of the question; its options are a, b",
            )),
        ),
        (
            "recommended without a recommendation",
            json!({"question": "Pick", "choices": ["a", "b"], "on_timeout": "recommended"}),
            Err(("invalid_on_timeout", "")),
        ),
        (
            "recommended",
            json!({"question": "Pick", "choices": ["a", "b"], "recommended": "b", "on_timeout": "recommended"}),
            Ok(json!({"on_timeout": "recommended"})),
        ),
        (
            "a default on a request that never expires",
            approvals(json!({"timeout_seconds": 0, "on_timeout": {"decision": "deny"}})),
            Err(("invalid_on_timeout", "")),
        ),
        (
            "a decision that is not one",
            approvals(json!({"on_timeout": {"decision": "maybe"}})),
            Err(("invalid_on_timeout", "")),
        ),
    ]);
}

/// A form request exercising every type.
fn trip() -> NewRequest {
    parsed(form(json!([
        {"id": "budget", "label": "Budget", "type": "number", "minimum": 0, "maximum": 5000},
        {"id": "nights", "label": "Nights", "type": "integer", "minimum": 1, "default": 2},
        {"id": "email", "label": "E-mail", "type": "text", "format": "email", "required": false},
        {"id": "start", "label": "Start", "type": "text", "format": "date", "required": false},
        {"id": "at", "label": "At", "type": "text", "format": "datetime", "required": false},
        {"id": "site", "label": "Site", "type": "text", "format": "url", "required": false},
        {"id": "code", "label": "Code", "type": "text", "pattern": "^[A-Z]{3}$", "required": false},
        {"id": "ok", "label": "Agree", "type": "boolean", "required": false},
        {"id": "plan", "label": "Plan", "type": "choice", "options": ["Basic", "Pro"], "required": false},
        {"id": "extras", "label": "Extras", "type": "choices", "options": ["Wifi", "Breakfast", "Parking"], "max_items": 2, "required": false}
    ])))
}

#[test]
fn form_answers_name_the_field_and_the_limit() {
    let request = trip();
    let answer = |values: Value| parse_submission(&request, &json!({"values": values}));
    let cases: Vec<(&str, Value, Result<Value, &str>)> = vec![
        (
            "typed values, canonical, defaults applied",
            json!({"budget": 1200.5, "email": " a@b.io ", "plan": "Pro", "extras": ["parking", "wifi"], "ok": true}),
            Ok(
                json!({"budget": 1200.5, "nights": 2, "email": "a@b.io", "ok": true, "plan": "pro", "extras": ["wifi", "parking"]}),
            ),
        ),
        (
            "above the maximum",
            json!({"budget": 9000}),
            Err("answers.q1.values.budget: must be at most 5000, got 9000"),
        ),
        (
            "below the minimum",
            json!({"budget": -1}),
            Err("answers.q1.values.budget: must be at least 0, got -1"),
        ),
        (
            "a required field missing",
            json!({"nights": 1}),
            Err("answers.q1.values.budget: is required"),
        ),
        (
            "a number as text",
            json!({"budget": "12"}),
            Err("answers.q1.values.budget: must be a number, got a string"),
        ),
        (
            "a fraction for an integer",
            json!({"budget": 1, "nights": 1.5}),
            Err("answers.q1.values.nights: must be a whole number, got 1.5"),
        ),
        (
            "a bad e-mail",
            json!({"budget": 1, "email": "a@b"}),
            Err(
                "answers.q1.values.email: must be an e-mail address such as name@example.com, got \"a@b\"",
            ),
        ),
        (
            "a bad date",
            json!({"budget": 1, "start": "2026-13-01"}),
            Err("answers.q1.values.start: must be a date as YYYY-MM-DD, got \"2026-13-01\""),
        ),
        (
            "a datetime without a zone",
            json!({"budget": 1, "at": "2026-12-01T10:00"}),
            Err(""),
        ),
        (
            "a datetime",
            json!({"budget": 1, "at": "2026-12-01T10:00:00+01:00"}),
            Ok(json!({"at": "2026-12-01T10:00:00+01:00"})),
        ),
        (
            "a url that is not http",
            json!({"budget": 1, "site": "ftp://x.y"}),
            Err("answers.q1.values.site: must be an http or https URL, got \"ftp://x.y\""),
        ),
        (
            "a pattern",
            json!({"budget": 1, "code": "abc"}),
            Err("answers.q1.values.code: must match the pattern \"^[A-Z]{3}$\", got \"abc\""),
        ),
        (
            "an unknown option",
            json!({"budget": 1, "plan": "gold"}),
            Err("answers.q1.values.plan: \"gold\" is not an option; the options are basic, pro"),
        ),
        (
            "too many choices",
            json!({"budget": 1, "extras": ["wifi", "breakfast", "parking"]}),
            Err("answers.q1.values.extras: choose at most 2 options, got 3"),
        ),
        (
            "an unknown field",
            json!({"budget": 1, "colour": "red"}),
            Err(
                "answers.q1.values.colour: the form has no such field; its fields are budget, nights, email, start, at, site, code, ok, plan, extras",
            ),
        ),
        (
            "a boolean as text",
            json!({"budget": 1, "ok": "yes"}),
            Err("answers.q1.values.ok: must be true or false, got a string"),
        ),
    ];
    let mut failures = Vec::new();
    for (name, values, want) in cases {
        let got = answer(values);
        let ok = match (&want, &got) {
            (Ok(pattern), Ok(Submission::Answered(a))) => {
                let values = a.get("q1").and_then(Answer::form_values).map(Value::Object);
                values.is_some_and(|v| crate::coercion::matches(pattern, &v))
            }
            (Err(msg), Err(e)) => msg.is_empty() || e.to_string() == *msg,
            _ => false,
        };
        if !ok {
            failures.push(format!("{name}:\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let refused = answer(json!({"budget": 9000})).expect_err("refused");
    assert_eq!(refused.code(), "invalid_value");
    assert_eq!(refused.path().as_deref(), Some("answers.q1.values.budget"));
    let missing = answer(json!({})).expect_err("refused");
    assert_eq!(missing.code(), "missing_value");
    assert!(
        parse_submission(&request, &json!({"text": "no"})).is_err(),
        "a form takes values only"
    );
}

#[test]
fn typed_text_becomes_a_value_the_checks_accept() {
    let request = trip();
    let QuestionKind::Form(form) = &request.questions[0].kind else {
        panic!("a form");
    };
    let field = |id: &str| form.field(id).expect("field").clone();
    type TextCase<'a> = (&'a str, &'a str, Result<Option<Value>, ()>);
    let cases: Vec<TextCase<'_>> = vec![
        ("budget", "1200", Ok(Some(json!(1200)))),
        ("budget", "12.5", Ok(Some(json!(12.5)))),
        ("budget", "lots", Err(())),
        ("nights", "3", Ok(Some(json!(3)))),
        ("nights", "", Ok(None)),
        ("ok", "Yes", Ok(Some(json!(true)))),
        ("ok", "n", Ok(Some(json!(false)))),
        ("ok", "perhaps", Err(())),
        ("plan", "2", Ok(Some(json!("pro")))),
        ("plan", "b", Ok(Some(json!("pro")))),
        ("plan", "basic", Ok(Some(json!("basic")))),
        ("extras", "1, 3", Ok(Some(json!(["wifi", "parking"])))),
        ("extras", "Breakfast", Ok(Some(json!(["breakfast"])))),
        ("extras", "1 9", Err(())),
        (
            "at",
            "2026-12-01T10:30",
            Ok(Some(json!("2026-12-01T10:30:00Z"))),
        ),
        ("email", " x@y.io ", Ok(Some(json!("x@y.io")))),
    ];
    for (id, text, want) in cases {
        let got = value_from_text(&field(id), text);
        match (&want, &got) {
            (Ok(v), Ok(g)) => assert_eq!(v, g, "{id} {text:?}"),
            (Err(()), Err(_)) => {}
            _ => panic!("{id} {text:?}: want {want:?}, got {got:?}"),
        }
        if let Ok(Some(v)) = got {
            check_value(&field(id), &v).expect("a converted value passes its field's checks");
        }
    }
}

fn at(s: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + s, 0)
        .single()
        .expect("a time")
}

fn vote(request: &NewRequest, by: &str, body: Value, s: i64) -> Vote {
    match parse_submission(request, &body).expect("a valid vote") {
        Submission::Answered(a) => Vote::new(by, a, at(s)),
        Submission::Skipped => panic!("not a vote"),
    }
}

#[test]
fn votes_decide_a_quorum() {
    let request = parsed(json!({
        "questions": [{"text": "Deploy?", "kind": "approval", "action": {"name": "deploy"}, "scopes": ["once", "session", "always"]}],
        "approvals_required": 2,
    }));
    let approve = |scope: &str| json!({"decision": "approve", "scope": scope});
    let alice = vote(&request, "alice", approve("always"), 1);
    assert_eq!(
        decide(&request, std::slice::from_ref(&alice)),
        None,
        "one of two is not enough"
    );
    let bob = vote(&request, "bob", approve("session"), 2);
    let answers = decide(&request, &[alice.clone(), bob]).expect("two approvals decide");
    let Some(Answer::Approval(a)) = answers.get("q1") else {
        panic!("an approval answer");
    };
    assert_eq!(a.scope.as_str(), "session", "the narrowest scope approved");

    let carol = vote(
        &request,
        "carol",
        json!({"decision": "deny", "reason": "not on Friday"}),
        3,
    );
    assert_eq!(carol.decision.as_str(), "deny");
    let answers = decide(&request, &[alice, carol]).expect("a deny is final");
    let Some(Answer::Approval(a)) = answers.get("q1") else {
        panic!("an approval answer");
    };
    assert_eq!(a.decision.as_str(), "deny");
    assert_eq!(a.reason.as_deref(), Some("not on Friday"));

    // A request for changes is no approval, and final like a deny.
    let dave = vote(
        &request,
        "dave",
        json!({"decision": "revise", "reason": "roll out to one region first"}),
        4,
    );
    assert_eq!(dave.decision.as_str(), "revise");
    let first = vote(&request, "alice", approve("always"), 1);
    let answers = decide(&request, &[first, dave]).expect("a request for changes is final");
    let Some(Answer::Approval(a)) = answers.get("q1") else {
        panic!("an approval answer");
    };
    assert_eq!(a.decision.as_str(), "revise");
    assert_eq!(a.reason.as_deref(), Some("roll out to one region first"));
}

#[test]
fn an_expired_request_carries_its_default() {
    let deny = parsed(json!({"questions": [approval_q()], "timeout_seconds": 600,
        "on_timeout": {"decision": "deny", "reason": "no one around"}}));
    let outcome = Outcome::new("r1", &deny, &Resolution::Expired, None, at(0));
    let json = serde_json::to_value(&outcome).expect("serializes");
    assert_eq!(json["status"], "expired");
    assert_eq!(json["default_applied"], true);
    assert_eq!(json["questions"][0]["answer"], "deny");
    assert_eq!(json["questions"][0]["mode"], "default");
    assert_eq!(json["questions"][0]["reason"], "no one around");
    let note = json["note"].as_str().expect("a note");
    assert!(
        note.contains("within 10 minutes")
            && note.contains("default")
            && note.contains("deny (no one around)"),
        "{note}"
    );

    let pick = parsed(
        json!({"question": "Pick", "choices": ["Alpha", "Beta"], "recommended": "Beta", "on_timeout": "recommended"}),
    );
    let outcome = Outcome::new("r2", &pick, &Resolution::Expired, None, at(0));
    assert_eq!(outcome.questions[0].answer, json!("Beta"));
    assert_eq!(outcome.questions[0].mode, Some(Mode::Default));

    let cancelled = Outcome::new("r3", &pick, &Resolution::Cancelled, None, at(0));
    assert!(
        !cancelled.default_applied,
        "only expiry applies the default"
    );
    assert_eq!(cancelled.questions[0].answer, Value::Null);
}

#[test]
fn form_values_have_a_typed_accessor() {
    let request = trip();
    let Ok(Submission::Answered(a)) =
        parse_submission(&request, &json!({"values": {"budget": 10}}))
    else {
        panic!("accepted");
    };
    let outcome = Outcome::new(
        "r1",
        &request,
        &Resolution::Answered(a),
        Some("alice"),
        at(0),
    );
    let values = outcome.form_values("q1").expect("form values");
    assert_eq!(values["budget"], json!(10));
    assert_eq!(values["nights"], json!(2), "the default");
    assert_eq!(outcome.questions[0].mode, Some(Mode::Form));
}

/// Raw values for the trip form: fitting ones and many that are not.
fn raw_values() -> impl Strategy<Value = Value> {
    let budget = prop_oneof![
        (-100.0f64..6000.0).prop_map(|x| json!(x)),
        (-10i64..6000).prop_map(|x| json!(x)),
        Just(json!("12")),
        Just(Value::Null),
    ];
    let nights = prop_oneof![
        (-2i64..9).prop_map(|x| json!(x)),
        Just(json!(2.0)),
        Just(Value::Null)
    ];
    let email = prop_oneof![
        Just(json!("a@b.io")),
        Just(json!(" x@y.co ")),
        Just(json!("nope")),
        Just(Value::Null)
    ];
    let extras = proptest::collection::vec(
        prop_oneof![
            Just("wifi"),
            Just("Breakfast"),
            Just("parking"),
            Just("gold")
        ],
        0..4,
    )
    .prop_map(|v| json!(v));
    let plan = prop_oneof![
        Just(json!("Basic")),
        Just(json!("pro")),
        Just(json!(2)),
        Just(Value::Null)
    ];
    let start = prop_oneof![
        Just(json!("2026-02-28")),
        Just(json!("2026-02-30")),
        Just(Value::Null)
    ];
    (budget, nights, email, extras, plan, start).prop_map(|(b, n, e, x, p, s)| {
        json!({"budget": b, "nights": n, "email": e, "extras": x, "plan": p, "start": s})
    })
}

proptest! {
    /// A form answer the parser accepted, sent again as its canonical body, is accepted as the
    /// same answer.
    #[test]
    fn accepted_form_answers_are_accepted_again(values in raw_values()) {
        let request = trip();
        if let Ok(Submission::Answered(first)) = parse_submission(&request, &json!({"values": values})) {
            let canonical = json!({"answers": first});
            let again = parse_submission(&request, &canonical);
            prop_assert_eq!(again, Ok(Submission::Answered(first)));
        }
    }
}
