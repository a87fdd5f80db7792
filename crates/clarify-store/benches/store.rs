//! Store benchmarks that print figures: `cargo bench -p clarify-store --bench store [-- NAME...]`.
//!
//! - `memory`: ask, answer and wake round trips in-process on the memory store (one agent);
//! - `sqlite-1`, `sqlite-64`: the same, durable on SQLite, with 1 and 64 concurrent agents
//!   (`sqlite-1` also inside a single-threaded runtime, where no round trip hops between
//!   worker threads);
//! - `latency`: answer-to-wake latency percentiles, in-process on SQLite;
//! - `waiters`: memory per pending waiter (memory store, 100,000 waiters);
//! - `million`: with 1,000,000 pending requests in SQLite, the time to open the store and to read
//!   the first page of the pending list (builds the file once under the target dir);
//! - `pg`: round trips on PostgreSQL with 1 and 64 agents (beside `bare-pg` when both run)
//! - `pg-2proc`: answer-to-wake latency across two processes sharing PostgreSQL
//!   (`CLARIFY_TEST_POSTGRES`, default `postgres://postgres@127.0.0.1:5432/test`): this process
//!   waits, a child process (this binary again) answers;
//! - `bare-sqlite`: the raw limit of the same writes on SQLite: a round trip's two writes (a
//!   request row and an event row; the request updated to answered and an event row) on one
//!   connection with the store writer's pragmas, one commit per write and 64 writes per commit
//!   (as group commit with 64 agents); printed next to `sqlite-1` and `sqlite-64` as ratios;
//! - `bare-pg`: the raw limit on PostgreSQL: the same two commits per round trip with a plain
//!   pool, no advisory lock and no NOTIFY, 1 and 64 clients (tables of its own, dropped after).
//!
//! Sweeps, run only when named:
//!
//! - `agents`: round trips with 1, 64 and 1,024 concurrent agents on memory, SQLite and
//!   PostgreSQL: throughput, round-trip latency percentiles and the memory the run added;
//! - `durability`: SQLite round trips with 1 and 64 agents, `synchronous=NORMAL` against `FULL`
//!   (`--durability full`), alternating;
//! - `pending`: with 1,000 and 100,000 pending requests (`pending-1m`: 1,000,000), each measured in
//!   a fresh process: open time and RSS, first page and tenth page of the pending list, the
//!   pending count (the `/metrics` gauge), get, create and answer latency, file size. SQLite files
//!   are built once under the target dir; the memory store is filled in the measuring process.
//! - `purge` (`purge-1m`): 100,000 (1,000,000) requests resolved ten days ago in SQLite, purged
//!   by the reaper with `retain_resolved` of a day while 32 agents do round trips: how long the
//!   purge took, and the agents' round trips per second and latency (p50, p99, max) before and
//!   during it. The file is built once under the target dir and copied for each run.
//!
//! `CLARIFY_BENCH_ROUNDS=N` does exactly N SQLite round trips with one agent and exits, for
//! instruction counts under callgrind.
//!
//! A round trip is: an agent creates a request and waits; a responder task answers it; the
//! agent's wait returns the outcome. Figures vary with the machine; compare ratios within a run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clarify_core::{Limits, NewRequest, parse_request};
use clarify_store::{Actor, ListQuery, Store, StoreOptions};
use serde_json::json;
use tokio::sync::mpsc;

const TENANT: &str = "bench";

fn request() -> NewRequest {
    let raw = json!({"question": "Deploy to production?", "choices": ["yes", "no"]});
    parse_request(&raw, &Limits::default()).unwrap_or_else(|e| panic!("bench request: {e}"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        // Cargo's target dir, also when a config file (not the environment) moved it.
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(".."))
        .join("clarify-bench");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir.join(name)
}

fn fresh_sqlite(name: &str) -> String {
    let path = scratch(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    format!("sqlite://{}", path.display())
}

async fn open(url: &str) -> Store {
    let options = StoreOptions {
        reaper_interval: None,
        ..StoreOptions::default()
    };
    Store::open(url, options)
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"))
}

/// What a round-trip run measured.
struct RoundTrips {
    per_second: f64,
    /// Each round trip's duration, sorted.
    latencies: Vec<Duration>,
}

/// `agents` agents each doing round trips for `duration`.
async fn round_trips(store: &Store, agents: usize, duration: Duration) -> RoundTrips {
    let (ids_tx, mut ids_rx) = mpsc::unbounded_channel::<String>();
    let responder = {
        let store = store.clone();
        tokio::spawn(async move {
            let actor = Actor::new("responder", "bench");
            let answer = json!({"option": "yes"});
            while let Some(id) = ids_rx.recv().await {
                let store = store.clone();
                let actor = actor.clone();
                let answer = answer.clone();
                tokio::spawn(async move {
                    if let Err(e) = store.answer(TENANT, &id, &answer, &actor).await {
                        panic!("answer: {e}");
                    }
                });
            }
        })
    };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..agents {
        let store = store.clone();
        let ids_tx = ids_tx.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let spec = request();
            while started.elapsed() < duration {
                let began = Instant::now();
                let created = store
                    .create(TENANT, spec.clone())
                    .await
                    .unwrap_or_else(|e| panic!("create: {e}"));
                let _ = ids_tx.send(created.record.id.clone());
                let record = store
                    .wait(TENANT, &created.record.id, Duration::from_secs(30))
                    .await
                    .unwrap_or_else(|e| panic!("wait: {e}"));
                assert!(record.status.is_resolved(), "wait timed out");
                latencies.push(began.elapsed());
            }
            latencies
        }));
    }
    drop(ids_tx);
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap_or_default());
    }
    let elapsed = started.elapsed();
    responder.abort();
    latencies.sort();
    RoundTrips {
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        latencies,
    }
}

