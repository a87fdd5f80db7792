//! `clarify hook copilot`: VS Code's `PreToolUse` (`hookSpecificOutput`, exit 2 blocks) and
//! Copilot CLI's two forms (flat `permissionDecision`, `modifiedArgs`; a failing hook would let
//! the call run, so a call clarify cannot decide is denied).

use serde_json::json;

use super::{assert_approved, decided, finished, fixture, hook, nowhere, server, session};
use crate::support::temp_dir;

const AGENT: &str = "copilot";

#[tokio::test]
async fn vs_code_and_copilot_cli_events_are_decided_in_clarify() {
    let (server, api) = server().await;

    // VS Code, approved with edits: updatedInput, and nothing but hookSpecificOutput.
    let s = session();
    let event = fixture("copilot/vscode.json", &s);
    let edited = json!({"command": "terraform plan", "explanation": "Plan first"});
    let (ran, record) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "approve", "edited_arguments": edited}),
    )
    .await;
    let out = ran.json();
    assert_approved(&out["hookSpecificOutput"]["permissionDecisionReason"]);
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"].clone();
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
               "permissionDecisionReason": reason, "updatedInput": edited}})
    );
    assert_eq!(record["tool_call_id"], event["tool_use_id"]);
    assert_eq!(record["agent"], "copilot");
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "runInTerminal", "arguments": {"command": "terraform apply", "explanation": "Apply the plan"}})
    );

    // Copilot CLI (`preToolUse`): the arguments arrive as JSON text; denied, flat fields only.
    let s = session();
    let event = fixture("copilot/cli.json", &s);
    let (ran, record) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "deny", "reason": "no applies today"}),
    )
    .await;
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "bash", "arguments": {"command": "terraform apply", "description": "Apply the plan"}})
    );
    let out = ran.json();
    assert_eq!(out["permissionDecision"], "deny");
    assert!(
        out["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| r.contains("no applies today"))
    );
    assert!(out.get("hookSpecificOutput").is_none(), "{out}");

    // Copilot CLI with the VS Code-compatible event: both forms, `modifiedArgs` for the edit.
    let s = session();
    let event = fixture("copilot/cli_compatible.json", &s);
    let edited = json!({"command": "terraform plan", "description": "Plan first"});
    let (ran, _) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "approve", "edited_arguments": edited}),
    )
    .await;
    let out = ran.json();
    assert_eq!(out["permissionDecision"], "allow");
    assert_eq!(out["modifiedArgs"], edited);
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(out["hookSpecificOutput"]["updatedInput"], edited);
}

#[tokio::test]
async fn timeouts_policy_and_an_unreachable_clarify() {
    let (server, api) = server().await;

    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s"],
        &fixture("copilot/vscode.json", &session()),
    ))
    .await
    .json();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "ask",
        "{out}"
    );
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s", "--on-timeout", "deny"],
        &fixture("copilot/cli.json", &session()),
    ))
    .await
    .json();
    assert_eq!(out["permissionDecision"], "deny", "{out}");

    let dir = temp_dir("copilot-policy");
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "allow = [\"runInTerminal\"]\ndeny = [\"bash\"]\n").expect("policy");
    let policy = policy.display().to_string();
    let url = nowhere();
    let s = session();
    let allowed = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &policy],
        &fixture("copilot/vscode.json", &s),
    ))
    .await
    .json();
    assert_eq!(allowed["hookSpecificOutput"]["permissionDecision"], "allow");
    let denied = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &policy],
        &fixture("copilot/cli.json", &s),
    ))
    .await
    .json();
    assert_eq!(denied["permissionDecision"], "deny");

    // Out of reach: VS Code is blocked by exit 2; Copilot CLI, which runs a call whose hook
    // failed, by a deny.
    finished(hook(
        AGENT,
        &url,
        "ck_none",
        &[],
        &fixture("copilot/vscode.json", &s),
    ))
    .await
    .assert_blocked("nothing answers at");
    let cli = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &[],
        &fixture("copilot/cli.json", &s),
    ))
    .await;
    assert!(cli.stderr.contains("nothing answers at"), "{cli:?}");
    let out = cli.json();
    assert_eq!(out["permissionDecision"], "deny");
    assert!(
        out["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| r.contains("nothing answers at")),
        "{out}"
    );
    // A bad policy file blocks Copilot CLI's call with a deny too.
    let missing = dir.join("missing.toml").display().to_string();
    let bad_policy = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &missing],
        &fixture("copilot/cli.json", &s),
    ))
    .await;
    assert!(bad_policy.stderr.contains("missing.toml"), "{bad_policy:?}");
    assert_eq!(bad_policy.json()["permissionDecision"], "deny");
    let open = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--fail-open"],
        &fixture("copilot/cli.json", &s),
    ))
    .await;
    assert_eq!((open.code, open.stdout.as_str()), (0, ""), "{open:?}");
}

#[tokio::test]
async fn bad_input_blocks_the_call() {
    let mut wrong = fixture("copilot/vscode.json", "s");
    wrong["tool_use_id"] = json!({"id": 1});
    super::bad_input_blocks(
        AGENT,
        wrong,
        "`tool_use_id` must be a string, got an object",
    )
    .await;
}
