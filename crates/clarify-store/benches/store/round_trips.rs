//! Round trips: an agent creates a request and waits, a responder task answers it, the agent's
//! wait returns; their rate and latency with 1 to 1,024 agents on each backend and durability,
//! the answer-to-wake latency, and the memory a pending waiter holds.

use std::time::{Duration, Instant};

use clarify_store::{Actor, Store, StoreOptions};
use serde_json::json;
use tokio::sync::mpsc;

use crate::measure::{mib, ms, rss_bytes, spread, status_bytes};
use crate::{TENANT, fresh_sqlite, open, pg_url, request};

/// What a round-trip run measured.
pub(crate) struct RoundTrips {
    pub(crate) per_second: f64,
    /// Each round trip's duration, sorted.
    pub(crate) latencies: Vec<Duration>,
}

/// `agents` agents each doing round trips for `duration`.
pub(crate) async fn round_trips(store: &Store, agents: usize, duration: Duration) -> RoundTrips {
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
pub(crate) async fn counted_round_trips(n: usize) {
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

pub(crate) async fn latency(store: &Store, samples: usize) -> Vec<Duration> {
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

pub(crate) async fn waiters_memory(n: usize) {
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

/// Round trips with 1, 64 and 1,024 concurrent agents on each backend; on PostgreSQL with 1
/// and 64, as a share of the raw limits `bare-pg` measured in this run (`bare_pg`), if it ran.
pub(crate) async fn agents_sweep(bare_pg: [Option<f64>; 2]) {
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
pub(crate) async fn durability_sweep() {
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
