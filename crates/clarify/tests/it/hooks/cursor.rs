//! `clarify hook cursor`: shell commands, MCP calls and other tools, answered with Cursor's
//! flat `permission`, `user_message` and `agent_message`; `updated_input` for a person's edit
//! on `preToolUse`.

use serde_json::json;

use super::{
    assert_approved, decided, finished, fixture, hook, nowhere, requests, server, session,
};
use crate::support::temp_dir;

const AGENT: &str = "cursor";

#[tokio::test]
async fn shell_mcp_and_tool_calls_are_decided_in_clarify() {
    let (server, api) = server().await;

    // A shell command, approved: `Shell` with the command, the conversation as the session.
    let s = session();
    let event = fixture("cursor/before_shell_execution.json", &s);
    let (ran, record) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "approve"}),
    )
    .await;
    let out = ran.json();
    assert_eq!(out["permission"], "allow", "{out}");
    assert_approved(&out["user_message"]);
    assert_eq!(
        out.as_object().map(|o| o.len()),
        Some(2),
        "nothing else: {out}"
    );
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "Shell", "arguments": {"command": "npm publish"}})
    );
    assert_eq!(record["agent"], "cursor");
    assert_eq!(record["session"], s.as_str());
    assert_eq!(record["context"]["working_directory"], "/home/dev/app");

    // An MCP call whose arguments Cursor sends as JSON text, denied with a reason: both messages.
    let s = session();
    let event = fixture("cursor/before_mcp_execution.json", &s);
    let (ran, record) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "deny", "reason": "not the production database"}),
    )
    .await;
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "MCP:run_query", "arguments": {"query": "DELETE FROM sessions"}})
    );
    assert_eq!(record["context"]["mcp_server_command"], "npx -y db-mcp");
    let out = ran.json();
    assert_eq!(out["permission"], "deny");
    let reason = out["agent_message"].as_str().unwrap_or_default();
    assert!(reason.contains("not the production database"), "{out}");
    assert_eq!(out["user_message"], out["agent_message"]);

    // A file write, approved with edits: `updated_input`, which preToolUse takes.
    let s = session();
    let event = fixture("cursor/pre_tool_use.json", &s);
    let edited = json!({"file_path": "/home/dev/app/.env.local", "contents": "DEBUG=1\n"});
    let (ran, record) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "approve", "edited_arguments": edited}),
    )
    .await;
    assert_eq!(record["tool_call_id"], event["tool_use_id"]);
    assert_eq!(record["questions"][0]["allow_edit"], true);
    let out = ran.json();
    assert_eq!(out["permission"], "allow");
    assert_eq!(out["updated_input"], edited);

    // Shell commands take no edits.
    let s = session();
    let event = fixture("cursor/before_shell_execution.json", &s);
    let (ran, record) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(record["questions"][0]["allow_edit"], false);
    assert!(ran.json().get("updated_input").is_none());
}

#[tokio::test]
async fn timeouts_policy_and_an_unreachable_clarify() {
    let (server, api) = server().await;

    // Nobody answers: Cursor's own prompt (`ask`), or a deny.
    let s = session();
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s"],
        &fixture("cursor/before_shell_execution.json", &s),
    ))
    .await
    .json();
    assert_eq!(out["permission"], "ask", "{out}");
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s", "--on-timeout", "deny"],
        &fixture("cursor/before_shell_execution.json", &session()),
    ))
    .await
    .json();
    assert_eq!(out["permission"], "deny", "{out}");

    // The policy, by Cursor's tool names.
    let dir = temp_dir("cursor-policy");
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "allow = [\"Shell\"]\ndeny = [\"MCP:*\"]\n").expect("policy");
    let policy = policy.display().to_string();
    let url = nowhere();
    let s = session();
    let allowed = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &policy],
        &fixture("cursor/before_shell_execution.json", &s),
    ))
    .await
    .json();
    assert_eq!(allowed["permission"], "allow");
    let denied = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &policy],
        &fixture("cursor/before_mcp_execution.json", &s),
    ))
    .await
    .json();
    assert_eq!(denied["permission"], "deny");
    assert!(
        denied["agent_message"]
            .as_str()
            .is_some_and(|m| m.contains("MCP:run_query")),
        "{denied}"
    );

    // Clarify out of reach: exit 2; with --fail-open, `ask` (the installed hook fails closed,
    // and Cursor blocks a call whose hook printed nothing).
    let event = fixture("cursor/before_shell_execution.json", &session());
    finished(hook(AGENT, &url, "ck_none", &[], &event))
        .await
        .assert_blocked("nothing answers at");
    let open = finished(hook(AGENT, &url, "ck_none", &["--fail-open"], &event))
        .await
        .json();
    assert_eq!(open, json!({"permission": "ask"}));
    assert!(requests(&api, &s).await.is_empty());
}

#[tokio::test]
async fn bad_input_blocks_the_call() {
    let mut wrong = fixture("cursor/before_shell_execution.json", "s");
    wrong["command"] = json!(["npm", "publish"]);
    super::bad_input_blocks(AGENT, wrong, "`command` must be a string, got a list").await;
}
