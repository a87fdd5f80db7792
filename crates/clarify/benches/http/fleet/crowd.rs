//! A crowd process of the `fleet` benchmark (this executable again, started with
//! `CLARIFY_BENCH_CROWD`): it holds the connections its spec names until killed, and reports
//! wakes and deliveries on stdout (see `fleet.rs`).

use std::io::Write as _;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::{Mode, unix_micros};

/// The crowd process: holds the connections its spec names until killed.
pub(crate) async fn crowd(spec: &str) {
    let spec: Value =
        serde_json::from_slice(&std::fs::read(spec).expect("crowd spec")).expect("crowd spec");
    let mode = Mode::of(spec["mode"].as_str().unwrap_or("wait"));
    let url = spec["url"].as_str().unwrap_or_default().to_owned();
    let key = spec["key"].as_str().unwrap_or_default().to_owned();
    let first = spec["first"].as_u64().unwrap_or(0) as usize;
    let count = spec["count"].as_u64().unwrap_or(0) as usize;
    let mcp_session = spec["mcp"].as_str() == Some("2025-06-18");
    let ids: Vec<String> = spec["ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let sources: Vec<IpAddr> = spec["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str()?.parse().ok())
        .collect();
    // A client per source address; none keeps idle connections, so each request in flight has
    // its own.
    let clients: Vec<reqwest::Client> = sources
        .iter()
        .map(|ip| {
            clarify_client::http::builder()
                .local_address(*ip)
                .pool_max_idle_per_host(0)
                .build()
                .expect("client")
        })
        .collect();
    let address = url.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    // Each subscriber's count of events and their delivery latencies (µs).
    type Heard = Arc<Mutex<(u64, Vec<u32>)>>;
    let mut subscribers: Vec<Heard> = Vec::new();
    // Connections per second, or 0 for all at once.
    let pace = spec["pace"].as_u64().unwrap_or(0);
    let started = tokio::time::Instant::now();
    for i in 0..count {
        if let Some(at) = (i as u64 * 1_000_000).checked_div(pace) {
            tokio::time::sleep_until(started + Duration::from_micros(at)).await;
        }
        let index = first + i;
        let client = clients[i % clients.len()].clone();
        let (url, key) = (url.clone(), key.clone());
        match mode {
            Mode::Idle | Mode::Used => {
                let socket = tokio::net::TcpSocket::new_v4().expect("socket");
                socket
                    .bind((sources[i % sources.len()], 0).into())
                    .expect("bound");
                let mut stream = socket
                    .connect(address.parse().expect("an address"))
                    .await
                    .expect("connected");
                if mode == Mode::Used {
                    healthz_once(&mut stream, &address).await;
                }
                held.push(stream);
            }
            Mode::Wait => {
                let id = ids[i].clone();
                tokio::spawn(async move {
                    loop {
                        let response = client
                            .get(format!("{url}/v1/requests/{id}/wait?timeout_seconds=60"))
                            .bearer_auth(&key)
                            .send()
                            .await;
                        match response {
                            Ok(r) if r.status().is_success() => {
                                let body: Value = r.json().await.unwrap_or(Value::Null);
                                if body["status"] != "pending" {
                                    println!("woke {index} {}", unix_micros());
                                    return;
                                }
                            }
                            // Refused or cut: try again shortly, as an agent would.
                            _ => tokio::time::sleep(Duration::from_millis(100)).await,
                        }
                    }
                });
            }
            Mode::Mcp => {
                tokio::spawn(async move {
                    if let Some(()) = ask_over_mcp(&client, &url, &key, index, mcp_session).await {
                        println!("woke {index} {}", unix_micros());
                    }
                });
            }
            Mode::Events => {
                let mine: Heard = Arc::default();
                subscribers.push(mine.clone());
                tokio::spawn(async move { subscribe(&client, &url, &key, mine).await });
            }
        }
    }
    if matches!(mode, Mode::Idle | Mode::Used) {
        println!("connected");
    }
    // Wait for `report` (events) or the end of stdin.
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = String::new();
    loop {
        line.clear();
        use tokio::io::AsyncBufReadExt as _;
        match stdin.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) if line.trim() == "report" => {
                let mut counts = Vec::new();
                let mut every: Vec<u32> = Vec::new();
                for heard in &subscribers {
                    let heard = heard.lock().expect("lock");
                    counts.push(heard.0);
                    every.extend_from_slice(&heard.1);
                }
                let fewest = counts.iter().copied().min().unwrap_or(0);
                let most = counts.iter().copied().max().unwrap_or(0);
                every.sort_unstable();
                let at = |p: f64| {
                    if every.is_empty() {
                        0
                    } else {
                        every[((every.len() as f64 - 1.0) * p).round() as usize]
                    }
                };
                println!(
                    "events {} {fewest} {most} {} {} {}",
                    counts.len(),
                    at(0.5),
                    at(0.99),
                    at(1.0)
                );
                let _ = std::io::stdout().flush();
            }
            Ok(_) => {}
        }
    }
}

