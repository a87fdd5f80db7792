//! What the deployment files rely on in the binary: `clarify healthcheck` as a container's health
//! check.

use std::process::Command;

use crate::support::{BIN, Server, temp_dir};

/// Runs `clarify ARGS` with `env` added; returns (exit code, stdout, stderr).
fn run_with(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("CLARIFY_LISTEN")
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .output()
        .expect("clarify runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn healthcheck_exits_0_while_the_server_answers_and_1_with_a_reason_once_it_stopped() {
    let dir = temp_dir("healthcheck");
    let mut server = Server::start(&crate::support::sqlite_url(&dir), &[]).await;
    let listen = format!("0.0.0.0:{}", server.port);
    // Without --url: the address in CLARIFY_LISTEN, 0.0.0.0 reached on loopback.
    for args in [&["healthcheck"][..], &["healthcheck", "--ready"]] {
        let (code, stdout, stderr) = run_with(args, &[("CLARIFY_LISTEN", &listen)]);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert_eq!(stdout, "", "a health check prints nothing when healthy");
    }
    let (code, _, stderr) = run_with(&["healthcheck", "--ready", "--url", &server.url], &[]);
    assert_eq!(code, 0, "{stderr}");

    // Something answering, but not 200: the status and the API's code are named.
    let (code, _, stderr) = run_with(
        &[
            "healthcheck",
            "--url",
            &format!("{}/v1/requests", server.url),
        ],
        &[],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("/v1/requests/healthz: answered 401 Unauthorized (unauthorized)"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");

    server.terminate();
    assert_eq!(
        server.wait_exit(std::time::Duration::from_secs(20)),
        Some(0)
    );
    let (code, _, stderr) = run_with(&["healthcheck"], &[("CLARIFY_LISTEN", &listen)]);
    assert_eq!(code, 1, "nothing listens any more");
    assert!(
        stderr.starts_with(&format!(
            "clarify: healthcheck: http://127.0.0.1:{}/healthz: cannot connect",
            server.port
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");

    // A wrong CLARIFY_LISTEN is named rather than guessed around.
    let (code, _, stderr) = run_with(&["healthcheck"], &[("CLARIFY_LISTEN", "localhost")]);
    assert_eq!(code, 1);
    assert!(stderr.contains("CLARIFY_LISTEN=\"localhost\""), "{stderr}");
}

#[tokio::test]
async fn healthcheck_gives_up_on_a_server_that_never_answers() {
    // A listener that accepts and never answers: the check must fail on its own timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let started = std::time::Instant::now();
    let (code, _, stderr) = run_with(
        &["healthcheck", "--url", &format!("http://127.0.0.1:{port}")],
        &[],
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("no answer within 3 s"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    drop(silent);
}
