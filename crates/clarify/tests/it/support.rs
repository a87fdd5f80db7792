//! Spawning `clarify serve` processes and talking to them.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_clarify");

/// A `clarify serve` process.
pub struct Server {
    child: Child,
    pub url: String,
    pub port: u16,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `clarify serve` on a free port and waits until it answers `/healthz`.
    pub async fn start(db: &str, extra: &[&str]) -> Self {
        Self::start_on(free_port(), db, extra).await
    }

    pub async fn start_on(port: u16, db: &str, extra: &[&str]) -> Self {
        Self::start_listening(&format!("127.0.0.1:{port}"), port, db, extra).await
    }

    /// Starts `clarify serve --listen LISTEN`, where LISTEN is reached on loopback at `port`
    /// (0.0.0.0:PORT or 127.0.0.1:PORT).
    pub async fn start_listening(listen: &str, port: u16, db: &str, extra: &[&str]) -> Self {
        Self::spawn(BIN, listen, port, db, extra).await
    }

    /// Starts `binary serve` (another build of `clarify`, such as the previous release's) on a
    /// free port and waits until it answers `/healthz`.
    pub async fn start_binary(binary: &Path, db: &str, extra: &[&str]) -> Self {
        let port = free_port();
        let binary = binary.to_str().expect("the binary's path is UTF-8");
        Self::spawn(binary, &format!("127.0.0.1:{port}"), port, db, extra).await
    }

    async fn spawn(binary: &str, listen: &str, port: u16, db: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(binary)
            .args(["serve", "--listen", listen, "--db", db])
            .args(extra)
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{binary} serve does not start: {e}"));
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(pipe) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                    s.push_str(&line);
                    s.push('\n');
                }
            });
        }
        let url = format!("http://127.0.0.1:{port}");
        let mut server = Self {
            child,
            url,
            port,
            stderr,
        };
        server.wait_healthy().await;
        server
    }

    async fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = clarify_client::http::client().expect("an HTTP client");
        loop {
            if let Ok(r) = client.get(format!("{}/healthz", self.url)).send().await
                && r.status().is_success()
            {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("clarify serve exited with {status}: {}", self.stderr());
            }
            assert!(
                Instant::now() < deadline,
                "clarify serve did not start: {}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The first word the process wrote to stderr that `fits`, waiting for it a while: stderr is
    /// read by a thread of its own, which may not have caught up when the server answers.
    pub async fn printed(&self, fits: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(word) = self.stderr().split_whitespace().find(|w| fits(w)) {
                return word.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "nothing expected was printed: {}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The first admin key, which the first start prints.
    pub async fn admin_key(&self) -> String {
        self.printed(|w| w.starts_with("ck_")).await
    }

    /// Everything the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no chance to clean up.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL sent");
        self.child.wait().expect("reaped");
    }

    /// SIGTERM: a graceful shutdown.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// Waits for the process to exit; its exit code.
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on right now.
/// A round-robin TCP proxy on loopback: each new connection goes to the next backend that
/// accepts one, as a load balancer does once a stopped instance is out of its endpoints.
/// Backends join while it runs (a new instance becoming ready), and it counts the connections
/// each one took. Hand-written: it is a dozen lines, and what the tests need is exactly this.
pub struct RoundRobin {
    pub url: String,
    backends: Arc<Mutex<Vec<SocketAddr>>>,
    taken: Arc<Mutex<HashMap<SocketAddr, usize>>>,
}

impl RoundRobin {
    pub async fn start(backends: Vec<SocketAddr>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let backends = Arc::new(Mutex::new(backends));
        let taken = Arc::new(Mutex::new(HashMap::new()));
        let next = Arc::new(AtomicUsize::new(0));
        let (list, counts) = (Arc::clone(&backends), Arc::clone(&taken));
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let first = next.fetch_add(1, Ordering::Relaxed);
                let backends: Vec<SocketAddr> =
                    list.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let counts = Arc::clone(&counts);
                tokio::spawn(async move {
                    for i in 0..backends.len() {
                        let backend = backends[(first + i) % backends.len()];
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(backend).await {
                            *counts
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .entry(backend)
                                .or_insert(0) += 1;
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        Self {
            url: format!("http://{addr}"),
            backends,
            taken,
        }
    }

    /// Sends new connections to `backend` too, in turn with the others.
    pub fn add(&self, backend: SocketAddr) {
        self.backends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(backend);
    }

    /// How many connections `backend` took.
    pub fn taken(&self, backend: SocketAddr) -> usize {
        self.taken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&backend)
            .copied()
            .unwrap_or(0)
    }
}

impl Server {
    /// Where the proxy reaches this instance.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Runs `clarify ARGS`; returns (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    run_command(Command::new(BIN).args(args))
}

/// Runs `command` (a `clarify` with its arguments and environment) without colours; returns
/// (exit code, stdout, stderr).
pub fn run_command(command: &mut Command) -> (i32, String, String) {
    let out = command.env("NO_COLOR", "1").output().expect("clarify runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Creates a key with `clarify keys create`, in a new store when `db` names none yet (tests
/// make their keys before the server starts); returns the key.
pub fn create_key(db: &str, role: &str, name: &str, tenant: &str) -> String {
    let (code, stdout, stderr) = run(&[
        "keys", "create", "--db", db, "--role", role, "--name", name, "--tenant", tenant,
        "--create",
    ]);
    assert_eq!(code, 0, "keys create failed: {stderr}");
    let key = stdout.trim().to_owned();
    assert!(
        key.starts_with("ck_") && !key.contains('\n'),
        "the key alone on stdout: {stdout:?}"
    );
    key
}

/// A fresh directory for one test's database.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "clarify-it-{name}-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

pub fn sqlite_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("clarify.db").display())
}

pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    u64::from(nanos) * 1000 + N.fetch_add(1, Ordering::Relaxed)
}

/// A small HTTP client bound to one server and key.
#[derive(Clone)]
pub struct Api {
    pub url: String,
    pub key: String,
    pub client: reqwest::Client,
}

impl Api {
    pub fn new(url: &str, key: &str) -> Self {
        Self {
            url: url.to_owned(),
            key: key.to_owned(),
            client: clarify_client::http::client().expect("an HTTP client"),
        }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.key)
            .send()
            .await
            .expect("sent");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.key)
            .json(&body)
            .send()
            .await
            .expect("sent");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }
}

/// A fake ntfy server that records each push's JSON.
pub async fn fake_ntfy() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    let pushes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&pushes);
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |body: String| {
            let seen = std::sync::Arc::clone(&seen);
            async move {
                let value: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                seen.lock().unwrap_or_else(|p| p.into_inner()).push(value);
                axum::Json(serde_json::json!({"id": "m1", "event": "message"}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, pushes)
}
