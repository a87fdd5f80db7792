//! How long a reading of the insights takes over a year of a million requests:
//! `cargo bench -p clarify-store --bench insights [-- sqlite|postgres] [--requests N]`.
//!
//! The store is filled through its own API (create, then answer, skip or cancel, under a
//! manual clock moved a day at a time over 365 days), so the rollup holds what a year of use
//! leaves there. The fill is shaped like a deployment, not like noise: 6 agents with 4 tools
//! each, each agent's approvals answered by its own 3 people (one of them also from a second
//! surface), mostly approvals (80 % approve, 8 % deny, 4 % revise), some open questions, skips
//! and cancellations, a third of the requests with one of 5 tags, and decision times from a
//! second to a few hours. What a reading costs grows with the distinct combinations of agent,
//! tool, surface, responder and outcome a day sees (printed as "rollup rows"), not with the
//! number of requests.
//!
//! Printed: the fill's rate, then for each reading (the whole year; a month; the year for one
//! tool; the year for one tag; the year for one responder) the median and the slowest of 9.
//! SQLite's file is built once under the target dir (`clarify-bench/insights-<N>.db`) and
//! reused; PostgreSQL's data lives in the database `clarify_bench_insights_<N>` (on the server of
//! `CLARIFY_TEST_POSTGRES`), also kept for the next run.
//!
//! `postgres-copy` measures PostgreSQL's reading of the very rollup the SQLite fill left (its
//! day rows copied into a fresh store's `clarify_insights`), for when filling PostgreSQL through
//! the API would take too long: a reading touches only the rollups and the pending requests.
//!
//! Before the timed readings, one broad reading counts the days not yet in the month and
//! day-total rollups into them, and its time is printed: on a fresh fill or copy, the whole
//! year, as the first reading after the migration that makes those rollups does.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use clarify_core::{Limits, NewRequest, parse_request};
use clarify_store::{Actor, Clock, InsightsQuery, ManualClock, Store, StoreOptions};
use serde_json::{Value, json};
use sqlx::{Connection, Executor};

const TENANT: &str = "bench";
const DAYS: i64 = 365;
const TAGS: [&str; 5] = ["prod", "staging", "billing", "infra", "data"];
const SURFACES: [&str; 4] = ["inbox", "slack", "teams", "link"];

/// A small deterministic generator (xorshift), so every run fills the same year.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Skewed toward 0: the first of `n` is picked about half the time.
    fn skewed(&mut self, n: u64) -> u64 {
        let mut i = 0;
        while i + 1 < n && self.below(2) == 1 {
            i += 1;
        }
        i
    }
}