/// Exactly `n` round trips with one agent on a fresh SQLite store, for instruction counts
/// (`CLARIFY_BENCH_ROUNDS=N`, run under callgrind twice with different `N`: the difference
/// divided by the difference of `N` is the cost of one round trip without start-up).
async fn counted_round_trips(n: usize) {
    let store = open(&fresh_sqlite("counted.db")).await;
    let actor = Actor::new("responder", "bench");
    let answer = json!({"option": "yes"});
    let spec = request();
    for _ in 0..n {
        let created = store
            .create(TENANT, spec.clone())
            .await
            .unwrap_or_else(|e| panic!("create: {e}"));
        let id = created.record.id;
        let responder = {
            let (store, actor, answer, id) =
                (store.clone(), actor.clone(), answer.clone(), id.clone());
            tokio::spawn(async move { store.answer(TENANT, &id, &answer, &actor).await })
        };
        let record = store
            .wait(TENANT, &id, Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("wait: {e}"));
        assert!(record.status.is_resolved(), "wait timed out");
        if let Err(e) = responder.await.unwrap_or_else(|e| panic!("{e}")) {
            panic!("answer: {e}");
        }
    }
    println!("counted: {n} round trips, 1 agent, SQLite");
}

/// The size of a bench store's WAL file.
fn wal_mib(name: &str) -> f64 {
    let wal = format!("{}-wal", scratch(name).display());
    mib(std::fs::metadata(wal).map_or(0, |m| m.len()))
}

