//! HTTP benchmarks against real `clarify serve` processes, with the load generator in this
//! process on the same machine.
//!
//! `cargo bench -p clarify --bench http -- [roundtrip] [wake] [pg-wake] [clients]`
//!
//! - `roundtrip`: 32 clients with keep-alive, each creating a request and answering it, on
//!   SQLite; prints round trips per second, latency percentiles, and the server's CPU time
//!   (user and system) per round trip. With `CLARIFY_BENCH_BIN_B=/path/to/clarify` it runs
//!   three rounds of this build alternating with three of that binary (each on a fresh file),
//!   and prints both and their ratio.
//! - `clients` (only when named): the same with 1, 64 and 1,024 clients, each against a fresh
//!   server, with the server's CPU share and peak memory.
//! - `wake`: a long-poll waits on a request, then the request is answered; prints the time from
//!   sending the answer to the waiter's response (p50, p99), on SQLite.
//! - `pg-wake`: the same across two server processes sharing PostgreSQL
//!   (`CLARIFY_TEST_POSTGRES`, default `postgres://postgres@127.0.0.1:5432/test`).
//! - `hook` (only when named): the time one `clarify hook <agent>` process takes, for each coding
//!   agent's hook (Claude Code, Codex, Cursor, Gemini CLI, Copilot) given an event in its
//!   agent's shape, from start to its decision on stdout, when the policy decides and when a
//!   grant does (no human either way), beside the time to start the binary at all (`clarify
//!   --version`); on SQLite.
//! - `display` (only when named): round trips of a request with display blocks (a 20-line diff,
//!   markdown, fields) against a plain one, alternating; then a 2,000-line diff created, its
//!   record read and its blocks rendered as the inbox shows them, each with p50 and p99.
//! - `fleet` (only when named): N agents waiting at once, each on its own connection, held by
//!   crowd processes: N = 1,000 and 5,000, or the list in `CLARIFY_BENCH_FLEET`
//!   (`1000,5000,18000`). Long-polls by default; `CLARIFY_BENCH_FLEET_MODE=events`, `mcp` or
//!   `idle` for event streams, MCP `ask_human` calls or bare connections;
//!   `CLARIFY_BENCH_FLEET_DB=postgres` with `CLARIFY_BENCH_FLEET_INSTANCES=2` for two instances
//!   sharing PostgreSQL. Prints the time to accept the crowd, the servers' RSS before and with
//!   it and the growth per agent (and the kernel's TCP memory apart), their CPU while the crowd
//!   waits idle, answer-to-wake latency of 100 agents answered one by one beside one waiter's
//!   alone, and 32 other agents' round trips beside the crowd against alone; in `events` mode,
//!   each subscriber's deliveries of a stream of creates. See `fleet.rs`.
//! - `footprint` (only when named): the release binary's size as built and stripped, and a fresh
//!   server's idle memory, each against the figure BENCHMARKS.md's table "Figures the handbook
//!   quotes" states; exits 1 when one is off by more than a quarter. See `footprint.rs`.
//! - `otlp` (only when named): 32 clients creating an approval and answering it, on SQLite,
//!   against a server sending OpenTelemetry to a collector that takes everything (a receiver in
//!   this process answering 200), to one that is down (a closed port), to one that accepts
//!   connections and never answers, and against a server sending nothing, four rounds each
//!   starting with another case; prints the means and their ratios to sending nothing.
//! - `compare` (only when named): this build (or `CLARIFY_BENCH_BIN_A`) against the binary at
//!   `CLARIFY_BENCH_BIN_B`, figure by figure in alternating rounds, each printed as head/base
//!   with its spread; `scripts/bench-compare` builds both commits and runs it. See `compare.rs`.
//! - `instructions` (only when named): instructions per HTTP create and per HTTP answer, server
//!   side, counted under `valgrind --tool=callgrind` over 200 creates and 200 round trips after
//!   50 round trips of warm-up on a fresh SQLite file (`CLARIFY_BENCH_INSTRUCTIONS=N` for
//!   another N), with the
//!   callgrind dumps of both windows left for `callgrind_annotate`; of `CLARIFY_BENCH_BIN_A`
//!   when set, else of this build. See `callgrind.rs`.
//! - `rules` (only when named): 32 clients creating an approval and answering it, on SQLite,
//!   against a server with 100 `[[rules]]` (none matching, ten conditions evaluated per create)
//!   and against one without rules, alternating three times each; prints both and the ratio.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod callgrind;
mod compare;
mod display;
mod fleet;
mod footprint;
mod hook;

