//! The committed `ask_human` definitions match the code, and what the schema allows the parser
//! accepts.

use std::path::PathBuf;

use clarify_core::tool::{Format, definition, definition_text};
use clarify_core::{Limits, QuestionKind, parse_request};
use serde_json::{Value, json};

const BLESS: &str = "CLARIFY_BLESS";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Fails, naming the command that refreshes them, when `tools/*.json` differ from the code.
/// With `CLARIFY_BLESS=1` it rewrites them instead.
#[test]
fn committed_definitions_are_fresh() {
    let mut stale = Vec::new();
    for format in Format::ALL {
        let path = repo_root().join(format.committed_path());
        let fresh = definition_text(format);
        if std::env::var_os(BLESS).is_some() {
            std::fs::write(&path, &fresh).expect("write tool definition");
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != fresh {
            stale.push(format.committed_path());
        }
    }
    assert!(
        stale.is_empty(),
        "stale tool definitions: {}; regenerate them with `{BLESS}=1 cargo test -p clarify-core --test it tools::`",
        stale.join(", ")
    );
}

/// OpenAI strict mode rejects a schema with an open object or an optional property.
#[test]
fn openai_definition_is_strict() {
    fn check(v: &Value, path: &str) {
        if let Some(props) = v.get("properties").and_then(Value::as_object) {
            assert_eq!(v["additionalProperties"], json!(false), "{path} is open");
            let required: Vec<&str> = v["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for key in props.keys() {
                assert!(
                    required.contains(&key.as_str()),
                    "{path}.{key} is not required"
                );
            }
            for (key, child) in props {
                check(child, &format!("{path}.{key}"));
            }
        }
        if let Some(items) = v.get("items") {
            check(items, &format!("{path}[]"));
        }
        assert!(v.get("$ref").is_none(), "{path} uses $ref");
    }
    let def = definition(Format::OpenAi);
    assert_eq!(def["function"]["strict"], json!(true));
    assert_eq!(def["function"]["name"], json!("ask_human"));
    check(&def["function"]["parameters"], "parameters");
    // Optional fields stay optional for the model by being nullable.
    let question = &def["function"]["parameters"]["properties"]["questions"]["items"];
    assert_eq!(
        question["properties"]["header"]["type"],
        json!(["string", "null"])
    );
}

#[test]
fn anthropic_and_mcp_definitions_share_the_schema() {
    let anthropic = definition(Format::Anthropic);
    let mcp = definition(Format::Mcp);
    assert_eq!(anthropic["input_schema"], mcp["inputSchema"]);
    assert_eq!(anthropic["name"], json!("ask_human"));
    let required = &anthropic["input_schema"]["required"];
    assert_eq!(required, &json!(["questions"]));
}

/// The description steers the model: when to ask, when not, options in `options`, recommend.
#[test]
fn description_guides_the_model() {
    let d = clarify_core::tool::DESCRIPTION;
    for phrase in [
        "genuinely blocked",
        "trade-offs",
        "low-stakes",
        "`options`",
        "never list the options inside the question text",
        "`recommended`",
    ] {
        assert!(d.contains(phrase), "description lacks {phrase:?}");
    }
}

/// A strict-mode call (every optional field present as null) and a sparse call both parse.
#[test]
fn tool_calls_in_the_schema_shape_parse() {
    let strict = json!({
        "questions": [
            {"question": "Which database?", "header": null, "kind": "single",
             "options": [{"label": "Postgres", "description": "shared state"},
                         {"label": "SQLite", "description": null}],
             "recommended": "Postgres"},
            {"question": "Anything else?", "header": "Notes", "kind": "open",
             "options": null, "recommended": null}
        ],
        "context": null
    });
    let request = parse_request(&strict, &Limits::default()).expect("strict call parses");
    assert_eq!(request.questions.len(), 2);
    match &request.questions[0].kind {
        QuestionKind::Single(c) => assert_eq!(c.recommended.as_deref(), Some("postgres")),
        other => panic!("expected single, got {other:?}"),
    }
    assert!(matches!(request.questions[1].kind, QuestionKind::Open));

    let sparse = json!({"questions": [{"question": "Pick colours", "kind": "multi",
        "options": [{"label": "Red"}, {"label": "Blue"}]}]});
    let request = parse_request(&sparse, &Limits::default()).expect("sparse call parses");
    assert!(matches!(request.questions[0].kind, QuestionKind::Multi(_)));
}

/// An empty options list on an `open` question from a strict-mode model is not an error.
#[test]
fn open_question_with_empty_options_from_strict_mode() {
    let call = json!({"questions": [{"question": "Why?", "kind": "open", "options": [],
        "header": null, "recommended": null}], "context": null});
    let got = parse_request(&call, &Limits::default());
    assert!(got.is_ok(), "{got:?}");
}
