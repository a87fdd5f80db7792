//! A server on a real socket for each test, and a small client.

#![allow(dead_code)]

use std::sync::Arc;

use clarify_server::{AppState, Config};
use clarify_store::{ManualClock, Role, Store, StoreOptions};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A running server bound to 127.0.0.1 on a free port.
pub struct TestServer {
    pub url: String,
    pub state: AppState,
    pub store: Store,
    /// An admin key of tenant `default`.
    pub admin: String,
    pub client: reqwest::Client,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// The value of the unlabelled metric `name` in a scrape of `/metrics`.
    pub async fn metric(&self, name: &str) -> f64 {
        let text = self
            .client
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics text");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
    }

    /// A server on a fresh memory store with default settings.
    pub async fn start() -> Self {
        Self::build("memory:", StoreOptions::default(), |_| {}).await
    }

    /// A server whose store uses `clock`; the reaper is off (tests expire through the store).
    pub async fn with_clock(clock: Arc<ManualClock>) -> Self {
        let options = StoreOptions {
            clock,
            reaper_interval: None,
            ..StoreOptions::default()
        };
        Self::build("memory:", options, |_| {}).await
    }

    pub async fn build(
        url: &str,
        options: StoreOptions,
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        let store = Store::open(url, options).await.expect("store opens");
        Self::on_store(store, configure).await
    }

    pub async fn on_store(store: Store, configure: impl FnOnce(&mut Config)) -> Self {
        Self::at("127.0.0.1:0", store, configure).await
    }

    /// A server on `store` listening at `address` (e.g. the one a stopped server used).
    pub async fn at(address: &str, store: Store, configure: impl FnOnce(&mut Config)) -> Self {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .expect("bind the address");
        Self::on_listener(listener, store, configure).await
    }

    /// A server on `store` serving `listener`, bound already (so its address could be given to
    /// a service the configuration names).
    pub async fn on_listener(
        listener: tokio::net::TcpListener,
        store: Store,
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let mut config = Config::new(url.clone());
        configure(&mut config);
        let admin = match store
            .create_key(
                &format!("admin-{}", suffix()),
                Role::Admin,
                "default",
                &clarify_store::Actor::system(),
            )
            .await
        {
            Ok(k) => k.token,
            Err(e) => panic!("admin key: {e}"),
        };
        let state = AppState::new(store.clone(), config).await.expect("state");
        let stop = CancellationToken::new();
        let signal = stop.clone();
        let task = tokio::spawn(clarify_server::serve(listener, state.clone(), async move {
            signal.cancelled().await
        }));
        Self {
            url,
            state,
            store,
            admin,
            client: clarify_client::http::client().expect("an HTTP client"),
            stop,
            task: Some(task),
        }
    }

    /// A new key of `role` in `tenant`.
    pub async fn key(&self, role: Role, name: &str, tenant: &str) -> String {
        self.store
            .create_key(name, role, tenant, &clarify_store::Actor::system())
            .await
            .expect("key created")
            .token
    }

    /// Sends a JSON request; returns the status and the parsed body (`Null` when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.client.request(method, format!("{}{path}", self.url));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let response = req.send().await.expect("request sent");
        let status = response.status();
        let text = response.text().await.expect("body read");
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, Some(token), None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(token), Some(body)).await
    }

    /// Creates a request as `token`; returns its record.
    pub async fn ask(&self, token: &str, body: Value) -> Value {
        let (status, record) = self.post("/v1/requests", token, body).await;
        assert_eq!(status, StatusCode::CREATED, "{record}");
        record
    }

    /// Stops the server gracefully; returns its store and address, to start another on them.
    pub async fn halt(self) -> (Store, String) {
        let store = self.store.clone();
        let address = self.url.trim_start_matches("http://").to_owned();
        self.stop().await;
        (store, address)
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            task.await
                .expect("server task")
                .expect("server stopped cleanly");
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A short random suffix for names that must not collide in a shared database.
/// Request `id` as the admin reads it.
pub async fn status_of(s: &TestServer, id: &str) -> Value {
    s.get(&format!("/v1/requests/{id}"), &s.admin).await.1
}

/// An agent long-polling on `id`; its outcome once it wakes.
pub fn waiting(s: &TestServer, id: &str) -> tokio::task::JoinHandle<Value> {
    let client = s.client.clone();
    let url = format!("{}/v1/requests/{id}/wait?timeout_seconds=30", s.url);
    let key = s.admin.clone();
    tokio::spawn(async move {
        let r = client.get(url).bearer_auth(key).send().await.expect("wait");
        assert!(r.status().is_success());
        r.json().await.expect("json")
    })
}

/// An agent long-polling on `id`, for a latency figure: when it woke, and the moment (a few
/// milliseconds after it began waiting) from which to count.
pub async fn timed_wait(
    s: &TestServer,
    id: &str,
) -> (
    tokio::task::JoinHandle<std::time::Instant>,
    std::time::Instant,
) {
    let client = s.client.clone();
    let url = format!("{}/v1/requests/{id}/wait?timeout_seconds=30", s.url);
    let key = s.admin.clone();
    let agent = tokio::spawn(async move {
        let r = client.get(url).bearer_auth(key).send().await.expect("wait");
        let woke = std::time::Instant::now();
        assert!(r.status().is_success());
        woke
    });
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    (agent, std::time::Instant::now())
}

/// The `refused` events of request `id` in the audit chain, oldest first: the answers a
/// channel refused because their sender may not answer.
pub async fn refusals(s: &TestServer, id: &str) -> Vec<Value> {
    let audit = s.get("/v1/audit?limit=1000", &s.admin).await.1;
    audit["events"]
        .as_array()
        .expect("the audit page's events")
        .iter()
        .filter(|e| e["request_id"] == id && e["kind"] == "refused")
        .cloned()
        .collect()
}

pub fn suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{}{n}", std::process::id())
}

/// The error code of an error body.
pub fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<no error code>")
}

/// Prints the p50 and p99 of `durations` in milliseconds, as the latency measurements report.
pub fn print_percentiles(name: &str, mut durations: Vec<std::time::Duration>) {
    durations.sort();
    let p = |q: f64| {
        durations
            .get(((durations.len() as f64 * q) as usize).min(durations.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "{name}: p50 {:.2} ms, p99 {:.2} ms ({} runs)",
        p(0.5),
        p(0.99),
        durations.len()
    );
}

/// Store options that announce a request on the channels of every route it matches.
pub fn announcing_by(routes: Vec<clarify_channels::Route>) -> StoreOptions {
    StoreOptions {
        announce: Some(clarify_store::Announce(Arc::new(
            move |tenant: &str, request: &_| {
                clarify_channels::channels_for(&routes, tenant, request)
            },
        ))),
        ..StoreOptions::default()
    }
}

/// Store options that announce every request on `channels`.
pub fn announcing(channels: &[&str]) -> StoreOptions {
    announcing_by(vec![clarify_channels::Route {
        channels: channels.iter().map(|c| (*c).to_owned()).collect(),
        ..clarify_channels::Route::default()
    }])
}
