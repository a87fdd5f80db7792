//! Typed replies (terminal and chat channels): numbers, letters, labels, free text, skips and
//! approvals, each read into an answer or refused with the message the person sees.

use clarify_core::reply::{Reply, parse_reply};
use clarify_core::{Limits, Question, parse_request};
use serde_json::{Value, json};

fn question(name: &str) -> Question {
    let options = json!(["Postgres (recommended)", "MySQL", "SQLite"]);
    let colours = json!(["Red", "Green", "Blue"]);
    let q = match name {
        "single" => json!({"text": "DB?", "options": options}),
        "single-strict" => json!({"text": "DB?", "options": options, "allow_other": false}),
        "multi" => json!({"text": "Colours?", "kind": "multi", "options": colours}),
        "multi-strict" => {
            json!({"text": "Colours?", "kind": "multi", "options": colours, "allow_other": false})
        }
        "open" => json!({"text": "Why?"}),
        "approval" => {
            json!({"text": "Deploy?", "action": {"name": "deploy"}, "scopes": ["once", "session"]})
        }
        "approval-once" => json!({"text": "Deploy?", "action": {"name": "deploy"}}),
        other => panic!("no fixture {other}"),
    };
    let request = parse_request(&json!({"questions": [q]}), &Limits::default()).expect("valid");
    request.questions[0].clone()
}

