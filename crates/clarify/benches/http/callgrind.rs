//! Instructions per HTTP create and per HTTP answer, server side: a `clarify serve` on a fresh
//! SQLite file runs under `valgrind --tool=callgrind`, one client (this process) sends a plain
//! request and its answer over keep-alive for a warm-up, then the counters are zeroed
//! (`callgrind_control -z`), `n` creates are sent one after another and the counters dumped
//! (`callgrind_control -d`), then `n` round trips (a create, then its answer, as the `roundtrip`
//! benchmark's clients do) and another dump. Each dump holds every thread's instructions in its
//! window: the handlers, the store's writer, the event hub, the background tasks; divided by
//! `n`, they are what one create and one round trip cost, and an answer is their difference.
//! (Answers are not counted in a window of their own: the server wakes its push worker after an
//! answer when it has not read the tenant's push subscriptions for a second, which a window of
//! answers alone would pay for each answer under valgrind's slowness, and a loaded server
//! never does.)
//! The windows also hold what the server does by the clock meanwhile (pollers, checkpoints);
//! [`Count::idle_per_second`] measures that alone, so a reader can see it is small.
//!
//! A count does not move with the machine's load (valgrind runs the server's threads one at a
//! time on a simulated processor), so it compares builds across runs and machines of the same
//! architecture. Used by the HTTP benchmark's `instructions` and `compare` modes and by the
//! budget test (`tests/it/instructions.rs`), which includes this file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The request each create sends, and the answer each answer sends (those of the HTTP
/// benchmark's `roundtrip`).
const ASK: &[u8] = br#"{"question":"Deploy?","choices":["yes","no"]}"#;
const ANSWER: &[u8] = br#"{"option":"yes"}"#;

/// What one count measured.
#[derive(Debug, Clone)]
pub struct Count {
    /// Instructions per `POST /v1/requests`.
    pub create: u64,
    /// Instructions per `POST /v1/requests/{id}/answer`: a round trip's less a create's.
    pub answer: u64,
    /// Instructions per second the server spent with no request at all (its clock work).
    pub idle_per_second: u64,
    /// [`Count::create`] and [`Count::answer`] less the clock's work their windows held (the
    /// idle rate times each window's length): what a loaded machine, which makes the windows
    /// longer, does not move.
    pub less_clock: (u64, u64),
    /// The callgrind dumps of the creates' and the round trips' windows, for
    /// `callgrind_annotate`.
    pub profiles: (PathBuf, PathBuf),
}

impl Count {
    /// Instructions per round trip (a create and its answer).
    pub fn round_trip(&self) -> u64 {
        self.create + self.answer
    }
}

/// Why a count cannot run here (valgrind or `callgrind_control` missing), if it cannot.
pub fn unavailable() -> Option<String> {
    for tool in ["valgrind", "callgrind_control"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Some(format!(
                "{tool} is not installed (Debian: apt-get install valgrind)"
            ));
        }
    }
    None
}

/// The server under callgrind; killed when dropped.
struct Profiled {
    child: Child,
    url: String,
}

