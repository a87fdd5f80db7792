//! PostgreSQL failover under load: a primary and a synchronous streaming standby on loopback, each
//! on a port of its own in a temporary directory, and `clarify serve` on a URL naming both with
//! `target_session_attrs=read-write`. Agents create requests and wait while a person answers;
//! the primary is killed (`pg_ctl stop -m immediate`) and the standby promoted. clarify finds the
//! new primary by itself: every request and answer it acknowledged is there afterwards, every
//! waiting agent has its answer, nothing is stored twice.
//!
//! Needs PostgreSQL's server binaries (`initdb`, `pg_ctl`, `pg_basebackup`) under
//! `/usr/lib/postgresql/*/bin`; without them the test says so and passes, unless
//! `CLARIFY_REQUIRE_SERVICES=1`. Run as root (as CI runs), the servers run as the `postgres`
//! user, since PostgreSQL refuses to run as root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clarify_client::{Client, ClientError};
use serde_json::{Value, json};
use sqlx::Connection;

use crate::replicas::admin_key_file;
use crate::support::{Api, Server, free_port, unique};

/// The directory of PostgreSQL's server programs (the newest installed), or why there is none.
fn server_programs() -> Result<PathBuf, String> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "no /usr/lib/postgresql".to_owned())?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            ["initdb", "pg_ctl", "pg_basebackup"]
                .iter()
                .all(|tool| bin.join(tool).is_file())
                .then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no initdb, pg_ctl and pg_basebackup under /usr/lib/postgresql/*/bin".into())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// A primary and a standby under one temporary directory, stopped and removed when dropped.
struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    /// Run the programs as the `postgres` user (this process is root).
    as_postgres: bool,
    primary: u16,
    standby: u16,
}

impl Cluster {
    fn data(&self, node: &str) -> PathBuf {
        self.dir.join(node)
    }

    /// Runs one of PostgreSQL's programs; panics with its output when it fails.
    fn run(&self, tool: &str, args: &[&str]) {
        let program = self.bin.join(tool);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        let out = command
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{tool} runs: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn append_config(&self, node: &str, lines: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data(node).join("postgresql.conf"))
            .expect("postgresql.conf");
        file.write_all(lines.as_bytes())
            .expect("write postgresql.conf");
    }

    fn pg_ctl(&self, node: &str, action: &[&str]) {
        let data = self.data(node).display().to_string();
        let log = self.dir.join(format!("{node}.log")).display().to_string();
        let mut args = vec!["-D", data.as_str(), "-l", log.as_str(), "-w", "-t", "60"];
        args.extend_from_slice(action);
        self.run("pg_ctl", &args);
    }

    fn url(port: u16) -> String {
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    }

    /// Sets up the primary and its synchronous standby, both streaming.
    async fn start(bin: PathBuf) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "clarify-failover-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let as_postgres = is_root();
        if as_postgres {
            let status = Command::new("chown")
                .args(["postgres:", &dir.display().to_string()])
                .status()
                .expect("chown runs");
            assert!(status.success(), "the postgres user owns {}", dir.display());
        }
        let cluster = Self {
            bin,
            dir,
            as_postgres,
            primary: free_port(),
            standby: free_port(),
        };
        let primary = cluster.data("primary").display().to_string();
        cluster.run(
            "initdb",
            &[
                "-D",
                &primary,
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
                "--no-instructions",
            ],
        );
        let socket_dir = cluster.dir.display();
        cluster.append_config(
            "primary",
            &format!(
                "\nport = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{socket_dir}'\n\
                 wal_level = replica\nmax_wal_senders = 4\nsynchronous_commit = on\n",
                cluster.primary
            ),
        );
        cluster.pg_ctl("primary", &["start"]);

        let standby = cluster.data("standby").display().to_string();
        cluster.run(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &cluster.primary.to_string(),
                "-U",
                "postgres",
                "-D",
                &standby,
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
        );
        cluster.append_config("standby", &format!("\nport = {}\n", cluster.standby));
        cluster.pg_ctl("standby", &["start"]);

        // Synchronous from here on: a commit returns once the standby has the WAL. Set on the
        // primary alone, so the promoted standby does not wait for a standby of its own.
        let mut conn = sqlx::PgConnection::connect(&Self::url(cluster.primary))
            .await
            .expect("connect to the primary");
        sqlx::query("ALTER SYSTEM SET synchronous_standby_names = '*'")
            .execute(&mut conn)
            .await
            .expect("synchronous_standby_names");
        sqlx::query("SELECT pg_reload_conf()")
            .execute(&mut conn)
            .await
            .expect("reload");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let sync: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' \
                 AND state = 'streaming'",
            )
            .fetch_one(&mut conn)
            .await
            .expect("pg_stat_replication");
            if sync == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "the standby never streamed");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        cluster
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in ["primary", "standby"] {
            let program = self.bin.join("pg_ctl");
            let data = self.data(node);
            let mut command = if self.as_postgres {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(&program);
                c
            } else {
                Command::new(&program)
            };
            let _ = command
                .arg("-D")
                .arg(&data)
                .args(["stop", "-m", "immediate"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What the agents and the person saw acknowledged, by request id.
#[derive(Default)]
struct Acknowledged {
    created: BTreeSet<String>,
    answered: BTreeSet<String>,
    /// Creates acknowledged after the primary was killed.
    created_after_kill: usize,
}

fn question(text: &str) -> Value {
    json!({"questions": [{"text": text, "kind": "single", "options": ["yes", "no"]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_promoted_under_load_loses_nothing_clarify_acknowledged() {
    let bin = match server_programs() {
        Ok(bin) => bin,
        Err(why) => {
            assert!(
                std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() != Ok("1"),
                "CLARIFY_REQUIRE_SERVICES=1 requires PostgreSQL's server programs for the \
                 failover test: {why}"
            );
            eprintln!("skipped: the failover test needs PostgreSQL's server programs: {why}");
            return;
        }
    };
    let cluster = Cluster::start(bin).await;
    let dir = crate::support::temp_dir("failover");
    let (key, key_file) = admin_key_file(&dir);
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        cluster.primary, cluster.standby
    );
    let server = Server::start(&url, &["--admin-key-file", key_file.as_str()]).await;

    let seen = Arc::new(Mutex::new(Acknowledged::default()));
    let killed = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));

    // Agents: each creates a request (retrying what the failover interrupts, with one
    // idempotency key), waits for its answer, and starts again.
    let agents: Vec<_> = (0..6)
        .map(|agent| {
            let (seen, killed, stop) = (Arc::clone(&seen), Arc::clone(&killed), Arc::clone(&stop));
            let (url, key) = (server.url.clone(), key.clone());
            tokio::spawn(async move {
                let client = Client::new(&url, Some(key))?;
                let mut rounds = 0;
                while !stop.load(Ordering::Relaxed) {
                    let body = question(&format!("Agent {agent}, round {rounds}: go on?"));
                    let (record, _) = client
                        .create_retrying(&body, Duration::from_secs(60), |_| {})
                        .await?;
                    {
                        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                        seen.created.insert(record.id.clone());
                        if killed.load(Ordering::Relaxed) {
                            seen.created_after_kill += 1;
                        }
                    }
                    let outcome = client.wait_resolved(&record.id, |_| {}).await?;
                    assert_eq!(outcome.status, "answered", "{}", record.id);
                    rounds += 1;
                }
                Ok::<usize, ClientError>(rounds)
            })
        })
        .collect();

    // The person: answers whatever is pending, again and again. An answer whose reply the
    // failover cut off is found answered (409) on the next look, which is fine: it was stored.
    let answering = Arc::new(AtomicBool::new(true));
    let person = {
        let (seen, answering) = (Arc::clone(&seen), Arc::clone(&answering));
        let api = Api::new(&server.url, &key);
        tokio::spawn(async move {
            let client = Client::new(&api.url, Some(api.key.clone())).expect("client");
            while answering.load(Ordering::Relaxed) {
                let (status, page) = api.get("/v1/requests?status=pending&limit=100").await;
                if status != 200 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                for request in page["requests"].as_array().into_iter().flatten() {
                    let Some(id) = request["id"].as_str() else {
                        continue;
                    };
                    let option = &request["questions"][0]["options"][0]["id"];
                    if client.answer(id, &json!({"option": option})).await.is_ok() {
                        seen.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .answered
                            .insert(id.to_owned());
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };

    // Under load first: a few dozen round trips before the primary goes.
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .answered
        .len()
        < 30
    {
        assert!(Instant::now() < deadline, "no load: {}", server.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    killed.store(true, Ordering::Relaxed);
    cluster.pg_ctl("primary", &["stop", "-m", "immediate"]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster.pg_ctl("standby", &["promote"]);
    let promoted = Instant::now();

    // Serving again: the first create acknowledged after the promotion.
    let api = Api::new(&server.url, &key);
    let serving_again = loop {
        let (status, created) = api.post("/v1/requests", question("Are we back?")).await;
        if status == 201 {
            let elapsed = promoted.elapsed();
            if let Some(id) = created["id"].as_str() {
                let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                seen.created.insert(id.to_owned());
                seen.created_after_kill += 1;
            }
            break elapsed;
        }
        assert!(
            promoted.elapsed() < Duration::from_secs(60),
            "clarify did not serve again after the promotion ({status} {created}): {}",
            server.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    // More round trips on the new primary, then the agents finish the round they are in.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let mut rounds = 0;
    for agent in agents {
        rounds += tokio::time::timeout(Duration::from_secs(120), agent)
            .await
            .expect("every agent has its answer")
            .expect("agent task")
            .unwrap_or_else(|e| panic!("an agent failed: {e}: {}", server.stderr()));
    }
    // The last look answers the probe's request too, then the person stops.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, page) = api.get("/v1/requests?status=pending&limit=1").await;
        if page["requests"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        assert!(Instant::now() < deadline, "requests left pending: {page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    answering.store(false, Ordering::Relaxed);
    person.await.expect("the person's task");

    // The new primary, read directly: what clarify acknowledged, once each.
    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()));
    let mut conn = sqlx::PgConnection::connect(&Cluster::url(cluster.standby))
        .await
        .expect("connect to the promoted standby");
    let stored: BTreeMap<String, String> =
        sqlx::query_as("SELECT id, status FROM clarify_requests")
            .fetch_all(&mut conn)
            .await
            .expect("read the requests")
            .into_iter()
            .collect();
    let lost: Vec<&String> = seen
        .created
        .iter()
        .filter(|id| !stored.contains_key(*id))
        .collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?}");
    assert_eq!(
        stored.len(),
        seen.created.len(),
        "no request stored twice, none that was never acknowledged"
    );
    assert!(
        stored.values().all(|status| status == "answered"),
        "every request answered: {stored:?}"
    );
    assert!(
        seen.answered.iter().all(|id| stored.contains_key(id)),
        "every acknowledged answer is stored"
    );
    let answered_twice: Vec<(String, i64)> = sqlx::query_as(
        "SELECT request_id, count(*) FROM (SELECT request_id, kind FROM clarify_events \
         UNION ALL SELECT request_id, kind FROM clarify_event_inbox) e \
         WHERE kind = 'answered' GROUP BY request_id HAVING count(*) <> 1",
    )
    .fetch_all(&mut conn)
    .await
    .expect("count answers");
    assert!(
        answered_twice.is_empty(),
        "answered twice: {answered_twice:?}"
    );
    assert!(
        seen.created_after_kill > 1,
        "the agents went on after the failover"
    );
    assert!(
        server.stderr().contains("primary moved"),
        "clarify says where it went: {}",
        server.stderr()
    );
    drop(server);
    eprintln!(
        "failover: {} requests acknowledged ({} after the primary was killed), {} agent round \
         trips, 0 lost; serving again {:.2} s after the promotion",
        seen.created.len(),
        seen.created_after_kill,
        rounds,
        serving_again.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
