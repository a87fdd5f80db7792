//! `clarify hook gemini`: `BeforeTool` answered with `decision` `allow`, `deny` or `ask`, the
//! reason, and `hookSpecificOutput.tool_input` for a person's edit.

use serde_json::json;

use super::{assert_approved, decided, finished, fixture, hook, nowhere, server, session};
use crate::support::temp_dir;

const AGENT: &str = "gemini";

#[tokio::test]
async fn tool_calls_are_approved_edited_and_denied_in_clarify() {
    let (server, api) = server().await;

    let s = session();
    let event = fixture("gemini/before_tool.json", &s);
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
    assert_eq!(out["decision"], "allow", "{out}");
    assert_approved(&out["reason"]);
    assert!(
        out.get("hookSpecificOutput").is_none(),
        "no edit, no new input: {out}"
    );
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "run_shell_command", "arguments": {"command": "git push --force", "description": "Push the rewritten history"}})
    );
    assert_eq!(record["agent"], "gemini");
    assert_eq!(record["session"], s.as_str());

    // Edited: the new input replaces the model's.
    let s = session();
    let event = fixture("gemini/before_tool.json", &s);
    let edited = json!({"command": "git push --force-with-lease", "description": "Push the rewritten history"});
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
    assert_eq!(out["decision"], "allow");
    assert_eq!(
        out["hookSpecificOutput"],
        json!({"hookEventName": "BeforeTool", "tool_input": edited})
    );

    // An MCP tool, denied: the reason is the tool's error for the model.
    let s = session();
    let event = fixture("gemini/before_tool_mcp.json", &s);
    let (ran, record) = decided(
        &server,
        &api,
        AGENT,
        &event,
        &s,
        json!({"decision": "deny", "reason": "keep the users"}),
    )
    .await;
    assert_eq!(record["context"]["mcp_server_name"], "db");
    let out = ran.json();
    assert_eq!(out["decision"], "deny");
    assert!(
        out["reason"]
            .as_str()
            .is_some_and(|r| r.contains("keep the users")),
        "{out}"
    );
}

#[tokio::test]
async fn timeouts_policy_and_an_unreachable_clarify() {
    let (server, api) = server().await;

    // Nobody answers: Gemini CLI's own confirmation is forced (`ask`), or a deny.
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s"],
        &fixture("gemini/before_tool.json", &session()),
    ))
    .await
    .json();
    assert_eq!(out["decision"], "ask", "{out}");
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s", "--on-timeout", "deny"],
        &fixture("gemini/before_tool.json", &session()),
    ))
    .await
    .json();
    assert_eq!(out["decision"], "deny", "{out}");

    let dir = temp_dir("gemini-policy");
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "allow = [\"run_shell_command\"]\ndeny = [\"mcp_db_*\"]\n",
    )
    .expect("policy");
    let policy = policy.display().to_string();
    let url = nowhere();
    let s = session();
    let allowed = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &policy],
        &fixture("gemini/before_tool.json", &s),
    ))
    .await
    .json();
    assert_eq!(allowed["decision"], "allow");
    let denied = finished(hook(
        AGENT,
        &url,
        "ck_none",
        &["--policy", &policy],
        &fixture("gemini/before_tool_mcp.json", &s),
    ))
    .await
    .json();
    assert_eq!(denied["decision"], "deny");

    let event = fixture("gemini/before_tool.json", &session());
    finished(hook(AGENT, &url, "ck_none", &[], &event))
        .await
        .assert_blocked("nothing answers at");
    let open = finished(hook(AGENT, &url, "ck_none", &["--fail-open"], &event)).await;
    assert_eq!((open.code, open.stdout.as_str()), (0, ""), "{open:?}");
}

#[tokio::test]
async fn bad_input_blocks_the_call() {
    let mut wrong = fixture("gemini/before_tool.json", "s");
    wrong["tool_name"] = json!(7);
    super::bad_input_blocks(AGENT, wrong, "`tool_name` must be a string, got a number").await;
}