fn start() -> DateTime<Utc> {
    NaiveDate::from_ymd_opt(2025, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .unwrap_or_default()
}

fn parsed(raw: &Value) -> NewRequest {
    parse_request(raw, &Limits::default()).unwrap_or_else(|e| panic!("bench request: {e}"))
}

/// One request of the fill: what to create and how it ends.
struct Planned {
    request: NewRequest,
    answer: Option<Value>,
    by: Actor,
    cancel: bool,
    seconds: i64,
}

fn plan(dice: &mut Dice) -> Planned {
    let agent = dice.skewed(6);
    let tool = dice.skewed(4);
    let person = dice.skewed(3);
    let name = format!("person-{agent}-{person}");
    let surface = if person == 0 && dice.below(3) == 0 {
        SURFACES[((agent + 1) % 4) as usize]
    } else {
        SURFACES[(agent % 4) as usize]
    };
    let tags: Vec<&str> = if dice.below(3) == 0 {
        vec![TAGS[dice.skewed(5) as usize]]
    } else {
        Vec::new()
    };
    let roll = dice.below(100);
    let seconds = [1, 4, 9, 25, 70, 300, 1800, 7200][dice.skewed(8) as usize];
    let (raw, answer) = if roll < 92 {
        let decision = match roll {
            0..80 => json!({"decision": "approve"}),
            80..88 => json!({"decision": "deny", "reason": "no"}),
            _ => json!({"decision": "revise", "reason": "smaller"}),
        };
        (
            json!({"questions": [{"kind": "approval", "text": "Run it?",
                   "action": {"name": format!("tool-{agent}-{tool}"), "arguments": {}}}],
                   "agent": format!("agent-{agent}"), "tags": tags, "timeout_seconds": 0}),
            Some(decision),
        )
    } else {
        (
            json!({"question": "Which region?", "agent": format!("agent-{agent}"),
                   "tags": tags, "timeout_seconds": 0}),
            (roll < 97).then(|| json!({"text": "eu-west"})),
        )
    };
    Planned {
        request: parsed(&raw),
        answer,
        by: Actor::new(name, surface),
        cancel: roll >= 99,
        seconds,
    }
}

/// Fills a year of `n` requests: each day's share created and resolved by up to 64 tasks at
/// once, then the clock moves a day on.
async fn fill(store: &Store, clock: &ManualClock, n: u64) {
    let began = Instant::now();
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let per_day = n / DAYS as u64;
    for day in 0..DAYS {
        let mut planned: Vec<Planned> = (0..per_day).map(|_| plan(&mut dice)).collect();
        // Requests are created at the day's start and resolved in order of their times, so
        // each one's time to decide is the clock's distance from the start.
        planned.sort_by_key(|p| p.seconds);
        let mut ids = Vec::with_capacity(planned.len());
        for chunk in planned.chunks(64) {
            let mut set = tokio::task::JoinSet::new();
            for (k, p) in chunk.iter().enumerate() {
                let store = store.clone();
                let request = p.request.clone();
                set.spawn(async move {
                    let id = store
                        .create(TENANT, request)
                        .await
                        .unwrap_or_else(|e| panic!("create: {e}"))
                        .record
                        .id;
                    (k, id)
                });
            }
            let mut created = set.join_all().await;
            created.sort();
            ids.extend(created.into_iter().map(|(_, id)| id));
        }
        let mut at = 0;
        let mut i = 0;
        while i < planned.len() {
            let seconds = planned[i].seconds;
            clock.advance(TimeDelta::seconds(seconds - at));
            at = seconds;
            let end = planned[i..]
                .iter()
                .position(|p| p.seconds != seconds)
                .map_or(planned.len(), |k| i + k);
            for chunk in (i..end).collect::<Vec<_>>().chunks(64) {
                let mut set = tokio::task::JoinSet::new();
                for &k in chunk {
                    let store = store.clone();
                    let p = &planned[k];
                    let (id, by, cancel, answer) =
                        (ids[k].clone(), p.by.clone(), p.cancel, p.answer.clone());
                    set.spawn(async move {
                        if cancel {
                            let _ = store.cancel(TENANT, &id, &by).await;
                        } else if let Some(body) = answer {
                            let _ = store.answer(TENANT, &id, &body, &by).await;
                        } else {
                            let _ = store.skip(TENANT, &id, &by).await;
                        }
                    });
                }
                set.join_all().await;
            }
            i = end;
        }
        clock.advance(TimeDelta::seconds(86_400 - at));
        if day % 30 == 29 {
            let done = (day + 1) as u64 * per_day;
            println!(
                "  filled {done} requests ({:.0}/s)",
                done as f64 / began.elapsed().as_secs_f64()
            );
        }
    }
}

fn options(clock: &std::sync::Arc<ManualClock>) -> StoreOptions {
    StoreOptions {
        clock: std::sync::Arc::clone(clock) as std::sync::Arc<dyn Clock>,
        reaper_interval: None,
        ..StoreOptions::default()
    }
}

async fn measure(name: &str, store: &Store) {
    let year_end = (start() + TimeDelta::days(DAYS - 1)).date_naive();
    let year = |change: fn(&mut InsightsQuery)| {
        let mut q = InsightsQuery {
            from: Some(start().date_naive()),
            to: Some(year_end),
            ..InsightsQuery::default()
        };
        change(&mut q);
        q
    };
    let readings = [
        ("the whole year", year(|_| {})),
        (
            "the last 30 days",
            InsightsQuery {
                from: Some(year_end - TimeDelta::days(29)),
                to: Some(year_end),
                ..InsightsQuery::default()
            },
        ),
        (
            "the year, one tool",
            year(|q| q.tool = Some("tool-0-0".into())),
        ),
        ("the year, one tag", year(|q| q.tag = Some("prod".into()))),
        (
            "the year, one responder",
            year(|q| q.responder = Some("person-0-0".into())),
        ),
    ];
    // A store's first broad reading counts its days into the coarser rollups (all of them,
    // after the migration that makes them); every later one only the days since.
    let began = Instant::now();
    store
        .insights(TENANT, &readings[0].1)
        .await
        .unwrap_or_else(|e| panic!("insights: {e}"));
    println!(
        "{name}: the first broad reading, counting the days not yet in the month and day-total rollups: {:.1} ms",
        began.elapsed().as_secs_f64() * 1000.0
    );
    for (what, q) in readings {
        let mut times: Vec<Duration> = Vec::new();
        let mut decisions = 0;
        for _ in 0..9 {
            let began = Instant::now();
            let figures = store
                .insights(TENANT, &q)
                .await
                .unwrap_or_else(|e| panic!("insights: {e}"));
            times.push(began.elapsed());
            decisions = figures.by_status.values().sum::<u64>();
        }
        times.sort();
        println!(
            "{name}: {what}: median {:.1} ms, slowest {:.1} ms ({decisions} requests counted)",
            times[4].as_secs_f64() * 1000.0,
            times[8].as_secs_f64() * 1000.0,
        );
    }
}

fn requests_wanted() -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--requests")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

fn wanted(name: &str) -> bool {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a == "sqlite" || a == "postgres" || a == "postgres-copy")
        .collect();
    named.is_empty() || named.iter().any(|a| a == name)
}

