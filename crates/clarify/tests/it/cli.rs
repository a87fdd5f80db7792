//! The client commands against a real server: every command and every exit code of `ask`.

use std::io::{BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Api, BIN, Server};

/// A server on a memory store, with its first admin key.
async fn server() -> (Server, String) {
    let server = Server::start("memory:", &[]).await;
    let key = server.admin_key().await;
    (server, key)
}

fn clarify(server: &Server, key: &str) -> Command {
    clarify_at(&server.url, key)
}

/// `clarify` pointed at `url`, with `key`.
fn clarify_at(url: &str, key: &str) -> Command {
    let mut c = Command::new(BIN);
    c.env("CLARIFY_URL", url)
        .env("CLARIFY_TOKEN", key)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    c
}

/// Runs to completion; (exit code, stdout, stderr).
fn output(mut c: Command) -> (i32, String, String) {
    let out = c.output().expect("clarify runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The newest pending request, once one exists.
async fn newest_pending(api: &Api) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, page) = api.get("/v1/requests?status=pending&limit=1").await;
        if let Some(r) = page["requests"].get(0) {
            return r.clone();
        }
        assert!(Instant::now() < deadline, "no request appeared");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

/// Answers request `id` with `body` through the API; the answer must be accepted.
async fn answer(api: &Api, id: &str, body: Value) {
    let path = format!("/v1/requests/{id}/answer");
    let (status, reply) = api.post(&path, body).await;
    assert_eq!(status, 200, "{reply}");
}

/// A background `clarify ask`, killed if a test fails before it ends.
struct Asking(Option<std::process::Child>);

impl Asking {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, std::process::Child::id)
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `clarify ask ARGS` in the background.
fn spawn_ask(server: &Server, key: &str, args: &[&str]) -> Asking {
    spawn_ask_at(&server.url, key, args)
}

/// Starts `clarify ask ARGS` in the background against `url`.
fn spawn_ask_at(url: &str, key: &str, args: &[&str]) -> Asking {
    let mut c = clarify_at(url, key);
    c.arg("ask")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Asking(Some(c.spawn().expect("ask starts")))
}

fn finish(mut asking: Asking) -> (i32, String, String) {
    let child = asking.0.take().expect("a running ask");
    let out = child.wait_with_output().expect("ask ends");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn ask_prints_the_answer_and_exits_by_status() {
    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);

    let child = spawn_ask(&server, &key, &["Deploy to prod?", "-c", "yes", "-c", "no"]);
    let r = newest_pending(&api).await;
    assert_eq!(r["questions"][0]["options"][0]["label"], "yes");
    answer(
        &api,
        r["id"].as_str().unwrap_or(""),
        json!({"option": "yes"}),
    )
    .await;
    let (code, stdout, stderr) = finish(child);
    assert_eq!((code, stdout.as_str()), (0, "yes\n"));
    assert_eq!(stderr, "", "no countdown when stderr is not a terminal");

    let child = spawn_ask(
        &server,
        &key,
        &[
            "Regions?", "-c", "eu", "-c", "us", "-c", "asia", "--multi", "--json",
        ],
    );
    let r = newest_pending(&api).await;
    assert_eq!(r["questions"][0]["kind"], "multi");
    answer(
        &api,
        r["id"].as_str().unwrap_or(""),
        json!({"options": ["eu", "asia"]}),
    )
    .await;
    let (code, stdout, _) = finish(child);
    assert_eq!(code, 0);
    let outcome: Value = serde_json::from_str(&stdout).expect("--json prints the outcome");
    assert_eq!(outcome["questions"][0]["answer"], json!(["eu", "asia"]));
    assert_eq!(outcome["status"], "answered");

    let child = spawn_ask(&server, &key, &["Lunch?", "--context", "It is noon."]);
    let r = newest_pending(&api).await;
    assert_eq!(r["context"], "It is noon.");
    answer(&api, r["id"].as_str().unwrap_or(""), json!({"skip": true})).await;
    assert_eq!(finish(child).0, 3, "skipped exits 3");

    let (code, stdout, stderr) = output({
        let mut c = clarify(&server, &key);
        c.args(["ask", "Anyone?", "--timeout", "1s"]);
        c
    });
    assert_eq!(
        (code, stdout.as_str()),
        (4, ""),
        "expired exits 4; {stderr}"
    );
    assert!(stderr.contains("expired"), "{stderr}");

    let child = spawn_ask(&server, &key, &["Cancel me?"]);
    let r = newest_pending(&api).await;
    api.post(
        &format!("/v1/requests/{}/cancel", r["id"].as_str().unwrap_or("")),
        json!({}),
    )
    .await;
    assert_eq!(finish(child).0, 5, "cancelled exits 5");
}

#[tokio::test]
async fn ask_works_as_a_gate_in_a_shell_script() {
    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);
    let script = format!(
        "if [ \"$('{BIN}' ask 'Deploy to prod?' -c yes -c no)\" = yes ]; then echo deploying; else echo holding; fi"
    );
    let child = Command::new("sh")
        .args(["-c", &script])
        .env("CLARIFY_URL", &server.url)
        .env("CLARIFY_TOKEN", &key)
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let r = newest_pending(&api).await;
    answer(
        &api,
        r["id"].as_str().unwrap_or(""),
        json!({"option": "yes"}),
    )
    .await;
    let out = child.wait_with_output().expect("script ends");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "deploying\n");
}

