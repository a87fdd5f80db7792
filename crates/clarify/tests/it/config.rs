//! The configuration file as an operator uses it: `clarify config check`, and `clarify serve
//! --config` with flags winning over the file.

use serde_json::json;

use crate::support::{Api, BIN, Server, fake_ntfy, run, temp_dir};

/// The repository's root, where the example configuration and the handbook are.
fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The environment variables the configuration page sets before checking the example: the
/// `NAME=` words of its command block that runs `clarify config check docs/clarify.example.toml`.
fn variables_the_page_names() -> Vec<String> {
    let page = std::fs::read_to_string(repo_root().join("docs/src/operating/configuration.md"))
        .expect("the configuration page");
    let block = page
        .split("```")
        .find(|b| {
            b.starts_with("sh\n") && b.contains("clarify config check docs/clarify.example.toml")
        })
        .expect("the page shows how to check the example with its environment");
    block
        .split_whitespace()
        .filter_map(|word| word.split_once('=').map(|(name, _)| name))
        .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .map(str::to_owned)
        .collect()
}

/// Runs `clarify config check` on the example file with exactly `set` of its variables set
/// (and the others it names removed from the environment).
fn check_example(names: &[String], set: bool) -> (i32, String, String) {
    let mut command = std::process::Command::new(BIN);
    command
        .current_dir(repo_root())
        .args(["config", "check", "docs/clarify.example.toml"]);
    for name in names.iter().map(String::as_str).chain(EXAMPLE_VARIABLES) {
        command.env_remove(name);
    }
    if set {
        for name in names {
            command.env(name, "from-env");
        }
    }
    let out = command.output().expect("clarify runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The variables the example file names, with their lines there.
const EXAMPLE_VARIABLES: [&str; 7] = [
    "SLACK_BOT_TOKEN",
    "SLACK_SIGNING_SECRET",
    "TELEGRAM_BOT_TOKEN",
    "MATTERMOST_BOT_TOKEN",
    "TEAMS_APP_PASSWORD",
    "SMTP_PASSWORD",
    "CLARIFY_OIDC_SECRET",
];

#[test]
fn the_example_passes_the_check_with_the_environment_the_configuration_page_names() {
    let names = variables_the_page_names();
    let (code, out, err) = check_example(&names, true);
    assert_eq!(code, 0, "with {names:?} set: {err}");
    assert!(
        out.contains("clarify.example.toml: valid (7 channels"),
        "{out}"
    );
}

#[test]
fn without_its_environment_the_example_names_every_missing_variable_with_its_line_at_once() {
    let (code, out, err) = check_example(&[], false);
    assert_eq!(code, 1, "{out}");
    let example = std::fs::read_to_string(repo_root().join("docs/clarify.example.toml"))
        .expect("the example file");
    for name in EXAMPLE_VARIABLES {
        let line = example
            .lines()
            .position(|l| !l.trim_start().starts_with('#') && l.contains(&format!("\"{name}\"")))
            .map(|i| i + 1)
            .unwrap_or_else(|| panic!("the example names {name}"));
        let reported = err
            .lines()
            .find(|l| l.contains(&format!("the environment variable {name} is not set")))
            .unwrap_or_else(|| panic!("{name} is reported: {err}"));
        assert!(
            reported.contains(&format!("docs/clarify.example.toml:{line}:")),
            "{name} is at line {line}: {reported}"
        );
    }
    assert!(
        err.contains("7 problems in docs/clarify.example.toml"),
        "{err}"
    );
}

#[test]
fn config_check_accepts_a_good_file_and_names_the_key_of_a_bad_one() {
    let dir = temp_dir("config-check");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path.display().to_string()
    };
    let good = write(
        "good.toml",
        "[server]\nmax_options = 2\nretain_resolved = \"30d\"\n\n[claude_code]\nallow = [\"Read\"]\n",
    );
    let (code, out, err) = run(&["config", "check", &good]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("good.toml: valid"), "{out}");
    assert!(out.contains("[claude_code]"), "{out}");

    let bad = write(
        "bad.toml",
        "[server]\nlisten = \"127.0.0.1:7420\"\nmax_waiters = \"many\"\n",
    );
    let (code, out, err) = run(&["config", "check", &bad]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("bad.toml:3:15: server.max_waiters: invalid type"),
        "{err}"
    );

    // Several mistakes: every one in one run, each with its line, in the file's order.
    let many = write(
        "many.toml",
        "[server]
retain_resolved = \"forever\"\n\n[[routes]]\nchannels = [\"nowhere\"]\n\n\
         [decisions]\nstep_up = \"low\"\n",
    );
    let (code, _, err) = run(&["config", "check", &many]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "three problems and their count: {err}");
    assert!(
        lines[0].contains("many.toml:2:1: server.retain_resolved"),
        "{err}"
    );
    assert!(
        lines[1].contains("many.toml:5:1: routes[0].channels"),
        "{err}"
    );
    assert!(
        lines[2].contains("many.toml:8:1: decisions.step_up"),
        "{err}"
    );
    assert!(lines[3].contains("3 problems in"), "{err}");

    // Every channel type is served, each checked key by key.
    let ntfy = write(
        "ntfy.toml",
        "[[channels]]\nname = \"push\"\ntype = \"ntfy\"\ntopic = \"ops\"\n\n[[routes]]\nchannels = [\"push\"]\n",
    );
    let (code, out, err) = run(&["config", "check", &ntfy]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 channels, 1 routes"), "{out}");
    let slack = write(
        "slack.toml",
        "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nbot_token = \"xoxb-1\"\nsigning_secret = \"s\"\nchannel = \"C1\"\n",
    );
    let (code, _, err) = run(&["config", "check", &slack]);
    assert_eq!(code, 0, "{err}");
    let telegram = write(
        "telegram.toml",
        "[[channels]]\nname = \"tg\"\ntype = \"telegram\"\nbot_token = \"1:a\"\nchat_id = 42\n",
    );
    let (code, _, err) = run(&["config", "check", &telegram]);
    assert_eq!(code, 0, "{err}");
    let polling_with_secret = write(
        "telegram-secret.toml",
        "[[channels]]\nname = \"tg\"\ntype = \"telegram\"\nbot_token = \"1:a\"\nchat_id = 42\nwebhook_secret = \"s\"\n",
    );
    let (code, _, err) = run(&["config", "check", &polling_with_secret]);
    assert_eq!(code, 1);
    assert!(err.contains("channels[0].webhook_secret"), "{err}");
    assert!(err.contains("mode = \"webhook\" only"), "{err}");
    let email = write(
        "email.toml",
        "[[channels]]\nname = \"mail\"\ntype = \"email\"\nsmtp_url = \"smtp://127.0.0.1:2525\"\nfrom = \"clarify@example.com\"\nto = [\"ops@example.com\"]\n",
    );
    let (code, _, err) = run(&["config", "check", &email]);
    assert_eq!(code, 0, "{err}");
    let discord = write(
        "discord.toml",
        &format!(
            "[[channels]]\nname = \"dev\"\ntype = \"discord\"\nbot_token = \"t\"\npublic_key = \"{}\"\nchannel_id = 1\n",
            "ab".repeat(32)
        ),
    );
    let (code, _, err) = run(&["config", "check", &discord]);
    assert_eq!(code, 0, "{err}");

    let (code, _, err) = run(&[
        "config",
        "check",
        &dir.join("absent.toml").display().to_string(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read the configuration file"), "{err}");
}

/// Three options: refused when at most two are allowed.
async fn three_options(server: &Server) -> u16 {
    let api = Api::new(&server.url, &server.admin_key().await);
    let (status, _) = api
        .post(
            "/v1/requests",
            json!({"question": "Which?", "choices": ["a", "b", "c"]}),
        )
        .await;
    status
}

#[tokio::test]
async fn serve_takes_settings_from_the_file_and_flags_win() {
    let dir = temp_dir("config-serve");
    let path = dir.join("clarify.toml");
    std::fs::write(&path, "[server]\nmax_options = 2\n").expect("write");
    let path = path.display().to_string();

    let from_file = Server::start("memory:", &["--config", &path]).await;
    assert_eq!(
        three_options(&from_file).await,
        422,
        "the file's max_options applies"
    );

    let flag = Server::start("memory:", &["--config", &path, "--max-options", "5"]).await;
    assert_eq!(
        three_options(&flag).await,
        201,
        "the flag wins over the file"
    );
}

#[tokio::test]
async fn serve_announces_on_the_ntfy_channel_of_the_file() {
    let (ntfy, pushes) = fake_ntfy().await;
    let dir = temp_dir("config-ntfy");
    let path = dir.join("clarify.toml");
    std::fs::write(
        &path,
        format!(
            "[[channels]]\nname = \"phone\"\ntype = \"ntfy\"\nurl = \"{ntfy}\"\ntopic = \"ops\"\n\n\
             [[routes]]\nchannels = [\"phone\"]\ntags = [\"prod\"]\n"
        ),
    )
    .expect("write");
    let path = path.display().to_string();
    let server = Server::start("memory:", &["--config", &path]).await;
    let api = Api::new(&server.url, &server.admin_key().await);
    let (status, routed) = api
        .post(
            "/v1/requests",
            json!({"question": "Roll back?", "tags": ["prod"]}),
        )
        .await;
    assert_eq!(status, 201, "{routed}");
    let (status, _) = api
        .post(
            "/v1/requests",
            json!({"question": "Not routed?", "tags": ["dev"]}),
        )
        .await;
    assert_eq!(status, 201);
    let id = routed["id"].as_str().unwrap_or_default().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, body) = api.get(&format!("/v1/requests/{id}/notifications")).await;
        if body["notifications"][0]["status"] == "delivered" {
            assert_eq!(body["notifications"][0]["channel"], "phone");
            assert_eq!(body["notifications"][0]["message_ref"], "m1");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not announced: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let pushes = pushes.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(
        pushes.len(),
        1,
        "only the routed request is pushed: {pushes:?}"
    );
    assert_eq!(pushes[0]["topic"], "ops");
    assert_eq!(pushes[0]["title"], "Roll back?");
}

/// A rule whose condition fails on a request is logged naming that request (`request`), as
/// every line about a request does; `request_id` is the name of an HTTP call's own id.
#[tokio::test]
async fn a_failing_rule_condition_is_logged_with_the_request_id() {
    let dir = temp_dir("config-rule-log");
    let path = dir.join("clarify.toml");
    std::fs::write(
        &path,
        "[[rules]]\nname = \"needs-amount\"\ntool = \"refund\"\nwhen = \"args.amount > 1\"\n\
         decide = \"deny\"\n",
    )
    .expect("write");
    let path = path.display().to_string();
    let server = Server::start("memory:", &["--config", &path, "--log-format", "json"]).await;
    let key = server.admin_key().await;
    let (status, record) = Api::new(&server.url, &key)
        .post(
            "/v1/requests",
            json!({"questions": [{"text": "Refund?", "kind": "approval",
                "action": {"name": "refund", "arguments": {}}}]}),
        )
        .await;
    assert_eq!(status, 201, "{record}");
    let id = record["id"].as_str().expect("an id").to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let line = loop {
        let logged = server.stderr();
        if let Some(line) = logged
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|l| l["rule"] == "needs-amount")
        {
            break line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no line about the rule: {logged}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(line["request"], id.as_str(), "{line}");
    assert_eq!(
        line.get("request_id"),
        None,
        "request_id names an HTTP call's id, never a request's: {line}"
    );
    assert!(
        line["message"]
            .as_str()
            .is_some_and(|m| m.contains("condition failed")),
        "{line}"
    );
}
