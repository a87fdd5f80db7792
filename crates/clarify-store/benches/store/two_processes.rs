//! `pg-2proc`: answer-to-wake latency across two processes sharing PostgreSQL. This process
//! waits; a child process (this binary again, told by `CLARIFY_BENCH_RESPONDER`) answers each
//! request id it reads from stdin and prints when its answer was committed.

use std::time::Duration;

use clarify_store::Actor;
use serde_json::json;

use crate::measure::{pct, unix_nanos};
use crate::{open, pg_url, request};

/// The child of `pg-2proc`: answers each request id read from stdin, then prints the wall-clock
/// time the answer was committed.
pub(crate) async fn pg_responder(tenant: &str) {
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

pub(crate) async fn pg_two_processes(samples: usize) {
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