#[tokio::test]
async fn ctrl_c_cancels_the_request_and_exits_5() {
    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);
    let child = spawn_ask(&server, &key, &["Wait for me?"]);
    let r = newest_pending(&api).await;
    let id = r["id"].as_str().unwrap_or("").to_owned();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let (code, _, stderr) = finish(child);
    assert_eq!(code, 5, "{stderr}");
    let (_, record) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(
        record["status"], "cancelled",
        "the request is cancelled on the server"
    );
}

#[tokio::test]
async fn errors_are_one_line_saying_what_to_do() {
    let (server, key) = server().await;
    // Nothing listens on port 9 here.
    let (code, _, stderr) = output({
        let mut c = Command::new(BIN);
        c.args(["list"])
            .env("CLARIFY_URL", "http://127.0.0.1:9")
            .env("CLARIFY_TOKEN", "x");
        c
    });
    assert_eq!(code, 1);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("clarify serve"), "{stderr}");

    let (code, _, stderr) = output({
        let mut c = clarify(&server, "ck_aaaaaaaaaaaaaaaa_nope");
        c.arg("list");
        c
    });
    assert_eq!(code, 1);
    assert!(stderr.contains("CLARIFY_TOKEN"), "{stderr}");

    let (code, _, stderr) = output({
        let mut c = clarify(&server, &key);
        c.args(["ask"]);
        c
    });
    assert_eq!(code, 2, "usage errors exit 2: {stderr}");
    let (code, _, _) = output({
        let mut c = clarify(&server, &key);
        c.args(["ask", "x", "--timeout", "soon"]);
        c
    });
    assert_eq!(code, 2);
    let (code, _, stderr) = output({
        let mut c = clarify(&server, &key);
        c.args(["show", "no-such-id"]);
        c
    });
    assert_eq!(code, 1);
    assert!(stderr.contains("no such request"), "{stderr}");
}