const BIN: &str = env!("CARGO_BIN_EXE_clarify");

struct Server {
    child: Child,
    url: String,
}

impl Server {
    async fn start(db: &str) -> Self {
        Self::start_bin(BIN, db).await
    }

    /// A `clarify serve` of the binary at `bin` on `db`.
    async fn start_bin(bin: &str, db: &str) -> Self {
        Self::start_with(bin, db, &[]).await
    }

    /// A `clarify serve` of the binary at `bin` on `db`, with `extra` arguments.
    async fn start_with(bin: &str, db: &str, extra: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        // `CLARIFY_BENCH_WRAP="heaptrack -o /tmp/h"` runs the server under a profiler (its
        // figures are then the wrapper's; read the profile instead).
        let wrap = std::env::var("CLARIFY_BENCH_WRAP").unwrap_or_default();
        let mut words = wrap.split_whitespace();
        let mut command = match words.next() {
            Some(program) => {
                let mut c = Command::new(program);
                c.args(words).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let child = command
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--db",
                db,
            ])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("clarify serve starts");
        let url = format!("http://127.0.0.1:{port}");
        let client = clarify_client::http::client().expect("an HTTP client");
        let deadline = Instant::now() + Duration::from_secs(20);
        while client.get(format!("{url}/healthz")).send().await.is_err() {
            assert!(Instant::now() < deadline, "server did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self { child, url }
    }

    /// The server process's resident set now, in KiB.
    fn rss_kib(&self) -> u64 {
        status_kib(self.child.id(), "VmRSS:")
    }

    /// The part of [`Server::rss_kib`] that maps files (a memory-mapped SQLite file's pages).
    fn rss_file_kib(&self) -> u64 {
        status_kib(self.child.id(), "RssFile:")
    }

    /// CPU seconds the server process has used so far.
    fn cpu_seconds(&self) -> f64 {
        // Fields 14 and 15 of /proc/PID/stat: user and system time in clock ticks (100 Hz).
        std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .ok()
            .and_then(|s| {
                let after = s.rsplit_once(')')?.1.to_owned();
                let fields: Vec<&str> = after.split_whitespace().collect();
                let ticks: u64 =
                    fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
                Some(ticks as f64 / 100.0)
            })
            .unwrap_or(0.0)
    }

    /// Peak resident memory of the server process.
    fn peak_rss_kib(&self) -> u64 {
        status_kib(self.child.id(), "VmHWM:")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn key(db: &str, role: &str, tenant: &str) -> String {
    key_of(BIN, db, role, tenant)
}

/// A new key made by the binary at `bin` (whose schema the store gets), in a new store when
/// there is none yet (`--create`; a binary from before it neither knew nor needed it, and is
/// asked again without it).
fn key_of(bin: &str, db: &str, role: &str, tenant: &str) -> String {
    let name = format!("bench-{role}-{}", std::process::id());
    let run = |create: bool| {
        Command::new(bin)
            .args([
                "keys", "create", "--db", db, "--role", role, "--name", &name, "--tenant", tenant,
            ])
            .args(create.then_some("--create"))
            .output()
            .expect("keys create runs")
    };
    let mut out = run(true);
    if !out.status.success()
        && String::from_utf8_lossy(&out.stderr).contains("unexpected argument '--create'")
    {
        out = run(false);
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn post(client: &reqwest::Client, url: String, key: &str, body: Value) -> Value {
    let r = client
        .post(url)
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("sent");
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.expect("json")
}

/// What one round-trip run measured.
struct Roundtrips {
    per_second: f64,
    /// The server's user and system CPU time per round trip.
    cpu_us: f64,
}

/// `clients` clients doing round trips against a fresh `clarify serve` of `bin` on SQLite for
/// `run_for` after a second of warm-up; prints and returns the figures.
async fn roundtrip(
    dir: &std::path::Path,
    bin: &str,
    label: &str,
    clients: usize,
    run_for: Duration,
) -> Roundtrips {
    roundtrip_of(
        dir,
        bin,
        label,
        clients,
        run_for,
        &[],
        (PLAIN_ASK, ANSWER_YES),
    )
    .await
}

/// The request the round-trip benchmark creates, and its answer.
const PLAIN_ASK: &[u8] = br#"{"question":"Deploy?","choices":["yes","no"]}"#;
const ANSWER_YES: &[u8] = br#"{"option":"yes"}"#;

/// [`roundtrip`] with the server's `extra` arguments and the `(create, answer)` bodies.
async fn roundtrip_of(
    dir: &std::path::Path,
    bin: &str,
    label: &str,
    clients: usize,
    run_for: Duration,
    extra: &[&str],
    (ask, answer): (&'static [u8], &'static [u8]),
) -> Roundtrips {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let db = format!(
        "sqlite://{}",
        dir.join(format!("rt-{clients}-{run}.db")).display()
    );
    let admin = key_of(bin, &db, "admin", "default");
    let server = Server::start_with(bin, &db, extra).await;
    let load = agents(&server, &admin, clients, run_for, (ask, answer)).await;
    let (count, elapsed, server_cpu, all) =
        (load.count, load.elapsed, load.server_cpu, load.latencies);
    let figures = Roundtrips {
        per_second: count as f64 / elapsed.as_secs_f64(),
        cpu_us: server_cpu * 1e6 / count.max(1) as f64,
    };
    println!(
        "roundtrip sqlite{label}, {clients} clients: {:.0} ask+answer round trips/s over {:.1} s; server CPU {:.0} µs per round trip (used {:.2} of the 2 cores, the load generator the rest); round trip p50 {:.2} ms, p99 {:.2} ms; server peak RSS {} KiB",
        figures.per_second,
        elapsed.as_secs_f64(),
        figures.cpu_us,
        server_cpu / elapsed.as_secs_f64(),
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.99)),
        server.peak_rss_kib()
    );
    figures
}

/// What [`agents`] measured.
struct Load {
    /// Round trips in the measured window.
    count: u64,
    elapsed: Duration,
    /// The server's CPU seconds in the window.
    server_cpu: f64,
    /// Every round trip's latency, sorted.
    latencies: Vec<Duration>,
}

/// `clients` agents, each creating a request on `server` and answering it, over and over: a
/// second of warm-up, then `run_for` measured.
async fn agents(
    server: &Server,
    admin: &str,
    clients: usize,
    run_for: Duration,
    (ask, answer): (&'static [u8], &'static [u8]),
) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    // The bodies are serialised once and only the id is read back, so the load generator, which
    // shares the machine with the server, spends as little as it can.
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (stop, done, url, admin) = (
            stop.clone(),
            done.clone(),
            server.url.clone(),
            format!("Bearer {admin}"),
        );
        tasks.push(tokio::spawn(async move {
            let client = clarify_client::http::client().expect("an HTTP client");
            let send = async |url: String, body: &'static [u8]| {
                let r = client
                    .post(url)
                    .header("authorization", &admin)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .expect("sent");
                assert!(r.status().is_success(), "{}", r.status());
                r.bytes().await.expect("body")
            };
            let create = format!("{url}/v1/requests");
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let record = send(create.clone(), ask).await;
                let Created { id } = serde_json::from_slice(&record).expect("a record");
                send(format!("{url}/v1/requests/{id}/answer"), answer).await;
                latencies.push(started.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
            }
            latencies
        }));
    }
    // Warm up, then measure a fixed window.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = done.load(Ordering::Relaxed);
    let cpu_before = server.cpu_seconds();
    let started = Instant::now();
    tokio::time::sleep(run_for).await;
    let count = done.load(Ordering::Relaxed) - before;
    let elapsed = started.elapsed();
    let server_cpu = server.cpu_seconds() - cpu_before;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    all.sort();
    Load {
        count,
        elapsed,
        server_cpu,
        latencies: all,
    }
}

/// 100 rules as a configuration would have them: 90 for other tools, 10 for every tool whose
/// conditions do not match the benchmark's call.
fn hundred_rules() -> String {
    let mut text = String::new();
    for i in 0..90 {
        text.push_str(&format!(
            "[[rules]]\nname = \"tool-{i}\"\ntool = \"tool_{i}\"\n\
             when = \"has(args.amount) && args.amount > {i}\"\ndecide = \"deny\"\n\n"
        ));
    }
    for i in 0..10 {
        text.push_str(&format!(
            "[[rules]]\nname = \"any-{i}\"\n\
             when = \"has(args.namespace) && args.namespace.startsWith('prod-{i}')\"\n\
             decide = \"deny\"\n\n"
        ));
    }
    text
}

/// Approval round trips with 100 rules against none, alternating three times each.
async fn rules(dir: &std::path::Path) {
    let config = dir.join("rules.toml");
    std::fs::write(&config, hundred_rules()).expect("config written");
    let config = config.display().to_string();
    let ask: &'static [u8] = br#"{"questions":[{"text":"Deploy?","kind":"approval","action":{"name":"deploy","arguments":{"env":"staging","replicas":3}}}]}"#;
    let answer: &'static [u8] = br#"{"decision":"approve"}"#;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let extra = ["--config", config.as_str()];
        with.push(
            roundtrip_of(
                dir,
                BIN,
                " (100 rules)",
                32,
                Duration::from_secs(8),
                &extra,
                (ask, answer),
            )
            .await,
        );
        without.push(
            roundtrip_of(
                dir,
                BIN,
                " (no rules)",
                32,
                Duration::from_secs(8),
                &[],
                (ask, answer),
            )
            .await,
        );
    }
    let mean =
        |v: &[Roundtrips], f: fn(&Roundtrips) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    let (a, b) = (
        mean(&with, |r| r.per_second),
        mean(&without, |r| r.per_second),
    );
    let (ca, cb) = (mean(&with, |r| r.cpu_us), mean(&without, |r| r.cpu_us));
    println!(
        "rules: approval round trips/s with 100 rules {a:.0}, without {b:.0} (ratio {:.3}); server CPU per round trip {ca:.0} µs against {cb:.0} µs (ratio {:.3})",
        a / b,
        ca / cb
    );
}

