//! Validation rules of the contract's Domain section: each refusal by its stable code and its
//! exact message (which names the field path), each acceptance by the value it produces.

use clarify_core::{Limits, LimitsError, parse_request, validate};
use serde_json::{Value, json};

use crate::coercion::matches;

/// What a case expects: a pattern of the accepted request (see [`matches`]), or a refusal.
enum Want {
    Ok(Value),
    Err(&'static str, String),
}

fn err(code: &'static str, message: impl Into<String>) -> Want {
    Want::Err(code, message.into())
}

/// Parses every input against `limits`; reports every failing case at once.
fn check_with(limits: Limits, cases: Vec<(&str, Value, Want)>) {
    let mut failures = Vec::new();
    for (name, input, want) in cases {
        let got = parse_request(&input, &limits);
        let ok = match (&want, &got) {
            (Want::Ok(pattern), Ok(request)) => {
                matches(pattern, &serde_json::to_value(request).expect("serializes"))
            }
            (Want::Err(code, message), Err(e)) => e.code() == *code && e.to_string() == *message,
            _ => false,
        };
        if !ok {
            let want = match want {
                Want::Ok(v) => format!("Ok({v})"),
                Want::Err(code, message) => format!("Err({code}: {message})"),
            };
            let got = match got {
                Ok(r) => format!("Ok({})", serde_json::to_value(r).expect("serializes")),
                Err(e) => format!("Err({}: {e})", e.code()),
            };
            failures.push(format!("{name}:\n  want {want}\n  got  {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn check(cases: Vec<(&str, Value, Want)>) {
    check_with(Limits::default(), cases);
}

/// A request with one question built from `question`.
fn one(question: Value) -> Value {
    json!({"questions": [question]})
}

/// A one-question request with extra request fields.
fn with(fields: Value) -> Value {
    let mut body = json!({"questions": [{"text": "Why?"}]});
    for (k, v) in fields.as_object().expect("an object") {
        body[k] = v.clone();
    }
    body
}

fn labels(n: usize) -> Value {
    (1..=n).map(|i| format!("Option {i}")).collect()
}

#[test]
fn question_count() {
    let q = |n: usize| json!({"questions": vec![json!({"text": "Why?"}); n]});
    check(vec![
        (
            "0 questions",
            json!({"questions": []}),
            err("no_questions", "questions: at least 1 question is required"),
        ),
        (
            "1 question",
            q(1),
            Want::Ok(json!({"questions": [{"id": "q1"}]})),
        ),
        (
            "5 questions get ids q1..q5",
            q(5),
            Want::Ok(
                json!({"questions": [{"id": "q1"}, {"id": "q2"}, {"id": "q3"}, {"id": "q4"}, {"id": "q5"}]}),
            ),
        ),
        (
            "6 questions",
            q(6),
            err(
                "too_many_questions",
                "questions: at most 5 questions are allowed, got 6",
            ),
        ),
    ]);
}

#[test]
fn question_text_and_header() {
    let long = |n: usize| "é".repeat(n);
    check(vec![
        (
            "text is trimmed",
            one(json!({"text": "  Why?\n"})),
            Want::Ok(json!({"questions": [{"text": "Why?"}]})),
        ),
        (
            "empty text",
            one(json!({"text": "   "})),
            err("empty_field", "questions[0].text: must not be empty"),
        ),
        (
            "missing text",
            one(json!({"kind": "open"})),
            err("missing_field", "questions[0].text: is required"),
        ),
        (
            "missing text on the second question",
            json!({"questions": [{"text": "A?"}, {"header": "B"}]}),
            err("missing_field", "questions[1].text: is required"),
        ),
        (
            "exactly 4000 characters (not bytes) is fine",
            one(json!({"text": format!(" {} ", long(4000))})),
            Want::Ok(json!({"questions": [{"text": long(4000)}]})),
        ),
        (
            "4001 characters",
            one(json!({"text": long(4001)})),
            err(
                "too_long",
                "questions[0].text: at most 4000 characters are allowed, got 4001",
            ),
        ),
        (
            "a 32-character header",
            one(json!({"text": "Why?", "header": "h".repeat(32)})),
            Want::Ok(json!({"questions": [{"header": "h".repeat(32)}]})),
        ),
        (
            "a 33-character header",
            one(json!({"text": "Why?", "header": "h".repeat(33)})),
            err(
                "too_long",
                "questions[0].header: at most 32 characters are allowed, got 33",
            ),
        ),
        (
            "a blank header is absent",
            one(json!({"text": "Why?", "header": "  "})),
            Want::Ok(json!({"questions": [{"header": null}]})),
        ),
    ]);
}

#[test]
fn option_count() {
    let choice = |n: usize| one(json!({"text": "Which?", "options": labels(n)}));
    check(vec![
        (
            "1 option",
            choice(1),
            Want::Ok(json!({"questions": [{"options": [{"id": "option-1"}]}]})),
        ),
        (
            "4 options",
            choice(4),
            Want::Ok(json!({"questions": [{"kind": "single", "options": [{}, {}, {}, {}]}]})),
        ),
        (
            "5 options are refused, not truncated",
            choice(5),
            err(
                "too_many_options",
                "questions[0].options: at most 4 options are allowed, got 5",
            ),
        ),
        (
            "5 options on multi",
            one(json!({"text": "Which?", "kind": "multi", "options": labels(5)})),
            err(
                "too_many_options",
                "questions[0].options: at most 4 options are allowed, got 5",
            ),
        ),
        (
            "options missing on single",
            one(json!({"text": "Which?", "kind": "single"})),
            err(
                "no_options",
                "questions[0].options: a single question needs at least 1 option",
            ),
        ),
        (
            "options missing on multi",
            one(json!({"text": "Which?", "kind": "multi"})),
            err(
                "no_options",
                "questions[0].options: a multi question needs at least 1 option",
            ),
        ),
        (
            "every option dropped",
            one(json!({"text": "Which?", "options": ["", {"name": "x"}]})),
            err(
                "all_options_dropped",
                "questions[0].options: none of the 2 options has a usable label (label, description, text or title); give each option a label",
            ),
        ),
        (
            "every choice dropped names the field as written",
            json!({"question": "Which?", "choices": [null]}),
            err(
                "all_options_dropped",
                "questions[0].choices: none of the 1 options has a usable label (label, description, text or title); give each option a label",
            ),
        ),
    ]);
    let limits = Limits::new(24, 3600).expect("24 is allowed");
    check_with(
        limits,
        vec![
            (
                "24 options with max_options 24",
                choice(24),
                Want::Ok(json!({"questions": [{"options": vec![json!({}); 24]}]})),
            ),
            (
                "25 options with max_options 24",
                choice(25),
                err(
                    "too_many_options",
                    "questions[0].options: at most 24 options are allowed, got 25",
                ),
            ),
        ],
    );
}

#[test]
fn limits_settings() {
    assert_eq!(Limits::default().max_options(), 4);
    assert_eq!(Limits::default().default_timeout_seconds(), 3600);
    let cases: Vec<(usize, u64, Result<(), String>)> = vec![
        (1, 0, Ok(())),
        (24, 31_536_000, Ok(())),
        (
            25,
            3600,
            Err("max_options must be between 1 and 24, got 25".to_owned()),
        ),
        (
            0,
            3600,
            Err("max_options must be between 1 and 24, got 0".to_owned()),
        ),
        (
            4,
            31_536_001,
            Err(
                "the default timeout must be between 0 and 31536000 seconds, got 31536001"
                    .to_owned(),
            ),
        ),
    ];
    for (max_options, timeout, want) in cases {
        let got = Limits::new(max_options, timeout)
            .map(|_| ())
            .map_err(|e: LimitsError| e.to_string());
        assert_eq!(got, want, "Limits::new({max_options}, {timeout})");
    }
}

#[test]
fn labels_and_ids() {
    let choice = |options: Value| one(json!({"text": "Which?", "options": options}));
    check(vec![
        (
            "duplicate labels ignoring case",
            choice(json!(["Yes", "yes"])),
            err(
                "duplicate_label",
                "questions[0].options: the label \"yes\" appears twice (labels must differ ignoring case)",
            ),
        ),
        (
            "duplicate labels after trimming",
            choice(json!(["No", {"label": " NO "}])),
            err(
                "duplicate_label",
                "questions[0].options: the label \"NO\" appears twice (labels must differ ignoring case)",
            ),
        ),
        (
            "duplicate option ids",
            choice(json!([{"id": "a", "label": "A"}, {"id": "a", "label": "B"}])),
            err(
                "duplicate_id",
                "questions[0].options[1].id: the id \"a\" appears twice",
            ),
        ),
        (
            "duplicate question ids",
            json!({"questions": [{"id": "x", "text": "A?"}, {"id": "x", "text": "B?"}]}),
            err(
                "duplicate_id",
                "questions[1].id: the id \"x\" appears twice",
            ),
        ),
        (
            "an explicit id colliding with a later default id",
            json!({"questions": [{"id": "q2", "text": "A?"}, {"text": "B?"}]}),
            err(
                "duplicate_id",
                "questions[1].id: the id \"q2\" appears twice",
            ),
        ),
        (
            "explicit question ids are kept, the rest numbered by position",
            json!({"questions": [{"text": "A?"}, {"id": "second", "text": "B?"}, {"text": "C?"}]}),
            Want::Ok(json!({"questions": [{"id": "q1"}, {"id": "second"}, {"id": "q3"}]})),
        ),
        (
            "option ids are slugs of the labels, made unique",
            choice(json!(["Yes, deploy it!", "A+B", "a b", {"id": "no", "label": "Maybe"}])),
            Want::Ok(json!({"questions": [{"options": [
                {"id": "yes-deploy-it"}, {"id": "a-b"}, {"id": "a-b-2"}, {"id": "no"}]}]})),
        ),
        (
            "a slug that an explicit id already took gets a suffix",
            choice(json!([{"id": "yes", "label": "Sure"}, "Yes"])),
            Want::Ok(json!({"questions": [{"options": [{"id": "yes"}, {"id": "yes-2"}]}]})),
        ),
        (
            "labels without ASCII letters or digits are numbered",
            choice(json!(["日本", "中国"])),
            Want::Ok(
                json!({"questions": [{"options": [{"id": "option-1", "label": "日本"}, {"id": "option-2", "label": "中国"}]}]}),
            ),
        ),
        (
            "an invalid question id",
            one(json!({"id": "my question", "text": "Why?"})),
            err(
                "invalid_id",
                "questions[0].id: \"my question\" is not a valid id; use 1 to 64 letters, digits, '-', '_' or '.'",
            ),
        ),
        (
            "a 65-character question id",
            one(json!({"id": "a".repeat(65), "text": "Why?"})),
            err(
                "invalid_id",
                format!(
                    "questions[0].id: \"{}\" is not a valid id; use 1 to 64 letters, digits, '-', '_' or '.'",
                    "a".repeat(65)
                ),
            ),
        ),
        (
            "a 100,000-character question id is quoted short",
            one(json!({"id": "a".repeat(100_000), "text": "Why?"})),
            err(
                "invalid_id",
                format!(
                    "questions[0].id: \"{}\"… (100000 characters) is not a valid id; use 1 to 64 letters, digits, '-', '_' or '.'",
                    "a".repeat(80)
                ),
            ),
        ),
        (
            "an invalid option id",
            choice(json!([{"id": "a/b", "label": "A"}])),
            err(
                "invalid_id",
                "questions[0].options[0].id: \"a/b\" is not a valid id; use 1 to 64 letters, digits, '-', '_' or '.'",
            ),
        ),
        (
            "valid id characters",
            one(json!({"id": "Q_1.a-b", "text": "Why?"})),
            Want::Ok(json!({"questions": [{"id": "Q_1.a-b"}]})),
        ),
        (
            "a 201-character label",
            choice(json!(["x".repeat(201)])),
            err(
                "too_long",
                "questions[0].options[0].label: at most 200 characters are allowed, got 201",
            ),
        ),
        (
            "a 1001-character description",
            choice(json!([{"label": "A", "description": "d".repeat(1001)}])),
            err(
                "too_long",
                "questions[0].options[0].description: at most 1000 characters are allowed, got 1001",
            ),
        ),
    ]);
}

#[test]
fn kinds_and_recommended() {
    check(vec![
        (
            "unknown kind",
            one(json!({"text": "Why?", "kind": "essay"})),
            err(
                "unknown_kind",
                "questions[0].kind: unknown kind \"essay\"; use open, single, multi, approval or form",
            ),
        ),
        (
            "options on an open question",
            one(json!({"text": "Why?", "kind": "open", "options": ["A"]})),
            err(
                "options_not_allowed",
                "questions[0].options: open questions take no options; use kind single or multi",
            ),
        ),
        (
            "options on an approval",
            one(
                json!({"text": "Go?", "kind": "approval", "action": {"name": "go"}, "options": ["A"]}),
            ),
            err(
                "options_not_allowed",
                "questions[0].options: approval questions take no options; use kind single or multi",
            ),
        ),
        (
            "allow_other defaults to true",
            one(json!({"text": "Which?", "options": ["A"]})),
            Want::Ok(json!({"questions": [{"allow_other": true}]})),
        ),
        (
            "allow_other false",
            one(json!({"text": "Which?", "options": ["A"], "allow_other": false})),
            Want::Ok(json!({"questions": [{"allow_other": false}]})),
        ),
        (
            "recommended by id",
            one(
                json!({"text": "Which?", "options": [{"id": "pg", "label": "Postgres"}, "SQLite"], "recommended": "pg"}),
            ),
            Want::Ok(json!({"questions": [{"recommended": "pg"}]})),
        ),
        (
            "recommended by label, ignoring case, becomes the id",
            one(
                json!({"text": "Which?", "options": [{"id": "pg", "label": "Postgres"}, "SQLite"], "recommended": "POSTGRES"}),
            ),
            Want::Ok(json!({"questions": [{"recommended": "pg"}]})),
        ),
        (
            "recommended naming no option",
            one(
                json!({"text": "Which?", "options": ["Postgres", "SQLite"], "recommended": "MySQL"}),
            ),
            err(
                "unknown_recommended",
                "questions[0].recommended: \"MySQL\" is neither the id nor the label of an option",
            ),
        ),
    ]);
}

#[test]
fn approvals() {
    let approval = |extra: Value| {
        let mut q = json!({"text": "Deploy?", "kind": "approval", "action": {"name": "deploy", "arguments": {"env": "prod"}}});
        for (k, v) in extra.as_object().expect("an object") {
            q[k] = v.clone();
        }
        one(q)
    };
    check(vec![
        (
            "defaults: scopes once, allow_edit false",
            approval(json!({})),
            Want::Ok(
                json!({"questions": [{"kind": "approval", "scopes": ["once"], "allow_edit": false,
                                           "action": {"name": "deploy", "arguments": {"env": "prod"}}}]}),
            ),
        ),
        (
            "all scopes, in canonical order, without repeats",
            approval(
                json!({"scopes": ["always", "Session", "once", "always"], "allow_edit": true}),
            ),
            Want::Ok(
                json!({"questions": [{"scopes": ["once", "session", "always"], "allow_edit": true}]}),
            ),
        ),
        (
            "a subset of scopes",
            approval(json!({"scopes": ["session"]})),
            Want::Ok(json!({"questions": [{"scopes": ["session"]}]})),
        ),
        (
            "an unknown scope",
            approval(json!({"scopes": ["once", "forever"]})),
            err(
                "unknown_scope",
                "questions[0].scopes[1]: unknown scope \"forever\"; use once, session or always",
            ),
        ),
        (
            "an empty scope list",
            approval(json!({"scopes": []})),
            err("empty_field", "questions[0].scopes: must not be empty"),
        ),
        (
            "no action",
            one(json!({"text": "Deploy?", "kind": "approval"})),
            err(
                "missing_action",
                "questions[0].action: an approval question needs an action with a name",
            ),
        ),
        (
            "an action without a name",
            one(json!({"text": "Deploy?", "kind": "approval", "action": {"arguments": {}}})),
            err(
                "missing_action",
                "questions[0].action: an approval question needs an action with a name",
            ),
        ),
        (
            "arguments default to an empty object",
            one(json!({"text": "Deploy?", "kind": "approval", "action": {"name": "deploy"}})),
            Want::Ok(json!({"questions": [{"action": {"name": "deploy", "arguments": {}}}]})),
        ),
        (
            "arguments as the JSON text a model produced",
            one(
                json!({"text": "Deploy?", "kind": "approval", "action": {"name": "deploy", "arguments": "{\"env\": \"prod\"}"}}),
            ),
            Want::Ok(
                json!({"questions": [{"action": {"name": "deploy", "arguments": {"env": "prod"}}}]}),
            ),
        ),
        (
            "arguments over 64 KiB",
            one(
                json!({"text": "Deploy?", "kind": "approval", "action": {"name": "deploy", "arguments": {"x": "a".repeat(70_000)}}}),
            ),
            err(
                "json_too_large",
                "questions[0].action.arguments: at most 65536 bytes of JSON are allowed, got 70008",
            ),
        ),
    ]);
}

#[test]
fn request_fields() {
    let tags = |n: usize| (1..=n).map(|i| format!("t{i}")).collect::<Value>();
    check(vec![
        (
            "defaults",
            with(json!({})),
            Want::Ok(
                json!({"timeout_seconds": 3600, "allow_skip": true, "tags": [], "responders": null,
                            "callback_url": null, "context": null, "session": null, "dedupe": false}),
            ),
        ),
        (
            "10 tags",
            with(json!({"tags": tags(10)})),
            Want::Ok(json!({"tags": tags(10)})),
        ),
        (
            "11 tags",
            with(json!({"tags": tags(11)})),
            err("too_many_tags", "tags: at most 10 tags are allowed, got 11"),
        ),
        (
            "an empty tag",
            with(json!({"tags": ["a", " "]})),
            err("empty_field", "tags[1]: must not be empty"),
        ),
        (
            "timeout 0 never expires",
            with(json!({"timeout_seconds": 0})),
            Want::Ok(json!({"timeout_seconds": 0})),
        ),
        (
            "a whole float timeout",
            with(json!({"timeout_seconds": 600.0})),
            Want::Ok(json!({"timeout_seconds": 600})),
        ),
        (
            "a one-year timeout",
            with(json!({"timeout_seconds": 31_536_000})),
            Want::Ok(json!({"timeout_seconds": 31_536_000})),
        ),
        (
            "a negative timeout",
            with(json!({"timeout_seconds": -1})),
            err(
                "invalid_timeout",
                "timeout_seconds: must be a whole number of seconds from 0 (never expires) to 31536000, got -1",
            ),
        ),
        (
            "a fractional timeout",
            with(json!({"timeout_seconds": 1.5})),
            err(
                "invalid_timeout",
                "timeout_seconds: must be a whole number of seconds from 0 (never expires) to 31536000, got 1.5",
            ),
        ),
        (
            "a timeout over a year",
            with(json!({"timeout_seconds": 31_536_001})),
            err(
                "invalid_timeout",
                "timeout_seconds: must be a whole number of seconds from 0 (never expires) to 31536000, got 31536001",
            ),
        ),
        (
            "a huge timeout",
            with(json!({"timeout_seconds": 1e300})),
            err(
                "invalid_timeout",
                "timeout_seconds: must be a whole number of seconds from 0 (never expires) to 31536000, got 1e+300",
            ),
        ),
        (
            "the largest integer as a timeout",
            with(json!({"timeout_seconds": u64::MAX})),
            err(
                "invalid_timeout",
                "timeout_seconds: must be a whole number of seconds from 0 (never expires) to 31536000, got 18446744073709551615",
            ),
        ),
        (
            "allow_skip false",
            with(json!({"allow_skip": false})),
            Want::Ok(json!({"allow_skip": false})),
        ),
        (
            "responders",
            with(json!({"responders": ["alice", " bob ", "alice"]})),
            Want::Ok(json!({"responders": ["alice", "bob"]})),
        ),
        (
            "an empty responder list would make the request unanswerable",
            with(json!({"responders": []})),
            err("empty_field", "responders: must not be empty"),
        ),
        (
            "an https callback",
            with(json!({"callback_url": "https://example.com/hook?x=1"})),
            Want::Ok(json!({"callback_url": "https://example.com/hook?x=1"})),
        ),
        (
            "an http callback",
            with(json!({"callback_url": "http://10.0.0.1:8080/cb"})),
            Want::Ok(json!({"callback_url": "http://10.0.0.1:8080/cb"})),
        ),
        (
            "an ftp callback",
            with(json!({"callback_url": "ftp://example.com/x"})),
            err(
                "invalid_url",
                "callback_url: must be an http or https URL with a host",
            ),
        ),
        (
            "a callback that is not a URL",
            with(json!({"callback_url": "example.com/hook"})),
            err(
                "invalid_url",
                "callback_url: not a valid URL (relative URL without a base)",
            ),
        ),
        (
            "context as text, trimmed",
            with(json!({"context": "  the diff  "})),
            Want::Ok(json!({"context": "the diff"})),
        ),
        (
            "context as an object",
            with(json!({"context": {"file": "a.rs", "line": 3}})),
            Want::Ok(json!({"context": {"file": "a.rs", "line": 3}})),
        ),
        (
            "context over 20000 characters",
            with(json!({"context": "c".repeat(20_001)})),
            err(
                "too_long",
                "context: at most 20000 characters are allowed, got 20001",
            ),
        ),
        (
            "a 257-character session",
            with(json!({"session": "s".repeat(257)})),
            err(
                "too_long",
                "session: at most 256 characters are allowed, got 257",
            ),
        ),
        (
            "identifier fields are kept",
            with(
                json!({"session": "s1", "agent": "a1", "tool_call_id": "call_9", "idempotency_key": "k"}),
            ),
            Want::Ok(
                json!({"session": "s1", "agent": "a1", "tool_call_id": "call_9", "idempotency_key": "k"}),
            ),
        ),
    ]);
}

#[test]
fn wrong_json_types_name_the_field() {
    let q = |field: &str, value: Value| {
        let mut q = json!({"text": "Which?", "options": ["A"]});
        q[field] = value;
        one(q)
    };
    let t = |field: &str, expected: &str, got: &str| {
        err(
            "invalid_type",
            format!("{field}: expected {expected}, got {got}"),
        )
    };
    check(vec![
        (
            "questions as text",
            json!({"questions": "why"}),
            t("questions", "a list of questions", "a string"),
        ),
        (
            "a question as a number",
            json!({"questions": [5]}),
            t("questions[0]", "a question object", "a number"),
        ),
        (
            "text as a boolean",
            q("text", json!(true)),
            t("questions[0].text", "a string", "a boolean"),
        ),
        (
            "header as a list",
            q("header", json!(["h"])),
            t("questions[0].header", "a string", "a list"),
        ),
        (
            "id as an object",
            q("id", json!({})),
            t("questions[0].id", "a string", "an object"),
        ),
        (
            "kind as a number",
            q("kind", json!(1)),
            t("questions[0].kind", "a string", "a number"),
        ),
        (
            "options as a number",
            q("options", json!(3)),
            t("questions[0].options", "a list of options", "a number"),
        ),
        (
            "allow_other as text",
            q("allow_other", json!("yes")),
            t("questions[0].allow_other", "true or false", "a string"),
        ),
        (
            "recommended as a list",
            q("recommended", json!(["A"])),
            t("questions[0].recommended", "a string", "a list"),
        ),
        (
            "action as text",
            one(json!({"text": "Go?", "kind": "approval", "action": "deploy"})),
            t(
                "questions[0].action",
                "an object {name, arguments}",
                "a string",
            ),
        ),
        (
            "scopes as text",
            one(
                json!({"text": "Go?", "kind": "approval", "action": {"name": "go"}, "scopes": "once"}),
            ),
            t("questions[0].scopes", "a list of scopes", "a string"),
        ),
        (
            "a scope as a number",
            one(
                json!({"text": "Go?", "kind": "approval", "action": {"name": "go"}, "scopes": [1]}),
            ),
            t("questions[0].scopes[0]", "a scope name", "a number"),
        ),
        (
            "allow_edit as a number",
            one(
                json!({"text": "Go?", "kind": "approval", "action": {"name": "go"}, "allow_edit": 1}),
            ),
            t("questions[0].allow_edit", "true or false", "a number"),
        ),
        (
            "context as a list",
            with(json!({"context": ["x"]})),
            t("context", "a string or a JSON object", "a list"),
        ),
        (
            "session as an object",
            with(json!({"session": {}})),
            t("session", "a string", "an object"),
        ),
        (
            "tags as a number",
            with(json!({"tags": 3})),
            t("tags", "a list of strings", "a number"),
        ),
        (
            "a tag as a number",
            with(json!({"tags": [3]})),
            t("tags[0]", "a string", "a number"),
        ),
        (
            "timeout as text",
            with(json!({"timeout_seconds": "600"})),
            t("timeout_seconds", "a number of seconds", "a string"),
        ),
        (
            "allow_skip as a number",
            with(json!({"allow_skip": 1})),
            t("allow_skip", "true or false", "a number"),
        ),
        (
            "responders as a number",
            with(json!({"responders": 1})),
            t("responders", "a list of names", "a number"),
        ),
        (
            "a responder as a boolean",
            with(json!({"responders": [true]})),
            t("responders[0]", "a string", "a boolean"),
        ),
        (
            "callback_url as a number",
            with(json!({"callback_url": 1})),
            t("callback_url", "a URL string", "a number"),
        ),
        (
            "a number is fine where text is meant",
            q("text", json!(42)),
            Want::Ok(json!({"questions": [{"text": "42"}]})),
        ),
    ]);
}

/// An option that is not an object can reach validation only in the canonical shape.
#[test]
fn canonical_shape_is_checked_too() {
    let got = validate::request(
        &json!({"questions": [{"text": "Which?", "kind": "single", "options": ["A"]}]}),
        &Limits::default(),
    );
    let e = got.expect_err("a bare string option is not canonical");
    assert_eq!(e.code(), "invalid_type");
    assert_eq!(
        e.to_string(),
        "questions[0].options[0]: expected an option object, got a string"
    );
}

#[test]
fn timeout_accessor() {
    let cases: Vec<(Value, Limits, Option<u64>)> = vec![
        (with(json!({})), Limits::default(), Some(3600)),
        (
            with(json!({"timeout_seconds": 600})),
            Limits::default(),
            Some(600),
        ),
        (with(json!({"timeout_seconds": 0})), Limits::default(), None),
        (with(json!({})), Limits::new(4, 0).expect("valid"), None),
        (
            with(json!({})),
            Limits::new(4, 60).expect("valid"),
            Some(60),
        ),
    ];
    for (input, limits, want) in cases {
        let request = parse_request(&input, &limits).expect("valid");
        assert_eq!(request.timeout(), want, "{input} with {limits:?}");
    }
}

#[test]
fn risk() {
    check(vec![
        (
            "absent is normal, left out",
            with(json!({})),
            Want::Ok(json!({"risk": null})),
        ),
        (
            "null is normal",
            with(json!({"risk": null})),
            Want::Ok(json!({"risk": null})),
        ),
        (
            "normal is left out",
            with(json!({"risk": "normal"})),
            Want::Ok(json!({"risk": null})),
        ),
        (
            "high",
            with(json!({"risk": "high"})),
            Want::Ok(json!({"risk": "high"})),
        ),
        (
            "low",
            with(json!({"risk": " low "})),
            Want::Ok(json!({"risk": "low"})),
        ),
        (
            "unknown word",
            with(json!({"risk": "critical"})),
            err(
                "invalid_risk",
                "risk: unknown risk \"critical\"; use low, normal or high",
            ),
        ),
        (
            "not a string",
            with(json!({"risk": 3})),
            err(
                "invalid_type",
                "risk: expected low, normal or high, got a number",
            ),
        ),
    ]);
    // Stored requests read back unchanged: the canonical form is a fixed point with a risk.
    let high = parse_request(&with(json!({"risk": "high"})), &Limits::default()).expect("valid");
    let again = parse_request(
        &serde_json::to_value(&high).expect("serializes"),
        &Limits::default(),
    )
    .expect("valid");
    assert_eq!(again, high);
}