async fn latency(store: &Store, samples: usize) -> Vec<Duration> {
    let actor = Actor::new("responder", "bench");
    let mut out = Vec::with_capacity(samples);
    for _ in 0..samples {
        let created = store
            .create(TENANT, request())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let id = created.record.id.clone();
        let waiter = {
            let store = store.clone();
            let id = id.clone();
            tokio::spawn(async move {
                let r = store.wait(TENANT, &id, Duration::from_secs(10)).await;
                (Instant::now(), r.map(|r| r.status))
            })
        };
        // Let the waiter register and go to sleep before answering.
        tokio::time::sleep(Duration::from_micros(300)).await;
        let answered_at = Instant::now();
        store
            .answer(TENANT, &id, &json!({"option": "no"}), &actor)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (woke_at, status) = waiter.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(status.is_ok_and(|s| s.is_resolved()));
        out.push(woke_at.saturating_duration_since(answered_at));
    }
    out.sort();
    out
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// A field of `/proc/self/status` in bytes, e.g. `VmRSS` or `VmHWM` (the peak).
fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

async fn waiters_memory(n: usize) {
    let store = open("memory:").await;
    let spec = request();
    let text_bytes: usize = spec.questions.iter().map(|q| q.text.len()).sum();
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(
            store
                .create(TENANT, spec.clone())
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .record
                .id,
        );
    }
    println!(
        "waiters: one wait future is {} bytes",
        std::mem::size_of_val(&store.wait(TENANT, &ids[0], Duration::from_secs(1)))
    );
    let before = rss_bytes();
    let mut handles = Vec::with_capacity(n);
    for id in &ids {
        let store = store.clone();
        let id = id.clone();
        handles.push(tokio::spawn(async move {
            let _ = store.wait(TENANT, &id, Duration::from_secs(3600)).await;
        }));
    }
    while store.waiting_requests() < n {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let after = rss_bytes();
    let per = (after.saturating_sub(before)) as f64 / n as f64;
    println!(
        "waiters: {n} pending waiters add {:.0} bytes each ({:.2} KiB; question text {text_bytes} bytes, target <= 2 KiB beyond it)",
        per,
        per / 1024.0
    );
    for h in handles {
        h.abort();
    }
}

async fn million() {
    const N: usize = 1_000_000;
    let path = scratch("million.db");
    let url = format!("sqlite://{}", path.display());
    let marker = scratch("million.done");
    if !marker.exists() {
        let url = fresh_sqlite("million.db");
        let store = open(&url).await;
        let started = Instant::now();
        let mut spec = request();
        spec.timeout_seconds = 0;
        let per_task = N / 64;
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let store = store.clone();
            let spec = spec.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..per_task {
                    store
                        .create(TENANT, spec.clone())
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        println!(
            "million: built {N} pending requests in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let _ = std::fs::write(&marker, b"");
    }
    let started = Instant::now();
    let store = open(&url).await;
    let opened = started.elapsed();
    let query = ListQuery {
        status: Some(clarify_core::Status::Pending),
        ..ListQuery::default()
    };
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let page = store
            .list(TENANT, &query)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        times.push(t.elapsed());
        assert_eq!(page.records.len(), ListQuery::DEFAULT_LIMIT);
    }
    times.sort();
    println!(
        "million: open {:.1} ms (target <= 5 s); first page of pending (50 records): p50 {:.2} ms, max {:.2} ms (target <= 5 ms)",
        opened.as_secs_f64() * 1e3,
        pct(&times, 0.5).as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `p50 / p99` of a sorted series, in milliseconds.
fn spread(sorted: &[Duration]) -> String {
    format!(
        "p50 {:.3} / p99 {:.3} ms",
        ms(pct(sorted, 0.5)),
        ms(pct(sorted, 0.99))
    )
}

/// Round trips with 1, 64 and 1,024 concurrent agents on each backend; on PostgreSQL with 1
/// and 64, as a share of the raw limits `bare-pg` measured in this run (`bare_pg`), if it ran.
async fn agents_sweep(bare_pg: [Option<f64>; 2]) {
    let mut backends = vec![
        ("memory", "memory:".to_owned()),
        ("sqlite", fresh_sqlite("agents.db")),
    ];
    match Store::open(&pg_url(), StoreOptions::default()).await {
        Ok(_) => backends.push(("postgres", pg_url())),
        Err(e) => println!("agents: postgres skipped ({e})"),
    }
    for (name, url) in backends {
        let store = open(&url).await;
        for agents in [1, 64, 1024] {
            let run = round_trips(&store, agents, Duration::from_secs(4)).await;
            println!(
                "agents: {name:8} {agents:5} agents: {:7.0} round trips/s, round trip {}, max {:.1} ms; process RSS {:.0} MiB (peak {:.0})",
                run.per_second,
                spread(&run.latencies),
                ms(run.latencies.last().copied().unwrap_or_default()),
                mib(status_bytes("VmRSS")),
                mib(status_bytes("VmHWM")),
            );
            let bare = match agents {
                1 => bare_pg[0],
                64 => bare_pg[1],
                _ => None,
            };
            if let (Some(bare), "postgres") = (bare, name) {
                println!(
                    "agents: postgres {agents:5} agents / bare-pg with as many clients: {:.0} %",
                    run.per_second / bare * 1e2
                );
            }
        }
    }
}

/// Round trips on SQLite with `synchronous=NORMAL` (the default) and `FULL` (`--durability
/// full`), with 1 and 64 agents, alternating twice so the machine's drift shows.
async fn durability_sweep() {
    use clarify_store::Durability;
    for round in 1..=2 {
        for durability in [Durability::Normal, Durability::Full] {
            // A file per run: the previous store's threads may still hold theirs.
            let url = fresh_sqlite(&format!("durability-{round}-{durability:?}.db"));
            let options = StoreOptions {
                reaper_interval: None,
                durability,
                ..StoreOptions::default()
            };
            let store = Store::open(&url, options)
                .await
                .unwrap_or_else(|e| panic!("open {url}: {e}"));
            for agents in [1, 64] {
                let run = round_trips(&store, agents, Duration::from_secs(4)).await;
                println!(
                    "durability: round {round} {durability:?} {agents:3} agents: {:7.0} round trips/s, round trip {}",
                    run.per_second,
                    spread(&run.latencies),
                );
            }
        }
    }
}

/// A SQLite file holding `n` pending requests, built once and kept under the target dir.
async fn pending_file(n: usize) -> String {
    let (name, marker) = if n == 1_000_000 {
        ("million.db".to_owned(), scratch("million.done"))
    } else {
        (
            format!("pending-{n}.db"),
            scratch(&format!("pending-{n}.done")),
        )
    };
    if !marker.exists() {
        let store = open(&fresh_sqlite(&name)).await;
        let started = Instant::now();
        fill(&store, n).await;
        println!(
            "pending: built {n} pending requests in SQLite in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let _ = std::fs::write(&marker, b"");
    }
    format!("sqlite://{}", scratch(&name).display())
}

/// Creates `n` requests that never expire, from 64 concurrent tasks.
async fn fill(store: &Store, n: usize) {
    let mut spec = request();
    spec.timeout_seconds = 0;
    let tasks: Vec<_> = (0..64)
        .map(|t| {
            let (store, spec) = (store.clone(), spec.clone());
            let count = n / 64 + usize::from(t < n % 64);
            tokio::spawn(async move {
                for _ in 0..count {
                    store
                        .create(TENANT, spec.clone())
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}

/// Each size is measured in a fresh process (this binary again), so open time and RSS are its own.
fn pending_sweep(runtime: &tokio::runtime::Runtime, sizes: &[usize]) {
    for &n in sizes {
        let sqlite = runtime.block_on(pending_file(n));
        for url in [sqlite.as_str(), "memory:"] {
            let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current exe: {e}"));
            let status = std::process::Command::new(exe)
                .env("CLARIFY_BENCH_PENDING", format!("{n} {url}"))
                .status()
                .unwrap_or_else(|e| panic!("spawn: {e}"));
            assert!(status.success(), "pending measurement for {url} failed");
        }
    }
}

/// Times `samples` calls of `op`: the durations sorted, and what the calls returned in order.
async fn timed<F, Fut, T>(samples: usize, mut op: F) -> (Vec<Duration>, Vec<T>)
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut durations = Vec::with_capacity(samples);
    let mut outputs = Vec::with_capacity(samples);
    for i in 0..samples {
        let t = Instant::now();
        outputs.push(op(i).await);
        durations.push(t.elapsed());
    }
    durations.sort();
    (durations, outputs)
}

/// The child of `pending`: opens (or fills) a store with `n` pending requests and measures it.
async fn pending_measure(n: usize, url: &str) {
    let started = Instant::now();
    let store = open(url).await;
    let opened = started.elapsed();
    let backend = if url == "memory:" { "memory" } else { "sqlite" };
    let open_note = if backend == "memory" {
        let before = status_bytes("VmRSS");
        let t = Instant::now();
        fill(&store, n).await;
        let per = status_bytes("VmRSS").saturating_sub(before) as f64 / n as f64;
        format!(
            "filled in {:.1} s, {per:.0} bytes of RSS per pending request",
            t.elapsed().as_secs_f64()
        )
    } else {
        format!("open {:.0} ms", ms(opened))
    };
    let rss_open = status_bytes("VmRSS");
    let pending = ListQuery {
        status: Some(clarify_core::Status::Pending),
        ..ListQuery::default()
    };
    let (first_page, _) = timed(50, |_| async {
        let page = store.list(TENANT, &pending).await;
        assert!(page.is_ok_and(|p| p.records.len() == ListQuery::DEFAULT_LIMIT));
    })
    .await;
    let (tenth_page, _) = timed(20, |_| async {
        let mut query = pending.clone();
        for _ in 0..10 {
            let page = store
                .list(TENANT, &query)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            query.cursor = page.next_cursor;
        }
    })
    .await;
    let (counted, _) = timed(5, |_| async {
        let count = store
            .count_pending()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(count >= n as u64);
    })
    .await;
    let (creates, ids) = timed(1_000, |_| {
        let store = store.clone();
        async move {
            store
                .create(TENANT, request())
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .record
                .id
        }
    })
    .await;
    let (gets, _) = timed(1_000, |i| {
        let (store, id) = (store.clone(), ids[i].clone());
        async move {
            let got = store.get(TENANT, &id).await;
            assert!(got.is_ok_and(|r| r.is_some()));
        }
    })
    .await;
    let actor = Actor::new("responder", "bench");
    let (answers, _) = timed(1_000, |i| {
        let (store, id, actor) = (store.clone(), ids[i].clone(), actor.clone());
        async move {
            let answered = store
                .answer(TENANT, &id, &json!({"option": "yes"}), &actor)
                .await;
            assert!(answered.is_ok());
        }
    })
    .await;
    let file = url
        .strip_prefix("sqlite://")
        .and_then(|path| std::fs::metadata(path).ok())
        .map_or(String::new(), |m| format!("; file {:.0} MiB", mib(m.len())));
    println!(
        "pending: {backend:6} {n:>9}: {open_note}; RSS {:.0} MiB after open, {:.0} MiB at end{file}\n  first page {}; 10 pages {}; count {:.1} ms\n  get {}; create {}; answer {}",
        mib(rss_open),
        mib(status_bytes("VmRSS")),
        spread(&first_page),
        spread(&tenth_page),
        ms(pct(&counted, 0.5)),
        spread(&gets),
        spread(&creates),
        spread(&answers),
    );
}

/// Wall-clock nanoseconds, comparable between the two processes of `pg-2proc`.
fn unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn pg_url() -> String {
    std::env::var("CLARIFY_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// The child of `pg-2proc`: answers each request id read from stdin, then prints the wall-clock
/// time the answer was committed.
async fn pg_responder(tenant: &str) {
    use std::io::{BufRead, Write};
    let store = open(&pg_url()).await;
    let actor = Actor::new("responder", "bench");
    let stdin = std::io::stdin();
    for line in stdin.lock().lines().map_while(Result::ok) {
        let id = line.trim();
        store
            .answer(tenant, id, &json!({"option": "yes"}), &actor)
            .await
            .unwrap_or_else(|e| panic!("answer: {e}"));
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", unix_nanos());
        let _ = out.flush();
    }
}

async fn pg_two_processes(samples: usize) {
    use std::io::{BufRead, BufReader, Write};
    let tenant = format!("bench-2proc-{}", std::process::id());
    let store = open(&pg_url()).await;
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current exe: {e}"));
    let mut child = std::process::Command::new(exe)
        .env("CLARIFY_BENCH_RESPONDER", &tenant)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn responder: {e}"));
    let mut to_child = child.stdin.take().unwrap_or_else(|| panic!("child stdin"));
    let mut from_child = BufReader::new(
        child
            .stdout
            .take()
            .unwrap_or_else(|| panic!("child stdout")),
    );
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples + 20 {
        let id = store
            .create(&tenant, request())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .record
            .id;
        let waiter = {
            let (store, tenant, id) = (store.clone(), tenant.clone(), id.clone());
            tokio::spawn(async move {
                let r = store.wait(&tenant, &id, Duration::from_secs(10)).await;
                (unix_nanos(), r.map(|r| r.status))
            })
        };
        tokio::time::sleep(Duration::from_millis(2)).await;
        writeln!(to_child, "{id}").unwrap_or_else(|e| panic!("to responder: {e}"));
        let mut line = String::new();
        from_child
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("from responder: {e}"));
        let answered: u128 = line
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("responder said {line:?}: {e}"));
        let (woke, status) = waiter.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(
            status.is_ok_and(|s| s.is_resolved()),
            "the waiter saw the answer"
        );
        if i >= 20 {
            out.push(Duration::from_nanos(
                u64::try_from(woke.saturating_sub(answered)).unwrap_or(u64::MAX),
            ));
        }
    }
    drop(to_child);
    let _ = child.wait();
    out.sort();
    println!(
        "pg-2proc: answer-to-wake across two processes on PostgreSQL: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {samples} (target p99 <= 20 ms)",
        pct(&out, 0.5).as_secs_f64() * 1e3,
        pct(&out, 0.99).as_secs_f64() * 1e3,
        out[out.len() - 1].as_secs_f64() * 1e3
    );
}

/// Requests resolved ten days ago, then purged while agents keep doing round trips.
async fn purge_sweep(n: usize) {
    let built = scratch(&format!("purge-{n}.db"));
    let marker = scratch(&format!("purge-{n}.done"));
    if !marker.exists() {
        let url = fresh_sqlite(&format!("purge-{n}.db"));
        let clock = std::sync::Arc::new(clarify_store::ManualClock::new(
            chrono::Utc::now() - chrono::TimeDelta::days(10),
        ));
        let options = StoreOptions {
            clock,
            reaper_interval: None,
            ..StoreOptions::default()
        };
        let store = Store::open(&url, options)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
        let started = Instant::now();
        let raw = json!({"question": "Old?", "choices": ["yes", "no"], "tags": ["old"]});
        let spec = parse_request(&raw, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (store, spec) = (store.clone(), spec.clone());
                tokio::spawn(async move {
                    let actor = Actor::new("bench", "bench");
                    for _ in 0..n / 64 {
                        let id = store
                            .create(TENANT, spec.clone())
                            .await
                            .unwrap_or_else(|e| panic!("{e}"))
                            .record
                            .id;
                        store
                            .cancel(TENANT, &id, &actor)
                            .await
                            .unwrap_or_else(|e| panic!("{e}"));
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        drop(store);
        println!(
            "purge: built {} resolved requests in {:.1} s",
            n / 64 * 64,
            started.elapsed().as_secs_f64()
        );
        let _ = std::fs::write(&marker, b"");
    }
    let path = scratch(&format!("purge-{n}-run.db"));
    let url = fresh_sqlite(&format!("purge-{n}-run.db"));
    // The online backup, not a file copy: the built store may still have pages in its WAL.
    clarify_store::backup(&format!("sqlite://{}", built.display()), &path)
        .await
        .unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let old = ListQuery {
        tag: Some("old".to_owned()),
        limit: Some(1),
        ..ListQuery::default()
    };
    let report = |what: &str, r: &RoundTrips| {
        println!(
            "purge: {what}: {:.0} round trips/s, 32 agents; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            r.per_second,
            pct(&r.latencies, 0.5).as_secs_f64() * 1e3,
            pct(&r.latencies, 0.99).as_secs_f64() * 1e3,
            r.latencies
                .last()
                .copied()
                .unwrap_or_default()
                .as_secs_f64()
                * 1e3
        );
    };
    {
        let store = open(&url).await;
        report(
            "before",
            &round_trips(&store, 32, Duration::from_secs(5)).await,
        );
    }
    let options = StoreOptions {
        retain_resolved: Some(chrono::TimeDelta::days(1)),
        ..StoreOptions::default()
    };
    let started = Instant::now();
    let store = Store::open(&url, options)
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"));
    let mut latencies = Vec::new();
    let mut trips = 0.0;
    loop {
        let window = round_trips(&store, 32, Duration::from_secs(2)).await;
        trips += window.per_second * 2.0;
        latencies.extend(window.latencies);
        let left = store
            .list(TENANT, &old)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if left.records.is_empty() {
            break;
        }
    }
    let took = started.elapsed();
    latencies.sort();
    println!(
        "purge: {n} resolved requests ({} MiB file) purged in {:.1} s ({:.0}/s)",
        size / (1 << 20),
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );
    report(
        "during the purge",
        &RoundTrips {
            per_second: trips / took.as_secs_f64(),
            latencies,
        },
    );
}

fn main() {
    if let Ok(tenant) = std::env::var("CLARIFY_BENCH_RESPONDER") {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        runtime.block_on(pg_responder(&tenant));
        return;
    }
    if let Ok(spec) = std::env::var("CLARIFY_BENCH_PENDING") {
        let (n, url) = spec
            .split_once(' ')
            .and_then(|(n, url)| Some((n.parse().ok()?, url.to_owned())))
            .unwrap_or_else(|| panic!("CLARIFY_BENCH_PENDING={spec:?}: expected \"N URL\""));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        runtime.block_on(pending_measure(n, &url));
        return;
    }
    if let Ok(n) = std::env::var("CLARIFY_BENCH_ROUNDS") {
        let n = n
            .parse()
            .unwrap_or_else(|_| panic!("CLARIFY_BENCH_ROUNDS={n:?}: expected a count"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        runtime.block_on(counted_round_trips(n));
        return;
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let named = |name: &str| args.iter().any(|a| a == name);
    let wanted = |name: &str| args.is_empty() || named(name);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    if wanted("memory") {
        // The in-process gateway inside a single-threaded runtime: no cross-thread wake-ups.
        let local = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        local.block_on(async {
            let store = open("memory:").await;
            let rate = round_trips(&store, 1, Duration::from_secs(3)).await.per_second;
            println!("memory: {rate:.0} round trips/s, 1 agent, current-thread runtime (target >= 500,000)");
            let rate = round_trips(&store, 64, Duration::from_secs(3)).await.per_second;
            println!("memory: {rate:.0} round trips/s, 64 agents, current-thread runtime");
        });
    }
    // One agent on SQLite inside a single-threaded runtime: the store's own work per round trip,
    // without the wake-ups between the two worker threads that the agent, the responder and
    // the waiter otherwise hop across (the bare loop runs on one thread too).
    let mut sqlite_one_thread = None;
    if wanted("sqlite-1") {
        let local = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        local.block_on(async {
            let store = open(&fresh_sqlite("rt1-local.db")).await;
            let rate = round_trips(&store, 1, Duration::from_secs(3))
                .await
                .per_second;
            println!("sqlite: {rate:.0} round trips/s, 1 agent, current-thread runtime");
            sqlite_one_thread = Some(rate);
        });
    }
    runtime.block_on(async {
        let secs = Duration::from_secs(3);
        if wanted("memory") {
            let store = open("memory:").await;
            let rate = round_trips(&store, 1, secs).await.per_second;
            println!("memory: {rate:.0} round trips/s, 1 agent, 2 worker threads");
            let rate = round_trips(&store, 64, secs).await.per_second;
            println!("memory: {rate:.0} round trips/s, 64 agents, 2 worker threads");
        }
        let mut sqlite_rates = [None, None];
        if wanted("sqlite-1") {
            let store = open(&fresh_sqlite("rt1.db")).await;
            let rate = round_trips(&store, 1, secs).await.per_second;
            println!(
                "sqlite: {rate:.0} round trips/s, 1 agent (target >= 20,000); WAL {:.1} MiB",
                wal_mib("rt1.db")
            );
            sqlite_rates[0] = Some(rate);
        }
        if wanted("sqlite-64") {
            let store = open(&fresh_sqlite("rt64.db")).await;
            let rate = round_trips(&store, 64, secs).await.per_second;
            println!(
                "sqlite: {rate:.0} round trips/s, 64 agents (target >= 60,000); WAL {:.1} MiB",
                wal_mib("rt64.db")
            );
            sqlite_rates[1] = Some(rate);
        }
        if wanted("bare-sqlite") {
            let path = scratch("bare.db");
            let limits = [(1, "one commit per write"), (64, "64 writes per commit")];
            for ((batch, how), store) in limits.into_iter().zip(sqlite_rates) {
                let rate = tokio::task::block_in_place(|| bare::sqlite(&path, batch, secs));
                let mut ratio = store.map_or(String::new(), |s| {
                    let agents = if batch == 1 { 1 } else { 64 };
                    format!("; sqlite-{agents} / bare {:.0} % (target >= 50 %)", s / rate * 1e2)
                });
                if let (1, Some(s)) = (batch, sqlite_one_thread) {
                    ratio.push_str(&format!(", {:.0} % on one thread", s / rate * 1e2));
                }
                println!("bare-sqlite: {rate:.0} round trips/s, {how}{ratio}");
            }
        }
        let mut bare_pg = [None, None];
        if wanted("bare-pg") {
            for (clients, slot) in [1, 64].into_iter().zip(&mut bare_pg) {
                *slot = bare::postgres(&pg_url(), clients, secs).await;
                if let Some(rate) = *slot {
                    println!(
                        "bare-pg: {rate:.0} round trips/s, {clients} clients (no advisory lock, no NOTIFY)"
                    );
                }
            }
        }
        if wanted("pg") {
            match Store::open(&pg_url(), StoreOptions::default()).await {
                Ok(_) => {
                    let store = open(&pg_url()).await;
                    for (agents, bare) in [1, 64].into_iter().zip(bare_pg) {
                        let run = round_trips(&store, agents, secs).await;
                        let ratio = bare.map_or(String::new(), |b| {
                            format!("; pg / bare-pg {:.0} %", run.per_second / b * 1e2)
                        });
                        println!(
                            "pg: {:.0} round trips/s, {agents} agents, round trip {}{ratio}",
                            run.per_second,
                            spread(&run.latencies),
                        );
                    }
                }
                Err(e) => println!("pg: skipped ({e})"),
            }
        }
        if wanted("latency") {
            let store = open(&fresh_sqlite("latency.db")).await;
            let l = latency(&store, 2_000).await;
            println!(
                "latency: answer-to-wake in-process on SQLite: p50 {:.0} us, p99 {:.0} us, max {:.0} us (target p99 <= 1 ms)",
                pct(&l, 0.5).as_secs_f64() * 1e6,
                pct(&l, 0.99).as_secs_f64() * 1e6,
                l[l.len() - 1].as_secs_f64() * 1e6
            );
        }
        if wanted("waiters") {
            waiters_memory(100_000).await;
        }
        if wanted("million") {
            million().await;
        }
        if wanted("pg-2proc") {
            pg_two_processes(500).await;
        }
        if named("agents") {
            agents_sweep(bare_pg).await;
        }
        if named("durability") {
            durability_sweep().await;
        }
    });
    if named("pending") {
        pending_sweep(&runtime, &[1_000, 100_000]);
    }
    if named("pending-1m") {
        pending_sweep(&runtime, &[1_000_000]);
    }
    if named("purge") {
        runtime.block_on(purge_sweep(100_000));
    }
    if named("purge-1m") {
        runtime.block_on(purge_sweep(1_000_000));
    }
}

/// Raw limits: the same writes as a round trip, with nothing of the store around them.
mod bare {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use rusqlite::{Connection, params};

    /// The canonical JSON of the bench request, as the store keeps it.
    fn spec() -> String {
        serde_json::to_string(&super::request()).unwrap_or_else(|e| panic!("spec: {e}"))
    }

    const ANSWERS: &str = r#"{"q1":{"option":"yes"}}"#;

    fn now_ms() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    /// SQLite round trips/s: a create (request row and event row) and an answer (the request
    /// updated to answered, an event row) per round trip, on one connection set up with the
    /// store writer's pragmas, `batch` writes per commit. No reads, no checkpoints.
    pub(super) fn sqlite(path: &std::path::Path, batch: usize, duration: Duration) -> f64 {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let conn = Connection::open(path).unwrap_or_else(|e| panic!("open: {e}"));
        let setup = || -> rusqlite::Result<()> {
            // As `configure` and `open_writer` in the store's sqlite/mod.rs.
            conn.busy_timeout(Duration::from_secs(10))?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.pragma_update(None, "foreign_keys", "OFF")?;
            conn.pragma_update(None, "wal_autocheckpoint", 0)?;
            conn.pragma_update(None, "journal_size_limit", 256i64 << 20)?;
            conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
            let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
            conn.execute_batch(
                "CREATE TABLE requests (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, \
                 status TEXT NOT NULL, spec TEXT NOT NULL, created_at INTEGER NOT NULL, \
                 resolved_at INTEGER, answers TEXT);
                 CREATE TABLE events (seq INTEGER PRIMARY KEY, request_id TEXT NOT NULL, \
                 kind TEXT NOT NULL, at INTEGER NOT NULL);",
            )
        };
        setup().unwrap_or_else(|e| panic!("bare sqlite setup: {e}"));
        let spec = spec();
        let mut next = 0u64;
        let mut trips = 0u64;
        let started = Instant::now();
        let mut run = || -> rusqlite::Result<u64> {
            while started.elapsed() < duration {
                // `batch` writes per commit: half of them creates, then as many answers.
                let ids: Vec<String> = (0..batch.div_ceil(2).max(1))
                    .map(|_| {
                        next += 1;
                        format!("{next:032x}")
                    })
                    .collect();
                for answering in [false, true] {
                    let per_commit = if batch == 1 { 1 } else { ids.len() };
                    for chunk in ids.chunks(per_commit) {
                        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
                        for id in chunk {
                            let at = now_ms();
                            if answering {
                                conn.prepare_cached(
                                    "UPDATE requests SET status = 'answered', resolved_at = ?2, \
                                     answers = ?3 WHERE id = ?1 AND status = 'pending'",
                                )?
                                .execute(params![id, at, ANSWERS])?;
                            } else {
                                conn.prepare_cached(
                                    "INSERT INTO requests (id, status, spec, created_at) \
                                     VALUES (?1, 'pending', ?2, ?3)",
                                )?
                                .execute(params![id, spec, at])?;
                            }
                            conn.prepare_cached(
                                "INSERT INTO events (request_id, kind, at) VALUES (?1, ?2, ?3)",
                            )?
                            .execute(params![
                                id,
                                if answering { "answered" } else { "created" },
                                at
                            ])?;
                        }
                        conn.prepare_cached("COMMIT")?.execute([])?;
                    }
                }
                trips += ids.len() as u64;
            }
            Ok(trips)
        };
        let trips = run().unwrap_or_else(|e| panic!("bare sqlite: {e}"));
        trips as f64 / started.elapsed().as_secs_f64()
    }

    /// PostgreSQL round trips/s with `clients` concurrent clients on a plain pool: per round
    /// trip one commit inserting a request row and an event row, one updating it to answered
    /// and inserting an event row. No advisory lock, no NOTIFY. The tables are this process's
    /// own, dropped at the end.
    pub(super) async fn postgres(url: &str, clients: usize, duration: Duration) -> Option<f64> {
        use sqlx::postgres::PgPoolOptions;
        let pool = match PgPoolOptions::new()
            .max_connections(clients as u32)
            .connect(url)
            .await
        {
            Ok(pool) => pool,
            Err(e) => {
                println!("bare-pg: skipped ({e})");
                return None;
            }
        };
        let pid = std::process::id();
        let (requests, events) = (
            format!("bench_bare_requests_{pid}"),
            format!("bench_bare_events_{pid}"),
        );
        for sql in [
            format!("DROP TABLE IF EXISTS {requests}, {events}"),
            format!(
                "CREATE TABLE {requests} (id TEXT PRIMARY KEY, status TEXT NOT NULL, \
                 spec TEXT NOT NULL, created_at BIGINT NOT NULL, resolved_at BIGINT, answers TEXT)"
            ),
            format!(
                "CREATE TABLE {events} (seq BIGSERIAL PRIMARY KEY, request_id TEXT NOT NULL, \
                 kind TEXT NOT NULL, at BIGINT NOT NULL)"
            ),
        ] {
            sqlx::query(&sql)
                .execute(&pool)
                .await
                .unwrap_or_else(|e| panic!("bare-pg: {sql}: {e}"));
        }
        let spec = Arc::new(spec());
        let trips = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let sql = Arc::new([
            format!(
                "INSERT INTO {requests} (id, status, spec, created_at) VALUES ($1, 'pending', $2, $3)"
            ),
            format!("INSERT INTO {events} (request_id, kind, at) VALUES ($1, $2, $3)"),
            format!(
                "UPDATE {requests} SET status = 'answered', resolved_at = $2, answers = $3 \
                 WHERE id = $1 AND status = 'pending'"
            ),
        ]);
        let tasks: Vec<_> = (0..clients)
            .map(|client| {
                let (pool, spec, trips, sql) =
                    (pool.clone(), spec.clone(), trips.clone(), sql.clone());
                tokio::spawn(async move {
                    let mut n = 0u64;
                    while started.elapsed() < duration {
                        n += 1;
                        let id = format!("{pid:08x}{client:08x}{n:016x}");
                        pg_round_trip(&pool, &sql, &spec, &id)
                            .await
                            .unwrap_or_else(|e| panic!("bare-pg: {e}"));
                        trips.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        let rate = trips.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
        let _ = sqlx::query(&format!("DROP TABLE IF EXISTS {requests}, {events}"))
            .execute(&pool)
            .await;
        pool.close().await;
        Some(rate)
    }

    /// One round trip's two commits.
    async fn pg_round_trip(
        pool: &sqlx::PgPool,
        sql: &[String; 3],
        spec: &str,
        id: &str,
    ) -> Result<(), sqlx::Error> {
        let mut tx = pool.begin().await?;
        let at = now_ms();
        sqlx::query(&sql[0])
            .bind(id)
            .bind(spec)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        sqlx::query(&sql[1])
            .bind(id)
            .bind("created")
            .bind(at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        let mut tx = pool.begin().await?;
        let at = now_ms();
        sqlx::query(&sql[2])
            .bind(id)
            .bind(at)
            .bind(ANSWERS)
            .execute(&mut *tx)
            .await?;
        sqlx::query(&sql[1])
            .bind(id)
            .bind("answered")
            .bind(at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }
}