/// A collector on 127.0.0.1 that reads whatever is posted and answers 200 (`taking`), or
/// accepts connections and never answers (not `taking`); its base URL.
async fn collector(taking: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    if taking {
        let app = axum::Router::new().fallback(|body: axum::body::Bytes| async move {
            drop(body);
            ""
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
    } else {
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
    }
    url
}

/// What OpenTelemetry costs a round trip: see the module's `otlp`.
async fn otlp(dir: &std::path::Path) {
    let ask: &'static [u8] = br#"{"agent":"bench","questions":[{"text":"Deploy?","kind":"approval","action":{"name":"deploy","arguments":{"env":"staging"}}}]}"#;
    let answer: &'static [u8] = br#"{"decision":"approve"}"#;
    let taking = collector(true).await;
    let silent = collector(false).await;
    let down = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", listener.local_addr().expect("addr"))
    };
    let cases: [(&str, Option<&str>); 4] = [
        ("no export", None),
        ("collector taking", Some(&taking)),
        ("collector down", Some(&down)),
        ("collector never answering", Some(&silent)),
    ];
    let mut runs: Vec<Vec<Roundtrips>> = cases.iter().map(|_| Vec::new()).collect();
    // Each round starts with another case, so none always runs first (on the machine the last
    // round left warm).
    for round in 0..cases.len() {
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            let (name, endpoint) = &cases[i];
            let extra: Vec<&str> = match endpoint {
                Some(url) => vec!["--otlp-endpoint", url],
                None => Vec::new(),
            };
            let label = format!(" ({name})");
            runs[i].push(
                roundtrip_of(
                    dir,
                    BIN,
                    &label,
                    32,
                    Duration::from_secs(8),
                    &extra,
                    (ask, answer),
                )
                .await,
            );
        }
    }
    let mean =
        |v: &[Roundtrips], f: fn(&Roundtrips) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    let base = mean(&runs[0], |r| r.per_second);
    let base_cpu = mean(&runs[0], |r| r.cpu_us);
    for (i, (name, _)) in cases.iter().enumerate() {
        let (rate, cpu) = (
            mean(&runs[i], |r| r.per_second),
            mean(&runs[i], |r| r.cpu_us),
        );
        println!(
            "otlp: {name}: {rate:.0} round trips/s (ratio to no export {:.3}), server CPU per round trip {cpu:.0} µs (ratio {:.3})",
            rate / base,
            cpu / base_cpu
        );
    }
}

