//! What the deployment files rely on in the binary: `clarify healthcheck` as a container's health
//! check, a first admin key from a file, secrets from files, `--version`, and links that open
//! when the server listens on every address, as it does in a container.

use std::process::Command;

use crate::support::{Api, BIN, Server, free_port, run_command, temp_dir};

/// Runs `clarify ARGS` with `env` added; returns (exit code, stdout, stderr).
fn run_with(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    run_command(
        Command::new(BIN)
            .args(args)
            .env_remove("CLARIFY_LISTEN")
            .envs(env.iter().copied()),
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

#[test]
fn version_names_the_version_the_commit_and_its_date() {
    let (code, stdout, _) = run_with(&["--version"], &[]);
    assert_eq!(code, 0);
    let line = stdout.trim_end();
    let rest = line
        .strip_prefix(&format!("clarify {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("clarify <version> (<commit> <date>): {line:?}"));
    let (commit, date) = rest.split_once(' ').expect("a commit and a date");
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit:?}"
    );
    assert!(
        date == "unknown" || chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").is_ok(),
        "{date:?}"
    );
}

#[test]
fn keys_generate_prints_a_fresh_key_and_touches_no_store() {
    let dir = temp_dir("keys-generate");
    let generate = || {
        let out = Command::new(BIN)
            .args(["keys", "generate"])
            .current_dir(&dir)
            .env_remove("CLARIFY_DB")
            .output()
            .expect("clarify runs");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (one, two) = (generate(), generate());
    assert_ne!(one, two, "fresh each time");
    let key = one.strip_suffix('\n').expect("one line");
    let (id, secret) = key
        .strip_prefix("ck_")
        .and_then(|k| k.split_once('_'))
        .expect("ck_<id>_<secret>");
    assert_eq!((id.len(), secret.len()), (16, 32), "{key}");
    assert_eq!(
        std::fs::read_dir(&dir).expect("dir").count(),
        0,
        "no store was made in the working directory"
    );
}

/// `clarify audit export` of `db`: how many `key.created` events it holds.
fn keys_created(db: &str) -> usize {
    let (code, stdout, stderr) = run_with(&["audit", "export", "--db", db], &[]);
    assert_eq!(code, 0, "{stderr}");
    stdout
        .lines()
        .filter(|l| l.contains("\"key.created\""))
        .count()
}

#[tokio::test]
async fn a_first_admin_key_from_a_file_works_at_once_and_is_stored_once_across_restarts() {
    let dir = temp_dir("admin-key-file");
    let db = crate::support::sqlite_url(&dir);
    let (_, key, _) = run_with(&["keys", "generate"], &[]);
    let key = key.trim().to_owned();
    let file = dir.join("admin.key");
    std::fs::write(&file, format!("{key}\n")).expect("write the key");
    let file = file.display().to_string();
    for start in 0..2 {
        let mut server = Server::start(&db, &["--admin-key-file", &file]).await;
        let (status, session) = Api::new(&server.url, &key).get("/v1/session").await;
        assert_eq!(status, 200, "start {start}: {session}");
        assert_eq!(session["role"], "admin");
        assert!(
            !server.stderr().contains("ck_"),
            "no key is printed when one is given: {}",
            server.stderr()
        );
        server.terminate();
        server.wait_exit(std::time::Duration::from_secs(20));
    }
    assert_eq!(keys_created(&db), 1, "one key.created across restarts");
    let (_, list, _) = run_with(&["keys", "list", "--db", &db], &[]);
    assert_eq!(list.lines().count(), 2, "a header and the one key: {list}");
    assert!(
        list.lines().nth(1).is_some_and(|l| l.starts_with("admin ")),
        "{list}"
    );
}

#[test]
fn a_malformed_or_missing_admin_key_file_stops_the_start_naming_the_file() {
    let dir = temp_dir("admin-key-bad");
    let db = crate::support::sqlite_url(&dir);
    let bad = dir.join("bad.key");
    std::fs::write(&bad, "hunter2\n").expect("write");
    let missing = dir.join("missing.key");
    for (file, says) in [(&bad, "is not a clarify key"), (&missing, "cannot read")] {
        let (code, _, stderr) = run_with(
            &["serve", "--db", &db, "--listen", "127.0.0.1:0"],
            &[("CLARIFY_ADMIN_KEY_FILE", &file.display().to_string())],
        );
        assert_eq!(code, 1, "{stderr}");
        assert!(
            stderr.contains(&file.display().to_string()) && stderr.contains(says),
            "{stderr}"
        );
        assert!(
            !stderr.contains("hunter2"),
            "the file's content is not shown"
        );
    }
}

#[tokio::test]
async fn the_database_url_and_the_token_come_from_files() {
    let dir = temp_dir("secret-files");
    let db = crate::support::sqlite_url(&dir);
    let db_file = dir.join("db");
    std::fs::write(&db_file, format!("{db}\n")).expect("write");
    let db_file = db_file.display().to_string();

    // A store command reads CLARIFY_DB_FILE as it reads CLARIFY_DB.
    let (code, key, stderr) = run_with(
        &[
            "keys", "create", "--role", "admin", "--name", "ops", "--create",
        ],
        &[("CLARIFY_DB_FILE", &db_file)],
    );
    assert_eq!(code, 0, "{stderr}");
    let (_, list, _) = run_with(&["keys", "list", "--db", &db], &[]);
    assert!(
        list.contains("ops"),
        "the key went to the file's store: {list}"
    );

    // The server too, and a client's key from CLARIFY_TOKEN_FILE.
    let server = Server::start(&db, &[]).await;
    let token_file = dir.join("token");
    std::fs::write(&token_file, key.as_bytes()).expect("write");
    let token_file = token_file.display().to_string();
    let (code, _, stderr) = run_with(
        &["list"],
        &[
            ("CLARIFY_URL", &server.url),
            ("CLARIFY_TOKEN_FILE", &token_file),
        ],
    );
    assert_eq!(code, 0, "{stderr}");

    // A value beside its file, or a file that cannot be read, is named; a command that does not
    // read the variable does not mind.
    let (code, _, stderr) = run_with(
        &["list"],
        &[
            ("CLARIFY_URL", &server.url),
            ("CLARIFY_TOKEN_FILE", &token_file),
            ("CLARIFY_TOKEN", key.trim()),
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(
        stderr.trim_end(),
        "clarify: CLARIFY_TOKEN and CLARIFY_TOKEN_FILE are both set; keep one (the file is for secrets mounted as files)"
    );
    let missing = dir.join("nope").display().to_string();
    let (code, _, stderr) = run_with(&["keys", "list"], &[("CLARIFY_DB_FILE", &missing)]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with(&format!(
            "clarify: CLARIFY_DB_FILE: cannot read {missing}: "
        )),
        "{stderr}"
    );
    let (code, _, stderr) = run_with(&["tools"], &[("CLARIFY_DB_FILE", &missing)]);
    assert_eq!(code, 0, "{stderr}");
}

#[tokio::test]
async fn on_every_address_without_a_public_url_the_login_link_opens_on_loopback() {
    // The image listens on 0.0.0.0; a link to http://0.0.0.0:7420/ opens in no browser.
    let dir = temp_dir("unspecified-listen");
    let port = free_port();
    let server = Server::start_listening(
        &format!("0.0.0.0:{port}"),
        port,
        &crate::support::sqlite_url(&dir),
        &[],
    )
    .await;
    let link = server.printed(|w| w.contains("/login/")).await;
    assert!(
        link.starts_with(&format!("http://127.0.0.1:{port}/login/")),
        "the login link names loopback and the listening port: {link}"
    );
    let no_redirects = clarify_client::http::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let opened = no_redirects
        .get(&link)
        .send()
        .await
        .expect("the link opens");
    assert_eq!(opened.status().as_u16(), 303, "the login link signs in");
}
