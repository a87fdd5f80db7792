//! Large stores: a million pending requests in SQLite, and the `pending` sweep measuring open
//! time, memory and the latency of each operation with 1,000 to 1,000,000 pending requests,
//! each size in a fresh process.

use std::time::Instant;

use clarify_store::{Actor, ListQuery, Store};
use serde_json::json;

use crate::measure::{mib, ms, pct, spread, status_bytes, timed};
use crate::{TENANT, fresh_sqlite, open, request, scratch};

pub(crate) async fn million() {
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

/// A SQLite file holding `n` pending requests, built once and kept under the target dir.
pub(crate) async fn pending_file(n: usize) -> String {
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
pub(crate) async fn fill(store: &Store, n: usize) {
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
pub(crate) fn pending_sweep(runtime: &tokio::runtime::Runtime, sizes: &[usize]) {
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

/// The child of `pending`: opens (or fills) a store with `n` pending requests and measures it.
pub(crate) async fn pending_measure(n: usize, url: &str) {
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
