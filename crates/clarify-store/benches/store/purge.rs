//! The `purge` sweep: how long the reaper takes to purge old resolved requests, and what the
//! agents doing round trips meanwhile see of it.

use std::time::{Duration, Instant};

use clarify_core::{Limits, parse_request};
use clarify_store::{Actor, ListQuery, Store, StoreOptions};
use serde_json::json;

use crate::measure::pct;
use crate::round_trips::{RoundTrips, round_trips};
use crate::{TENANT, fresh_sqlite, open, scratch};

/// Requests resolved ten days ago, then purged while agents keep doing round trips.
pub(crate) async fn purge_sweep(n: usize) {
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
