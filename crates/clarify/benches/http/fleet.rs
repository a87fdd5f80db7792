//! `fleet`: many agents waiting on clarify at once, each on its own connection.
//!
//! The crowd is held by child processes of this benchmark (this executable again, started with
//! `CLARIFY_BENCH_CROWD` naming a spec file), one per server instance: a process here may hold
//! at most 20,000 open files, and one loopback source address gives about 28,000 ephemeral
//! ports, so each crowd process spreads its connections over several source addresses
//! (127.0.0.2 and up) and no process needs more than one instance's share. A crowd process
//! prints `woke INDEX UNIX_MICROS` when a waiter's wait ends, and, in `events` mode, its
//! delivery figures when this process writes `report` to its stdin.
//!
//! Modes (`CLARIFY_BENCH_FLEET_MODE`):
//! - `wait` (default): each agent long-polls `GET /v1/requests/{id}/wait?timeout_seconds=60`;
//! - `mcp`: each agent calls `ask_human` over `/mcp` (protocol 2026-07-28, one `POST` per agent,
//!   or with `CLARIFY_BENCH_FLEET_MCP=2025-06-18` a session each: `initialize` first);
//! - `events`: each agent holds `GET /v1/events`, and this process creates requests at
//!   `CLARIFY_BENCH_FLEET_RATE` per second (1,000) for 10 s; every subscriber must receive every
//!   `request.created`, and the delivery latency is timed from sending the create;
//! - `idle`: N connections that send nothing: what an open connection alone costs;
//! - `used`: N connections that each made one request (`GET /healthz`) and then wait for the
//!   next: what a kept-alive connection costs between requests.
//!
//! `CLARIFY_BENCH_SERVER_BIN` runs another `clarify` binary as the server (a build for a heap
//! profiler, with `CLARIFY_BENCH_WRAP`). `CLARIFY_BENCH_FLEET_PACE` spreads the crowd's connections at that many a second (all at
//! once by default).
//!
//! Backends (`CLARIFY_BENCH_FLEET_DB`): `sqlite` (default, one instance) or `postgres`
//! (`CLARIFY_BENCH_FLEET_INSTANCES` instances sharing a fresh database made with `psql` beside
//! `CLARIFY_TEST_POSTGRES`, the crowd split evenly between them).

use std::collections::HashMap;
use std::io::{BufRead as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

mod crowd;

pub(crate) use crowd::crowd;

use crate::{ANSWER_YES, BIN, PLAIN_ASK, Server, agents, key_of, ms, percentile, post};

/// The loopback source addresses a crowd process spreads its connections over.
const SOURCES: [&str; 4] = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"];

/// How long each throughput window of the 32 other agents runs.
const AGENTS_FOR: Duration = Duration::from_secs(5);

/// What a crowd process does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    Wait,
    Mcp,
    Events,
    Idle,
    Used,
}

impl Mode {
    pub(crate) fn from_env() -> Self {
        Self::of(&std::env::var("CLARIFY_BENCH_FLEET_MODE").unwrap_or_default())
    }

    fn name(self) -> &'static str {
        match self {
            Self::Wait => "wait",
            Self::Mcp => "mcp",
            Self::Events => "events",
            Self::Idle => "idle",
            Self::Used => "used",
        }
    }

    fn of(name: &str) -> Self {
        match name {
            "mcp" => Self::Mcp,
            "events" => Self::Events,
            "idle" => Self::Idle,
            "used" => Self::Used,
            _ => Self::Wait,
        }
    }
}

/// This process's soft limit of open files.
fn open_files_limit() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// A gauge or counter from the server's `/metrics` (0 when absent).
async fn metric(client: &reqwest::Client, url: &str, name: &str) -> u64 {
    let Ok(response) = client.get(format!("{url}/metrics")).send().await else {
        return 0;
    };
    let text = response.text().await.unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// Memory the kernel holds for TCP sockets (all of them, both ends), in KiB: the `mem` pages
/// of `/proc/net/sockstat`.
fn tcp_kernel_kib() -> u64 {
    std::fs::read_to_string("/proc/net/sockstat")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("TCP:"))?;
            let mut words = line.split_whitespace();
            words.find(|w| *w == "mem")?;
            words.next()?.parse::<u64>().ok()
        })
        .map_or(0, |pages| pages * 4)
}

fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The database the instances share, and how to drop it afterwards.
pub(crate) struct Database {
    pub(crate) url: String,
    drop_with: Option<(String, String)>,
}

