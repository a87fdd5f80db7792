//! What an operator runs and reads: `clarify backup` while a server writes, and the server's log
//! lines (JSON with `--log-format json`, never colour codes into a pipe).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Api, BIN, Server, create_key, free_port, run, sqlite_url, temp_dir};

/// A backup taken while agents keep creating requests holds every request acknowledged before
/// it began, and a server started on the copy serves them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_serving_restores_every_acknowledged_request() {
    let dir = temp_dir("backup");
    let db = sqlite_url(&dir);
    let key = create_key(&db, "admin", "root", "default");
    let server = Server::start(&db, &[]).await;
    let api = Api::new(&server.url, &key);

    // Writers run before, during and after the backup; each id is kept once acknowledged.
    let acknowledged = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (api, acknowledged, stop) = (api.clone(), acknowledged.clone(), stop.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let (status, record) = api
                        .post(
                            "/v1/requests",
                            json!({"question": format!("Writer {w}, request {i}?"), "context": "x".repeat(2_000)}),
                        )
                        .await;
                    assert_eq!(status, 201, "{record}");
                    let id = record["id"].as_str().expect("id").to_owned();
                    acknowledged.lock().expect("ids").push(id);
                    i += 1;
                }
            })
        })
        .collect();
    while acknowledged.lock().expect("ids").len() < 300 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let before: Vec<String> = acknowledged.lock().expect("ids").clone();
    let out = dir.join("copy.db");
    let out_text = out.display().to_string();
    let backup = tokio::task::spawn_blocking({
        let (db, out_text) = (db.clone(), out_text.clone());
        move || run(&["backup", "--db", &db, &out_text])
    })
    .await
    .expect("backup ran");
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.expect("writer");
    }
    let (code, stdout, stderr) = backup;
    assert_eq!(code, 0, "backup failed: {stderr}");
    assert!(
        stdout.starts_with("clarify: backed up ") && stdout.contains(&out_text),
        "{stdout}"
    );
    let copied: usize = stdout
        .trim_start_matches("clarify: backed up ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a request count");
    assert!(copied >= before.len(), "{copied} < {}", before.len());
    for suffix in ["-wal", "-shm"] {
        assert!(
            !dir.join(format!("copy.db{suffix}")).exists(),
            "the backup is one self-contained file"
        );
    }

    // Restore: a server on the copy has every request acknowledged before the backup began.
    drop(server);
    let restored = Server::start(&sqlite_url_of(&out), &[]).await;
    let api = Api::new(&restored.url, &key);
    for id in &before {
        let (status, record) = api.get(&format!("/v1/requests/{id}")).await;
        assert_eq!(status, 200, "{id} is missing from the backup: {record}");
        assert_eq!(record["status"], "pending");
    }
}

fn sqlite_url_of(path: &std::path::Path) -> String {
    format!("sqlite://{}", path.display())
}

