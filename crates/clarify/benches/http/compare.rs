//! `compare`: two `clarify` binaries measured side by side, figure by figure, in rounds that
//! alternate which binary goes first, so that what the machine does meanwhile falls on both.
//!
//! `CLARIFY_BENCH_BIN_A` (default: this build's) is the head, `CLARIFY_BENCH_BIN_B` the base,
//! and `CLARIFY_BENCH_BIN_C`, when set, a middle one (three builds in one run: before a series
//! of changes, before a fix, after it); `CLARIFY_BENCH_ROUNDS` rounds (3), each starting with
//! the next binary. Each round measures, for each binary:
//! - `pg`: ask+answer round trips over HTTP on PostgreSQL with 64 clients, on a fresh database,
//!   with the server's CPU per round trip, and in the same round a bare loop of the same two
//!   commits with 64 clients on a plain pool (nothing of clarify around them): the figure is the
//!   HTTP rate as a share of the bare one;
//! - `sqlite`: ask+answer round trips over HTTP on SQLite with 32 clients (and the server's CPU
//!   per round trip);
//! - `wake`: answer-to-wake p99 of a long-poll over HTTP on SQLite (300 samples);
//! - `idle`: a fresh server's RSS 3 s after it answered its first health check (SQLite), its
//!   binary first dropped from the page cache;
//! - `fleet`: what one waiting long-poll adds to the server's RSS, with
//!   `CLARIFY_BENCH_COMPARE_FLEET` (5,000) of them waiting at once on SQLite;
//! - `instructions` (first round only: the count does not move with the machine's load): the
//!   server's instructions per HTTP create, per answer and per round trip on SQLite, under
//!   callgrind (`callgrind.rs`; skipped, saying why, where valgrind is not installed).
//!
//! `CLARIFY_BENCH_COMPARE` names a subset (`pg,sqlite,wake,idle,fleet,instructions`). The end prints every
//! figure's range for each binary and head/base (with a middle one also middle/base and
//! head/middle): the ratio of the means and the spread of the per-round ratios.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::fleet::{self, Database};

// The bare loop the store's benchmark measures as `bare-pg`, the same code.
#[path = "../../../clarify-store/benches/store/bare_pg.rs"]
mod bare_pg;
use crate::{ANSWER_YES, BIN, PLAIN_ASK, Server, agents, key_of, ms, percentile};

/// One figure's readings, per round, for each binary (in the order of [`Binaries`]).
struct Figure {
    name: &'static str,
    unit: &'static str,
    /// Whether a larger value is better (round trips) or worse (latency, memory).
    higher_is_better: bool,
    readings: Vec<Vec<f64>>,
}

impl Figure {
    fn new(name: &'static str, unit: &'static str, higher_is_better: bool, n: usize) -> Self {
        Self {
            name,
            unit,
            higher_is_better,
            readings: vec![Vec::new(); n],
        }
    }

    fn push(&mut self, which: usize, value: f64) {
        self.readings[which].push(value);
    }

    /// Each binary's range, then `a/b` for every pair the comparison reports.
    fn summary(&self, labels: &[&str], pairs: &[(usize, usize)]) -> String {
        let range = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{}–{}", fmt(lo), fmt(hi))
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let mut line = format!("{} ({}", self.name, self.unit);
        line.push_str(if self.higher_is_better {
            ", higher is better):"
        } else {
            ", lower is better):"
        });
        for (label, values) in labels.iter().zip(&self.readings) {
            line.push_str(&format!(" {label} {}", range(values)));
        }
        for &(a, b) in pairs {
            let ratios: Vec<f64> = self.readings[a]
                .iter()
                .zip(&self.readings[b])
                .map(|(x, y)| x / y)
                .collect();
            line.push_str(&format!(
                "; {}/{} {:.2} (rounds {})",
                labels[a],
                labels[b],
                mean(&self.readings[a]) / mean(&self.readings[b]),
                range(&ratios)
            ));
        }
        line
    }
}