fn target_dir() -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        // Cargo's target dir, also when a config file (not the environment) moved it.
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(".."))
        .join("clarify-bench");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

async fn run_sqlite(n: u64) {
    let path = target_dir().join(format!("insights-{n}.db"));
    let built = path.exists();
    let clock = std::sync::Arc::new(ManualClock::new(start()));
    let url = format!("sqlite://{}", path.display());
    let store = Store::open(&url, options(&clock))
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"));
    if !built {
        println!(
            "sqlite: filling {n} requests over {DAYS} days (kept at {})",
            path.display()
        );
        fill(&store, &clock, n).await;
    } else {
        // The readings are made the day after the year, as right after the fill.
        clock.advance(TimeDelta::days(DAYS));
    }
    for table in ["insights", "insights_months", "insights_days"] {
        let rows: i64 = rusqlite::Connection::open(&path)
            .and_then(|c| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)))
            .unwrap_or(-1);
        println!("sqlite: {table}: {rows} rows");
    }
    measure("sqlite", &store).await;
}

async fn run_postgres(n: u64) {
    let base = std::env::var("CLARIFY_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let mut admin = match sqlx::PgConnection::connect(&base).await {
        Ok(c) => c,
        Err(e) => {
            println!("postgres: skipped, cannot connect to {base}: {e}");
            return;
        }
    };
    let db = format!("clarify_bench_insights_{n}");
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&db)
            .fetch_one(&mut admin)
            .await
            .unwrap_or(false);
    if !exists {
        admin
            .execute(format!("CREATE DATABASE {db}").as_str())
            .await
            .unwrap_or_else(|e| panic!("create database {db}: {e}"));
    }
    let url = match base.rfind('/') {
        Some(i) => format!("{}/{db}", &base[..i]),
        None => panic!("CLARIFY_TEST_POSTGRES has no database name: {base}"),
    };
    let clock = std::sync::Arc::new(ManualClock::new(start()));
    let store = Store::open(&url, options(&clock))
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"));
    let mut conn = sqlx::PgConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM clarify_requests")
        .fetch_one(&mut conn)
        .await
        .unwrap_or(0);
    if stored == 0 {
        println!("postgres: filling {n} requests over {DAYS} days (kept in {db})");
        fill(&store, &clock, n).await;
        store
            .sync_feed()
            .await
            .unwrap_or_else(|e| panic!("sync: {e}"));
        for table in ["insights", "insights_months", "insights_days"] {
            let _ = conn
                .execute(format!("VACUUM ANALYZE clarify_{table}").as_str())
                .await;
        }
    } else {
        // The readings are made the day after the year, as right after the fill.
        clock.advance(TimeDelta::days(DAYS));
    }
    for table in ["insights", "insights_months", "insights_days"] {
        let rows: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM clarify_{table}"))
            .fetch_one(&mut conn)
            .await
            .unwrap_or(-1);
        println!("postgres: {table}: {rows} rows");
    }
    measure("postgres", &store).await;
}