impl Database {
    fn sqlite(dir: &std::path::Path, n: usize) -> Self {
        Self {
            url: format!("sqlite://{}", dir.join(format!("fleet-{n}.db")).display()),
            drop_with: None,
        }
    }

    /// A fresh PostgreSQL database beside `CLARIFY_TEST_POSTGRES`'s, made with `psql`.
    fn postgres() -> Self {
        Self::postgres_named(&format!("clarify_fleet_{}", std::process::id()))
    }

    /// Another fresh PostgreSQL database, dropped with the value (each call its own).
    pub(crate) fn postgres_fresh() -> Self {
        static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self::postgres_named(&format!("clarify_bench_{}_{run}", std::process::id()))
    }

    fn postgres_named(name: &str) -> Self {
        let base = std::env::var("CLARIFY_TEST_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
        let name = name.to_owned();
        let status = Command::new("psql")
            .args([&base, "-qc", &format!("CREATE DATABASE {name}")])
            .status()
            .expect("psql runs");
        assert!(status.success(), "psql could not create {name}");
        let (server, _) = base.rsplit_once('/').expect("a database URL");
        Self {
            url: format!("{server}/{name}"),
            drop_with: Some((base, name)),
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some((base, name)) = &self.drop_with {
            let _ = Command::new("psql")
                .args([
                    base,
                    "-qc",
                    &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                ])
                .status();
        }
    }
}

/// One crowd process and the wake-ups it reported.
struct Crowd {
    child: Child,
    woke: Arc<Mutex<HashMap<usize, u64>>>,
    lines: Arc<Mutex<Vec<String>>>,
    /// Notified on every line the crowd prints.
    heard: Arc<tokio::sync::Notify>,
}

impl Crowd {
    /// Starts a crowd process of `mode` holding `ids` (or, in `events` and `idle` mode, `count`
    /// connections) against `url`, numbered from `first`.
    fn start(
        dir: &std::path::Path,
        mode: Mode,
        url: &str,
        key: &str,
        ids: &[String],
        count: usize,
        first: usize,
    ) -> Self {
        let spec = dir.join(format!("crowd-{first}.json"));
        std::fs::write(
            &spec,
            json!({"mode": mode.name(), "url": url, "key": key, "ids": ids, "count": count,
                   "first": first, "sources": SOURCES,
                   "mcp": std::env::var("CLARIFY_BENCH_FLEET_MCP").unwrap_or_default(),
                   "pace": std::env::var("CLARIFY_BENCH_FLEET_PACE").ok()
                       .and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)})
            .to_string(),
        )
        .expect("crowd spec written");
        let mut child = Command::new(std::env::current_exe().expect("this executable"))
            .env("CLARIFY_BENCH_CROWD", &spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the crowd process starts");
        let woke = Arc::new(Mutex::new(HashMap::new()));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let heard = Arc::new(tokio::sync::Notify::new());
        let stdout = child.stdout.take().expect("piped");
        let (w, l, h) = (woke.clone(), lines.clone(), heard.clone());
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut words = line.split_whitespace();
                if words.next() == Some("woke") {
                    let index = words.next().and_then(|w| w.parse().ok());
                    let at = words.next().and_then(|w| w.parse().ok());
                    if let (Some(index), Some(at)) = (index, at) {
                        w.lock().expect("lock").insert(index, at);
                    }
                } else {
                    l.lock().expect("lock").push(line);
                }
                h.notify_waiters();
            }
        });
        Self {
            child,
            woke,
            lines,
            heard,
        }
    }

    /// When waiter `index` woke (unix micros), waiting for it up to 10 s.
    async fn woke(&self, index: usize) -> Option<u64> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let heard = self.heard.notified();
            if let Some(at) = self.woke.lock().expect("lock").get(&index) {
                return Some(*at);
            }
            if Instant::now() > deadline {
                return None;
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), heard).await;
        }
    }

    /// Asks an `events` crowd for its figures; the line it prints.
    async fn report(&mut self) -> String {
        if let Some(stdin) = self.child.stdin.as_mut() {
            let _ = stdin.write_all(b"report\n");
            let _ = stdin.flush();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let heard = self.heard.notified();
            if let Some(line) = self
                .lines
                .lock()
                .expect("lock")
                .iter()
                .find(|l| l.starts_with("events "))
            {
                return line.clone();
            }
            assert!(Instant::now() < deadline, "the crowd did not report");
            let _ = tokio::time::timeout(Duration::from_millis(100), heard).await;
        }
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One scenario: N agents of `mode` waiting on `instances` servers. Prints one line of figures.
pub(crate) async fn fleet(dir: &std::path::Path, mode: Mode, n: usize) {
    let postgres = std::env::var("CLARIFY_BENCH_FLEET_DB").as_deref() == Ok("postgres");
    let instances = if postgres {
        std::env::var("CLARIFY_BENCH_FLEET_INSTANCES")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1)
            .max(1)
    } else {
        1
    };
    let share = n.div_ceil(instances);
    // The server holds one socket per agent beside its own files.
    if share as u64 + 200 > open_files_limit() {
        println!(
            "fleet {} {n}: skipped: a process may open {} files here and each instance needs {}; raise it with `ulimit -n`",
            mode.name(),
            open_files_limit(),
            share + 200
        );
        return;
    }
    let database = if postgres {
        Database::postgres()
    } else {
        Database::sqlite(dir, n)
    };
    let backend = if postgres {
        format!("postgres, {instances} instance(s)")
    } else {
        "sqlite".to_owned()
    };
    let admin = key_of(BIN, &database.url, "admin", "default");
    let max = (share + 100).to_string();
    // Another build of the server (one for a heap profiler, say) in place of this one's.
    let server_bin = std::env::var("CLARIFY_BENCH_SERVER_BIN").unwrap_or_else(|_| BIN.to_owned());
    let mut servers = Vec::new();
    for _ in 0..instances {
        servers
            .push(Server::start_with(&server_bin, &database.url, &["--max-waiters", &max]).await);
    }
    let client = clarify_client::http::client().expect("an HTTP client");

    // Before the crowd: what 32 agents do alone, and one waiter's wake latency.
    let alone = agents(&servers[0], &admin, 32, AGENTS_FOR, (PLAIN_ASK, ANSWER_YES)).await;
    let alone_rate = alone.count as f64 / alone.elapsed.as_secs_f64();
    let single = crate::wake_samples(&servers[0].url, &servers[0].url, &admin, 100)
        .await
        .0;

    // The requests the crowd waits on (in `wait` mode).
    let mut ids = if mode == Mode::Wait {
        let urls: Vec<&str> = servers.iter().map(|s| s.url.as_str()).collect();
        ask_many(&client, &urls, &admin, n).await
    } else {
        Vec::new()
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before: Vec<u64> = servers.iter().map(Server::rss_kib).collect();
    let file_before: Vec<u64> = servers.iter().map(Server::rss_file_kib).collect();
    let kernel_before = tcp_kernel_kib();

    let started = Instant::now();
    let mut crowds = Vec::new();
    for (k, server) in servers.iter().enumerate() {
        let first = k * share;
        let last = ((k + 1) * share).min(n);
        let mine = if ids.is_empty() {
            &[][..]
        } else {
            &ids[first..last]
        };
        crowds.push(Crowd::start(
            dir,
            mode,
            &server.url,
            &admin,
            mine,
            last - first,
            first,
        ));
    }
    // Accepted: every agent is waiting (a long-poll, an event stream and an MCP call each hold
    // a waiter), or, for idle connections, the server's RSS stopped growing.
    let deadline = Instant::now() + Duration::from_secs(300);
    if matches!(mode, Mode::Idle | Mode::Used) {
        let lines = |c: &Crowd| {
            c.lines
                .lock()
                .expect("lock")
                .iter()
                .any(|l| l == "connected")
        };
        while !crowds.iter().all(lines) {
            assert!(Instant::now() < deadline, "the crowd did not connect");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    } else {
        // An MCP call is counted once its request exists (the gauge of pending requests).
        let gauge = if mode == Mode::Mcp {
            "clarify_requests_pending"
        } else {
            "clarify_waiters"
        };
        for (k, server) in servers.iter().enumerate() {
            let want = if mode == Mode::Mcp {
                n as u64
            } else {
                (((k + 1) * share).min(n) - k * share) as u64
            };
            while metric(&client, &server.url, gauge).await < want {
                assert!(
                    Instant::now() < deadline,
                    "the crowd did not connect: {} of {want} waiting",
                    metric(&client, &server.url, gauge).await
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    let accepted = started.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_with: Vec<u64> = servers.iter().map(Server::rss_kib).collect();
    let file_with: Vec<u64> = servers.iter().map(Server::rss_file_kib).collect();
    let kernel_with = tcp_kernel_kib();
    let cpu: Vec<f64> = servers.iter().map(Server::cpu_seconds).collect();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle_cpu: f64 = servers
        .iter()
        .zip(&cpu)
        .map(|(s, before)| (s.cpu_seconds() - before) / 5.0)
        .fold(0.0, f64::max);
    // What the instances grew by together, per agent.
    let per = |with: &[u64], before: &[u64]| {
        let grown: u64 = with
            .iter()
            .zip(before)
            .map(|(w, b)| w.saturating_sub(*b))
            .sum();
        grown as f64 / n as f64
    };
    let per_agent = per(&rss_with, &rss_before);
    // Of which file-backed pages (the SQLite file's pages read through its memory map).
    let file_per_agent = per(&file_with, &file_before);
    let kernel_per = kernel_with.saturating_sub(kernel_before) as f64 / n as f64;
    let rss = |v: &[u64]| {
        v.iter()
            .map(|k| format!("{:.1}", *k as f64 / 1024.0))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    let head = format!(
        "fleet {} {n} ({backend}): accepted in {:.2} s ({:.0} connections/s); server RSS {} MiB before, {} MiB with the crowd: {per_agent:.1} KiB per agent, {file_per_agent:.1} KiB of it file-backed (kernel TCP memory, both ends, {kernel_per:.1} KiB per agent more); server CPU while the crowd waits idle {:.2} % of a core",
        mode.name(),
        accepted.as_secs_f64(),
        n as f64 / accepted.as_secs_f64(),
        rss(&rss_before),
        rss(&rss_with),
        idle_cpu * 100.0,
    );
    match mode {
        Mode::Idle | Mode::Used => println!("{head}"),
        Mode::Events => {
            let figures = events_stream(&servers, &admin, &mut crowds, n).await;
            println!("{head}; {figures}");
        }
        Mode::Wait | Mode::Mcp => {
            // 32 agents beside the crowd, then 100 of the crowd answered one by one, each
            // through the next instance (on PostgreSQL the wake crosses instances).
            let beside = agents(&servers[0], &admin, 32, AGENTS_FOR, (PLAIN_ASK, ANSWER_YES)).await;
            let beside_rate = beside.count as f64 / beside.elapsed.as_secs_f64();
            if mode == Mode::Mcp {
                ids = pending_ids(&client, &servers[0].url, &admin, n).await;
            }
            let sample = n.min(100);
            let mut wakes = Vec::with_capacity(sample);
            for i in 0..sample {
                let index = i * (n / sample);
                let k = index / share;
                let via = &servers[(k + 1) % instances].url;
                let sent = unix_micros();
                post(
                    &client,
                    format!("{via}/v1/requests/{}/answer", ids[index]),
                    &admin,
                    if mode == Mode::Mcp {
                        json!({"text": "yes"})
                    } else {
                        json!({"option": "yes"})
                    },
                )
                .await;
                let woke = crowds[k].woke(index).await.expect("the waiter woke");
                wakes.push(Duration::from_micros(woke.saturating_sub(sent)));
            }
            wakes.sort();
            println!(
                "{head}; answer -> wake over {sample}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (one waiter alone: p99 {:.2} ms); 32 other agents: {beside_rate:.0} round trips/s beside the crowd, {alone_rate:.0} alone ({:.2}x), round trip p99 {:.2} ms beside, {:.2} ms alone",
                ms(percentile(&wakes, 0.5)),
                ms(percentile(&wakes, 0.99)),
                ms(wakes.last().copied().unwrap_or_default()),
                ms(percentile(&single, 0.99)),
                beside_rate / alone_rate,
                ms(percentile(&beside.latencies, 0.99)),
                ms(percentile(&alone.latencies, 0.99)),
            );
        }
    }
    drop(crowds);
    drop(servers);
    drop(database);
}

/// Creates `n` requests that never expire, 64 at a time, request `i` on server
/// `urls[i % urls.len()]`; returns their ids in order.
async fn ask_many(client: &reqwest::Client, urls: &[&str], admin: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    let all: Vec<usize> = (0..n).collect();
    for chunk in all.chunks(64) {
        let made = futures_util::future::join_all(chunk.iter().map(|i| {
            post(
                client,
                format!("{}/v1/requests", urls[i % urls.len()]),
                admin,
                json!({"question": format!("Agent {i}: deploy?"), "choices": ["yes", "no"],
                       "timeout_seconds": 0}),
            )
        }))
        .await;
        ids.extend(
            made.into_iter()
                .map(|r| r["id"].as_str().expect("id").to_owned()),
        );
    }
    ids
}

/// What one waiting long-poll adds to the RSS of a `clarify serve` of `bin` on SQLite, in KiB,
/// with `n` of them waiting at once (held by one crowd process): the server's RSS once every
/// request exists, against once every waiter waits.
pub(crate) async fn waiting_kib(dir: &std::path::Path, bin: &str, n: usize) -> f64 {
    static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sub = dir.join(format!("waiting-{run}"));
    std::fs::create_dir_all(&sub).expect("a directory");
    let database = Database::sqlite(&sub, n);
    let admin = key_of(bin, &database.url, "admin", "default");
    let max = (n + 100).to_string();
    let server = Server::start_with(bin, &database.url, &["--max-waiters", &max]).await;
    let client = clarify_client::http::client().expect("an HTTP client");
    let ids = ask_many(&client, &[server.url.as_str()], &admin, n).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = server.rss_kib();
    let crowd = Crowd::start(&sub, Mode::Wait, &server.url, &admin, &ids, n, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    while metric(&client, &server.url, "clarify_waiters").await < n as u64 {
        assert!(Instant::now() < deadline, "the crowd did not connect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let with = server.rss_kib();
    drop(crowd);
    drop(server);
    let _ = std::fs::remove_dir_all(&sub);
    with.saturating_sub(before) as f64 / n as f64
}

/// The ids of the pending requests asked as `fleet INDEX` (by the MCP crowd), by index.
async fn pending_ids(client: &reqwest::Client, url: &str, admin: &str, n: usize) -> Vec<String> {
    let mut ids = vec![String::new(); n];
    let mut cursor: Option<String> = None;
    loop {
        let mut page = format!("{url}/v1/requests?status=pending&limit=500");
        if let Some(c) = &cursor {
            page.push_str(&format!("&cursor={c}"));
        }
        let body: Value = client
            .get(page)
            .bearer_auth(admin)
            .send()
            .await
            .expect("listed")
            .json()
            .await
            .expect("a page");
        for record in body["requests"].as_array().into_iter().flatten() {
            let index = record["questions"][0]["text"]
                .as_str()
                .and_then(|q| q.strip_prefix("fleet "))
                .and_then(|i| i.parse::<usize>().ok());
            if let Some(index) = index.filter(|i| *i < n) {
                ids[index] = record["id"].as_str().unwrap_or_default().to_owned();
            }
        }
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    ids
}

/// In `events` mode: requests created at the configured rate for 10 s while the crowd listens;
/// the delivery figures.
async fn events_stream(servers: &[Server], admin: &str, crowds: &mut [Crowd], n: usize) -> String {
    let rate: u64 = std::env::var("CLARIFY_BENCH_FLEET_RATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let total = rate * 10;
    let client = clarify_client::http::client().expect("an HTTP client");
    let url = servers[0].url.clone();
    let started = Instant::now();
    let cpu = servers[0].cpu_seconds();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..total {
        let due = started + Duration::from_micros(i * 1_000_000 / rate);
        tokio::time::sleep_until(due.into()).await;
        // A bounded number in flight: a create that cannot keep up delays the next.
        while tasks.len() >= 64 {
            let _ = tasks.join_next().await;
        }
        let (client, url, admin) = (client.clone(), url.clone(), admin.to_owned());
        tasks.spawn(async move {
            let body = format!(
                r#"{{"question":"sent {}","timeout_seconds":0}}"#,
                unix_micros()
            );
            let _ = client
                .post(format!("{url}/v1/requests"))
                .bearer_auth(admin)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
        });
    }
    while tasks.join_next().await.is_some() {}
    let produced_in = started.elapsed();
    // Let the last events arrive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let server_cpu = (servers[0].cpu_seconds() - cpu) / started.elapsed().as_secs_f64();
    let mut reports = Vec::new();
    for crowd in crowds.iter_mut() {
        reports.push(crowd.report().await);
    }
    // `events SUBSCRIBERS FEWEST MOST P50_US P99_US MAX_US`, one per crowd.
    let mut fewest = u64::MAX;
    let (mut p50, mut p99, mut max) = (0u64, 0u64, 0u64);
    for r in &reports {
        let f: Vec<u64> = r
            .split_whitespace()
            .skip(1)
            .filter_map(|w| w.parse().ok())
            .collect();
        if f.len() == 6 {
            fewest = fewest.min(f[1]);
            p50 = p50.max(f[3]);
            p99 = p99.max(f[4]);
            max = max.max(f[5]);
        }
    }
    format!(
        "{total} events created at {:.0}/s; each of {n} subscribers received at least {fewest} of them; delivery from sending the create: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; server CPU meanwhile {:.0} % of a core",
        total as f64 / produced_in.as_secs_f64(),
        p50 as f64 / 1000.0,
        p99 as f64 / 1000.0,
        max as f64 / 1000.0,
        server_cpu * 100.0,
    )
}
