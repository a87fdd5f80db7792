//! Properties over generated input: no input makes the parsers panic; coercing an already-valid
//! request changes nothing; an accepted answer fits its request and reads back the same; a typed
//! reply the reply parser accepts is an answer the answer parser accepts.
//!
//! Case counts and value sizes are bounded so the whole file runs in a few seconds.

use chrono::DateTime;
use clarify_core::reply::{Reply, parse_reply};
use clarify_core::{
    Answer, Answers, Choices, Decision, Limits, NewRequest, Outcome, Question, QuestionKind,
    Resolution, Scope, Submission, coerce, parse_request, parse_submission,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
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

// ---------------------------------------------------------------------------------------------
// Answers and typed replies to generated valid requests.

/// How one question is answered: the shape (its own kind's unless `kind` says another), the
/// options picked and how each is named, and the free text, decision, scope and extras.
#[derive(Debug, Clone)]
struct ASpec {
    kind: Option<u8>,
    picks: Vec<(usize, u8)>,
    text: String,
    decision: u8,
    scope: Option<u8>,
    edit: bool,
    reason: Option<String>,
    present: bool,
}

fn answer_text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[A-Za-z][A-Za-z0-9 ,.!?]{0,30}",
        1 => tricky_string(),
        1 => Just("  ".to_owned()),
        1 => Just("x".repeat(Limits::MAX_ANSWER_CHARS + 1)),
    ]
}

fn aspec() -> impl Strategy<Value = ASpec> {
    (
        prop::option::weighted(0.1, 0u8..4),
        prop::collection::vec((0usize..24, 0u8..5), 0..4),
        answer_text(),
        (0u8..5, prop::option::of(0u8..4)),
        (prop::bool::weighted(0.2), prop::option::of(answer_text())),
        prop::bool::weighted(0.95),
    )
        .prop_map(
            |(kind, picks, text, (decision, scope), (edit, reason), present)| ASpec {
                kind,
                picks,
                text,
                decision,
                scope,
                edit,
                reason,
                present,
            },
        )
}

/// Names option `i` by its id, its label in capitals, its label padded, or a name it lacks.
fn option_ref(c: &Choices, (i, style): (usize, u8)) -> Value {
    let option = &c.options[i % c.options.len()];
    match style {
        0 | 1 => json!(option.id),
        2 => json!(option.label.to_uppercase()),
        3 => json!(format!(" {} ", option.label)),
        _ => json!("no such option"),
    }
}

fn answer_json(q: &Question, a: &ASpec) -> Value {
    let own = match q.kind {
        QuestionKind::Open => 0,
        QuestionKind::Single(_) => 1,
        QuestionKind::Multi(_) => 2,
        QuestionKind::Approval(_) => 3,
        QuestionKind::Form(_) => 4,
    };
    let picks: Vec<Value> = match q.kind.choices() {
        Some(c) => a.picks.iter().map(|p| option_ref(c, *p)).collect(),
        None => a.picks.iter().map(|_| json!("yes")).collect(),
    };
    match a.kind.unwrap_or(own) {
        0 => json!({"text": a.text}),
        1 => match picks.as_slice() {
            [] => json!({"other": a.text}),
            [one] => json!({"option": one}),
            _ => json!({"options": picks}),
        },
        2 => {
            let mut out = json!({"options": picks});
            if let Some(other) = &a.reason {
                out["other"] = json!(other);
            }
            out
        }
        _ => {
            let decision =
                ["approve", "deny", "Approve", " DENY ", "maybe"][usize::from(a.decision)];
            let mut out = json!({ "decision": decision });
            if let Some(scope) = a.scope {
                let scope = ["once", "session", "always", "never"][usize::from(scope)];
                out["scope"] = json!(scope);
            }
            if a.edit {
                out["edited_arguments"] = json!({"path": "/tmp"});
            }
            if let Some(reason) = &a.reason {
                out["reason"] = json!(reason);
            }
            out
        }
    }
}

/// An answer body: `{"skip": true}`, the one-question shorthand, or `answers` keyed by id, now
/// and then with an answer missing or an id the request lacks.
fn body_json(request: &NewRequest, form: u8, specs: &[ASpec]) -> Value {
    match form {
        0 => json!({"skip": true}),
        1 if request.questions.len() == 1 => answer_json(&request.questions[0], &specs[0]),
        _ => {
            let mut answers = Map::new();
            for (q, a) in request.questions.iter().zip(specs) {
                if a.present {
                    answers.insert(q.id.clone(), answer_json(q, a));
                }
            }
            if form == 2 {
                answers.insert("zz".to_owned(), json!({"text": "stray"}));
            }
            json!({ "answers": answers })
        }
    }
}

