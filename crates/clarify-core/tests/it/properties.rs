//! Properties over generated input: no input makes the parsers panic, and coercing an
//! already-valid request changes nothing.
//!
//! Case counts and value sizes are bounded so the whole file runs in a few seconds.

use clarify_core::reply::parse_reply;
use clarify_core::{Limits, NewRequest, coerce, parse_request, parse_submission};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Strings that exercise the coercion paths: JSON-looking text, the recommended mark, unicode,
/// reply shapes, and arbitrary text.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        2 => "[a-zA-Z0-9 ,()\\[\\]{}:\"]{0,12}",
        1 => prop::sample::select(vec![
            "", " ", "[", "{", "]", "}", "[]", "{}", "[\"a\", \"b\"]", "{\"label\": \"x\"}",
            "{\"name\": \"x\"}", "[{\"title\": \"T\"}]", "(recommended)", "A (recommended)",
            "a (Recommended) (recommended)", "日本語", "🦀 crab", "\u{0}", "é\u{301}", "1", "2,3",
            "1 5", "a", "Z", "s", "skip", "approve session", "deny because", "null", "true",
            "99999999999999999999999999", "-0", "1e400",
        ])
        .prop_map(str::to_owned),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "questions", "question", "prompt", "choices", "options", "text", "kind", "type",
            "label", "description", "title", "name", "value", "id", "multi_select", "action",
            "arguments", "scopes", "allow_edit", "allow_other", "recommended", "header",
            "context", "tags", "responders", "timeout_seconds", "allow_skip", "callback_url",
            "session", "agent", "tool_call_id", "idempotency_key", "dedupe", "answers", "option",
            "other", "decision", "scope", "edited_arguments", "reason", "skip", "q1", "q2", "db",
        ])
        .prop_map(str::to_owned),
        1 => tricky_string(),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::num::f64::NORMAL.prop_map(Value::from),
        prop::sample::select(vec![0.0, -1.0, 0.5, 1e300, -1e300, f64::MAX, 600.0])
            .prop_map(Value::from),
        (0u64..10).prop_map(Value::from),
    ]
}

/// Any JSON value, nested a few levels, biased towards the keys the parsers look at.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Arbitrary values in the places the parsers look, as well as bare.
fn arb_request_body() -> impl Strategy<Value = Value> {
    prop_oneof![
        arb_json(),
        arb_json().prop_map(|q| json!({"questions": [q]})),
        arb_json().prop_map(|q| json!({"questions": q})),
        (arb_json(), any::<bool>())
            .prop_map(|(c, m)| json!({"question": "Which?", "choices": c, "multi_select": m})),
        arb_json().prop_map(|o| json!({"questions": [{"text": "Which?", "options": [o]}]})),
        (key(), arb_json()).prop_map(|(k, v)| {
            let mut body = json!({"questions": [{"text": "Go?", "action": {"name": "go"}}]});
            body[k] = v;
            body
        }),
    ]
}

