//! `clarify hook install --agent NAME`: each agent's settings file, already holding other
//! settings and hooks, gets the hook with a timeout above `--wait`; installing again changes
//! nothing, and everything else is kept.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{BIN, temp_dir};

/// Runs `clarify hook install ARGS` in `dir` with HOME (and CODEX_HOME) there; returns the
/// file's text afterwards.
fn install(dir: &Path, args: &[&str], file: &Path) -> String {
    let out = std::process::Command::new(BIN)
        .args(["hook", "install"])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("CODEX_HOME")
        .output()
        .expect("clarify hook install runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.join(file)).expect("settings written")
}

/// Writes `existing` to `dir/file`, installs twice, and checks the second run changed nothing
/// and every key of `existing` but `hooks` is kept; returns the settings.
fn installed_twice(dir: &Path, args: &[&str], file: &str, existing: &Value) -> Value {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
    std::fs::write(&path, serde_json::to_string_pretty(existing).expect("json")).expect("write");
    let once = install(dir, args, Path::new(file));
    let twice = install(dir, args, Path::new(file));
    assert_eq!(once, twice, "installing twice changes nothing");
    let settings: Value = serde_json::from_str(&once).expect("settings stay JSON");
    for (key, value) in existing.as_object().expect("object") {
        if key != "hooks" {
            assert_eq!(&settings[key], value, "{key} is kept: {once}");
        }
    }
    settings
}

/// The command of a hook entry, checked to run this agent's clarify hook.
fn command_of(entry: &Value, agent: &str) -> String {
    let command = entry["command"].as_str().unwrap_or_default().to_owned();
    assert!(
        command.ends_with(&format!(" hook {agent}"))
            || command.contains(&format!(" hook {agent} ")),
        "{entry}"
    );
    command
}

fn dir(name: &str) -> PathBuf {
    temp_dir(&format!("install-{name}"))
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

#[test]
fn claude_code_also_answers_elicitations() {
    let dir = dir("claude-elicitation");
    let settings = installed_twice(
        &dir,
        &["--scope", "project", "--wait", "20m"],
        ".claude/settings.json",
        &json!({"hooks": {"Elicitation": [{"hooks": [{"type": "command", "command": "log.sh"}]}]}}),
    );
    let groups = settings["hooks"]["Elicitation"]
        .as_array()
        .expect("Elicitation");
    assert_eq!(groups.len(), 2, "{settings}");
    assert_eq!(groups[0]["hooks"][0]["command"], "log.sh");
    let ours = &groups[1]["hooks"][0];
    assert!(
        command_of(ours, "claude-code").ends_with("hook claude-code --wait 1200s"),
        "{ours}"
    );
    assert_eq!(ours["timeout"], 1500, "above the 20 minute wait: {ours}");
}

#[test]
fn codex_gets_permission_request_and_pre_tool_use() {
    let dir = dir("codex");
    let existing = json!({
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify.sh", "timeout": 30}]}],
                  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}]},
    });
    for (scope, file) in [
        ("user", ".codex/hooks.json"),
        ("project", ".codex/hooks.json"),
    ] {
        let settings = installed_twice(
            &dir,
            &["--agent", "codex", "--scope", scope],
            file,
            &existing,
        );
        assert_eq!(settings["hooks"]["Stop"], existing["hooks"]["Stop"]);
        let permission = &settings["hooks"]["PermissionRequest"][0];
        assert_eq!(permission["matcher"], "Bash|apply_patch|mcp__.*");
        let hook = &permission["hooks"][0];
        command_of(hook, "codex");
        assert_eq!(hook["type"], "command");
        assert!(hook["timeout"].as_u64().is_some_and(|t| t > 600), "{hook}");
        assert!(hook["statusMessage"].is_string(), "{hook}");
        let pre = settings["hooks"]["PreToolUse"]
            .as_array()
            .expect("PreToolUse");
        assert_eq!(pre.len(), 2, "{settings}");
        assert_eq!(
            pre[0], existing["hooks"]["PreToolUse"][0],
            "the other hook is kept"
        );
        command_of(&pre[1]["hooks"][0], "codex");
    }
    // CODEX_HOME moves the user's file.
    let home = dir.join("codex-home");
    let out = std::process::Command::new(BIN)
        .args(["hook", "install", "--agent", "codex"])
        .env("HOME", &dir)
        .env("CODEX_HOME", &home)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(home.join("hooks.json").is_file());
}

