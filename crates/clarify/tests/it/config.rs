//! The configuration file as an operator uses it: `clarify config check`, and `clarify serve
//! --config` with flags winning over the file.

use serde_json::json;

use crate::support::{Api, Server, fake_ntfy, run, temp_dir};

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
        err.contains("bad.toml:3: server.max_waiters: invalid type"),
        "{err}"
    );

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
