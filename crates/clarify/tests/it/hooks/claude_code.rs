//! `clarify hook claude-code`: `PreToolUse`, `PermissionRequest` (with `AskUserQuestion`) and
//! `Elicitation` events; and `clarify hook install` into a settings file that already has
//! hooks.

use std::path::Path;

use serde_json::{Value, json};

use super::{answer, finished, fixture, hook, nowhere, pending, server, session};
use crate::support::{temp_dir, unique};

/// Claude Code's hook.
const AGENT: &str = "claude-code";

fn pre_tool_use(session: &str, tool: &str, input: Value, transcript: Option<&Path>) -> Value {
    let mut event = json!({
        "session_id": session,
        "cwd": "/home/dev/project",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": format!("toolu_{}", unique()),
    });
    if let Some(path) = transcript {
        event["transcript_path"] = json!(path.display().to_string());
    }
    event
}

#[tokio::test]
async fn an_edit_is_shown_as_a_diff_of_the_file_on_disk_and_changes_can_be_requested() {
    let (server, api) = server().await;
    let dir = temp_dir("hook-edit");
    std::fs::create_dir_all(dir.join("src")).expect("src");
    std::fs::write(
        dir.join("src/payments.py"),
        "import log\n\ndef refund(order, amount):\n    if amount > order.total:\n        raise ValueError\n    order.refund(amount)\n",
    )
    .expect("file written");
    let s = session();
    let mut event = pre_tool_use(
        &s,
        "Edit",
        json!({"file_path": dir.join("src/payments.py").display().to_string(),
               "old_string": "    if amount > order.total:\n",
               "new_string": "    if amount > order.paid:\n        log.warning(\"refund above paid\")\n"}),
        None,
    );
    event["cwd"] = json!(dir.display().to_string());
    let running = hook(AGENT, &server.url, &api.key, &[], &event);
    let record = pending(&api, &s).await;
    assert_eq!(record["summary"], "Edit src/payments.py (+2 \u{2212}1)");
    assert_eq!(record["display"][0]["type"], "diff", "{record}");
    assert_eq!(record["display"][0]["path"], "src/payments.py");
    // Read from the file, the diff has the file's own line numbers.
    let diff = record["display"][0]["diff"].as_str().unwrap_or_default();
    assert!(
        diff.contains("@@ -1,6 +1,7 @@\n import log\n \n def refund(order, amount):\n-    if amount > order.total:\n+    if amount > order.paid:\n+        log.warning(\"refund above paid\")\n"),
        "{diff}"
    );
    answer(
        &api,
        &record,
        json!({"decision": "revise", "reason": "log at info, not warning"}),
    )
    .await;
    let out = finished(running).await.json();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "deny",
        "{out}"
    );
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.starts_with("Changes requested: log at info, not warning"),
        "{out}"
    );
}