impl Drop for Profiled {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Counts the instructions of `n` creates and `n` answers by the `clarify` at `bin`, after
/// `warmup` round trips, on a fresh SQLite file in `dir` (where the dumps are written too).
pub async fn count(bin: &str, dir: &Path, warmup: usize, n: usize) -> Result<Count, String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUN: AtomicU64 = AtomicU64::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let n = n.max(1);
    let db = format!(
        "sqlite://{}",
        dir.join(format!("callgrind-{run}.db")).display()
    );
    let key = admin_key(bin, &db)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))?;
    let out = dir.join(format!("callgrind-{run}.out"));
    let child = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            &format!("--callgrind-out-file={}", out.display()),
            "--dump-instr=no",
        ])
        .arg(bin)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--db",
            &db,
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("valgrind did not start: {e}"))?;
    let server = Profiled {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let pid = server.child.id();
    let client = clarify_client::http::client().map_err(|e| format!("no HTTP client: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(180);
    while client
        .get(format!("{}/healthz", server.url))
        .send()
        .await
        .is_err()
    {
        if Instant::now() > deadline {
            return Err("the server under callgrind did not answer /healthz in 180 s".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let auth = format!("Bearer {key}");
    let send = async |url: String, body: &'static [u8]| -> Result<Vec<u8>, String> {
        let r = client
            .post(&url)
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("POST {url}: {e}"))?;
        let status = r.status();
        let bytes = r.bytes().await.map_err(|e| format!("POST {url}: {e}"))?;
        if !status.is_success() {
            return Err(format!(
                "POST {url}: {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        Ok(bytes.to_vec())
    };
    let create_url = format!("{}/v1/requests", server.url);
    let answer_url = |id: &str| format!("{}/v1/requests/{id}/answer", server.url);
    let created_id = |body: &[u8]| -> Result<String, String> {
        let value: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("a create's response: {e}"))?;
        value["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| "a create's response has no id".to_owned())
    };
    for _ in 0..warmup {
        let id = created_id(&send(create_url.clone(), ASK).await?)?;
        send(answer_url(&id), ANSWER).await?;
    }
    // Let what the warm-up left behind (hand-offs, a checkpoint) finish before zeroing.
    let settle = Duration::from_millis(500);
    tokio::time::sleep(settle).await;
    control(pid, "-z")?;
    let started = Instant::now();
    for _ in 0..n {
        created_id(&send(create_url.clone(), ASK).await?)?;
    }
    tokio::time::sleep(settle).await;
    control(pid, "-d")?;
    let creates_took = started.elapsed();
    let started = Instant::now();
    for _ in 0..n {
        let id = created_id(&send(create_url.clone(), ASK).await?)?;
        send(answer_url(&id), ANSWER).await?;
    }
    tokio::time::sleep(settle).await;
    control(pid, "-d")?;
    let trips_took = started.elapsed();
    let idle = Duration::from_secs(2);
    tokio::time::sleep(idle).await;
    control(pid, "-d")?;
    let dump = |k: u32| PathBuf::from(format!("{}.{k}", out.display()));
    let (creates, trips, idle_total) = (total(&dump(1))?, total(&dump(2))?, total(&dump(3))?);
    let n = n as u64;
    let create = creates / n;
    let idle_per_second = (idle_total as f64 / idle.as_secs_f64()) as u64;
    let clock = |took: Duration| (idle_per_second as f64 * took.as_secs_f64()) as u64;
    let create_less_clock = creates.saturating_sub(clock(creates_took)) / n;
    let trip_less_clock = trips.saturating_sub(clock(trips_took)) / n;
    Ok(Count {
        create,
        answer: (trips / n).saturating_sub(create),
        idle_per_second,
        less_clock: (
            create_less_clock,
            trip_less_clock.saturating_sub(create_less_clock),
        ),
        profiles: (dump(1), dump(2)),
    })
}

/// A new admin key in a new store at `db`, made by `bin`.
fn admin_key(bin: &str, db: &str) -> Result<String, String> {
    let out = Command::new(bin)
        .args([
            "keys",
            "create",
            "--db",
            db,
            "--role",
            "admin",
            "--name",
            "callgrind",
            "--tenant",
            "default",
            "--create",
        ])
        .output()
        .map_err(|e| format!("{bin} keys create: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{bin} keys create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Sends `callgrind_control ARG PID` and waits for it to be done.
fn control(pid: u32, arg: &str) -> Result<(), String> {
    let out = Command::new("callgrind_control")
        .args([arg, &pid.to_string()])
        .output()
        .map_err(|e| format!("callgrind_control {arg}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains("OK") {
        return Err(format!(
            "callgrind_control {arg} {pid} failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// The instructions a callgrind dump counted (its `summary:` or `totals:` line).
fn total(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading the callgrind dump {}: {e}", path.display()))?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{} has no summary line", path.display()))
}