fn fixtures() -> Vec<NewRequest> {
    [
        json!({"question": "DB?", "choices": ["Postgres (recommended)", "MySQL", "SQLite"]}),
        json!({"question": "Colours?", "multi_select": true, "choices": ["Red", "Green"], "allow_other": false, "allow_skip": false}),
        json!({"question": "Why?"}),
        json!({"questions": [{"text": "Deploy?", "action": {"name": "deploy"}, "scopes": ["once", "session"], "allow_edit": true}]}),
        json!({"questions": [{"id": "db", "text": "DB?", "options": ["A", "B"]}, "Why?",
                             {"text": "Go?", "action": {"name": "go"}}]}),
    ]
    .iter()
    .map(|body| parse_request(body, &Limits::default()).expect("valid fixture"))
    .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn parse_request_never_panics(body in arb_request_body()) {
        let _ = parse_request(&body, &Limits::default());
        let _ = parse_request(&body, &Limits::new(24, 0).expect("valid limits"));
    }

    /// `normalize` never panics, and normalizing its own output changes nothing.
    #[test]
    fn normalize_is_idempotent(body in arb_request_body()) {
        if let Ok(canonical) = coerce::normalize(&body) {
            prop_assert_eq!(coerce::normalize(&canonical), Ok(canonical.clone()));
        }
    }

    #[test]
    fn parse_submission_never_panics(body in arb_json(), wrap in 0u8..4) {
        let body = match wrap {
            0 => body,
            1 => json!({"answers": body}),
            2 => json!({"answers": {"q1": body}}),
            _ => json!({"answers": {"db": {"option": "a"}, "q2": body, "q3": {"decision": "deny"}}}),
        };
        for request in fixtures() {
            let before = request.clone();
            let _ = parse_submission(&request, &body);
            prop_assert_eq!(&request, &before);
        }
    }

    #[test]
    fn parse_reply_never_panics(input in tricky_string(), allow_skip in any::<bool>()) {
        for request in fixtures() {
            for question in &request.questions {
                let _ = parse_reply(question, allow_skip, &input);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generated valid requests, in the many shapes models write them.

/// One option: (label, shape, description).
type OptSpec = (String, u8, Option<String>);

#[derive(Debug, Clone)]
struct QSpec {
    kind: u8,
    text: String,
    text_key: u8,
    header: Option<String>,
    explicit_id: bool,
    options: Vec<OptSpec>,
    options_key: u8,
    kind_form: u8,
    recommended: Option<(usize, bool)>,
    allow_other: Option<bool>,
    action: (String, Value, bool),
    scopes: Vec<u8>,
    allow_edit: Option<bool>,
    nulls: bool,
}

fn label() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[A-Za-z][A-Za-z0-9 ,.+!-]{0,15}",
        1 => "[日本éü][日本éü ]{0,4}",
        1 => prop::sample::select(vec!["A+B", "a b", "Yes", "yes!", "12", " padded "]).prop_map(str::to_owned),
    ]
}

/// 1 to 4 options whose labels differ ignoring case and surrounding space.
fn options() -> impl Strategy<Value = Vec<OptSpec>> {
    prop::collection::vec((label(), 0u8..8, prop::option::of("[a-z ]{1,12}")), 1..=4).prop_map(
        |mut opts| {
            let mut seen = std::collections::HashSet::new();
            opts.retain(|(l, _, _)| seen.insert(l.trim().to_lowercase()));
            opts
        },
    )
}

fn small_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(
        "[a-z]{1,5}",
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            "[a-z ]{0,8}".prop_map(Value::String),
            prop::collection::vec(any::<u8>().prop_map(Value::from), 0..3).prop_map(Value::Array),
        ],
        0..4,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn qspec() -> impl Strategy<Value = QSpec> {
    (
        (
            0u8..4,
            "[A-Za-z][A-Za-z0-9 ?]{0,30}",
            0u8..3,
            prop::option::of("[A-Za-z ]{1,32}"),
            any::<bool>(),
        ),
        (
            options(),
            0u8..2,
            0u8..4,
            prop::option::of((0usize..4, any::<bool>())),
            prop::option::of(any::<bool>()),
        ),
        (
            ("[a-z_]{1,12}", small_object(), any::<bool>()),
            prop::collection::vec(0u8..3, 0..4),
            prop::option::of(any::<bool>()),
            any::<bool>(),
        ),
    )
        .prop_map(|(a, b, c)| QSpec {
            kind: a.0,
            text: a.1,
            text_key: a.2,
            header: a.3,
            explicit_id: a.4,
            options: b.0,
            options_key: b.1,
            kind_form: b.2,
            recommended: b.3,
            allow_other: b.4,
            action: c.0,
            scopes: c.1,
            allow_edit: c.2,
            nulls: c.3,
        })
}

fn option_value(i: usize, (label, shape, description): &OptSpec) -> Value {
    match shape {
        0 => json!(label),
        1 => json!({"label": label}),
        2 => json!({"label": label, "description": description}),
        3 => json!({"title": label, "name": format!("nm{i}")}),
        4 => json!({"text": label, "value": format!("Val {i}")}),
        5 => json!({"description": label}),
        6 => json!({"id": format!("id-o{i}"), "label": label, "description": description}),
        _ => Value::String(json!({"label": label, "title": "ignored"}).to_string()),
    }
}

fn question_json(i: usize, q: &QSpec) -> Value {
    let mut out = Map::new();
    let text_key = ["text", "question", "prompt"][usize::from(q.text_key)];
    out.insert(text_key.to_owned(), json!(format!(" {} ", q.text)));
    if q.explicit_id {
        out.insert("id".to_owned(), json!(format!("qid{i}")));
    }
    if let Some(h) = &q.header {
        out.insert("header".to_owned(), json!(h));
    }
    let form = usize::from(q.kind_form);
    let (key, kind): (&str, Option<Value>) = match q.kind {
        0 => [
            ("kind", None),
            ("kind", Some(json!("open"))),
            ("type", Some(json!("text"))),
            ("kind", Some(json!("free_text"))),
        ][form]
            .clone(),
        1 => [
            ("kind", None),
            ("kind", Some(json!("single"))),
            ("type", Some(json!("single_select"))),
            ("kind", Some(json!("Radio"))),
        ][form]
            .clone(),
        2 => [
            ("multi_select", Some(json!(true))),
            ("kind", Some(json!("multi"))),
            ("type", Some(json!("multiple_choice"))),
            ("kind", Some(json!("checkbox"))),
        ][form]
            .clone(),
        _ => [
            ("kind", None),
            ("kind", Some(json!("approval"))),
            ("type", Some(json!("confirm"))),
            ("kind", Some(json!("approve"))),
        ][form]
            .clone(),
    };
    let explicit_kind = kind.is_some();
    if let Some(kind) = kind {
        out.insert(key.to_owned(), kind);
    }
    match q.kind {
        0 => {
            // Strict-mode models send `options: []` on open questions that name their kind.
            if q.nulls && explicit_kind {
                out.insert("options".to_owned(), json!([]));
            }
        }
        1 | 2 => {
            let mut options: Vec<Value> = Vec::new();
            for (j, spec) in q.options.iter().enumerate() {
                let mut spec = spec.clone();
                if q.recommended == Some((j % 4, true)) {
                    // Models mark a recommendation once, in any case, or repeat the mark.
                    let mark = [
                        "(recommended)",
                        " (Recommended)",
                        " (recommended) (RECOMMENDED)",
                    ];
                    spec.0 = format!("{}{}", spec.0, mark[spec.0.len() % 3]);
                }
                options.push(option_value(j, &spec));
            }
            let options_key = ["options", "choices"][usize::from(q.options_key)];
            out.insert(options_key.to_owned(), Value::Array(options));
            if let Some((j, false)) = q.recommended {
                if let Some((label, _, _)) = q.options.get(j) {
                    out.insert("recommended".to_owned(), json!(label.to_uppercase()));
                }
            }
            if let Some(allow) = q.allow_other {
                out.insert("allow_other".to_owned(), json!(allow));
            }
        }
        _ => {
            let (name, arguments, as_text) = &q.action;
            let arguments = if *as_text {
                json!(arguments.to_string())
            } else {
                arguments.clone()
            };
            out.insert(
                "action".to_owned(),
                json!({"name": name, "arguments": arguments}),
            );
            if !q.scopes.is_empty() {
                let names: Vec<&str> = q
                    .scopes
                    .iter()
                    .map(|s| ["once", "Session", "ALWAYS"][usize::from(*s)])
                    .collect();
                out.insert("scopes".to_owned(), json!(names));
            }
            if let Some(edit) = q.allow_edit {
                out.insert("allow_edit".to_owned(), json!(edit));
            }
        }
    }
    if q.nulls {
        for key in ["header", "recommended", "allow_other", "id", "description"] {
            out.entry(key).or_insert(Value::Null);
        }
    }
    Value::Object(out)
}

#[derive(Debug, Clone)]
struct RSpec {
    questions: Vec<QSpec>,
    shorthand: bool,
    context: Option<Value>,
    names: [Option<String>; 4],
    tags: Option<Value>,
    timeout: Option<Value>,
    flags: (Option<bool>, Option<bool>),
    responders: Option<Value>,
    callback_url: Option<&'static str>,
}

fn rspec() -> impl Strategy<Value = RSpec> {
    let name = || prop::option::of("[A-Za-z0-9_-]{1,20}");
    (
        (prop::collection::vec(qspec(), 1..=5), any::<bool>()),
        prop::option::of(prop_oneof![
            "[a-z ]{0,30}".prop_map(Value::String),
            small_object()
        ]),
        prop::array::uniform4(name()),
        prop::option::of(prop_oneof![
            prop::collection::vec("[a-z]{1,8}", 0..=10).prop_map(|t| json!(t)),
            "[a-z]{1,8}".prop_map(Value::String),
        ]),
        prop::option::of(prop_oneof![
            (0u64..=Limits::MAX_TIMEOUT_SECONDS).prop_map(Value::from),
            (0u32..100_000).prop_map(|s| Value::from(f64::from(s))),
            Just(json!(0)),
        ]),
        (
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
        ),
        prop::option::of(prop_oneof![
            prop::collection::vec("[a-z]{1,8}", 1..4).prop_map(|t| json!(t)),
            "[a-z]{1,8}".prop_map(Value::String),
        ]),
        prop::option::of(prop::sample::select(vec![
            "https://example.com/hook",
            "http://localhost:8080/cb?x=1",
            "HTTPS://Example.COM",
            " https://example.com/a b ",
        ])),
    )
        .prop_map(
            |(q, context, names, tags, timeout, flags, responders, callback_url)| RSpec {
                questions: q.0,
                shorthand: q.1,
                context,
                names,
                tags,
                timeout,
                flags,
                responders,
                callback_url,
            },
        )
}

fn request_json(r: &RSpec) -> Value {
    let questions: Vec<Value> = r
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| question_json(i, q))
        .collect();
    let mut out = match (r.shorthand, questions.as_slice()) {
        // The one-question shorthand: the question's fields at the top level.
        (true, [Value::Object(q)]) if !q.contains_key("text") => q.clone(),
        _ => {
            let mut m = Map::new();
            m.insert("questions".to_owned(), Value::Array(questions));
            m
        }
    };
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            out.insert(k.to_owned(), v);
        }
    };
    put("context", r.context.clone());
    for (k, v) in ["session", "agent", "tool_call_id", "idempotency_key"]
        .iter()
        .zip(&r.names)
    {
        put(k, v.clone().map(Value::String));
    }
    put("tags", r.tags.clone());
    put("timeout_seconds", r.timeout.clone());
    put("allow_skip", r.flags.0.map(Value::Bool));
    put("dedupe", r.flags.1.map(Value::Bool));
    put("responders", r.responders.clone());
    put("callback_url", r.callback_url.map(Value::from));
    Value::Object(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Every generated request is valid; its canonical form parses back to the same request, and
    /// coercing that canonical form changes nothing.
    #[test]
    fn coercing_a_valid_request_changes_nothing(spec in rspec()) {
        let input = request_json(&spec);
        let request = parse_request(&input, &Limits::default());
        prop_assert!(request.is_ok(), "{} was refused: {:?}", input, request);
        let request = request.expect("checked");
        let canonical = serde_json::to_value(&request).expect("serializes");
        prop_assert_eq!(coerce::normalize(&canonical), Ok(canonical.clone()));
        prop_assert_eq!(parse_request(&canonical, &Limits::default()), Ok(request.clone()));
        // The stored form reads back as well.
        let stored: NewRequest = serde_json::from_value(canonical).expect("deserializes");
        prop_assert_eq!(&stored, &request);
        // And normalizing the LLM-shaped input twice is the same as once.
        let once = coerce::normalize(&input).expect("normalizes");
        prop_assert_eq!(coerce::normalize(&once), Ok(once.clone()));
        // No label keeps the recommended mark.
        for q in &request.questions {
            if let Some(c) = q.kind.choices() {
                for o in &c.options {
                    prop_assert!(!o.label.to_lowercase().ends_with("(recommended)"), "{:?}", o);
                }
            }
        }
    }
}