#[tokio::test]
async fn approvals_edits_denials_and_session_grants() {
    let (server, api) = server().await;
    let dir = temp_dir("hook");
    let transcript = dir.join("transcript.jsonl");
    std::fs::write(
        &transcript,
        [
            json!({"type": "user", "message": {"role": "user", "content": "clean up"}}),
            json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "I will remove the build directory."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]}}),
        ]
        .map(|v| v.to_string())
        .join("\n"),
    )
    .expect("transcript written");

    // Approve: the request carries the call, and the decision is exactly Claude Code's shape.
    let s = session();
    let event = pre_tool_use(
        &s,
        "Bash",
        json!({"command": "rm -rf build"}),
        Some(&transcript),
    );
    let running = hook(AGENT, &server.url, &api.key, &[], &event);
    let record = pending(&api, &s).await;
    assert_eq!(record["agent"], "claude-code");
    assert_eq!(record["tool_call_id"], event["tool_use_id"]);
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "Bash", "arguments": {"command": "rm -rf build"}})
    );
    assert_eq!(record["context"]["working_directory"], "/home/dev/project");
    // The assistant's last words are the approval's "Why", above the command it would run.
    assert_eq!(record["summary"], "Bash: rm -rf build");
    assert_eq!(
        record["display"],
        json!([
            {"type": "markdown", "title": "Why", "text": "I will remove the build directory."},
            {"type": "code", "title": "Command", "language": "bash", "text": "rm -rf build"},
        ])
    );
    answer(&api, &record, json!({"decision": "approve"})).await;
    let ran = finished(running).await;
    // The decision's signed receipt is in the hook's log, for whoever keeps it.
    let logged = format!(
        "clarify: the receipt of {} (answered): ey",
        record["id"].as_str().unwrap_or("?")
    );
    assert!(ran.stderr.contains(&logged), "{}", ran.stderr);
    let out = ran.json();
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(reason.starts_with("Approved in clarify by "), "{out}");
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                      "permissionDecisionReason": reason}})
    );

    // Approve with edited input: it comes back as updatedInput.
    let s = session();
    let running = hook(
        AGENT,
        &server.url,
        &api.key,
        &[],
        &pre_tool_use(&s, "Bash", json!({"command": "rm -rf /"}), None),
    );
    let record = pending(&api, &s).await;
    answer(
        &api,
        &record,
        json!({"decision": "approve", "edited_arguments": {"command": "rm -rf ./build"}}),
    )
    .await;
    let out = finished(running).await.json();
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"],
        json!({"command": "rm -rf ./build"})
    );

    // Deny with a reason: Claude is told why.
    let s = session();
    let running = hook(
        AGENT,
        &server.url,
        &api.key,
        &[],
        &pre_tool_use(&s, "Write", json!({"file_path": "/etc/hosts"}), None),
    );
    let record = pending(&api, &s).await;
    answer(
        &api,
        &record,
        json!({"decision": "deny", "reason": "never touch /etc"}),
    )
    .await;
    let out = finished(running).await.json();
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("never touch /etc"), "{out}");

    // Scope session: the next identical call in the session passes without a request.
    let s = session();
    let call = json!({"command": "npm test"});
    let running = hook(
        AGENT,
        &server.url,
        &api.key,
        &[],
        &pre_tool_use(&s, "Bash", call.clone(), None),
    );
    let record = pending(&api, &s).await;
    answer(
        &api,
        &record,
        json!({"decision": "approve", "scope": "session"}),
    )
    .await;
    assert_eq!(
        finished(running).await.json()["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );
    let again = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &[],
        &pre_tool_use(&s, "Bash", call.clone(), None),
    ))
    .await
    .json();
    assert_eq!(
        again["hookSpecificOutput"]["permissionDecision"], "allow",
        "{again}"
    );
    let reason = again["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.starts_with("Approved earlier in clarify"), "{again}");
    let (_, page) = api.get(&format!("/v1/requests?session={s}")).await;
    assert_eq!(
        page["requests"].as_array().map(Vec::len),
        Some(1),
        "no second request: {page}"
    );
    // Another session is asked again.
    let other = session();
    let running = hook(
        AGENT,
        &server.url,
        &api.key,
        &[],
        &pre_tool_use(&other, "Bash", call, None),
    );
    let record = pending(&api, &other).await;
    answer(&api, &record, json!({"decision": "deny"})).await;
    assert_eq!(
        finished(running).await.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
}

#[tokio::test]
async fn no_answer_in_time_asks_or_denies_and_ends_the_request() {
    let (server, api) = server().await;
    let s = session();
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s"],
        &pre_tool_use(&s, "Bash", json!({"command": "make"}), None),
    ))
    .await
    .json();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "ask",
        "{out}"
    );
    let (_, page) = api.get(&format!("/v1/requests?session={s}")).await;
    let status = page["requests"][0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        status == "cancelled" || status == "expired",
        "a late answer cannot grant anything: {page}"
    );

    let s = session();
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s", "--on-timeout", "deny"],
        &pre_tool_use(&s, "Bash", json!({"command": "make"}), None),
    ))
    .await
    .json();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "deny",
        "{out}"
    );
}