/// Reads `input` as a reply to the fixture question; `Ok` holds the answer's canonical JSON (or
/// `"skip"`), `Err` the exact message shown to the person. Reports every failing case at once.
fn check(cases: Vec<(&str, bool, &str, Result<Value, &str>)>) {
    let mut failures = Vec::new();
    for (fixture, allow_skip, input, want) in cases {
        let got = parse_reply(&question(fixture), allow_skip, input)
            .map(|r| match r {
                Reply::Skip => json!("skip"),
                Reply::Answer(a) => serde_json::to_value(a).expect("serializes"),
            })
            .map_err(|e| e.to_string());
        if got.as_ref().map_err(String::as_str) != want.as_ref().map_err(|e| *e) {
            failures.push(format!(
                "{fixture} {input:?} (allow_skip {allow_skip}):\n  want {want:?}\n  got  {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn option(id: &str) -> Result<Value, &'static str> {
    Ok(json!({"option": id}))
}

fn options(ids: &[&str]) -> Result<Value, &'static str> {
    Ok(json!({"options": ids}))
}

#[test]
fn single_choice_replies() {
    check(vec![
        ("single", true, "2", option("mysql")),
        ("single", true, " 3 ", option("sqlite")),
        ("single", true, "b", option("mysql")),
        ("single", true, "B", option("mysql")),
        ("single", true, "a", option("postgres")),
        ("single", true, "sqlite", option("sqlite")),
        ("single", true, "MySQL", option("mysql")),
        ("single", true, "postgres (recommended)", option("postgres")),
        ("single", true, "Postgres (Recommended)", option("postgres")),
        (
            "single",
            true,
            "SQLite, please",
            Ok(json!({"other": "SQLite, please"})),
        ),
        (
            "single",
            true,
            "  whatever is cheapest ",
            Ok(json!({"other": "whatever is cheapest"})),
        ),
        (
            "single-strict",
            true,
            "whatever is cheapest",
            Err(
                "\"whatever is cheapest\" is not one of the options; reply with a number, a letter or a label",
            ),
        ),
        ("single-strict", true, "1", option("postgres")),
        // Selection-shaped but out of range: refused as a whole, never free text.
        (
            "single",
            true,
            "5",
            Err("there is no option 5; choose 1 to 3"),
        ),
        (
            "single",
            true,
            "0",
            Err("there is no option 0; choose 1 to 3"),
        ),
        (
            "single",
            true,
            "z",
            Err("there is no option z; choose 1 to 3"),
        ),
        (
            "single",
            true,
            "99999999999999999999999",
            Err("there is no option 99999999999999999999999; choose 1 to 3"),
        ),
        (
            "single",
            true,
            "1,2",
            Err("this question takes one option; you chose 2"),
        ),
        (
            "single",
            true,
            "a c",
            Err("this question takes one option; you chose 2"),
        ),
        ("single", true, "", Err("type an answer")),
        ("single", true, "   ", Err("type an answer")),
    ]);
}

#[test]
fn multi_choice_replies() {
    check(vec![
        ("multi", true, "1,3", options(&["red", "blue"])),
        ("multi", true, "1 3", options(&["red", "blue"])),
        ("multi", true, "3, 1", options(&["red", "blue"])),
        ("multi", true, "a c", options(&["red", "blue"])),
        ("multi", true, "C,a,c", options(&["red", "blue"])),
        ("multi", true, "2", options(&["green"])),
        ("multi", true, "green", options(&["green"])),
        ("multi", true, "Blue, red", options(&["red", "blue"])),
        ("multi", true, "blue,GREEN", options(&["green", "blue"])),
        (
            "multi",
            true,
            "1,5",
            Err("there is no option 5; choose 1 to 3"),
        ),
        (
            "multi",
            true,
            "a z",
            Err("there is no option z; choose 1 to 3"),
        ),
        (
            "multi",
            true,
            "anything bright",
            Ok(json!({"options": [], "other": "anything bright"})),
        ),
        (
            "multi",
            true,
            "red and blue",
            Ok(json!({"options": [], "other": "red and blue"})),
        ),
        (
            "multi-strict",
            true,
            "red and blue",
            Err(
                "\"red and blue\" is not one of the options; reply with a number, a letter or a label",
            ),
        ),
        ("multi-strict", true, "1 2", options(&["red", "green"])),
    ]);
}

#[test]
fn open_replies() {
    check(vec![
        (
            "open",
            true,
            " Because it is Friday. ",
            Ok(json!({"text": "Because it is Friday."})),
        ),
        ("open", true, "2", Ok(json!({"text": "2"}))),
        ("open", true, "", Err("type an answer")),
    ]);
    let long = "x".repeat(10_001);
    check(vec![(
        "open",
        true,
        long.as_str(),
        Err("the reply is too long: at most 10000 characters, got 10001"),
    )]);
}

#[test]
fn skip_replies() {
    check(vec![
        ("single", true, "s", Ok(json!("skip"))),
        ("single", true, "S", Ok(json!("skip"))),
        ("multi", true, "skip", Ok(json!("skip"))),
        ("open", true, " SKIP ", Ok(json!("skip"))),
        ("approval", true, "skip", Ok(json!("skip"))),
        ("single", false, "s", Err("this request cannot be skipped")),
        ("open", false, "skip", Err("this request cannot be skipped")),
        (
            "approval",
            false,
            "skip",
            Err("this request cannot be skipped"),
        ),
        ("single", false, "skip it", Ok(json!({"other": "skip it"}))),
    ]);
}

#[test]
fn approval_replies() {
    let approve = |scope: &str| Ok(json!({"decision": "approve", "scope": scope}));
    let deny = Ok(json!({"decision": "deny", "scope": "once"}));
    check(vec![
        ("approval", true, "approve", approve("once")),
        ("approval", true, "Yes", approve("once")),
        ("approval", true, "y", approve("once")),
        ("approval", true, "1", approve("once")),
        ("approval", true, "approve session", approve("session")),
        ("approval", true, "approve: session", approve("session")),
        ("approval", true, "approve once", approve("once")),
        (
            "approval-once",
            true,
            "approve session",
            Err("the scope \"session\" is not offered; choose one of once"),
        ),
        (
            "approval",
            true,
            "approve always",
            Err("the scope \"always\" is not offered; choose one of once, session"),
        ),
        (
            "approval",
            true,
            "approve forever",
            Err(
                "reply approve or deny (optionally followed by a scope: once, session), or revise followed by what to change",
            ),
        ),
        ("approval", true, "deny", deny.clone()),
        ("approval", true, "no", deny.clone()),
        ("approval", true, "N", deny.clone()),
        ("approval", true, "2", deny),
        (
            "approval",
            true,
            "deny not on Fridays",
            Ok(json!({"decision": "deny", "scope": "once", "reason": "not on Fridays"})),
        ),
        (
            "approval",
            true,
            "no: too risky",
            Ok(json!({"decision": "deny", "scope": "once", "reason": "too risky"})),
        ),
        (
            "approval",
            true,
            "revise use the staging database",
            Ok(
                json!({"decision": "revise", "scope": "once", "reason": "use the staging database"}),
            ),
        ),
        (
            "approval",
            true,
            "changes: smaller batches",
            Ok(json!({"decision": "revise", "scope": "once", "reason": "smaller batches"})),
        ),
        (
            "approval",
            true,
            "revise",
            Err("say what to change after revise, e.g. \"revise use the staging database\""),
        ),
        (
            "approval",
            true,
            "maybe",
            Err(
                "reply approve or deny (optionally followed by a scope: once, session), or revise followed by what to change",
            ),
        ),
        (
            "approval-once",
            true,
            "3",
            Err(
                "reply approve or deny (optionally followed by a scope: once), or revise followed by what to change",
            ),
        ),
    ]);
}