/// An answer that fits `q` by construction: option ids or labels it offers, text within limits,
/// a decision with a scope it offers.
fn fitting_answer(q: &Question, a: &ASpec) -> Value {
    match &q.kind {
        QuestionKind::Open => json!({"text": "Because it is simpler."}),
        QuestionKind::Single(c) => {
            let pick = a.picks.first().copied().unwrap_or((0, 0));
            json!({"option": option_ref(c, (pick.0, pick.1 % 4))})
        }
        QuestionKind::Multi(c) => {
            let mut picks: Vec<Value> = a
                .picks
                .iter()
                .map(|&(i, style)| option_ref(c, (i, style % 4)))
                .collect();
            if picks.is_empty() {
                picks.push(json!(c.options[0].id));
            }
            json!({"options": picks})
        }
        QuestionKind::Approval(approval) => {
            let scope = approval.scopes[usize::from(a.decision) % approval.scopes.len()];
            let mut out = json!({"decision": "approve", "scope": scope.as_str()});
            if approval.allow_edit && a.edit {
                out["edited_arguments"] = json!({"path": "/tmp"});
            }
            out
        }
        QuestionKind::Form(_) => json!({"values": {}}),
    }
}

/// The properties of an accepted answer: every question answered once, in order, each with an
/// answer its kind takes; the labels the outcome reports were offered; the canonical body parses
/// to the same answers.
fn check_accepted(
    request: &NewRequest,
    body: &Value,
    answers: &Answers,
) -> Result<(), TestCaseError> {
    let ids: Vec<&str> = answers.iter().map(|(id, _)| id).collect();
    let expected: Vec<&str> = request.questions.iter().map(|q| q.id.as_str()).collect();
    prop_assert_eq!(ids, expected, "{} does not answer each question once", body);
    let outcome = Outcome::new(
        "r",
        request,
        &Resolution::Answered(answers.clone()),
        Some("alice"),
        DateTime::UNIX_EPOCH,
    );
    for (q, out) in request.questions.iter().zip(&outcome.questions) {
        let offered = |v: &Value| {
            v.as_str()
                .is_some_and(|s| out.choices_offered.iter().any(|o| o == s))
        };
        match (&q.kind, answers.get(&q.id)) {
            (QuestionKind::Open, Some(Answer::Text(t))) => prop_assert!(!t.trim().is_empty()),
            (QuestionKind::Single(_), Some(Answer::Option(_))) => {
                prop_assert!(
                    offered(&out.answer),
                    "{} answered {} which was not offered",
                    body,
                    out.answer
                );
            }
            (QuestionKind::Single(c), Some(Answer::Other(_))) => prop_assert!(c.allow_other),
            (QuestionKind::Multi(c), Some(Answer::Options { ids, other })) => {
                let labels = out.answer.as_array().cloned().unwrap_or_default();
                prop_assert_eq!(labels.len(), ids.len() + usize::from(other.is_some()));
                prop_assert!(
                    labels[..ids.len()].iter().all(offered),
                    "{} answered {}",
                    body,
                    out.answer
                );
                prop_assert!(other.is_none() || c.allow_other);
            }
            (QuestionKind::Approval(a), Some(Answer::Approval(answer))) => {
                prop_assert!(
                    a.scopes.contains(&answer.scope)
                        || (answer.decision == Decision::Deny && answer.scope == Scope::Once),
                    "{} granted {} which was not offered",
                    body,
                    answer.scope
                );
                prop_assert!(answer.edited_arguments.is_none() || a.allow_edit);
            }
            (kind, answer) => prop_assert!(
                false,
                "{} gave a {} question {:?}",
                body,
                kind.name(),
                answer
            ),
        }
    }
    let canonical = json!({ "answers": answers });
    prop_assert_eq!(
        parse_submission(request, &canonical),
        Ok(Submission::Answered(answers.clone())),
        "canonical body {}",
        canonical
    );
    Ok(())
}

/// A typed reply as people type them: positions, letters, labels, decisions, skips, anything.
#[derive(Debug, Clone)]
struct ReplySpec {
    form: u8,
    numbers: Vec<usize>,
    letters: Vec<u8>,
    separator: u8,
    labels: Vec<(usize, u8)>,
    word: u8,
    suffix: u8,
    text: String,
}