#[tokio::test]
async fn unreachable_clarify_blocks_the_call_unless_fail_open() {
    let nowhere = nowhere();
    let event = pre_tool_use(&session(), "Bash", json!({"command": "ls"}), None);
    let ran = finished(hook(AGENT, &nowhere, "ck_none", &[], &event)).await;
    assert_eq!(ran.code, 2, "{ran:?}");
    assert_eq!(ran.stdout, "", "nothing but a decision on stdout");
    assert!(ran.stderr.contains("nothing answers at"), "{}", ran.stderr);
    let ran = finished(hook(AGENT, &nowhere, "ck_none", &["--fail-open"], &event)).await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""), "{ran:?}");

    // Input that is not a hook event blocks too.
    let ran = finished(hook(
        AGENT,
        &nowhere,
        "ck_none",
        &[],
        &json!({"hook_event_name": "Stop"}),
    ))
    .await;
    assert_eq!(ran.code, 2, "{ran:?}");
    assert!(ran.stderr.contains("\"Stop\""), "{}", ran.stderr);
}

/// The server's `[[rules]]` decide a call after the hook's own policy and before any person:
/// the rule's decision comes back at once, with its reason, and the request raised for it is
/// resolved by the rule, so the decision is in the server's log.
#[tokio::test]
async fn the_servers_rules_decide_a_call_by_its_arguments() {
    let dir = temp_dir("hook-rules");
    let config = dir.join("clarify.toml");
    std::fs::write(
        &config,
        "[[rules]]\nname = \"no-force-push\"\ntool = \"Bash\"\n\
         when = \"args.command.contains('--force')\"\ndecide = \"deny\"\n\
         reason = \"force pushes rewrite shared history\"\n\n\
         [[rules]]\nname = \"read-only-git\"\ntool = \"Bash\"\n\
         when = \"args.command.startsWith('git log')\"\ndecide = \"allow\"\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let server = crate::support::Server::start("memory:", &["--config", &config]).await;
    let key = server.admin_key().await;
    let api = crate::support::Api::new(&server.url, &key);
    let s = session();
    let decide = async |command: &str| {
        let event = pre_tool_use(&s, "Bash", json!({"command": command}), None);
        finished(hook(AGENT, &server.url, &key, &["--wait", "20s"], &event))
            .await
            .json()
    };
    let denied = decide("git push --force origin main").await;
    let output = &denied["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{denied}");
    assert!(
        output["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| r.contains("force pushes rewrite shared history")),
        "{denied}"
    );
    let allowed = decide("git log -5").await;
    assert_eq!(
        allowed["hookSpecificOutput"]["permissionDecision"], "allow",
        "{allowed}"
    );
    // Both were decided by the rules, in the log, and nothing waits for a person.
    let (_, page) = api.get(&format!("/v1/requests?session={s}")).await;
    let items = page["requests"].as_array().expect("requests");
    assert_eq!(items.len(), 2, "{page}");
    for item in items {
        assert_eq!(item["status"], "answered", "{item}");
        assert_eq!(item["outcome"]["answered_via"], "policy", "{item}");
    }
}

#[tokio::test]
async fn policy_decides_without_reaching_clarify() {
    let dir = temp_dir("hook-policy");
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "allow = [\"Read\", \"mcp__docs__*\"]\ndeny = [\"mcp__db__drop_*\"]\n",
    )
    .expect("policy");
    let policy = policy.display().to_string();
    let nowhere = nowhere();
    let s = session();
    let allowed = finished(hook(
        AGENT,
        &nowhere,
        "ck_none",
        &["--policy", &policy],
        &pre_tool_use(&s, "mcp__docs__search", json!({"q": "x"}), None),
    ))
    .await
    .json();
    assert_eq!(allowed["hookSpecificOutput"]["permissionDecision"], "allow");
    let denied = finished(hook(
        AGENT,
        &nowhere,
        "ck_none",
        &["--policy", &policy],
        &pre_tool_use(&s, "mcp__DB__drop_table", json!({}), None),
    ))
    .await
    .json();
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");

    // The same lists under `[claude_code]` of a configuration file; `--policy` wins over it.
    let config = dir.join("clarify.toml");
    std::fs::write(
        &config,
        "[claude_code]\nallow = [\"Grep\"]\n\n[gate]\nallow = [\"Bash\"]\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let decide = async |tool: &str, args: &[&str]| {
        let event = pre_tool_use(&s, tool, json!({}), None);
        finished(hook(AGENT, &nowhere, "ck_none", args, &event)).await
    };
    let from_config = decide("Grep", &["--config", &config]).await.json();
    assert_eq!(
        from_config["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );
    let not_from_gate = decide("Bash", &["--config", &config]).await;
    assert_eq!(
        not_from_gate.code, 2,
        "[gate] is not the hook's policy, so Bash asks clarify, which is out of reach: {not_from_gate:?}"
    );
    let flag_wins = decide("Grep", &["--config", &config, "--policy", &policy]).await;
    assert_eq!(
        flag_wins.code, 2,
        "--policy does not allow Grep: {flag_wins:?}"
    );

    std::fs::write(dir.join("bad.toml"), "allow = [\"Read\"]\nalow = [\"x\"]\n").expect("policy");
    let bad = dir.join("bad.toml").display().to_string();
    let ran = finished(hook(
        AGENT,
        &nowhere,
        "ck_none",
        &["--policy", &bad],
        &pre_tool_use(&s, "Read", json!({}), None),
    ))
    .await;
    assert_eq!(ran.code, 2, "{ran:?}");
    assert!(
        ran.stderr.contains("bad.toml") && ran.stderr.contains("alow"),
        "{}",
        ran.stderr
    );
}

#[tokio::test]
async fn permission_request_events_get_a_decision_object() {
    let (server, api) = server().await;
    let s = session();
    let mut event = pre_tool_use(&s, "Bash", json!({"command": "git push"}), None);
    event["hook_event_name"] = json!("PermissionRequest");
    event.as_object_mut().map(|e| e.remove("tool_use_id"));
    let running = hook(AGENT, &server.url, &api.key, &[], &event);
    let record = pending(&api, &s).await;
    answer(
        &api,
        &record,
        json!({"decision": "approve", "edited_arguments": {"command": "git push --dry-run"}}),
    )
    .await;
    assert_eq!(
        finished(running).await.json(),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
               "decision": {"behavior": "allow", "updatedInput": {"command": "git push --dry-run"}}}})
    );

    let s = session();
    event["session_id"] = json!(s);
    let running = hook(AGENT, &server.url, &api.key, &[], &event);
    let record = pending(&api, &s).await;
    answer(
        &api,
        &record,
        json!({"decision": "deny", "reason": "not today"}),
    )
    .await;
    let out = finished(running).await.json();
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "deny");
    assert!(
        out["hookSpecificOutput"]["decision"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not today")),
        "{out}"
    );
}