#[test]
fn cursor_gets_shell_mcp_and_tool_hooks_that_fail_closed() {
    let dir = dir("cursor");
    let existing = json!({
        "version": 1,
        "hooks": {"afterFileEdit": [{"command": "./format.sh"}],
                  "beforeShellExecution": [{"command": "./audit.sh", "timeout": 5}]},
    });
    let settings = installed_twice(
        &dir,
        &["--agent", "cursor", "--scope", "project"],
        ".cursor/hooks.json",
        &existing,
    );
    assert_eq!(
        settings["hooks"]["afterFileEdit"],
        existing["hooks"]["afterFileEdit"]
    );
    let shell = settings["hooks"]["beforeShellExecution"]
        .as_array()
        .expect("shell");
    assert_eq!(shell.len(), 2, "{settings}");
    assert_eq!(shell[0], existing["hooks"]["beforeShellExecution"][0]);
    for event in ["beforeShellExecution", "beforeMCPExecution", "preToolUse"] {
        let ours = settings["hooks"][event]
            .as_array()
            .and_then(|e| e.last())
            .expect(event);
        command_of(ours, "cursor");
        assert_eq!(ours["failClosed"], true, "{ours}");
        assert!(ours["timeout"].as_u64().is_some_and(|t| t > 600), "{ours}");
    }
    assert_eq!(settings["hooks"]["preToolUse"][0]["matcher"], "Write");
    // A new file gets the version the format needs.
    let fresh = dir.join("fresh");
    std::fs::create_dir_all(&fresh).expect("dir");
    let text = install(
        &fresh,
        &["--agent", "cursor"],
        Path::new(".cursor/hooks.json"),
    );
    let settings: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(settings["version"], 1, "{text}");
}

#[test]
fn gemini_gets_before_tool_with_a_timeout_in_milliseconds() {
    let dir = dir("gemini");
    let existing = json!({
        "theme": "GitHub",
        "tools": {"allowed": ["run_shell_command"]},
        "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "lint.sh"}]}]},
    });
    let settings = installed_twice(
        &dir,
        &["--agent", "gemini", "--matcher", "run_shell_command|mcp_.*"],
        ".gemini/settings.json",
        &existing,
    );
    let groups = settings["hooks"]["BeforeTool"]
        .as_array()
        .expect("BeforeTool");
    assert_eq!(groups.len(), 2, "{settings}");
    assert_eq!(groups[0], existing["hooks"]["BeforeTool"][0]);
    assert_eq!(groups[1]["matcher"], "run_shell_command|mcp_.*");
    let ours = &groups[1]["hooks"][0];
    command_of(ours, "gemini");
    assert_eq!(ours["type"], "command");
    assert_eq!(
        ours["timeout"], 900_000,
        "milliseconds, above the 10 minute wait: {ours}"
    );
}

#[test]
fn copilot_gets_one_entry_both_vs_code_and_copilot_cli_read() {
    let dir = dir("copilot");
    let existing = json!({
        "version": 1,
        "hooks": {"PostToolUse": [{"type": "command", "command": "npx prettier --write ."}]},
    });
    for (scope, file) in [
        ("project", ".github/hooks/clarify.json"),
        ("user", ".copilot/hooks/clarify.json"),
    ] {
        let settings = installed_twice(
            &dir,
            &["--agent", "copilot", "--scope", scope],
            file,
            &existing,
        );
        assert_eq!(
            settings["hooks"]["PostToolUse"],
            existing["hooks"]["PostToolUse"]
        );
        let ours = &settings["hooks"]["PreToolUse"][0];
        let command = command_of(ours, "copilot");
        assert_eq!(
            ours["bash"],
            command.as_str(),
            "Copilot CLI's field: {ours}"
        );
        assert_eq!(ours["timeout"], 900, "VS Code's default is 30 s: {ours}");
        assert_eq!(ours["timeoutSec"], 900, "{ours}");
    }
    let out = std::process::Command::new(BIN)
        .args(["hook", "install", "--agent", "copilot", "--matcher", "bash"])
        .env("HOME", &dir)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "Copilot's hooks take no matcher"
    );
}

#[test]
fn a_settings_file_that_is_not_json_is_left_alone() {
    let dir = dir("broken");
    let path = dir.join(".gemini/settings.json");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
    std::fs::write(&path, "{\"theme\": ").expect("write");
    let out = std::process::Command::new(BIN)
        .args(["hook", "install", "--agent", "gemini"])
        .env("HOME", &dir)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("settings.json") && stderr.contains("fix or move"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("kept"),
        "{\"theme\": "
    );
}