#[derive(serde::Deserialize)]
struct Created {
    id: String,
}

/// Round trips of this build against the binary at `other`, alternating three times each; prints
/// each run and the ratios.
async fn roundtrip_against(dir: &std::path::Path, other: &str) {
    let this = " (this build)";
    let that = format!(" ({other})");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        ours.push(roundtrip(dir, BIN, this, 32, Duration::from_secs(10)).await);
        theirs.push(roundtrip(dir, other, &that, 32, Duration::from_secs(10)).await);
    }
    let mean = |runs: &[Roundtrips], f: fn(&Roundtrips) -> f64| {
        runs.iter().map(f).sum::<f64>() / runs.len() as f64
    };
    let range = |runs: &[Roundtrips], f: fn(&Roundtrips) -> f64| {
        let values: Vec<f64> = runs.iter().map(f).collect();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(0.0, f64::max);
        format!("{lo:.0}–{hi:.0}")
    };
    let rate = |r: &Roundtrips| r.per_second;
    let cpu = |r: &Roundtrips| r.cpu_us;
    println!(
        "roundtrip sqlite, 32 clients, 3 runs each: this build {} round trips/s ({} µs server CPU each), {other} {} round trips/s ({} µs); this build does {:.2}× the round trips at {:.2}× the server CPU per round trip",
        range(&ours, rate),
        range(&ours, cpu),
        range(&theirs, rate),
        range(&theirs, cpu),
        mean(&ours, rate) / mean(&theirs, rate),
        mean(&ours, cpu) / mean(&theirs, cpu),
    );
}