/// One `GET /healthz` on `stream`, its response read to the end; the connection stays open.
async fn healthz_once(stream: &mut tokio::net::TcpStream, address: &str) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let head = format!("GET /healthz HTTP/1.1\r\nhost: {address}\r\n\r\n");
    stream
        .write_all(head.as_bytes())
        .await
        .expect("request sent");
    let mut got = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.expect("response read");
        assert!(n > 0, "the server closed the connection");
        got.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return;
            }
        }
    }
}

/// One `ask_human` over `/mcp`, to its end. `None` when the call failed.
async fn ask_over_mcp(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    index: usize,
    session: bool,
) -> Option<()> {
    let version = if session { "2025-06-18" } else { "2026-07-28" };
    let post = |body: Value, session_id: Option<&str>| {
        let mut request = client
            .post(format!("{url}/mcp"))
            .bearer_auth(key)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .header("mcp-method", body["method"].as_str().unwrap_or_default())
            .header(
                "mcp-name",
                body["params"]["name"].as_str().unwrap_or_default(),
            )
            .json(&body);
        if let Some(id) = session_id {
            request = request.header("mcp-session-id", id);
        }
        request.send()
    };
    let mut params =
        json!({"name": "ask_human", "arguments": {"question": format!("fleet {index}")}});
    let mut session_id = None;
    if session {
        let init = post(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "fleet", "version": "1"}}}),
            None,
        )
        .await
        .ok()?;
        session_id = Some(
            init.headers()
                .get("mcp-session-id")?
                .to_str()
                .ok()?
                .to_owned(),
        );
        let _ = init.bytes().await;
        let _ = post(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            session_id.as_deref(),
        )
        .await
        .ok()?
        .bytes()
        .await;
    } else {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": {"name": "fleet", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
    }
    let call = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
        session_id.as_deref(),
    )
    .await
    .ok()?;
    let body = call.bytes().await.ok()?;
    String::from_utf8_lossy(&body)
        .contains("\"result\"")
        .then_some(())
}

/// One `/v1/events` subscriber: counts `request.created` events and times each from the
/// `sent MICROS` in its question.
async fn subscribe(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    mine: Arc<Mutex<(u64, Vec<u32>)>>,
) {
    use futures_util::StreamExt as _;
    let Ok(response) = client
        .get(format!("{url}/v1/events"))
        .bearer_auth(key)
        .send()
        .await
    else {
        return;
    };
    let mut stream = response.bytes_stream();
    let mut rest = Vec::new();
    let finder = "\"text\":\"sent ";
    while let Some(Ok(chunk)) = stream.next().await {
        let now = unix_micros();
        rest.extend_from_slice(&chunk);
        // Whole events only: up to the last blank line.
        let Some(end) = rest.windows(2).rposition(|w| w == b"\n\n") else {
            continue;
        };
        let text = String::from_utf8_lossy(&rest[..end]);
        for event in text.split("\n\n") {
            if !event.contains("event: request.created") {
                continue;
            }
            if let Some(at) = event.find(finder) {
                let digits: String = event[at + finder.len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Ok(sent) = digits.parse::<u64>() {
                    let mut heard = mine.lock().expect("lock");
                    heard.0 += 1;
                    heard
                        .1
                        .push(now.saturating_sub(sent).min(u64::from(u32::MAX)) as u32);
                }
            }
        }
        rest.drain(..end + 2);
    }
}
