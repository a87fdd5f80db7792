//! The commands that open a store directly as a newcomer first meets them: each says which
//! store it used, none makes a SQLite file unasked (a key in a store no server reads is refused
//! by every server, whose refusal says so), and `clarify report --out` does not replace a file
//! without `--force`.

use std::path::Path;
use std::process::Command;

use crate::support::{Api, BIN, Server, run, run_command, sqlite_url, temp_dir};

/// Runs `clarify ARGS` in `dir` without `CLARIFY_DB`, as a person in another terminal would.
fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_command(
        Command::new(BIN)
            .current_dir(dir)
            .args(args)
            .env_remove("CLARIFY_DB")
            .env_remove("CLARIFY_DB_FILE"),
    )
}

#[tokio::test]
async fn keys_create_beside_another_store_is_refused_and_the_server_says_why_it_refuses_a_key() {
    let dir = temp_dir("store-server");
    let db = sqlite_url(&dir);
    let server = Server::start(&db, &[]).await;

    // In another directory, with the default --db: nothing is made, and the error says where
    // it looked, how to name the server's store, and how to make a new one on purpose.
    let elsewhere = temp_dir("store-elsewhere");
    let (code, out, err) = run_in(
        &elsewhere,
        &["keys", "create", "--role", "agent", "--name", "ci-bot"],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "", "no key is printed");
    assert!(err.contains("there is no store at clarify.db"), "{err}");
    for hint in ["--db", "CLARIFY_DB", "--create"] {
        assert!(err.contains(hint), "names {hint}: {err}");
    }
    assert!(
        !elsewhere.join("clarify.db").exists(),
        "no store was created"
    );
    for args in [
        &["keys", "list"][..],
        &["keys", "revoke", "ci-bot"],
        &["audit", "verify"],
        &["report", "--format", "json"],
    ] {
        let (code, _, err) = run_in(&elsewhere, args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("there is no store at clarify.db"),
            "{args:?}: {err}"
        );
    }
    assert!(!elsewhere.join("clarify.db").exists());

    // Asked for, a new store is made and said; the server, on its own store, refuses the key
    // saying it is not in its store and where keys are made.
    let (code, stray_key, err) = run_in(
        &elsewhere,
        &[
            "keys", "create", "--role", "agent", "--name", "ci-bot", "--create",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err.trim_end(),
        "clarify: store sqlite://clarify.db (created)",
        "which store was used"
    );
    let (status, body) = Api::new(&server.url, stray_key.trim())
        .get("/v1/requests")
        .await;
    assert_eq!(status, 401, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("not in this server's store")
            && message.contains("the store the server uses"),
        "{message}"
    );
    // The CLI shows that message as it is, naming `clarify keys create` once.
    let (code, _, err) = {
        let out = Command::new(BIN)
            .args(["list"])
            .env("CLARIFY_URL", &server.url)
            .env("CLARIFY_TOKEN", stray_key.trim())
            .env("NO_COLOR", "1")
            .output()
            .expect("clarify runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(code, 1);
    assert!(err.contains("not in this server's store"), "{err}");
    assert_eq!(err.matches("clarify keys create").count(), 1, "{err}");

    // On the server's store, the key works, and the store used is named.
    let (code, key, err) = run(&[
        "keys", "create", "--db", &db, "--role", "agent", "--name", "ci-bot",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.trim_end(), format!("clarify: store {db}"));
    let (status, _) = Api::new(&server.url, key.trim()).get("/v1/requests").await;
    assert_eq!(status, 200);
}

#[test]
fn a_postgres_password_is_never_shown() {
    // Nothing listens on port 1: the command fails after saying which store it tried.
    let (code, _, err) = run(&[
        "keys",
        "revoke",
        "ci-bot",
        "--db",
        "postgres://clarify:s3cret-pw@127.0.0.1:1/clarify",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("clarify: store postgres://clarify:***@127.0.0.1:1/clarify"),
        "{err}"
    );
    assert!(!err.contains("s3cret-pw"), "{err}");
}

#[test]
fn report_out_does_not_replace_a_file_without_force() {
    let dir = temp_dir("report-out");
    let db = sqlite_url(&dir);
    let (code, _, err) = run(&[
        "keys", "create", "--db", &db, "--role", "admin", "--name", "root", "--create",
    ]);
    assert_eq!(code, 0, "{err}");
    let out = dir.join("report.json");
    std::fs::write(&out, "an earlier report").expect("write");
    let path = out.display().to_string();
    let report = |extra: &[&str]| {
        let mut args = vec!["report", "--format", "json", "--db", &db, "--out", &path];
        args.extend_from_slice(extra);
        run(&args)
    };
    let (code, _, err) = report(&[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("{path} exists; pass --force to replace it")),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&out).expect("read"),
        "an earlier report",
        "the file is left as it was"
    );
    let (code, _, err) = report(&["--force"]);
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(&out).expect("read");
    assert!(written.contains("\"decisions\""), "{written}");
    // A new file needs no --force.
    std::fs::remove_file(&out).expect("remove");
    assert_eq!(report(&[]).0, 0);
}