/// Answer-to-wake latencies: asks on `asker`, long-polls on `waiter`, answers on `asker`.
/// Returns two sorted series: from sending the answer (includes its commit), and from the
/// answer's acknowledgement (what waking adds once the answer is stored; 0 when the waiter woke
/// before the acknowledgement arrived).
async fn wake_samples(
    asker: &str,
    waiter: &str,
    key: &str,
    samples: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let client = clarify_client::http::client().expect("an HTTP client");
    let mut out = Vec::with_capacity(samples);
    let mut after_ack = Vec::with_capacity(samples);
    for _ in 0..samples {
        let record = post(
            &client,
            format!("{asker}/v1/requests"),
            key,
            json!({"question": "Go?"}),
        )
        .await;
        let id = record["id"].as_str().unwrap_or_default().to_owned();
        let poll = {
            let client = client.clone();
            let url = format!("{waiter}/v1/requests/{id}/wait?timeout_seconds=30");
            let key = key.to_owned();
            tokio::spawn(async move {
                let r = client.get(url).bearer_auth(key).send().await.expect("sent");
                let _ = r.bytes().await;
                Instant::now()
            })
        };
        // Let the long-poll reach the server and start waiting.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let sent = Instant::now();
        post(
            &client,
            format!("{asker}/v1/requests/{id}/answer"),
            key,
            json!({"text": "yes"}),
        )
        .await;
        let acked = Instant::now();
        let woke = poll.await.expect("poll");
        out.push(woke.saturating_duration_since(sent));
        after_ack.push(woke.saturating_duration_since(acked));
    }
    out.sort();
    after_ack.sort();
    (out, after_ack)
}

fn report(name: &str, (from_send, from_ack): &(Vec<Duration>, Vec<Duration>)) {
    println!(
        "{name}: answer-to-wake over {} samples, from sending the answer: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; from its acknowledgement: p50 {:.2} ms, p99 {:.2} ms",
        from_send.len(),
        ms(percentile(from_send, 0.5)),
        ms(percentile(from_send, 0.99)),
        ms(percentile(from_send, 1.0)),
        ms(percentile(from_ack, 0.5)),
        ms(percentile(from_ack, 0.99)),
    );
}