#[tokio::test]
async fn answer_list_show_and_cancel() {
    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);
    let ask = |body: Value| {
        let api = api.clone();
        async move {
            api.post("/v1/requests", body).await.1["id"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        }
    };
    let run = |args: &[&str]| {
        let mut c = clarify(&server, &key);
        c.args(args);
        output(c)
    };

    let single = ask(json!({"question": "Ship?", "choices": ["yes", "no"]})).await;
    let (code, stdout, _) = run(&["answer", &single, "--option", "no", "--json"]);
    assert_eq!(code, 0);
    let outcome: Value = serde_json::from_str(&stdout).expect("outcome JSON");
    assert_eq!(outcome["questions"][0]["answer"], "no");
    let (code, _, stderr) = run(&["answer", &single, "--option", "yes"]);
    assert_eq!(code, 1, "answering twice fails");
    assert!(stderr.contains("already answered"), "{stderr}");

    let multi = ask(
        json!({"questions": [{"text": "Which?", "kind": "multi", "options": ["a", "b", "c"]}]}),
    )
    .await;
    assert_eq!(
        run(&[
            "answer", &multi, "--option", "a", "--option", "c", "--other", "and d"
        ])
        .0,
        0
    );
    let (_, r) = api.get(&format!("/v1/requests/{multi}")).await;
    assert_eq!(
        r["outcome"]["questions"][0]["answer"],
        json!(["a", "c", "and d"])
    );

    let open = ask(json!({"question": "Why?"})).await;
    let (code, _, stderr) = run(&["answer", &open, "--option", "x"]);
    assert_eq!(code, 1, "a wrong kind is refused: {stderr}");
    let (code, _, stderr) = run(&["answer", &open, "--other", "because"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("open question: answer it with --text") && !stderr.contains("{\""),
        "the flag to use, not the HTTP body: {stderr}"
    );
    assert_eq!(run(&["answer", &open, "--text", "because"]).0, 0);

    let approval = ask(json!({"questions": [{"text": "Delete?", "kind": "approval", "action": {"name": "rm", "arguments": {"path": "/tmp/x"}}, "scopes": ["once", "session"]}]})).await;
    assert_eq!(
        run(&[
            "answer",
            &approval,
            "--approve",
            "--scope",
            "session",
            "--reason",
            "fine"
        ])
        .0,
        0
    );
    let (_, r) = api.get(&format!("/v1/requests/{approval}")).await;
    assert_eq!(r["outcome"]["questions"][0]["scope"], "session");
    assert_eq!(r["outcome"]["questions"][0]["reason"], "fine");

    let denied = ask(json!({"questions": [{"text": "Drop table?", "kind": "approval", "action": {"name": "sql"}}]})).await;
    assert_eq!(
        run(&["answer", &denied, "--deny", "--reason", "not today"]).0,
        0
    );
    let two = ask(json!({"questions": [{"text": "A?"}, {"text": "B?", "kind": "single", "options": ["x", "y"]}]})).await;
    assert_eq!(
        run(&[
            "answer",
            &two,
            "--body",
            r#"{"answers": {"q1": {"text": "a"}, "q2": {"option": "y"}}}"#
        ])
        .0,
        0
    );
    let skippable = ask(json!({"question": "Skip me"})).await;
    assert_eq!(run(&["answer", &skippable, "--skip"]).0, 0);
    let (code, _, _) = run(&["answer", &skippable]);
    assert_eq!(code, 2, "an answer needs a reply flag");

    let pending = ask(json!({"question": "Still open", "session": "s9"})).await;
    let (code, stdout, _) = run(&["list", "--status", "pending"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains(&pending) && stdout.contains("Still open"),
        "{stdout}"
    );
    assert!(!stdout.contains(&single), "filtered by status: {stdout}");
    let (_, stdout, _) = run(&["list", "--json"]);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 8);
    assert_eq!(lines[0]["id"], pending.as_str(), "newest first");

    let (_, stdout, _) = run(&["show", &approval]);
    assert!(
        stdout.contains("Delete?") && stdout.contains("action: rm") && stdout.contains("session"),
        "{stdout}"
    );
    let (_, stdout, _) = run(&["show", &single, "--json"]);
    let shown: Value = serde_json::from_str(&stdout).expect("record JSON");
    assert_eq!(shown["outcome"]["questions"][0]["answer"], "no");

    assert_eq!(run(&["cancel", &pending]).0, 0);
    let (code, _, stderr) = run(&["cancel", &pending]);
    assert_eq!(code, 1);
    assert!(stderr.contains("already cancelled"), "{stderr}");
}

#[tokio::test]
async fn extend_moves_a_deadline_within_the_servers_bound() {
    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);
    let (_, created) = api
        .post(
            "/v1/requests",
            json!({"question": "Ship?", "timeout_seconds": 600}),
        )
        .await;
    let id = created["id"].as_str().expect("id").to_owned();
    let before =
        chrono::DateTime::parse_from_rfc3339(created["expires_at"].as_str().expect("deadline"))
            .expect("RFC 3339");
    let run = |args: &[&str]| {
        let mut c = clarify(&server, &key);
        c.args(args);
        output(c)
    };

    let (code, stdout, stderr) = run(&["extend", &id, "--by", "30m"]);
    assert_eq!(code, 0, "{stderr}");
    let printed = chrono::DateTime::parse_from_rfc3339(stdout.trim()).expect("the new deadline");
    assert_eq!((printed - before).num_seconds(), 1800, "{stdout}");
    let (_, record) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(
        record["expires_at"].as_str(),
        Some(stdout.trim()),
        "{record}"
    );
    assert!(stderr.contains(&id), "{stderr}");

    // Past the server's bound (a day past the first deadline, by default): refused, unmoved.
    let (code, _, stderr) = run(&["extend", &id, "--by", "2d"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("extend by at most 23 hours 30 minutes"),
        "says how far it may go: {stderr}"
    );
    let (code, _, stderr) = run(&["extend", &id, "--by", "soon"]);
    assert_eq!(code, 1, "{stderr}");
    let (_, again) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(again["expires_at"], record["expires_at"]);

    // A request that is no longer pending is not extended.
    assert_eq!(run(&["cancel", &id]).0, 0);
    let (code, _, stderr) = run(&["extend", &id, "--by", "30m"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("cancelled"), "{stderr}");
}

/// Drives `clarify inbox` through a pipe, one reply at a time, reading its output as it goes.
struct Inbox {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    seen: String,
}

impl Inbox {
    fn start(server: &Server, key: &str) -> Self {
        let mut c = clarify(server, key);
        c.arg("inbox")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("inbox starts");
        let stdin = child.stdin.take().expect("stdin");
        let (tx, lines) = std::sync::mpsc::channel();
        for pipe in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                // Prompts have no newline; split on "> " too so they arrive at once.
                let mut reader = BufReader::new(pipe);
                let mut buf = Vec::new();
                loop {
                    let mut byte = [0u8; 1];
                    match reader.read(&mut byte) {
                        Ok(1) => {
                            buf.push(byte[0]);
                            if byte[0] == b'\n' || buf.ends_with(b"> ") {
                                let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
                                buf.clear();
                            }
                        }
                        _ => break,
                    }
                }
            });
        }
        Self {
            child,
            stdin,
            lines,
            seen: String::new(),
        }
    }

    /// Waits until the output so far contains `text`.
    fn expect(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.seen.contains(text) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push_str(&line),
                Err(_) => panic!("the inbox never said {text:?}; it said:\n{}", self.seen),
            }
        }
        // Consume through the match, so the next expectation looks at newer output.
        if let Some(at) = self.seen.find(text) {
            self.seen = self.seen[at + text.len()..].to_owned();
        }
    }

    fn reply(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("reply written");
    }
}

