//! Several `clarify serve` processes on one PostgreSQL database, as replicas of a Deployment:
//! started at the same moment on an empty database, and restarted one after the other behind a
//! round-robin proxy while agents wait.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clarify_client::Client;
use clarify_testkit::{in_scratch_database, postgres_url};
use futures_util::future::join_all;
use serde_json::{Value, json};
use sqlx::Connection;

use crate::support::{Api, BIN, RoundRobin, Server, temp_dir, unique};

/// A fresh key from `clarify keys generate`, written to a file as a secret is mounted (with a
/// trailing line break); the key and the file's path.
pub(crate) fn admin_key_file(dir: &std::path::Path) -> (String, String) {
    let out = Command::new(BIN)
        .args(["keys", "generate"])
        .output()
        .expect("clarify runs");
    assert!(out.status.success(), "keys generate");
    let key = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let path = dir.join("admin.key");
    std::fs::write(&path, format!("{key}\n")).expect("write the key");
    (key, path.display().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn instances_starting_at_once_on_an_empty_database_migrate_it_once_and_all_become_ready() {
    let Some(pg) = postgres_url() else { return };
    let db = format!("clarify_test_start_{}", unique());
    in_scratch_database(&pg, &db, |url| async move {
        let dir = temp_dir("start-at-once");
        let (key, key_file) = admin_key_file(&dir);
        let extra = ["--admin-key-file", key_file.as_str()];
        // Spawned in one poll of `join_all`: four processes opening an empty database together.
        let servers = join_all((0..4).map(|_| Server::start(&url, &extra))).await;
        for server in &servers {
            let out = Command::new(BIN)
                .args(["healthcheck", "--ready", "--url", &server.url])
                .output()
                .expect("clarify runs");
            assert!(
                out.status.success(),
                "{} is not ready: {}",
                server.url,
                String::from_utf8_lossy(&out.stderr)
            );
            let (status, session) = Api::new(&server.url, &key).get("/v1/session").await;
            assert_eq!(status, 200, "the key from the file works on every instance");
            assert_eq!(session["role"], "admin", "{session}");
        }

        let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
        let (versions, transactions, latest): (i64, i64, i64) = sqlx::query_as(
            "SELECT count(*), count(DISTINCT applied_at), max(version) FROM clarify_schema",
        )
        .fetch_one(&mut conn)
        .await
        .expect("read clarify_schema");
        assert_eq!(versions, latest, "each version applied once");
        assert_eq!(
            transactions, 1,
            "all of them by one instance, in one transaction"
        );
        let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM clarify_keys")
            .fetch_one(&mut conn)
            .await
            .expect("count keys");
        assert_eq!(
            keys, 1,
            "the key from the file, and no key printed to a log"
        );
        for server in &servers {
            assert!(
                !server.stderr().contains("ck_"),
                "no key in the logs: {}",
                server.stderr()
            );
        }
        let out = Command::new(BIN)
            .args(["audit", "export", "--db", &url])
            .output()
            .expect("clarify runs");
        let created = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("\"key.created\""))
            .count();
        assert_eq!(created, 1, "one key.created in the audit chain");
        drop(servers);
    })
    .await;
}

/// How many long-polls, event streams and /mcp calls `server` holds open.
async fn waiters(server: &Server, key: &str) -> f64 {
    let text = clarify_client::http::client()
        .expect("an HTTP client")
        .get(format!("{}/metrics", server.url))
        .bearer_auth(key)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|l| l.strip_prefix("clarify_waiters "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_behind_a_proxy_leaves_no_waiting_agent_without_its_answer() {
    let Some(pg) = postgres_url() else { return };
    let db = format!("clarify_test_rolling_{}", unique());
    in_scratch_database(&pg, &db, |url| async move {
        let dir = temp_dir("rolling");
        let (key, key_file) = admin_key_file(&dir);
        let extra = ["--admin-key-file", key_file.as_str()];
        let mut first = Server::start(&url, &extra).await;
        let second = Server::start(&url, &extra).await;
        let proxy = RoundRobin::start(vec![first.addr(), second.addr()]).await.url;

        // Agents through the proxy: `clarify ask` processes, with their key from a file, and
        // Rust agents on the project's client.
        let asks: Vec<_> = (0..6)
            .map(|i| {
                Command::new(BIN)
                    .args(["ask", &format!("Ship build {i}?"), "-c", "yes", "-c", "no"])
                    .env("CLARIFY_URL", &proxy)
                    .env("CLARIFY_TOKEN_FILE", &key_file)
                    .env_remove("CLARIFY_TOKEN")
                    .env("NO_COLOR", "1")
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("clarify ask starts")
            })
            .collect();
        let agents: Vec<_> = (0..6)
            .map(|i| {
                let (proxy, key) = (proxy.clone(), key.clone());
                tokio::spawn(async move {
                    let client = Client::new(&proxy, Some(key))?;
                    let body = json!({"questions": [{"text": format!("Migrate shard {i}?"),
                        "kind": "single", "options": ["yes", "no"]}]});
                    let (record, _) = client
                        .create_retrying(&body, Duration::from_secs(60), |_| {})
                        .await?;
                    client.wait_resolved(&record.id, |_| {}).await
                })
            })
            .collect();

        // Every request acknowledged and its agent waiting, some of them on the first instance.
        let api = Api::new(&second.url, &key);
        let deadline = Instant::now() + Duration::from_secs(30);
        let pending = loop {
            let (_, page) = api.get("/v1/requests?status=pending&limit=100").await;
            let ids: Vec<Value> = page["requests"].as_array().cloned().unwrap_or_default();
            if ids.len() == 12 && waiters(&first, &key).await + waiters(&second, &key).await >= 12.0
            {
                break ids;
            }
            assert!(Instant::now() < deadline, "agents did not all wait: {page}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let on_first = waiters(&first, &key).await;
        assert!(on_first >= 1.0, "the proxy spread the agents over both");

        // The first instance is stopped as Kubernetes stops a pod: SIGTERM, then it exits.
        first.terminate();
        let stopping = Instant::now();
        assert_eq!(first.wait_exit(Duration::from_secs(30)), Some(0));
        let stopped_in = stopping.elapsed();
        assert!(
            stopped_in < Duration::from_secs(5),
            "SIGTERM ends long-polls at once: {stopped_in:?}"
        );

        // Each request answered once the first is gone, through the proxy.
        let responder = Client::new(&proxy, Some(key.clone())).expect("client");
        for request in &pending {
            let id = request["id"].as_str().expect("id");
            let option = &request["questions"][0]["options"][0]["id"];
            responder
                .answer(id, &json!({"option": option}))
                .await
                .unwrap_or_else(|e| panic!("answering {id}: {e}"));
        }

        for agent in agents {
            let record = agent.await.expect("task").expect("the agent got its outcome");
            assert_eq!(record.status, "answered");
        }
        for ask in asks {
            let out = ask.wait_with_output().expect("clarify ask ends");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "yes");
        }
        let (_, all) = api.get("/v1/requests?limit=100").await;
        let all = all["requests"].as_array().cloned().unwrap_or_default();
        assert_eq!(all.len(), 12, "no request lost, none made twice");
        assert!(all.iter().all(|r| r["status"] == "answered"));
        eprintln!(
            "rolling restart: {on_first} of 12 agents waited on the stopped instance, which exited {} ms after SIGTERM",
            stopped_in.as_millis()
        );
    })
    .await;
}