/// PostgreSQL reading the rollup SQLite's fill of `n` requests left, copied row for row.
async fn run_postgres_copy(n: u64) {
    let path = target_dir().join(format!("insights-{n}.db"));
    let sqlite = rusqlite::Connection::open(&path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    type Row = (
        String,
        String,
        i64,
        String,
        String,
        String,
        String,
        String,
        i64,
        String,
    );
    let read = |table: &str| -> Vec<Row> {
        let mut stmt = sqlite
            .prepare(&format!(
                "SELECT tenant, tag, day, agent, tool, surface, responder, ending, n, times \
                 FROM {table}"
            ))
            .unwrap_or_else(|e| panic!("read the rollup (fill it with `sqlite` first): {e}"));
        stmt.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
            ))
        })
        .and_then(|rows| rows.collect())
        .unwrap_or_else(|e| panic!("read the rollup: {e}"))
    };
    // The day rollup only: the coarser ones are counted from it by the first broad reading, as
    // after the migration that makes them.
    let tables: Vec<(&str, Vec<Row>)> = ["insights"].into_iter().map(|t| (t, read(t))).collect();
    let base = std::env::var("CLARIFY_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let mut admin = match sqlx::PgConnection::connect(&base).await {
        Ok(c) => c,
        Err(e) => {
            println!("postgres-copy: skipped, cannot connect to {base}: {e}");
            return;
        }
    };
    let db = format!("clarify_bench_insights_copy_{n}");
    let _ = admin
        .execute(format!("DROP DATABASE IF EXISTS {db}").as_str())
        .await;
    admin
        .execute(format!("CREATE DATABASE {db}").as_str())
        .await
        .unwrap_or_else(|e| panic!("create database {db}: {e}"));
    let url = match base.rfind('/') {
        Some(i) => format!("{}/{db}", &base[..i]),
        None => panic!("CLARIFY_TEST_POSTGRES has no database name: {base}"),
    };
    let clock = std::sync::Arc::new(ManualClock::new(start() + TimeDelta::days(DAYS)));
    let store = Store::open(&url, options(&clock))
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"));
    let mut conn = sqlx::PgConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    for (table, rows) in &tables {
        for chunk in rows.chunks(10_000) {
            let col = |f: fn(&Row) -> String| chunk.iter().map(f).collect::<Vec<String>>();
            let days: Vec<i64> = chunk.iter().map(|r| r.2).collect();
            let counts: Vec<i64> = chunk.iter().map(|r| r.8).collect();
            sqlx::query(&format!(
                "INSERT INTO clarify_{table} (tenant, tag, day, agent, tool, surface, \
                 responder, ending, n, times) SELECT t, g, d, a, o, s, r, e, n, \
                 string_to_array(h, ',')::bigint[] \
                 FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], \
                 $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[]) \
                 AS u(t, g, d, a, o, s, r, e, n, h)"
            ))
            .bind(col(|r| r.0.clone()))
            .bind(col(|r| r.1.clone()))
            .bind(days)
            .bind(col(|r| r.3.clone()))
            .bind(col(|r| r.4.clone()))
            .bind(col(|r| r.5.clone()))
            .bind(col(|r| r.6.clone()))
            .bind(col(|r| r.7.clone()))
            .bind(counts)
            .bind(col(|r| r.9.clone()))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("copy the rollup: {e}"));
        }
        let _ = conn
            .execute(format!("VACUUM ANALYZE clarify_{table}").as_str())
            .await;
        println!(
            "postgres-copy: {table}: {} rows (copied from the SQLite fill)",
            rows.len()
        );
    }
    measure("postgres", &store).await;
}

fn main() {
    let n = requests_wanted();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(async {
        if wanted("sqlite") {
            run_sqlite(n).await;
        }
        if wanted("postgres") {
            run_postgres(n).await;
        }
        if std::env::args().any(|a| a == "postgres-copy") {
            run_postgres_copy(n).await;
        }
    });
}