fn fmt(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Which figures `CLARIFY_BENCH_COMPARE` asks for (all when unset).
fn wanted(name: &str) -> bool {
    match std::env::var("CLARIFY_BENCH_COMPARE") {
        Ok(list) if !list.trim().is_empty() => list.split(',').any(|n| n.trim() == name),
        _ => true,
    }
}

/// The binaries compared: the base, an optional middle one, and the head, in that order.
struct Binaries {
    labels: Vec<&'static str>,
    paths: Vec<String>,
}

/// Runs the comparison and prints each figure as head/base (and, with a middle binary,
/// middle/base and head/middle).
pub(crate) async fn compare(dir: &std::path::Path, base: &str) {
    let head = std::env::var("CLARIFY_BENCH_BIN_A").unwrap_or_else(|_| BIN.to_owned());
    let mut bins = Binaries {
        labels: vec!["base"],
        paths: vec![base.to_owned()],
    };
    if let Ok(middle) = std::env::var("CLARIFY_BENCH_BIN_C")
        && !middle.is_empty()
    {
        bins.labels.push("middle");
        bins.paths.push(middle);
    }
    bins.labels.push("head");
    bins.paths.push(head);
    let n = bins.paths.len();
    let pairs: Vec<(usize, usize)> = if n == 3 {
        vec![(1, 0), (2, 1), (2, 0)]
    } else {
        vec![(1, 0)]
    };
    let rounds = std::env::var("CLARIFY_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(3)
        .max(1);
    let fleet_n = std::env::var("CLARIFY_BENCH_COMPARE_FLEET")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(5000)
        .max(100);
    let mut pg = Figure::new("HTTP ask+answer, PostgreSQL, 64 clients", "/s", true, n);
    let mut bare = Figure::new("bare PostgreSQL loop, 64 clients", "/s", true, n);
    let mut share = Figure::new(
        "HTTP PostgreSQL as a share of the bare loop",
        "share",
        true,
        n,
    );
    let mut pg_cpu = Figure::new("  server CPU per PostgreSQL round trip", "µs", false, n);
    let mut sqlite = Figure::new("HTTP ask+answer, SQLite, 32 clients", "/s", true, n);
    let mut sqlite_cpu = Figure::new("  server CPU per SQLite round trip", "µs", false, n);
    let mut wake = Figure::new("answer -> wake p99 over HTTP, SQLite", "ms", false, n);
    let mut idle = Figure::new("fresh server, idle RSS after 3 s", "MiB", false, n);
    let mut idle_anon = Figure::new("  of which anonymous", "MiB", false, n);
    let mut fleet_kib = Figure::new("a waiting long-poll's RSS (fleet)", "KiB", false, n);
    let mut per_trip = Figure::new(
        "server instructions per SQLite round trip",
        "instructions",
        false,
        n,
    );
    let mut per_create = Figure::new("  per HTTP create", "instructions", false, n);
    let mut per_answer = Figure::new("  per HTTP answer", "instructions", false, n);
    let count_instructions = wanted("instructions")
        && match crate::callgrind::unavailable() {
            None => true,
            Some(why) => {
                println!("compare: instructions skipped: {why}");
                false
            }
        };
    for (label, path) in bins.labels.iter().zip(&bins.paths) {
        println!("compare: {label} {path}");
    }
    println!("compare: {rounds} rounds");
    for round in 0..rounds {
        // Each round starts with the next binary, so none always goes first.
        println!("compare: round {} (load average {})", round + 1, loadavg());
        for k in 0..n {
            let which = (round + k) % n;
            let (who, bin) = (bins.labels[which], bins.paths[which].as_str());
            if wanted("pg") {
                let (rate, cpu) = pg_roundtrips(bin, 64, Duration::from_secs(8)).await;
                let loop_rate = bare_pg(64, Duration::from_secs(8)).await;
                println!(
                    "  {who} pg: {rate:.0} round trips/s ({cpu:.0} µs of server CPU each), bare loop {loop_rate:.0}/s, share {:.3}",
                    rate / loop_rate
                );
                pg.push(which, rate);
                pg_cpu.push(which, cpu);
                bare.push(which, loop_rate);
                share.push(which, rate / loop_rate);
            }
            if wanted("sqlite") {
                let r =
                    crate::roundtrip(dir, bin, &format!(" ({who})"), 32, Duration::from_secs(8))
                        .await;
                sqlite.push(which, r.per_second);
                sqlite_cpu.push(which, r.cpu_us);
            }
            if wanted("wake") {
                let p99 = wake_p99(dir, bin).await;
                println!("  {who} wake p99 {p99:.2} ms");
                wake.push(which, p99);
            }
            if wanted("idle") {
                let (all, anon) = idle_rss(dir, bin).await;
                println!("  {who} idle RSS {all:.1} MiB, {anon:.1} MiB of it anonymous");
                idle.push(which, all);
                idle_anon.push(which, anon);
            }
            if wanted("fleet") {
                let kib = fleet::waiting_kib(dir, bin, fleet_n).await;
                println!("  {who} fleet {fleet_n}: {kib:.1} KiB per waiting long-poll");
                fleet_kib.push(which, kib);
            }
            if count_instructions && round == 0 {
                match crate::callgrind::count(bin, dir, 50, 200).await {
                    Ok(c) => {
                        println!(
                            "  {who} instructions: {} per create, {} per answer, {} per round trip",
                            c.create,
                            c.answer,
                            c.round_trip()
                        );
                        per_trip.push(which, c.round_trip() as f64);
                        per_create.push(which, c.create as f64);
                        per_answer.push(which, c.answer as f64);
                    }
                    Err(e) => println!("  {who} instructions: failed: {e}"),
                }
            }
        }
    }
    println!("compare: after the rounds, load average {}", loadavg());
    println!("compare: {rounds} rounds, fleet of {fleet_n}");
    for figure in [
        &pg,
        &pg_cpu,
        &bare,
        &share,
        &sqlite,
        &sqlite_cpu,
        &per_trip,
        &per_create,
        &per_answer,
        &wake,
        &idle,
        &idle_anon,
        &fleet_kib,
    ] {
        if figure.readings.iter().all(|r| !r.is_empty()) {
            println!("{}", figure.summary(&bins.labels, &pairs));
        }
    }
}

/// The machine's load averages (1, 5, 15 minutes).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Ask+answer round trips/s of `bin` on a fresh PostgreSQL database with `clients` clients,
/// and the server's CPU per round trip in µs.
async fn pg_roundtrips(bin: &str, clients: usize, run_for: Duration) -> (f64, f64) {
    let database = Database::postgres_fresh();
    let admin = key_of(bin, &database.url, "admin", "default");
    let server = Server::start_bin(bin, &database.url).await;
    let load = agents(&server, &admin, clients, run_for, (PLAIN_ASK, ANSWER_YES)).await;
    drop(server);
    (
        load.count as f64 / load.elapsed.as_secs_f64(),
        load.server_cpu * 1e6 / load.count.max(1) as f64,
    )
}

/// Answer-to-wake p99 in ms of `bin` on a fresh SQLite file.
async fn wake_p99(dir: &std::path::Path, bin: &str) -> f64 {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let db = format!(
        "sqlite://{}",
        dir.join(format!("cmp-wake-{run}.db")).display()
    );
    let admin = key_of(bin, &db, "admin", "default");
    let server = Server::start_bin(bin, &db).await;
    let _ = crate::wake_samples(&server.url, &server.url, &admin, 20).await;
    let (from_send, _) = crate::wake_samples(&server.url, &server.url, &admin, 300).await;
    ms(percentile(&from_send, 0.99))
}

/// A fresh server's RSS, and its anonymous part, in MiB 3 s after its first health check, on a
/// new SQLite file.
async fn idle_rss(dir: &std::path::Path, bin: &str) -> (f64, f64) {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let db = format!(
        "sqlite://{}",
        dir.join(format!("cmp-idle-{run}.db")).display()
    );
    evict(bin);
    let server = Server::start_bin(bin, &db).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    (
        server.rss_kib() as f64 / 1024.0,
        crate::status_kib(server.child.id(), "RssAnon:") as f64 / 1024.0,
    )
}

/// Drops `bin`'s pages from the page cache (GNU `dd`'s `iflag=nocache`, an
/// `posix_fadvise(DONTNEED)` of the whole file), so that every binary starts from the disk.
/// How its code was last read decides how much of it a start maps: a binary just written by the
/// linker sits in the page cache in large folios, each mapped whole on the first touch, and a
/// fresh build measured 6 MiB more than the same binary read back from the disk.
pub(crate) fn evict(bin: &str) {
    let dropped = std::process::Command::new("dd")
        .args([
            &format!("if={bin}"),
            "iflag=nocache",
            "count=0",
            "status=none",
        ])
        .status();
    if !dropped.is_ok_and(|s| s.success()) {
        println!("  (could not drop {bin} from the page cache; its idle RSS may read high)");
    }
}

/// The canonical JSON of a plain request, about what the store writes for the HTTP loop's.
const SPEC: &str = r#"{"questions":[{"id":"q1","text":"Deploy?","kind":"choice","options":[{"id":"yes","label":"yes"},{"id":"no","label":"no"}]}]}"#;

/// Round trips/s of the bare PostgreSQL loop with `clients` clients, on a fresh database.
async fn bare_pg(clients: usize, duration: Duration) -> f64 {
    let database = Database::postgres_fresh();
    bare_pg::postgres(&database.url, SPEC, clients, duration)
        .await
        .unwrap_or_else(|| panic!("the bare PostgreSQL loop could not reach {}", database.url))
}
