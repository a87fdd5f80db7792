//! The `hook` benchmark: the time one `clarify hook <agent>` process takes, for each coding
//! agent's hook, from start to its decision on stdout, beside the time to start the binary at
//! all (see `main.rs`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{BIN, Server, key, ms, percentile, post};

/// One run of `clarify ARGS` with `stdin`, from start to exit; its stdout must contain
/// `expect`.
fn timed_once(args: &[String], env: &[(&str, &str)], stdin: &str, expect: &str) -> Duration {
    use std::io::Write as _;
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clarify starts");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).expect("stdin written");
    }
    let out = child.wait_with_output().expect("clarify ends");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(expect),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

pub(crate) async fn hook(dir: &std::path::Path) {
    let db = format!("sqlite://{}", dir.join("hook.db").display());
    let admin = key(&db, "admin", "default");
    let server = Server::start(&db).await;
    let client = clarify_client::http::client().expect("an HTTP client");
    // Grants: an approval of each agent's shell command answered with scope `always`. Tool names
    // are compared ignoring case, so `Bash` covers Claude Code, Codex and Copilot CLI's `bash`.
    for tool in ["Bash", "Shell", "run_shell_command"] {
        let action = json!({"name": tool, "arguments": {"command": "npm test"}});
        let record = post(
            &client,
            format!("{}/v1/requests", server.url),
            &admin,
            json!({
            "questions": [{"text": "Run it?", "kind": "approval", "action": action,
                           "scopes": ["once", "always"]}]}),
        )
        .await;
        let id = record["id"].as_str().expect("id");
        post(
            &client,
            format!("{}/v1/requests/{id}/answer", server.url),
            &admin,
            json!({"decision": "approve", "scope": "always"}),
        )
        .await;
    }
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "allow = [\"Read\", \"read_file\", \"MCP:search\", \"view\"]\n",
    )
    .expect("policy");
    let policy = policy.display().to_string();
    // Each agent's event, in its own shape, for a call the policy allows and one a grant covers.
    let claude = |tool: &str, input: Value| {
        json!({"session_id": "bench", "cwd": "/tmp", "hook_event_name": "PreToolUse",
               "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1"})
    };
    let codex = |tool: &str, input: Value| {
        json!({"session_id": "bench", "turn_id": "t1", "transcript_path": null, "cwd": "/tmp",
               "hook_event_name": "PermissionRequest", "model": "gpt-5.1-codex",
               "permission_mode": "default", "tool_name": tool, "tool_input": input})
    };
    let cursor_policy = json!({"conversation_id": "bench", "generation_id": "g1",
        "hook_event_name": "beforeMCPExecution", "workspace_roots": ["/tmp"],
        "tool_name": "search", "tool_input": "{\"q\": \"x\"}", "command": "mcp"});
    let cursor_grant = json!({"conversation_id": "bench", "generation_id": "g1",
        "hook_event_name": "beforeShellExecution", "workspace_roots": ["/tmp"],
        "command": "npm test", "cwd": "/tmp"});
    let gemini = |tool: &str, input: Value| {
        json!({"session_id": "bench", "transcript_path": "/tmp/t.json", "cwd": "/tmp",
               "hook_event_name": "BeforeTool", "timestamp": "2026-11-25T09:30:00Z",
               "tool_name": tool, "tool_input": input})
    };
    let copilot = |tool: &str, input: Value| {
        json!({"sessionId": "bench", "timestamp": 1764063000000_u64, "cwd": "/tmp",
               "toolName": tool, "toolArgs": input.to_string()})
    };
    let npm_test = || json!({"command": "npm test"});
    let read = || json!({"file_path": "/tmp/a"});
    let agents = [
        (
            "claude-code",
            claude("Read", read()),
            claude("Bash", npm_test()),
        ),
        ("codex", codex("Read", read()), codex("Bash", npm_test())),
        ("cursor", cursor_policy, cursor_grant),
        (
            "gemini",
            gemini("read_file", read()),
            gemini("run_shell_command", npm_test()),
        ),
        (
            "copilot",
            copilot("view", read()),
            copilot("bash", npm_test()),
        ),
    ];
    let env = [
        ("CLARIFY_URL", server.url.as_str()),
        ("CLARIFY_TOKEN", admin.as_str()),
    ];
    // One run of each case per round, so that a change in the machine's load during the run
    // touches every case alike.
    let mut cases: Vec<(String, Vec<String>, String, &str)> = vec![(
        "start only (clarify --version)".to_owned(),
        vec!["--version".to_owned()],
        String::new(),
        "clarify",
    )];
    for (agent, by_policy, by_grant) in agents {
        let args: Vec<String> = ["hook", agent, "--policy", &policy]
            .iter()
            .map(|a| (*a).to_owned())
            .collect();
        cases.push((
            format!("hook {agent}, decided by the policy"),
            args.clone(),
            by_policy.to_string(),
            "allow",
        ));
        cases.push((
            format!("hook {agent}, decided by a grant (HTTP check)"),
            args,
            by_grant.to_string(),
            "allow",
        ));
    }
    let samples = 100;
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(samples); cases.len()];
    for _ in 0..samples {
        for (case, (_, args, stdin, expect)) in cases.iter().enumerate() {
            times[case].push(timed_once(args, &env, stdin, expect));
        }
    }
    let start_p50 = {
        times[0].sort();
        percentile(&times[0], 0.5)
    };
    for ((name, ..), times) in cases.iter().zip(&mut times) {
        times.sort();
        let p50 = percentile(times, 0.5);
        println!(
            "{name}: {} runs, process start to decision p50 {:.2} ms, p99 {:.2} ms (p50 {:+.2} ms over a bare start)",
            times.len(),
            ms(p50),
            ms(percentile(times, 0.99)),
            ms(p50) - ms(start_p50),
        );
    }
}