#[tokio::test]
async fn the_inbox_answers_every_kind_through_a_pipe() {
    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);
    let mut ids = Vec::new();
    for body in [
        json!({"question": "Which database?", "choices": ["Postgres (recommended)", "SQLite"], "context": "Two instances."}),
        json!({"questions": [{"text": "Which regions?", "kind": "multi", "options": ["eu", "us", "asia"]}]}),
        json!({"question": "Any last words?"}),
        json!({"questions": [{"text": "Run the migration?", "kind": "approval", "allow_edit": true,
                              "action": {"name": "migrate", "arguments": {"to": 7}}, "scopes": ["once", "session"]}]}),
        json!({"question": "Answered elsewhere?", "choices": ["a", "b"]}),
        json!({"question": "Skippable?", "choices": ["x", "y"]}),
    ] {
        let (status, r) = api.post("/v1/requests", body).await;
        assert_eq!(status, 201);
        ids.push(r["id"].as_str().unwrap_or("").to_owned());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let mut inbox = Inbox::start(&server, &key);
    inbox.expect("Two instances.");
    inbox.expect("1. a) Postgres (recommended)");
    inbox.expect("> ");
    inbox.reply("7");
    inbox.expect("there is no option 7");
    inbox.reply("b");
    inbox.expect("answered");
    inbox.expect("Which regions?");
    inbox.reply("1,3");
    inbox.expect("answered");
    inbox.expect("Any last words?");
    inbox.reply("ship it");
    inbox.expect("answered");
    inbox.expect("action: migrate");
    inbox.reply("maybe");
    inbox.expect("approve or deny");
    inbox.reply("approve session");
    inbox.expect("edited arguments");
    inbox.reply("{not json");
    inbox.expect("not JSON");
    inbox.reply(r#"{"to": 6}"#);
    inbox.expect("answered");
    inbox.expect("Answered elsewhere?");
    inbox.expect("> ");
    // Someone else answers while the inbox shows the request.
    let responder = api
        .post("/v1/keys", json!({"name": "bob", "role": "responder"}))
        .await
        .1["token"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    answer(
        &Api::new(&server.url, &responder),
        &ids[4],
        json!({"option": "a"}),
    )
    .await;
    inbox.reply("b");
    inbox.expect("by bob");
    inbox.expect("Skippable?");
    inbox.reply("s");
    inbox.expect("skipped");
    inbox.expect("No pending requests");
    drop(inbox.stdin);
    let status = inbox.child.wait().expect("inbox ends");
    assert_eq!(status.code(), Some(0));

    let answer = |i: usize| {
        let api = api.clone();
        let id = ids[i].clone();
        async move { api.get(&format!("/v1/requests/{id}")).await.1["outcome"].clone() }
    };
    assert_eq!(answer(0).await["questions"][0]["answer"], "SQLite");
    assert_eq!(
        answer(1).await["questions"][0]["answer"],
        json!(["eu", "asia"])
    );
    assert_eq!(answer(2).await["questions"][0]["answer"], "ship it");
    let approval = answer(3).await;
    assert_eq!(approval["questions"][0]["decision"], "approve");
    assert_eq!(approval["questions"][0]["scope"], "session");
    assert_eq!(
        approval["questions"][0]["edited_arguments"],
        json!({"to": 6})
    );
    assert_eq!(
        answer(4).await["questions"][0]["answer"],
        "a",
        "bob's answer stands"
    );
    assert_eq!(answer(5).await["status"], "skipped");
}

#[test]
fn tools_prints_the_committed_definitions() {
    for format in ["openai", "anthropic", "mcp"] {
        let out = Command::new(BIN)
            .args(["tools", "--format", format])
            .output()
            .expect("runs");
        assert!(out.status.success());
        let committed = std::fs::read_to_string(format!(
            "{}/../../tools/ask_human.{format}.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("committed definition");
        assert_eq!(String::from_utf8_lossy(&out.stdout), committed, "{format}");
    }
}

#[test]
fn every_command_has_help_with_an_example() {
    for command in [
        "serve", "ask", "inbox", "answer", "list", "show", "cancel", "keys", "tools",
    ] {
        let out = Command::new(BIN)
            .args([command, "--help"])
            .output()
            .expect("runs");
        assert!(out.status.success(), "{command} --help");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Example"),
            "{command} --help has no example:\n{text}"
        );
    }
}

#[tokio::test]
async fn ask_reconnects_when_the_server_restarts() {
    let dir = crate::support::temp_dir("reconnect");
    let db = crate::support::sqlite_url(&dir);
    let key = crate::support::create_key(&db, "admin", "root", "default");
    let mut first = Server::start(&db, &[]).await;
    let port = first.port;
    let child = spawn_ask(
        &first,
        &key,
        &["Survive a restart?", "-c", "yes", "-c", "no"],
    );
    let api = Api::new(&first.url, &key);
    let r = newest_pending(&api).await;
    let id = r["id"].as_str().unwrap_or("").to_owned();
    first.kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = Server::start_on(port, &db, &[]).await;
    answer(&Api::new(&second.url, &key), &id, json!({"option": "yes"})).await;
    let (code, stdout, stderr) = finish(child);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "yes\n"),
        "ask waited through the restart; its stderr: {stderr}"
    );
}

/// Relays connections to `upstream`, except that the first one loses its response: the
/// request reaches the server, which acts on it, and the connection closes before the reply
/// gets back, as when a server dies right after committing. Returns the proxy's URL.
async fn proxy_losing_the_first_response(upstream: &str) -> String {
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("proxy binds");
    let url = format!("http://{}", listener.local_addr().expect("proxy address"));
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((mut client, _)) = listener.accept().await {
            let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else {
                continue;
            };
            let lose = std::mem::take(&mut first);
            tokio::spawn(async move {
                if !lose {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    return;
                }
                let (mut from_client, _to_client) = client.split();
                let (mut from_server, mut to_server) = server.split();
                let mut reply = [0u8; 1];
                tokio::select! {
                    _ = tokio::io::copy(&mut from_client, &mut to_server) => {}
                    // The server has answered: hang up on the client without passing it on.
                    _ = tokio::io::AsyncReadExt::read(&mut from_server, &mut reply) => {}
                }
            });
        }
    });
    url
}

