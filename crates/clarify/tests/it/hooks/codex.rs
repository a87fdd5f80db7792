//! `clarify hook codex`: `PermissionRequest` decides by policy, grant or person (allow, or deny
//! with the reason; no edits, which Codex refuses there); `PreToolUse` applies only the policy's
//! denials. Session grants are Codex's session's.

use serde_json::{Value, json};

use super::{
    answer, decided, finished, fixture, hook, nowhere, pending, requests, server, session,
};
use crate::support::temp_dir;

const AGENT: &str = "codex";

fn permission(behavior: &Value) -> &Value {
    &behavior["hookSpecificOutput"]["decision"]
}

#[tokio::test]
async fn permission_requests_are_approved_denied_and_granted_for_the_session() {
    let (server, api) = server().await;

    // Approve: the request shows the command, with Codex's justification as context only.
    let s = session();
    let event = fixture("codex/permission_request.json", &s);
    let (ran, record) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(
        ran.json(),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
               "decision": {"behavior": "allow"}}})
    );
    assert_eq!(record["agent"], "codex");
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "Bash", "arguments": {"command": "cargo publish"}})
    );
    assert_eq!(
        record["questions"][0]["allow_edit"], false,
        "Codex takes no edited input"
    );
    assert_eq!(
        record["context"]["justification"],
        "Publish the new version to crates.io"
    );
    assert_eq!(record["context"]["working_directory"], "/home/dev/app");

    // Deny with a reason: the model is told.
    let s = session();
    let event = fixture("codex/permission_request.json", &s);
    let (ran, _) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "deny", "reason": "release on Monday"}),
    )
    .await;
    let out = ran.json();
    assert_eq!(permission(&out)["behavior"], "deny");
    assert!(
        permission(&out)["message"]
            .as_str()
            .is_some_and(|m| m.contains("release on Monday")),
        "{out}"
    );

    // A `session` approval given anywhere (here over the API) covers the same command again in
    // that Codex session, however Codex justifies it; another session is asked.
    let s = session();
    let event = fixture("codex/permission_request.json", &s);
    let (ran, _) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "approve", "scope": "session"}),
    )
    .await;
    assert_eq!(permission(&ran.json())["behavior"], "allow");
    let mut again = fixture("codex/permission_request.json", &s);
    again["turn_id"] = json!("turn-9");
    again["tool_input"]["description"] = json!("Publish again after the fix");
    let out = finished(hook(AGENT, &server.url, &api.key, &[], &again))
        .await
        .json();
    assert_eq!(permission(&out)["behavior"], "allow", "{out}");
    assert_eq!(requests(&api, &s).await.len(), 1, "no second request");
    let other = session();
    let running = hook(
        AGENT,
        &server.url,
        &api.key,
        &[],
        &fixture("codex/permission_request.json", &other),
    );
    let record = pending(&api, &other).await;
    answer(&api, &record, json!({"decision": "deny"})).await;
    assert_eq!(
        permission(&finished(running).await.json())["behavior"],
        "deny"
    );
}

#[tokio::test]
async fn timeouts_policy_and_an_unreachable_clarify() {
    let (server, api) = server().await;

    // Nobody answers: nothing printed, so Codex's own prompt asks; or a deny.
    let s = session();
    let ran = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s"],
        &fixture("codex/permission_request.json", &s),
    ))
    .await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""), "{ran:?}");
    let status = requests(&api, &s).await[0]["status"].clone();
    assert!(status == "cancelled" || status == "expired", "{status}");
    let s = session();
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s", "--on-timeout", "deny"],
        &fixture("codex/permission_request.json", &s),
    ))
    .await
    .json();
    assert_eq!(permission(&out)["behavior"], "deny", "{out}");

    // The policy decides without reaching clarify, on both events; PreToolUse says nothing
    // unless the policy denies.
    let dir = temp_dir("codex-policy");
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "allow = [\"Bash\"]\ndeny = [\"mcp__db__*\"]\n").expect("policy");
    let policy = policy.display().to_string();
    let url = nowhere();
    let s = session();
    let allowed = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &policy],
        &fixture("codex/permission_request.json", &s),
    ))
    .await
    .json();
    assert_eq!(permission(&allowed)["behavior"], "allow");
    let mut drop_table = fixture("codex/permission_request.json", &s);
    drop_table["tool_name"] = json!("mcp__db__drop_table");
    drop_table["tool_input"] = json!({"table": "users"});
    let denied = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &policy],
        &drop_table,
    ))
    .await
    .json();
    assert_eq!(permission(&denied)["behavior"], "deny");
    let mut pre = fixture("codex/pre_tool_use.json", &s);
    pre["tool_name"] = json!("mcp__db__drop_table");
    let out = finished(hook(AGENT, &url, "ck_none", &["--policy", &policy], &pre))
        .await
        .json();
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| !r.is_empty())
    );
    // Not denied: no output at all (Codex ignores an allow there), and no person is asked.
    let ran = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--policy", &policy],
        &fixture("codex/pre_tool_use.json", &s),
    ))
    .await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""), "{ran:?}");
    let ran = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &[],
        &fixture("codex/pre_tool_use.json", &s),
    ))
    .await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""), "{ran:?}");
    assert!(requests(&api, &s).await.is_empty());

    // Clarify out of reach: exit 2 blocks the call, unless --fail-open.
    let event = fixture("codex/permission_request.json", &session());
    finished(hook(AGENT, &url, "ck_none", &[], &event))
        .await
        .assert_blocked("nothing answers at");
    let open = finished(hook(AGENT, &url, "ck_none", &["--fail-open"], &event)).await;
    assert_eq!((open.code, open.stdout.as_str()), (0, ""), "{open:?}");
}

#[tokio::test]
async fn bad_input_blocks_the_call() {
    let mut wrong = fixture("codex/permission_request.json", "s");
    wrong["tool_input"] = json!("cargo publish");
    super::bad_input_blocks(AGENT, wrong, "`tool_input` must be an object, got a string").await;
}