fn reply_spec() -> impl Strategy<Value = ReplySpec> {
    (
        (
            0u8..7,
            prop::collection::vec(0usize..7, 1..4),
            prop::collection::vec(0u8..26, 1..4),
        ),
        (0u8..4, prop::collection::vec((0usize..24, 0u8..3), 1..3)),
        (0u8..10, 0u8..6, tricky_string()),
    )
        .prop_map(
            |((form, numbers, letters), (separator, labels), (word, suffix, text))| ReplySpec {
                form,
                numbers,
                letters,
                separator,
                labels,
                word,
                suffix,
                text,
            },
        )
}

fn reply_text(q: &Question, r: &ReplySpec) -> String {
    let separator = [",", " ", ", ", " , "][usize::from(r.separator)];
    match (r.form, q.kind.choices()) {
        (0, _) => r
            .numbers
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(separator),
        (1, _) => r
            .letters
            .iter()
            .map(|&l| char::from(if l % 2 == 0 { b'a' + l } else { b'A' + l }).to_string())
            .collect::<Vec<_>>()
            .join(separator),
        (2, Some(c)) => r
            .labels
            .iter()
            .map(|&(i, style)| {
                let label = &c.options[i % c.options.len()].label;
                match style {
                    0 => label.clone(),
                    1 => label.to_uppercase(),
                    _ => format!("{label} (recommended)"),
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        (3, _) => format!(
            "{}{}",
            [
                "approve", "yes", "y", "1", "a", "deny", "no", "n", "2", "maybe"
            ][usize::from(r.word)],
            [
                "",
                " once",
                " session",
                " Always",
                ": not on Fridays",
                " forever"
            ][usize::from(r.suffix)]
        ),
        (4, _) => ["s", "SKIP"][usize::from(r.word % 2)].to_owned(),
        _ => r.text.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever answer arrives, an accepted one fits the request, a refused one leaves a fitting
    /// answer still acceptable, and the verdict does not change when asked twice.
    #[test]
    fn accepted_answers_fit_the_request(
        spec in rspec(),
        form in 0u8..8,
        answers in prop::collection::vec(aspec(), 5),
    ) {
        let request = parse_request(&request_json(&spec), &Limits::default()).expect("valid");
        let body = body_json(&request, form, &answers);
        let before = request.clone();
        let verdict = parse_submission(&request, &body);
        prop_assert_eq!(&parse_submission(&request, &body), &verdict);
        match verdict {
            Ok(Submission::Skipped) => prop_assert!(request.allow_skip),
            Ok(Submission::Answered(got)) => check_accepted(&request, &body, &got)?,
            Err(e) => {
                prop_assert_eq!(&request, &before);
                prop_assert!(!e.to_string().is_empty());
            }
        }
        let mut fitting = Map::new();
        for (q, a) in request.questions.iter().zip(&answers) {
            fitting.insert(q.id.clone(), fitting_answer(q, a));
        }
        let fitting = json!({ "answers": fitting });
        match parse_submission(&request, &fitting) {
            Ok(Submission::Answered(got)) => check_accepted(&request, &fitting, &got)?,
            other => prop_assert!(false, "the fitting answer {} was refused: {:?}", fitting, other),
        }
    }

    /// A typed reply that `parse_reply` accepts is accepted by `parse_submission` as the same
    /// answer, so the terminal, chat and HTTP paths resolve a request the same way.
    #[test]
    fn accepted_replies_are_accepted_answers(
        spec in rspec(),
        replies in prop::collection::vec(reply_spec(), 5),
    ) {
        let request = parse_request(&request_json(&spec), &Limits::default()).expect("valid");
        for (q, r) in request.questions.iter().zip(&replies) {
            let input = reply_text(q, r);
            match parse_reply(q, request.allow_skip, &input) {
                Ok(Reply::Skip) => prop_assert!(request.allow_skip),
                Ok(Reply::Answer(answer)) => {
                    let alone = NewRequest { questions: vec![q.clone()], ..request.clone() };
                    let body = json!({"answers": {q.id.clone(): &answer}});
                    match parse_submission(&alone, &body) {
                        Ok(Submission::Answered(got)) => prop_assert_eq!(got.get(&q.id), Some(&answer)),
                        other => prop_assert!(false, "reply {:?} to {:?} became {}, refused: {:?}", input, q, body, other),
                    }
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