/// `ask` whose create reached the server but whose reply was lost sends it again under the same
/// idempotency key: it gets the one request the server made, waits for its answer, and no
/// second question is asked. (The proxy runs on the test's runtime while the test blocks on
/// the process, hence the second worker.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_retries_a_lost_create_without_asking_twice() {
    let (server, key) = server().await;
    let proxy = proxy_losing_the_first_response(&server.url).await;
    let child = spawn_ask_at(&proxy, &key, &["Ship it?", "-c", "yes", "-c", "no"]);
    let api = Api::new(&server.url, &key);
    let r = newest_pending(&api).await;
    let id = r["id"].as_str().unwrap_or("").to_owned();
    // Answered before or after the retry lands: either way the retry returns this request.
    answer(&api, &id, json!({"option": "yes"})).await;
    let (code, stdout, stderr) = finish(child);
    assert_eq!((code, stdout.as_str()), (0, "yes\n"), "{stderr}");
    assert!(
        stderr.contains("retrying"),
        "the retry is reported: {stderr}"
    );
    let (_, page) = api.get("/v1/requests?limit=10").await;
    let asked = page["requests"].as_array().map(|all| {
        all.iter()
            .filter(|r| r["questions"][0]["text"] == "Ship it?")
            .count()
    });
    assert_eq!(asked, Some(1), "one request, not two: {page}");
}