#[tokio::test]
async fn ask_user_question_is_answered_through_clarify() {
    let (server, api) = server().await;
    let s = session();
    let questions = json!([
        {"question": "Which features should I build?", "header": "Features", "multiSelect": true,
         "options": [{"label": "Search", "description": "full text"}, {"label": "Export", "description": "CSV"},
                     {"label": "Themes", "description": "dark mode"}]},
        {"question": "Which database?", "header": "DB", "multiSelect": false,
         "options": [{"label": "Postgres", "description": "shared"}, {"label": "SQLite", "description": "embedded"}]},
    ]);
    let running = hook(
        AGENT,
        &server.url,
        &api.key,
        &[],
        &pre_tool_use(&s, "AskUserQuestion", json!({"questions": questions}), None),
    );
    let record = pending(&api, &s).await;
    assert_eq!(record["questions"][0]["kind"], "multi");
    assert_eq!(
        record["questions"][0]["text"],
        "Which features should I build?"
    );
    assert_eq!(record["questions"][1]["kind"], "single");
    answer(
        &api,
        &record,
        json!({"answers": {"q1": {"options": ["search", "themes"]}, "q2": {"option": "sqlite"}}}),
    )
    .await;
    let out = finished(running).await.json();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "allow",
        "{out}"
    );
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"],
        json!({"questions": questions, "answers": {
            "Which features should I build?": "Search, Themes",
            "Which database?": "SQLite"}})
    );
}

