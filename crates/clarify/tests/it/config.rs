//! The configuration file as an operator uses it: `clarify config check`, and `clarify serve
//! --config` with flags winning over the file.

use serde_json::json;

use crate::support::{Api, Server, run, temp_dir};

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

    // Channels are checked key by key, and then refused: this version does not deliver them.
    let channels = write(
        "channels.toml",
        "[[channels]]\nname = \"push\"\ntype = \"ntfy\"\ntopic = \"ops\"\n",
    );
    let (code, _, err) = run(&["config", "check", &channels]);
    assert_eq!(code, 1);
    assert!(err.contains("channels[0] (ntfy \"push\")"), "{err}");
    assert!(
        err.contains("does not announce requests on channels yet"),
        "{err}"
    );

    let (code, _, err) = run(&[
        "config",
        "check",
        &dir.join("absent.toml").display().to_string(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read the configuration file"), "{err}");
}

async fn admin_key(server: &Server) -> String {
    for _ in 0..50 {
        if let Some(key) = server
            .stderr()
            .split_whitespace()
            .find(|w| w.starts_with("ck_"))
        {
            return key.to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the first admin key is printed: {}", server.stderr());
}

/// Three options: refused when at most two are allowed.
async fn three_options(server: &Server) -> u16 {
    let api = Api::new(&server.url, &admin_key(server).await);
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