#[tokio::test]
async fn flags_override_the_environment_and_output_to_a_pipe_is_plain() {
    let (server, key) = server().await;
    Api::new(&server.url, &key)
        .post(
            "/v1/requests",
            json!({"question": "Styled?", "choices": ["a", "b"]}),
        )
        .await;
    // The environment points nowhere; the flags win.
    let out = Command::new(BIN)
        .args(["list", "--url", &server.url, "--token", &key])
        .env("CLARIFY_URL", "http://127.0.0.1:9")
        .env("CLARIFY_TOKEN", "ck_aaaaaaaaaaaaaaaa_wrong")
        .env_remove("NO_COLOR")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Styled?"), "{stdout}");
    assert!(
        !stdout.contains('\x1b'),
        "no escape codes when stdout is not a terminal: {stdout:?}"
    );
    let (code, stdout, _) = output({
        let mut c = clarify(&server, &key);
        c.args(["show", "--json"]).arg(
            stdout
                .lines()
                .nth(1)
                .and_then(|l| l.split_whitespace().next())
                .unwrap_or(""),
        );
        c
    });
    assert_eq!(code, 0);
    assert!(!stdout.contains('\x1b'));
}

#[tokio::test]
async fn the_inbox_answers_a_form_field_by_field_through_a_pipe() {
    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);
    let (status, r) = api
        .post(
            "/v1/requests",
            json!({"question": "Trip details", "fields": [
                {"id": "budget", "label": "Budget", "type": "number", "maximum": 5000},
                {"id": "nights", "label": "Nights", "type": "integer", "minimum": 1, "default": 2},
                {"id": "plan", "label": "Plan", "type": "choice", "options": ["Basic", "Pro"]},
                {"id": "email", "label": "E-mail", "type": "text", "format": "email", "required": false}
            ]}),
        )
        .await;
    assert_eq!(status, 201, "{r}");
    let id = r["id"].as_str().unwrap_or("").to_owned();

    let mut inbox = Inbox::start(&server, &key);
    inbox.expect("Trip details");
    inbox.expect("Budget");
    inbox.expect("up to 5000");
    inbox.expect("Budget> ");
    inbox.reply("9000");
    inbox.expect("must be at most 5000, got 9000; try again");
    inbox.reply("1200");
    inbox.expect("empty keeps 2");
    inbox.expect("Nights> ");
    inbox.reply("");
    inbox.expect("2. Pro");
    inbox.expect("Plan> ");
    inbox.reply("2");
    inbox.expect("E-mail> ");
    inbox.reply("");
    inbox.expect("answered");
    inbox.expect("No pending requests");
    drop(inbox.stdin);
    let status = inbox.child.wait().expect("inbox ends");
    assert_eq!(status.code(), Some(0));

    let (_, done) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(
        done["outcome"]["questions"][0]["answer"],
        json!({"budget": 1200, "nights": 2, "plan": "pro"}),
        "{done}"
    );
}

