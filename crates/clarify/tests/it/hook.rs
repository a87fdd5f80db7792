//! `clarify hook claude-code` as Claude Code runs it: one process per hook event, the event as
//! JSON on stdin, the decision as JSON on stdout, against a real server answered over HTTP.
//! And `clarify hook install` into a settings file that already has hooks.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::support::{Api, BIN, Server, free_port, temp_dir, unique};

/// A server on a memory store and an admin client of it.
async fn server() -> (Server, Api) {
    let server = Server::start("memory:", &[]).await;
    let key = server
        .stderr()
        .split_whitespace()
        .find(|w| w.starts_with("ck_"))
        .expect("the first admin key is printed")
        .to_owned();
    let api = Api::new(&server.url, &key);
    (server, api)
}

/// What a hook process did.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// Stdout parsed: it must be one JSON object and nothing else.
    fn json(&self) -> Value {
        assert_eq!(self.code, 0, "exit code; stderr: {}", self.stderr);
        serde_json::from_str(self.stdout.trim_end())
            .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {:?}", self.stdout))
    }
}

/// Starts `clarify hook claude-code ARGS` with `event` on stdin.
fn hook(url: &str, key: &str, args: &[&str], event: &Value) -> tokio::task::JoinHandle<Ran> {
    let mut command = tokio::process::Command::new(BIN);
    command
        .args(["hook", "claude-code"])
        .args(args)
        .env("CLARIFY_URL", url)
        .env("CLARIFY_TOKEN", key)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let input = event.to_string();
    tokio::spawn(async move {
        let mut child = command.spawn().expect("clarify hook starts");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.as_bytes())
            .await
            .expect("event written");
        drop(stdin);
        let out = child.wait_with_output().await.expect("clarify hook ends");
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    })
}

async fn finished(task: tokio::task::JoinHandle<Ran>) -> Ran {
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the hook decided in time")
        .expect("hook task")
}

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

/// The pending request of `session`, once it exists.
async fn pending(api: &Api, session: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, page) = api
            .get(&format!("/v1/requests?status=pending&session={session}"))
            .await;
        if let Some(r) = page["requests"].get(0) {
            return r.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no request appeared for {session}"
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

async fn answer(api: &Api, record: &Value, body: Value) {
    let id = record["id"].as_str().expect("id");
    let (status, reply) = api.post(&format!("/v1/requests/{id}/answer"), body).await;
    assert_eq!(status, 200, "{reply}");
}

fn session() -> String {
    format!("sess-{}", unique())
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
    let running = hook(&server.url, &api.key, &[], &event);
    let record = pending(&api, &s).await;
    assert_eq!(record["agent"], "claude-code");
    assert_eq!(record["tool_call_id"], event["tool_use_id"]);
    assert_eq!(
        record["questions"][0]["action"],
        json!({"name": "Bash", "arguments": {"command": "rm -rf build"}})
    );
    assert_eq!(record["context"]["working_directory"], "/home/dev/project");
    assert_eq!(
        record["context"]["assistant"],
        "I will remove the build directory."
    );
    answer(&api, &record, json!({"decision": "approve"})).await;
    let out = finished(running).await.json();
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
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let event = pre_tool_use(&session(), "Bash", json!({"command": "ls"}), None);
    let ran = finished(hook(&nowhere, "ck_none", &[], &event)).await;
    assert_eq!(ran.code, 2, "{ran:?}");
    assert_eq!(ran.stdout, "", "nothing but a decision on stdout");
    assert!(ran.stderr.contains("nothing answers at"), "{}", ran.stderr);
    let ran = finished(hook(&nowhere, "ck_none", &["--fail-open"], &event)).await;
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""), "{ran:?}");

    // Input that is not a hook event blocks too.
    let ran = finished(hook(
        &nowhere,
        "ck_none",
        &[],
        &json!({"hook_event_name": "Stop"}),
    ))
    .await;
    assert_eq!(ran.code, 2, "{ran:?}");
    assert!(ran.stderr.contains("\"Stop\""), "{}", ran.stderr);
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
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let s = session();
    let allowed = finished(hook(
        &nowhere,
        "ck_none",
        &["--policy", &policy],
        &pre_tool_use(&s, "mcp__docs__search", json!({"q": "x"}), None),
    ))
    .await
    .json();
    assert_eq!(allowed["hookSpecificOutput"]["permissionDecision"], "allow");
    let denied = finished(hook(
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
        finished(hook(&nowhere, "ck_none", args, &event)).await
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
    let running = hook(&server.url, &api.key, &[], &event);
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
    let running = hook(&server.url, &api.key, &[], &event);
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

#[test]
fn install_merges_into_existing_settings_idempotently() {
    let home = temp_dir("hook-home");
    let settings = home.join(".claude").join("settings.json");
    std::fs::create_dir_all(settings.parent().expect("dir")).expect("dir");
    let existing = json!({
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}],
        },
        "model": "opus",
    });
    std::fs::write(
        &settings,
        serde_json::to_string_pretty(&existing).expect("json"),
    )
    .expect("write");
    let install = || {
        let out = std::process::Command::new(BIN)
            .args(["hook", "install", "--scope", "user"])
            .env("HOME", &home)
            .output()
            .expect("clarify hook install runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(&settings).expect("settings")
    };
    let once = install();
    let twice = install();
    assert_eq!(once, twice, "installing twice changes nothing");
    let v: Value = serde_json::from_str(&once).expect("settings stay JSON");
    assert_eq!(v["permissions"], existing["permissions"]);
    assert_eq!(v["model"], "opus");
    assert_eq!(v["hooks"]["Stop"], existing["hooks"]["Stop"]);
    let groups = v["hooks"]["PreToolUse"].as_array().expect("PreToolUse");
    assert_eq!(groups.len(), 2, "{once}");
    assert_eq!(
        groups[0], existing["hooks"]["PreToolUse"][0],
        "the other hook is kept"
    );
    let ours = &groups[1]["hooks"][0];
    assert_eq!(ours["type"], "command");
    assert!(
        ours["command"]
            .as_str()
            .is_some_and(|c| c.ends_with(" hook claude-code")),
        "{ours}"
    );
    assert!(
        ours["timeout"].as_u64().is_some_and(|t| t > 600),
        "above the 10 minute wait: {ours}"
    );
    assert!(
        groups[1]["matcher"]
            .as_str()
            .is_some_and(|m| m.contains("mcp__.*"))
    );
}