async fn wake(dir: &std::path::Path) {
    let db = format!("sqlite://{}", dir.join("wake.db").display());
    let admin = key(&db, "admin", "default");
    let server = Server::start(&db).await;
    let _ = wake_samples(&server.url, &server.url, &admin, 20).await;
    let samples = wake_samples(&server.url, &server.url, &admin, 500).await;
    report("wake sqlite, one process", &samples);
}

async fn pg_wake() {
    let db = std::env::var("CLARIFY_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let tenant = format!("bench-{}", std::process::id());
    let admin = key(&db, "admin", &tenant);
    let a = Server::start(&db).await;
    let b = Server::start(&db).await;
    let _ = wake_samples(&a.url, &b.url, &admin, 20).await;
    let samples = wake_samples(&a.url, &b.url, &admin, 500).await;
    report("wake postgres, two processes", &samples);
}

/// The `instructions` mode: see the module's documentation.
async fn instructions() {
    if let Some(why) = callgrind::unavailable() {
        println!("instructions: skipped: {why}");
        return;
    }
    let bin = std::env::var("CLARIFY_BENCH_BIN_A").unwrap_or_else(|_| BIN.to_owned());
    let n = std::env::var("CLARIFY_BENCH_INSTRUCTIONS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(200);
    // Kept after the run, for callgrind_annotate.
    let dir = std::env::temp_dir().join(format!("clarify-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    match callgrind::count(&bin, &dir, 50, n).await {
        Ok(c) => println!(
            "instructions ({bin}, SQLite, {n} creates and {n} round trips): {} per HTTP create, {} per HTTP answer, {} per round trip; idle, {} per second; less the clock's work, {} per create and {} per answer; profiles {} and {}",
            c.create,
            c.answer,
            c.round_trip(),
            c.idle_per_second,
            c.less_clock.0,
            c.less_clock.1,
            c.profiles.0.display(),
            c.profiles.1.display()
        ),
        Err(e) => println!("instructions: failed: {e}"),
    }
}

/// A `/proc/PID/status` field in KiB (0 when unreadable).
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    // A crowd process of the `fleet` benchmark (see `fleet`).
    if let Ok(spec) = std::env::var("CLARIFY_BENCH_CROWD") {
        fleet::crowd(&spec).await;
        return;
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let all = args.is_empty();
    let want = |name: &str| all || args.iter().any(|a| a == name);
    let dir = std::env::temp_dir().join(format!("clarify-bench-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    if want("roundtrip") {
        match std::env::var("CLARIFY_BENCH_BIN_B") {
            Ok(other) if !other.is_empty() => roundtrip_against(&dir, &other).await,
            _ => {
                roundtrip(&dir, BIN, "", 32, Duration::from_secs(10)).await;
            }
        }
    }
    if want("wake") {
        wake(&dir).await;
    }
    if want("pg-wake") {
        pg_wake().await;
    }
    if args.iter().any(|a| a == "hook") {
        hook::hook(&dir).await;
    }
    if args.iter().any(|a| a == "footprint") {
        footprint::footprint(&dir).await;
    }
    if args.iter().any(|a| a == "display") {
        display::display(&dir).await;
    }
    if args.iter().any(|a| a == "instructions") {
        instructions().await;
    }
    if args.iter().any(|a| a == "rules") {
        rules(&dir).await;
    }
    if args.iter().any(|a| a == "otlp") {
        otlp(&dir).await;
    }
    if args.iter().any(|a| a == "fleet") {
        let sizes = std::env::var("CLARIFY_BENCH_FLEET").unwrap_or_else(|_| "1000,5000".into());
        let mode = fleet::Mode::from_env();
        for n in sizes
            .split(',')
            .filter_map(|n| n.trim().parse::<usize>().ok())
        {
            fleet::fleet(&dir, mode, n).await;
        }
    }
    if args.iter().any(|a| a == "compare") {
        match std::env::var("CLARIFY_BENCH_BIN_B") {
            Ok(base) if !base.is_empty() => compare::compare(&dir, &base).await,
            _ => println!("compare: skipped: CLARIFY_BENCH_BIN_B names the base binary"),
        }
    }
    if args.iter().any(|a| a == "clients") {
        for clients in [1, 64, 1024] {
            roundtrip(&dir, BIN, "", clients, Duration::from_secs(5)).await;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