#[tokio::test]
async fn elicitations_become_forms_and_the_values_come_back() {
    let (server, api) = server().await;

    // Accept: the server's schema is the form; the values come back as the content, an enum
    // value that is not an id given back as the server spelled it.
    let s = session();
    let event = fixture("claude-code/elicitation.json", &s);
    let running = hook(AGENT, &server.url, &api.key, &[], &event);
    let record = pending(&api, &s).await;
    let question = &record["questions"][0];
    assert_eq!(question["kind"], "form", "{record}");
    assert_eq!(
        question["text"],
        "Which environment should the release go to?"
    );
    assert_eq!(question["header"], "deploy");
    assert_eq!(record["agent"], "claude-code");
    assert_eq!(record["context"]["mcp_server"], "deploy");
    let ids: Vec<&str> = question["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert_eq!(ids, ["environment", "replicas", "notify"]);
    answer(
        &api,
        &record,
        json!({"answers": {"q1": {"values": {"environment": "production-eu", "replicas": 3, "notify": true}}}}),
    )
    .await;
    assert_eq!(
        finished(running).await.json(),
        json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
               "content": {"environment": "prod/eu", "replicas": 3, "notify": true}}})
    );

    // Skipped in clarify: declined; cancelled in clarify: cancelled.
    for (resolve, action) in [("skip", "decline"), ("cancel", "cancel")] {
        let s = session();
        let running = hook(
            AGENT,
            &server.url,
            &api.key,
            &[],
            &fixture("claude-code/elicitation.json", &s),
        );
        let record = pending(&api, &s).await;
        let id = record["id"].as_str().expect("id");
        let (status, reply) = if resolve == "skip" {
            api.post(&format!("/v1/requests/{id}/answer"), json!({"skip": true}))
                .await
        } else {
            api.post(&format!("/v1/requests/{id}/cancel"), json!({}))
                .await
        };
        assert_eq!(status, 200, "{reply}");
        assert_eq!(
            finished(running).await.json(),
            json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": action}})
        );
    }

    // Nobody answers: Claude Code's own dialog (nothing printed), or declined with `deny`.
    let s = session();
    let ran = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s"],
        &fixture("claude-code/elicitation.json", &s),
    ))
    .await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""), "{ran:?}");
    let s = session();
    let out = finished(hook(
        AGENT,
        &server.url,
        &api.key,
        &["--wait", "1s", "--on-timeout", "deny"],
        &fixture("claude-code/elicitation.json", &s),
    ))
    .await
    .json();
    assert_eq!(out["hookSpecificOutput"]["action"], "decline", "{out}");

    // A schema clarify cannot show as a form, and a URL to visit: Claude Code asks itself.
    let s = session();
    let mut event = fixture("claude-code/elicitation.json", &s);
    event["requested_schema"]["properties"]["environment"]["pattern"] = json!("^[a-z]+$");
    let ran = finished(hook(AGENT, &server.url, &api.key, &[], &event)).await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""), "{ran:?}");
    assert!(ran.stderr.contains("cannot show"), "{ran:?}");
    let mut event = fixture("claude-code/elicitation.json", &s);
    event["mode"] = json!("url");
    event["url"] = json!("https://deploy.example.com/approve");
    let ran = finished(hook(AGENT, &server.url, &api.key, &[], &event)).await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""), "{ran:?}");
    assert!(super::requests(&api, &s).await.is_empty(), "nothing raised");

    // Clarify out of reach: exit 2, which Claude Code takes as a decline.
    let ran = finished(hook(
        AGENT,
        &super::nowhere(),
        "ck_none",
        &[],
        &fixture("claude-code/elicitation.json", &session()),
    ))
    .await;
    ran.assert_blocked("nothing answers at");
}

#[tokio::test]
async fn bad_input_blocks_the_call() {
    let mut wrong = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}});
    wrong["session_id"] = json!(42);
    super::bad_input_blocks(AGENT, wrong, "`session_id` must be a string, got a number").await;
}