/// A backup never overwrites, never copies what is not a SQLite store, and says why.
#[test]
fn a_backup_refuses_to_overwrite_or_to_copy_postgres_and_writes_nothing_on_failure() {
    let dir = temp_dir("backup-refusals");
    let db = sqlite_url(&dir);
    create_key(&db, "admin", "root", "default");
    let out = dir.join("copy.db");
    std::fs::write(&out, b"an older backup").expect("write");
    let (code, _, stderr) = run(&["backup", "--db", &db, &out.display().to_string()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(
        std::fs::read(&out).expect("read"),
        b"an older backup",
        "untouched"
    );

    let (code, _, stderr) = run(&["backup", "--db", "postgres://localhost/clarify", "x.db"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("pg_dump"), "{stderr}");

    let missing = dir.join("missing.db");
    let fresh = dir.join("fresh.db");
    let (code, _, stderr) = run(&[
        "backup",
        "--db",
        &sqlite_url_of(&missing),
        &fresh.display().to_string(),
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(!missing.exists(), "a backup creates no database");
    assert!(!fresh.exists(), "nothing is written on failure");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `clarify backup --db ... backups/clarify-<date>.db` on a fresh machine makes the folder (it
/// failed with "unable to open database file: backups/.clarify-....db.partial").
#[test]
fn a_backup_makes_the_folder_it_is_written_to() {
    let dir = temp_dir("backup-folder");
    let db = sqlite_url(&dir);
    create_key(&db, "admin", "root", "default");
    let out = dir.join("backups").join("nightly").join("clarify.db");
    let (code, stdout, stderr) = run(&["backup", "--db", &db, &out.display().to_string()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("backed up"), "{stdout}");
    assert!(out.is_file(), "the copy is there");
}

/// Starts `clarify serve` with `extra` flags and the environment given; stderr piped (so not a
/// terminal) and `NO_COLOR` unset unless `env` sets it.
fn serve(db: &str, port: u16, extra: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    let mut command = Command::new(BIN);
    command
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--db",
            db,
        ])
        .args(extra)
        .env_remove("NO_COLOR")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    command.spawn().expect("clarify serve starts")
}

/// Reads the server's stderr until a line satisfies `done` (or the process ends); every line.
fn read_until(
    child: &mut std::process::Child,
    done: impl Fn(&str) -> bool + Send + 'static,
) -> Vec<String> {
    let pipe = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let last = done(&line);
            lines.push(line);
            if last {
                break;
            }
        }
        let _ = tx.send(lines);
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the expected log line within 30 s")
}

async fn healthy(url: &str, request_id: &str) {
    let client = clarify_client::http::client().expect("an HTTP client");
    for _ in 0..400 {
        if let Ok(r) = client
            .get(format!("{url}/healthz"))
            .header("x-request-id", request_id)
            .send()
            .await
        {
            assert_eq!(
                r.headers()
                    .get("x-request-id")
                    .and_then(|v| v.to_str().ok()),
                Some(request_id),
                "the request id comes back"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("clarify serve did not start");
}

/// `--log-format json`: every line is one JSON object, and an HTTP request's line carries its
/// request id (the client's `X-Request-Id`), its route and its status.
#[tokio::test]
async fn json_logs_are_one_object_per_line_with_the_request_id_and_route() {
    let dir = temp_dir("json-logs");
    let db = sqlite_url(&dir);
    create_key(&db, "admin", "root", "default");
    let port = free_port();
    let mut child = serve(&db, port, &["--log-format", "json"], &[]);
    healthy(&format!("http://127.0.0.1:{port}"), "probe-7420").await;
    let lines = read_until(&mut child, |line| line.contains("probe-7420"));
    let _ = child.kill();
    let _ = child.wait();
    let objects: Vec<Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    let request = objects
        .iter()
        .find(|o| o["span"]["request_id"] == "probe-7420")
        .expect("a line for the request");
    assert_eq!(request["span"]["route"], "/healthz", "{request}");
    assert_eq!(request["span"]["method"], "GET", "{request}");
    assert_eq!(request["status"], 200, "{request}");
    assert_eq!(request["level"], "INFO", "{request}");
    assert!(
        objects.iter().any(|o| o["message"]
            .as_str()
            .is_some_and(|m| m.contains("clarify is serving"))),
        "the start line is JSON too: {lines:?}"
    );
}

/// Text logs into a pipe carry no colour codes, even without `NO_COLOR`; a request without an
/// `X-Request-Id` gets one.
#[tokio::test]
async fn text_logs_into_a_pipe_are_never_coloured() {
    let dir = temp_dir("text-logs");
    let db = sqlite_url(&dir);
    create_key(&db, "admin", "root", "default");
    let port = free_port();
    let mut child = serve(&db, port, &[], &[("CLARIFY_LOG_FORMAT", "text")]);
    let url = format!("http://127.0.0.1:{port}");
    healthy(&url, "probe-text").await;
    let generated = clarify_client::http::client()
        .expect("an HTTP client")
        .get(format!("{url}/healthz"))
        .send()
        .await
        .expect("healthz")
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .expect("a generated request id");
    assert_eq!(generated.len(), 36, "a UUID: {generated}");
    let lines = read_until(&mut child, move |line| line.contains(&generated));
    let _ = child.kill();
    let _ = child.wait();
    assert!(lines.iter().any(|l| l.contains("probe-text")), "{lines:?}");
    for line in &lines {
        assert!(
            !line.contains('\u{1b}'),
            "a colour code in a pipe: {line:?}"
        );
    }
}

/// Keys created and revoked with `clarify keys` and an identity linked are events of the audit
/// chain: `clarify audit verify` counts them, `export` prints them with their subject and who
/// did them, and one changed behind clarify's back is named.
#[tokio::test]
async fn admin_actions_are_counted_exported_and_a_changed_one_is_named() {
    let dir = temp_dir("audit-admin");
    let path = dir.join("clarify.db");
    let db = sqlite_url_of(&path);
    let (code, _, err) = run(&[
        "keys", "create", "--db", &db, "--role", "agent", "--name", "ci-bot", "--create",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["keys", "revoke", "--db", &db, "ci-bot"]);
    assert_eq!(code, 0, "{err}");
    let store = clarify_store::Store::open(&db, clarify_store::StoreOptions::default())
        .await
        .expect("open");
    let key = store
        .keys()
        .await
        .expect("keys")
        .into_iter()
        .find(|k| k.name == "ci-bot")
        .expect("the key");
    let admin = clarify_store::Actor::new("root", "inbox");
    store
        .record_admin(clarify_store::AdminEvent::new(
            "default",
            clarify_store::AdminKind::IdentityLinked,
            "slack:U012ABCDEF",
            &admin,
        ))
        .await
        .expect("record");
    drop(store);

    let (code, out, err) = run(&["audit", "verify", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("verifies: 3 events"), "{out}");
    let (code, out, err) = run(&["audit", "export", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let key_subject = format!("key:{}", key.id);
    let seen: Vec<(&str, &str, &Value, &str)> = lines
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or_default(),
                e["subject"].as_str().unwrap_or_default(),
                &e["actor"],
                e["channel"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("key.created", key_subject.as_str(), &Value::Null, "cli"),
            ("key.revoked", key_subject.as_str(), &Value::Null, "cli"),
            (
                "identity.linked",
                "identity:slack:U012ABCDEF",
                &json!("root"),
                "inbox"
            ),
        ]
    );
    // A key event names its key, so an auditor knows which one it was without a lookup.
    for event in &lines[..2] {
        assert_eq!(
            event["key"],
            json!({"name": "ci-bot", "role": "agent"}),
            "{event}"
        );
    }
    assert_eq!(lines[2].get("key"), None, "only key events name a key");

    // Someone rewrites who linked the account.
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute(
        "UPDATE events SET actor = 'mallory' WHERE kind = 'identity.linked'",
        [],
    )
    .expect("tamper");
    drop(conn);
    let (code, out, err) = run(&["audit", "verify", "--db", &db]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("event 3:"), "{err}");
}

/// `clarify audit verify` recomputes the chain (exit 0 with the count, 1 naming the first event
/// altered behind clarify's back); `clarify audit export` prints events as JSON lines.
#[tokio::test]
async fn audit_verify_names_an_altered_event_and_export_prints_json_lines() {
    let dir = temp_dir("audit");
    let path = dir.join("clarify.db");
    let db = sqlite_url_of(&path);
    let store = clarify_store::Store::open(&db, clarify_store::StoreOptions::default())
        .await
        .expect("open");
    let limits = clarify_core::Limits::default();
    for text in ["Ship?", "Name?"] {
        let request =
            clarify_core::parse_request(&json!({"question": text}), &limits).expect("valid");
        let id = store
            .create("default", request)
            .await
            .expect("create")
            .record
            .id;
        let actor = clarify_store::Actor::new("alice".to_owned(), "cli");
        store
            .answer("default", &id, &json!({"text": "yes"}), &actor)
            .await
            .expect("answer");
    }
    drop(store);

    let (code, out, err) = run(&["audit", "verify", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("verifies: 4 events"), "{out}");

    let (code, out, err) = run(&["audit", "export", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let kinds: Vec<&str> = lines.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["created", "answered", "created", "answered"]);
    assert!(
        lines
            .iter()
            .all(|e| e["hash"].as_str().is_some_and(|h| h.len() == 64))
    );
    assert!(lines.iter().all(|e| e["tenant"] == "default"));
    let (code, out, _) = run(&[
        "audit",
        "export",
        "--db",
        &db,
        "--since",
        "2999-01-01T00:00:00Z",
    ]);
    assert_eq!((code, out.as_str()), (0, ""));
    let (code, _, err) = run(&["audit", "export", "--db", &db, "--since", "last tuesday"]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--since"), "{err}");

    // Someone rewrites who answered the first request.
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute("UPDATE events SET actor = 'mallory' WHERE seq = 2", [])
        .expect("tamper");
    drop(conn);
    let (code, out, err) = run(&["audit", "verify", "--db", &db]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("event 2:"), "{err}");

    // A mistyped path is an error, not an empty store that verifies.
    let absent = sqlite_url_of(&dir.join("absent.db"));
    let (code, _, err) = run(&["audit", "verify", "--db", &absent]);
    assert_eq!(code, 1);
    assert!(err.contains("there is no store at"), "{err}");
    assert!(!dir.join("absent.db").exists(), "nothing was created");
}
