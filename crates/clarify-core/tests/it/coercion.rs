//! Coercion of LLM-shaped requests: every accepted lineage shape, option reduction, and the
//! errors coercion itself raises.
//!
//! Each case is raw input and either a pattern the parsed request (in its canonical serde form)
//! must match, or the error code. Patterns are partial: only the keys they name are compared, and
//! a `null` in a pattern means the key must be absent or null.

use clarify_core::{Limits, coerce, parse_request};
use serde_json::{Value, json};

/// Whether `got` matches the partial pattern `want` (see the module docs).
pub(crate) fn matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w
            .iter()
            .all(|(k, wv)| matches(wv, g.get(k).unwrap_or(&Value::Null))),
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(a, b)| matches(a, b))
        }
        (w, g) => w == g,
    }
}

type Case = (&'static str, Value, Result<Value, &'static str>);

/// Parses every input with the default limits and compares with the expectation; reports every
/// failing case at once.
fn check(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for (name, input, want) in cases {
        let got = parse_request(&input, &Limits::default());
        let ok = match (&want, &got) {
            (Ok(pattern), Ok(request)) => {
                let value = serde_json::to_value(request).expect("a request serializes");
                matches(pattern, &value)
            }
            (Err(code), Err(e)) => e.code() == *code,
            _ => false,
        };
        if !ok {
            let got = got.map(|r| serde_json::to_value(r).expect("serializes"));
            failures.push(format!("{name}:\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn opts(labels: &[(&str, &str)]) -> Value {
    Value::Array(
        labels
            .iter()
            .map(|(id, label)| json!({"id": id, "label": label, "description": null}))
            .collect(),
    )
}

#[test]
fn lineage_shapes() {
    check(vec![
        (
            "question + choices is a single question",
            json!({"question": "Deploy now?", "choices": ["Yes", "No"]}),
            Ok(json!({"questions": [{
                "id": "q1", "text": "Deploy now?", "kind": "single", "header": null,
                "options": opts(&[("yes", "Yes"), ("no", "No")]),
                "allow_other": true, "recommended": null,
            }]})),
        ),
        (
            "prompt + options + context",
            json!({"prompt": "Which region?", "options": ["EU", "US"], "context": "Deploying v2"}),
            Ok(json!({
                "questions": [{"id": "q1", "text": "Which region?", "kind": "single",
                               "options": opts(&[("eu", "EU"), ("us", "US")])}],
                "context": "Deploying v2",
            })),
        ),
        (
            "question + context alone is an open question",
            json!({"question": "Why did it fail?", "context": {"log": "exit 1"}}),
            Ok(json!({
                "questions": [{"id": "q1", "text": "Why did it fail?", "kind": "open",
                               "options": null, "allow_other": null}],
                "context": {"log": "exit 1"},
            })),
        ),
        (
            "the full questions[] form",
            json!({"questions": [
                {"id": "db", "header": "Database", "text": "Which database?", "kind": "single",
                 "options": [{"id": "pg", "label": "Postgres", "description": "shared state"},
                             {"id": "lite", "label": "SQLite"}],
                 "allow_other": false, "recommended": "pg"},
                {"text": "Anything else?", "kind": "open"},
                {"text": "Which features?", "kind": "multi", "options": ["Auth", "Billing"]},
                {"text": "Run the migration?", "kind": "approval",
                 "action": {"name": "migrate", "arguments": {"to": 7}},
                 "scopes": ["once", "session"], "allow_edit": true}
            ], "session": "s1", "agent": "coder", "tags": ["db"], "tool_call_id": "call_1",
               "timeout_seconds": 600, "allow_skip": false, "responders": ["alice"],
               "callback_url": "https://example.com/hook", "idempotency_key": "k1"}),
            Ok(json!({
                "questions": [
                    {"id": "db", "header": "Database", "text": "Which database?", "kind": "single",
                     "options": [{"id": "pg", "label": "Postgres", "description": "shared state"},
                                 {"id": "lite", "label": "SQLite", "description": null}],
                     "allow_other": false, "recommended": "pg"},
                    {"id": "q2", "text": "Anything else?", "kind": "open"},
                    {"id": "q3", "kind": "multi", "options": opts(&[("auth", "Auth"), ("billing", "Billing")])},
                    {"id": "q4", "kind": "approval",
                     "action": {"name": "migrate", "arguments": {"to": 7}},
                     "scopes": ["once", "session"], "allow_edit": true}
                ],
                "session": "s1", "agent": "coder", "tags": ["db"], "tool_call_id": "call_1",
                "timeout_seconds": 600, "allow_skip": false, "responders": ["alice"],
                "callback_url": "https://example.com/hook", "idempotency_key": "k1",
            })),
        ),
        (
            "top-level multi_select makes the shorthand multi",
            json!({"question": "Which colours?", "choices": ["Red", "Blue"], "multi_select": true}),
            Ok(
                json!({"questions": [{"kind": "multi", "options": opts(&[("red", "Red"), ("blue", "Blue")])}]}),
            ),
        ),
        (
            "multi_select false keeps it single",
            json!({"question": "Which colour?", "choices": ["Red", "Blue"], "multi_select": false}),
            Ok(json!({"questions": [{"kind": "single"}]})),
        ),
        (
            "the shorthand takes the question's other fields from the top level",
            json!({"question": "DB?", "choices": ["A", "B"], "header": "DB", "id": "db",
                   "allow_other": false, "recommended": "B"}),
            Ok(
                json!({"questions": [{"id": "db", "header": "DB", "allow_other": false, "recommended": "b"}]}),
            ),
        ),
        (
            "shorthand with an action is an approval",
            json!({"question": "Delete the branch?", "action": {"name": "git_push", "arguments": {"force": true}}}),
            Ok(
                json!({"questions": [{"kind": "approval", "scopes": ["once"], "allow_edit": false,
                                     "action": {"name": "git_push", "arguments": {"force": true}}}]}),
            ),
        ),
    ]);
}

#[test]
fn question_fields_in_questions_list() {
    check(vec![
        (
            "question is accepted for text, choices for options",
            json!({"questions": [{"question": "Which?", "choices": ["A", "B"]}]}),
            Ok(
                json!({"questions": [{"text": "Which?", "kind": "single", "options": opts(&[("a", "A"), ("b", "B")])}]}),
            ),
        ),
        (
            "prompt is accepted for text",
            json!({"questions": [{"prompt": "Why?"}]}),
            Ok(json!({"questions": [{"text": "Why?", "kind": "open"}]})),
        ),
        (
            "type is accepted for kind",
            json!({"questions": [{"text": "Which?", "type": "multi", "options": ["A", "B"]}]}),
            Ok(json!({"questions": [{"kind": "multi"}]})),
        ),
        (
            "multi_select inside a question",
            json!({"questions": [{"text": "Which?", "options": ["A", "B"], "multi_select": true}]}),
            Ok(json!({"questions": [{"kind": "multi"}]})),
        ),
        (
            "a bare string is an open question",
            json!({"questions": ["What should the release be called?"]}),
            Ok(
                json!({"questions": [{"id": "q1", "text": "What should the release be called?", "kind": "open"}]}),
            ),
        ),
        (
            "questions as a JSON string holding the list",
            json!({"questions": "[{\"question\": \"Which?\", \"choices\": [\"A\", \"B\"]}]"}),
            Ok(json!({"questions": [{"text": "Which?", "kind": "single"}]})),
        ),
        (
            "questions as one object",
            json!({"questions": {"question": "Why?"}}),
            Ok(json!({"questions": [{"text": "Why?", "kind": "open"}]})),
        ),
        (
            "an action without a kind makes an approval",
            json!({"questions": [{"text": "Deploy?", "action": {"name": "deploy"}}]}),
            Ok(
                json!({"questions": [{"kind": "approval", "action": {"name": "deploy", "arguments": {}}}]}),
            ),
        ),
    ]);
}

#[test]
fn kind_aliases() {
    let mut cases = Vec::new();
    for (alias, kind) in [
        ("single_select", "single"),
        ("single_choice", "single"),
        ("select", "single"),
        ("radio", "single"),
        ("Single Select", "single"),
        ("multi_select", "multi"),
        ("multiple_choice", "multi"),
        ("multiple-choice", "multi"),
        ("checkbox", "multi"),
        ("MULTI", "multi"),
    ] {
        cases.push((
            alias,
            json!({"questions": [{"text": "Which?", "kind": alias, "options": ["A", "B"]}]}),
            Ok(json!({"questions": [{"kind": kind}]})),
        ));
    }
    for alias in ["text", "free_text", "freeform", "input", "Open"] {
        cases.push((
            alias,
            json!({"questions": [{"text": "Why?", "type": alias}]}),
            Ok(json!({"questions": [{"kind": "open"}]})),
        ));
    }
    for alias in ["approve", "confirm", "confirmation"] {
        cases.push((
            alias,
            json!({"questions": [{"text": "Go?", "kind": alias, "action": {"name": "go"}}]}),
            Ok(json!({"questions": [{"kind": "approval"}]})),
        ));
    }
    cases.push((
        "an unknown kind is left for validation to refuse",
        json!({"questions": [{"text": "Why?", "kind": "essay"}]}),
        Err("unknown_kind"),
    ));
    check(cases);
}

/// A one-question request with these options; the pattern is the expected option list.
fn options_case(name: &'static str, options: Value, want: Result<Value, &'static str>) -> Case {
    (
        name,
        json!({"question": "Which?", "kind": "multi", "options": options}),
        want.map(|options| json!({"questions": [{"options": options}]})),
    )
}

#[test]
fn option_objects() {
    check(vec![
        options_case(
            "a non-empty label keeps id, label and description",
            json!([{"id": "pg", "label": "Postgres", "description": "shared", "title": "ignored"}]),
            Ok(json!([{"id": "pg", "label": "Postgres", "description": "shared"}])),
        ),
        options_case(
            "without a label, the description is the label",
            json!([{"description": "Use Postgres", "text": "t", "title": "T"}]),
            Ok(json!([{"id": "use-postgres", "label": "Use Postgres", "description": null}])),
        ),
        options_case(
            "an empty label falls back to the description",
            json!([{"label": "  ", "description": "Postgres"}]),
            Ok(json!([{"label": "Postgres", "description": null}])),
        ),
        options_case(
            "then text",
            json!([{"label": "", "description": "", "text": "Postgres", "title": "T"}]),
            Ok(json!([{"label": "Postgres"}])),
        ),
        options_case(
            "then title",
            json!([{"title": "Postgres"}]),
            Ok(json!([{"id": "postgres", "label": "Postgres"}])),
        ),
        options_case(
            "name is never a label: the option is dropped",
            json!([{"name": "pg"}, "MySQL"]),
            Ok(json!([{"id": "mysql", "label": "MySQL"}])),
        ),
        options_case(
            "value is never a label: the option is dropped",
            json!([{"value": "pg"}, {"value": 7}, "MySQL"]),
            Ok(json!([{"label": "MySQL"}])),
        ),
        options_case(
            "name becomes the id when there is none",
            json!([{"name": "pg", "title": "Postgres"}]),
            Ok(json!([{"id": "pg", "label": "Postgres"}])),
        ),
        options_case(
            "value becomes the id, slugged when not a valid id",
            json!([{"value": "eu-west-1", "text": "Ireland"}, {"value": "Big Box", "text": "Box"}]),
            Ok(json!([{"id": "eu-west-1", "label": "Ireland"}, {"id": "big-box", "label": "Box"}])),
        ),
        options_case(
            "a numeric value is an id",
            json!([{"value": 7, "label": "Seven"}]),
            Ok(json!([{"id": "7", "label": "Seven"}])),
        ),
        options_case(
            "an explicit id wins over name and value",
            json!([{"id": "x", "name": "n", "value": "v", "label": "X"}]),
            Ok(json!([{"id": "x", "label": "X"}])),
        ),
        options_case(
            "a JSON string holding an option object",
            json!([
                "{\"label\": \"Postgres\", \"description\": \"shared\", \"id\": \"pg\"}",
                " {\"title\": \"SQLite\"} "
            ]),
            Ok(
                json!([{"id": "pg", "label": "Postgres", "description": "shared"},
                      {"id": "sqlite", "label": "SQLite"}]),
            ),
        ),
        options_case(
            "a JSON string holding an object with only a name is dropped",
            json!(["{\"name\": \"pg\"}", "MySQL"]),
            Ok(json!([{"label": "MySQL"}])),
        ),
        options_case(
            "a string that only looks like JSON is a label",
            json!(["{not json", "[1, 2]"]),
            Ok(json!([{"label": "{not json"}, {"label": "[1, 2]"}])),
        ),
        options_case(
            "a list is joined with spaces",
            json!([["Blue", "green"], [" deep ", 3]]),
            Ok(json!([{"label": "Blue green"}, {"label": "deep 3"}])),
        ),
        options_case(
            "numbers become their decimal text",
            json!([1, 2.5, -3]),
            Ok(
                json!([{"id": "1", "label": "1"}, {"id": "2-5", "label": "2.5"}, {"id": "3", "label": "-3"}]),
            ),
        ),
        options_case(
            "a numeric label in an object",
            json!([{"label": 42}]),
            Ok(json!([{"label": "42"}])),
        ),
        options_case(
            "options that reduce to nothing are dropped",
            json!(["Yes", "", "   ", null, [], [null, ""], {}, {"label": null}, {"name": "n"}, "No"]),
            Ok(json!([{"label": "Yes"}, {"label": "No"}])),
        ),
        options_case(
            "labels are trimmed",
            json!(["  Yes  ", {"label": " No ", "description": "  nope "}]),
            Ok(json!([{"label": "Yes"}, {"label": "No", "description": "nope"}])),
        ),
        options_case(
            "every option dropped is an error",
            json!(["", null, {"name": "pg"}, {"value": "x"}]),
            Err("all_options_dropped"),
        ),
    ]);
}

#[test]
fn options_as_json_string() {
    check(vec![
        (
            "a JSON string holding the list of labels",
            json!({"question": "Which?", "choices": "[\"Yes\", \"No\"]"}),
            Ok(
                json!({"questions": [{"kind": "single", "options": opts(&[("yes", "Yes"), ("no", "No")])}]}),
            ),
        ),
        (
            "a JSON string holding a list of objects",
            json!({"questions": [{"question": "Which?", "options": "[{\"title\": \"A\"}, {\"label\": \"B\", \"id\": \"b2\"}]"}]}),
            Ok(
                json!({"questions": [{"kind": "single", "options": opts(&[("a", "A"), ("b2", "B")])}]}),
            ),
        ),
    ]);
}

#[test]
fn empty_and_dropped_options_never_make_an_open_question() {
    check(vec![
        (
            "choices: [] on the shorthand",
            json!({"question": "Which?", "choices": []}),
            Err("no_options"),
        ),
        (
            "options: [] on the shorthand",
            json!({"prompt": "Which?", "options": []}),
            Err("no_options"),
        ),
        (
            "choices: [] in questions[]",
            json!({"questions": [{"question": "Which?", "choices": []}]}),
            Err("no_options"),
        ),
        (
            "choices as an empty JSON list string",
            json!({"question": "Which?", "choices": "[]"}),
            Err("no_options"),
        ),
        (
            "every choice dropped on the shorthand",
            json!({"question": "Which?", "choices": [null, "", {"name": "x"}]}),
            Err("all_options_dropped"),
        ),
        (
            "every option dropped on a multi",
            json!({"questions": [{"text": "Which?", "kind": "multi", "options": [{"value": 1}]}]}),
            Err("all_options_dropped"),
        ),
        (
            "every option dropped on an explicit open question is still an error",
            json!({"questions": [{"text": "Why?", "kind": "open", "options": [""]}]}),
            Err("all_options_dropped"),
        ),
        (
            "options: [] on an explicit open question is accepted",
            json!({"questions": [{"text": "Why?", "kind": "open", "options": []}]}),
            Ok(json!({"questions": [{"kind": "open", "options": null}]})),
        ),
        (
            "choices: [] on an explicit open shorthand is accepted",
            json!({"question": "Why?", "kind": "open", "choices": []}),
            Ok(json!({"questions": [{"kind": "open"}]})),
        ),
        (
            "options: [] on an approval is accepted",
            json!({"questions": [{"text": "Go?", "kind": "approval", "action": {"name": "go"}, "options": []}]}),
            Ok(json!({"questions": [{"kind": "approval"}]})),
        ),
    ]);
}

#[test]
fn recommended_suffix() {
    check(vec![
        (
            "the suffix is stripped and marks the recommendation",
            json!({"question": "DB?", "choices": ["Postgres (recommended)", "SQLite"]}),
            Ok(
                json!({"questions": [{"options": opts(&[("postgres", "Postgres"), ("sqlite", "SQLite")]),
                                     "recommended": "postgres"}]}),
            ),
        ),
        (
            "any case, on an object label, keeping the explicit id",
            json!({"question": "DB?", "choices": ["SQLite", {"id": "pg", "label": "Postgres (Recommended)"}]}),
            Ok(
                json!({"questions": [{"options": opts(&[("sqlite", "SQLite"), ("pg", "Postgres")]),
                                     "recommended": "pg"}]}),
            ),
        ),
        (
            "an explicit recommended wins; the suffix is still stripped",
            json!({"question": "DB?", "choices": ["Postgres (recommended)", "SQLite"], "recommended": "SQLite"}),
            Ok(
                json!({"questions": [{"options": opts(&[("postgres", "Postgres"), ("sqlite", "SQLite")]),
                                     "recommended": "sqlite"}]}),
            ),
        ),
        (
            "the first marked option is the recommendation",
            json!({"question": "DB?", "choices": ["A", "B (recommended)", "C (recommended)"]}),
            Ok(
                json!({"questions": [{"options": opts(&[("a", "A"), ("b", "B"), ("c", "C")]),
                                     "recommended": "b"}]}),
            ),
        ),
        (
            "a recommended written with the suffix names the option",
            json!({"question": "DB?", "choices": ["Postgres", "SQLite"], "recommended": "Postgres (recommended)"}),
            Ok(json!({"questions": [{"recommended": "postgres"}]})),
        ),
        (
            "a doubled suffix is stripped entirely",
            json!({"question": "DB?", "choices": ["Postgres (recommended) (recommended)", "SQLite"]}),
            Ok(
                json!({"questions": [{"options": opts(&[("postgres", "Postgres"), ("sqlite", "SQLite")]),
                                     "recommended": "postgres"}]}),
            ),
        ),
        (
            "no suffix, no recommendation",
            json!({"question": "DB?", "choices": ["Postgres", "SQLite"]}),
            Ok(json!({"questions": [{"recommended": null}]})),
        ),
    ]);
}

#[test]
fn null_means_absent() {
    check(vec![
        (
            "strict-mode call with every optional field null",
            json!({"questions": [{"question": "Why?", "header": null, "kind": null, "options": null,
                                  "recommended": null, "id": null, "allow_other": null}],
                   "context": null, "session": null, "agent": null, "tags": null, "tool_call_id": null,
                   "timeout_seconds": null, "allow_skip": null, "responders": null,
                   "callback_url": null, "idempotency_key": null}),
            Ok(
                json!({"questions": [{"id": "q1", "kind": "open", "header": null}],
                      "context": null, "tags": [], "timeout_seconds": 3600, "allow_skip": true,
                      "responders": null, "callback_url": null}),
            ),
        ),
        (
            "choices: null on the shorthand is an open question",
            json!({"question": "Why?", "choices": null}),
            Ok(json!({"questions": [{"kind": "open"}]})),
        ),
        (
            "questions: null beside a shorthand is not ambiguous",
            json!({"questions": null, "question": "Why?"}),
            Ok(json!({"questions": [{"text": "Why?"}]})),
        ),
        (
            "null option fields are absent",
            json!({"question": "Which?", "choices": [{"id": null, "label": "A", "description": null}, null, "B"]}),
            Ok(json!({"questions": [{"options": opts(&[("a", "A"), ("b", "B")])}]})),
        ),
        (
            "a null text falls back to question",
            json!({"questions": [{"text": null, "question": "Why?"}]}),
            Ok(json!({"questions": [{"text": "Why?"}]})),
        ),
    ]);
}

#[test]
fn shape_errors_and_request_fields() {
    check(vec![
        (
            "questions and question together",
            json!({"questions": [{"text": "A?"}], "question": "B?"}),
            Err("ambiguous_shape"),
        ),
        (
            "questions and prompt together",
            json!({"questions": [{"text": "A?"}], "prompt": "B?"}),
            Err("ambiguous_shape"),
        ),
        ("not an object", json!(["Why?"]), Err("not_an_object")),
        (
            "no question at all",
            json!({"context": "x"}),
            Err("no_questions"),
        ),
        (
            "a single tag string is a list",
            json!({"question": "Why?", "tags": "deploy"}),
            Ok(json!({"tags": ["deploy"]})),
        ),
        (
            "a single responder string is a list",
            json!({"question": "Why?", "responders": "alice"}),
            Ok(json!({"responders": ["alice"]})),
        ),
        (
            "unknown top-level fields are refused",
            json!({"question": "Why?", "temperature": 0.2}),
            Err("unknown_field"),
        ),
    ]);
}

/// `normalize` produces the canonical shape directly, which validation accepts as is.
#[test]
fn normalize_output_is_canonical() {
    let shorthand = json!({"prompt": "Which?", "options": ["A (recommended)", {"title": "B"}],
                           "multi_select": true, "context": "ctx", "tags": "t"});
    let canonical = coerce::normalize(&shorthand).expect("shorthand normalizes");
    assert_eq!(
        canonical,
        json!({
            "questions": [{"text": "Which?", "kind": "multi", "recommended": "A",
                           "options": [{"label": "A"}, {"label": "B"}]}],
            "context": "ctx",
            "tags": ["t"],
        })
    );
    assert_eq!(coerce::normalize(&canonical), Ok(canonical.clone()));
    assert_eq!(
        parse_request(&canonical, &Limits::default()),
        parse_request(&shorthand, &Limits::default())
    );
}
