//! `footprint`: the figures of the release binary the handbook quotes, measured and compared with
//! the table "Figures the handbook quotes" in `BENCHMARKS.md`.
//!
//! - `binary-built`: the size of the binary as cargo built it (`strip = "debuginfo"`);
//! - `binary-stripped`: the same after `strip` (what the release archive and the image carry);
//! - `idle-rss`, `idle-allocated`: a fresh `clarify serve` on a new SQLite file, three seconds
//!   after it answers `/healthz`: its resident set (`VmRSS`) and the anonymous part of it
//!   (`RssAnon`, what it allocated; the rest is its code mapped from the file), three servers one
//!   after another, each started with the binary dropped from the page cache, the median of each.
//!
//! Each line prints the measurement, the table's figure and the drift. When one drifts by more
//! than a quarter the process exits 1 naming it: the table, its section and the pages quoting it
//! (the test `crates/clarify/tests/it/figures.rs` lists them) are then brought up to date.

use std::path::Path;
use std::time::Duration;

use crate::{BIN, Server, status_kib};

// The table is read as the handbook's test reads it.
#[allow(dead_code)]
#[path = "../../tests/it/figures_table.rs"]
mod figures_table;
use figures_table::{bytes, table};

/// How far a measurement may drift from the table before the benchmark fails.
const TOLERANCE: f64 = 0.25;

/// The median of three idle servers: (VmRSS, RssAnon) in bytes.
async fn idle(dir: &Path) -> (f64, f64) {
    let mut rss = Vec::new();
    let mut anon = Vec::new();
    for round in 0..3 {
        let db = dir.join(format!("footprint-{round}.db"));
        // Read from the disk as a deployed binary is, not from the linker's large folios.
        crate::compare::evict(BIN);
        let server = Server::start(&format!("sqlite://{}", db.display())).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let pid = server.child.id();
        rss.push(status_kib(pid, "VmRSS:") as f64 * 1024.0);
        anon.push(status_kib(pid, "RssAnon:") as f64 * 1024.0);
        drop(server);
    }
    rss.sort_by(f64::total_cmp);
    anon.sort_by(f64::total_cmp);
    (rss[1], anon[1])
}

pub async fn footprint(dir: &Path) {
    let built = std::fs::metadata(BIN).expect("the release binary").len() as f64;
    let stripped_path = dir.join("clarify-stripped");
    let status = std::process::Command::new("strip")
        .arg("-o")
        .arg(&stripped_path)
        .arg(BIN)
        .status();
    let stripped = match status {
        Ok(s) if s.success() => std::fs::metadata(&stripped_path)
            .map(|m| m.len() as f64)
            .ok(),
        _ => {
            println!(
                "footprint: `strip` (binutils) is not installed; binary-stripped not measured"
            );
            None
        }
    };
    let (rss, anon) = idle(dir).await;
    let measured = [
        ("binary-built", Some(built)),
        ("binary-stripped", stripped),
        ("idle-rss", Some(rss)),
        ("idle-allocated", Some(anon)),
    ];
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../BENCHMARKS.md");
    let text = std::fs::read_to_string(&path).expect("read BENCHMARKS.md");
    let stated = table(&text);
    let mut drifted = Vec::new();
    let build = if cfg!(debug_assertions) {
        "a debug build: the table's figures are the release build's"
    } else {
        "release build"
    };
    println!("footprint ({build}; idle = 3 s after start, median of 3 servers):");
    println!(
        "{:<18} {:>10} {:>10} {:>7}",
        "figure", "measured", "table", "drift"
    );
    for (name, value) in measured {
        let Some(value) = value else { continue };
        let Some(table) = stated.get(name).and_then(|f| bytes(&f.value)) else {
            println!(
                "{name:<18} {:>8.1} MB {:>10} {:>7}",
                value / 1e6,
                "(no row)",
                ""
            );
            continue;
        };
        let drift = value / table - 1.0;
        println!(
            "{name:<18} {:>7.1} MB {:>7.1} MB {:>+6.0}%",
            value / 1e6,
            table / 1e6,
            drift * 100.0
        );
        if drift.abs() > TOLERANCE {
            drifted.push(name);
        }
    }
    if !drifted.is_empty() {
        eprintln!(
            "footprint: {} drifted by more than a quarter from BENCHMARKS.md's \"Figures the \
             handbook quotes\"; bring the table, its section and the pages quoting it up to date",
            drifted.join(", ")
        );
        std::process::exit(1);
    }
}
