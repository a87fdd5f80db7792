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

mod bare;
mod bare_pg;
mod measure;
mod pending;
mod purge;
mod round_trips;
mod two_processes;

use std::path::PathBuf;
use std::time::Duration;

use clarify_core::{Limits, NewRequest, parse_request};
use clarify_store::{Store, StoreOptions};
use serde_json::json;

use measure::{pct, spread, wal_mib};
use pending::{million, pending_measure, pending_sweep};
use purge::purge_sweep;
use round_trips::{
    agents_sweep, counted_round_trips, durability_sweep, latency, round_trips, waiters_memory,
};
use two_processes::{pg_responder, pg_two_processes};

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

fn pg_url() -> String {
    std::env::var("CLARIFY_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
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
                *slot = bare_pg::postgres(&pg_url(), &bare::spec(), clients, secs).await;
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
