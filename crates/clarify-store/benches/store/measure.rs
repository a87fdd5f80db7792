//! How the figures are taken: percentiles of sorted durations, timed calls, the process's
//! memory from `/proc/self/status`, a WAL file's size and a wall clock two processes share.

use std::time::{Duration, Instant};

use crate::scratch;

/// The size of a bench store's WAL file.
pub(crate) fn wal_mib(name: &str) -> f64 {
    let wal = format!("{}-wal", scratch(name).display());
    mib(std::fs::metadata(wal).map_or(0, |m| m.len()))
}

pub(crate) fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `p50 / p99` of a sorted series, in milliseconds.
pub(crate) fn spread(sorted: &[Duration]) -> String {
    format!(
        "p50 {:.3} / p99 {:.3} ms",
        ms(pct(sorted, 0.5)),
        ms(pct(sorted, 0.99))
    )
}

/// Times `samples` calls of `op`: the durations sorted, and what the calls returned in order.
pub(crate) async fn timed<F, Fut, T>(samples: usize, mut op: F) -> (Vec<Duration>, Vec<T>)
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

/// A field of `/proc/self/status` in bytes, e.g. `VmRSS` or `VmHWM` (the peak).
pub(crate) fn status_bytes(field: &str) -> u64 {
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

pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

pub(crate) fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Wall-clock nanoseconds, comparable between the two processes of `pg-2proc`.
pub(crate) fn unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}