#[tokio::test]
async fn the_inbox_shows_a_quorum_and_counts_its_vote() {
    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);
    let (status, r) = api
        .post(
            "/v1/requests",
            json!({"questions": [{"text": "Delete the old backups?", "kind": "approval",
                                  "action": {"name": "backups.delete", "arguments": {}}}],
                   "approvals_required": 2}),
        )
        .await;
    assert_eq!(status, 201, "{r}");
    let id = r["id"].as_str().unwrap_or("").to_owned();
    let alice = api
        .post("/v1/keys", json!({"name": "alice", "role": "responder"}))
        .await
        .1["token"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let (status, counted) = Api::new(&server.url, &alice)
        .post(
            &format!("/v1/requests/{id}/answer"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, 202, "{counted}");
    let (status, second) = api
        .post(
            "/v1/requests",
            json!({"questions": [{"text": "Rotate the keys?", "kind": "approval",
                                  "action": {"name": "keys.rotate", "arguments": {}}}],
                   "approvals_required": 2}),
        )
        .await;
    assert_eq!(status, 201, "{second}");

    let mut inbox = Inbox::start(&server, &key);
    inbox.expect("1 of 2 approvals (by alice)");
    inbox.expect("action: backups.delete");
    inbox.reply("approve");
    inbox.expect("answered");
    inbox.expect("0 of 2 approvals");
    inbox.expect("action: keys.rotate");
    inbox.reply("approve");
    inbox.expect("vote counted: 1 of 2 approvals");
    inbox.expect("No pending requests");
    drop(inbox.stdin);
    let status = inbox.child.wait().expect("inbox ends");
    assert_eq!(status.code(), Some(0));

    let (_, done) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["votes"].as_array().map(Vec::len), Some(2), "{done}");

    // Started again, the inbox does not offer the request it voted on: it waits for others.
    let mut again = Inbox::start(&server, &key);
    again.expect("1 request(s) you voted on wait for more approvals.");
    again.expect("No pending requests");
    drop(again.stdin);
    let status = again.child.wait().expect("inbox ends");
    assert_eq!(status.code(), Some(0));
}

/// `clarify list --json | head -1`: when the reader goes away, a printing command ends as `ls`
/// does, by SIGPIPE (status 141 in a shell), without a panic on stderr.
#[tokio::test]
async fn a_printing_command_ends_quietly_when_its_reader_goes_away() {
    use std::os::unix::process::ExitStatusExt;

    let (server, key) = server().await;
    let api = Api::new(&server.url, &key);
    for n in 0..3 {
        api.post("/v1/requests", json!({"question": format!("Q{n}?")}))
            .await;
    }
    let mut c = clarify(&server, &key);
    c.args(["list", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("clarify runs");
    // The reader is gone before the command has anything to print.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("clarify ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(13),
        "SIGPIPE: {:?} {stderr}",
        out.status
    );
}

/// Without a key, the error says once how to make one (the server's message and the client's
/// hint each named `clarify keys create`).
#[tokio::test]
async fn a_missing_key_is_explained_once() {
    let (server, _) = server().await;
    let mut c = clarify_at(&server.url, "");
    c.env_remove("CLARIFY_TOKEN").arg("list");
    let (code, _, stderr) = output(c);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("CLARIFY_TOKEN"), "{stderr}");
    assert_eq!(stderr.matches("clarify keys create").count(), 1, "{stderr}");
}
