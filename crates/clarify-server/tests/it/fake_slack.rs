//! A fake Slack on 127.0.0.1 that speaks Slack's wire formats: the Web API methods clarify calls
//! (bearer token checked, `"ok": false` errors, `429` with `Retry-After` on demand), a Socket
//! Mode WebSocket (hello, envelopes, acknowledgements, disconnect), and interactions signed as
//! Slack signs them.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};

use crate::fake_calls::Calls;
use sha2::Sha256;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

pub const BOT_TOKEN: &str = "xoxb-test-bot";
pub const APP_TOKEN: &str = "xapp-test-app";
pub const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub const CHANNEL: &str = "C0CLARIFY";

#[derive(Default)]
struct Recorded {
    calls: Calls,
    /// Answer 429 (Retry-After: 1) to this many `chat.postMessage` calls first.
    throttle: AtomicUsize,
    next_ts: AtomicUsize,
    next_trigger: AtomicUsize,
    posted: Mutex<HashSet<String>>,
    triggers: Mutex<HashSet<String>>,
    opened: AtomicUsize,
    /// The connected Socket Mode client's outbox, and the acknowledgements it sent.
    socket: Mutex<Option<mpsc::UnboundedSender<Message>>>,
    acks: Mutex<Vec<Value>>,
    socket_url: Mutex<String>,
}

/// A fake Slack; stops with the test's runtime.
pub struct FakeSlack {
    pub api_url: String,
    state: Arc<Recorded>,
}

impl FakeSlack {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        state.next_ts.store(100, Ordering::SeqCst);
        let app = axum::Router::new()
            .route("/api/{method}", axum::routing::post(web_api))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let api_url = format!("http://{}/api", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        // Socket Mode: a WebSocket server of its own.
        let sockets = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        *state.socket_url.lock().expect("lock") = format!(
            "ws://{}/link/?ticket=fake",
            sockets.local_addr().expect("addr")
        );
        let for_sockets = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = sockets.accept().await {
                let state = Arc::clone(&for_sockets);
                tokio::spawn(serve_socket(state, tcp));
            }
        });
        Self { api_url, state }
    }

    /// The next `n` `chat.postMessage` calls are rate limited.
    pub fn throttle(&self, n: usize) {
        self.state.throttle.store(n, Ordering::SeqCst);
    }

    /// The arguments of the calls to `method` so far.
    pub fn calls_to(&self, method: &str) -> Vec<Value> {
        self.state
            .calls
            .of(method)
            .into_iter()
            .map(|(_, args)| args)
            .collect()
    }

    /// Waits until `n` calls to `method` were made; their arguments.
    pub async fn wait_for(&self, method: &str, n: usize) -> Vec<Value> {
        let found = self.state.calls.wait_for(method, n).await;
        found.into_iter().map(|(_, args)| args).collect()
    }

    /// A trigger id as an interaction carries; `views.open` accepts it once.
    pub fn trigger_id(&self) -> String {
        let id = format!(
            "trig.{}",
            self.state.next_trigger.fetch_add(1, Ordering::SeqCst)
        );
        self.state.triggers.lock().expect("lock").insert(id.clone());
        id
    }

    /// How many times `apps.connections.open` was called.
    pub fn connections_opened(&self) -> usize {
        self.state.opened.load(Ordering::SeqCst)
    }

    /// Waits for a Socket Mode client to be connected.
    pub async fn wait_connected(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.state.socket.lock().expect("lock").is_none() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no Socket Mode client connected"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Sends an envelope to the connected client.
    pub fn send_envelope(&self, id: &str, kind: &str, payload: Value) {
        let envelope = json!({"envelope_id": id, "type": kind, "payload": payload,
                              "accepts_response_payload": kind == "interactive"});
        self.send(Message::text(envelope.to_string()));
    }

    /// Asks the client to reconnect, as Slack does when it rotates connections.
    pub fn disconnect(&self) {
        self.send(Message::text(
            json!({"type": "disconnect", "reason": "refresh_requested",
                   "debug_info": {"host": "applink-fake"}})
            .to_string(),
        ));
        *self.state.socket.lock().expect("lock") = None;
    }

    fn send(&self, message: Message) {
        let socket = self.state.socket.lock().expect("lock");
        socket
            .as_ref()
            .expect("a connected client")
            .send(message)
            .expect("the socket is open");
    }

    /// Waits for the acknowledgement of envelope `id`; its payload (`null` when none).
    pub async fn ack(&self, id: &str) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(ack) = self
                .state
                .acks
                .lock()
                .expect("lock")
                .iter()
                .find(|a| a["envelope_id"] == id)
            {
                return ack.get("payload").cloned().unwrap_or(Value::Null);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "envelope {id} was not acknowledged"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// How many acknowledgements of envelope `id` arrived.
    pub fn acks_of(&self, id: &str) -> usize {
        self.state
            .acks
            .lock()
            .expect("lock")
            .iter()
            .filter(|a| a["envelope_id"] == id)
            .count()
    }
}

/// `POST /api/{method}`: Slack's Web API, answering HTTP 200 with `"ok"`.
async fn web_api(
    State(state): State<Arc<Recorded>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let wanted = if method == "apps.connections.open" {
        APP_TOKEN
    } else {
        BOT_TOKEN
    };
    match token {
        None => return Json(json!({"ok": false, "error": "not_authed"})).into_response(),
        Some(t) if t != wanted => {
            return Json(json!({"ok": false, "error": "invalid_auth"})).into_response();
        }
        Some(_) => {}
    }
    let Ok(args) = serde_json::from_str::<Value>(&body) else {
        return Json(json!({"ok": false, "error": "invalid_json"})).into_response();
    };
    let fail = |error: &str| Json(json!({"ok": false, "error": error})).into_response();
    let arg = |k: &str| args[k].as_str().unwrap_or_default().to_owned();
    let answer = match method.as_str() {
        "chat.postMessage" => {
            if state
                .throttle
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", "1")],
                    Json(json!({"ok": false, "error": "ratelimited"})),
                )
                    .into_response();
            }
            if arg("channel").is_empty() {
                return fail("channel_not_found");
            }
            if arg("text").is_empty() && args["blocks"].is_null() {
                return fail("no_text");
            }
            let ts = format!(
                "1764000000.{:06}",
                state.next_ts.fetch_add(1, Ordering::SeqCst)
            );
            state
                .posted
                .lock()
                .expect("lock")
                .insert(format!("{}:{ts}", arg("channel")));
            json!({"ok": true, "channel": arg("channel"), "ts": ts,
                   "message": {"type": "message", "text": arg("text"), "ts": ts}})
        }
        "chat.update" => {
            let key = format!("{}:{}", arg("channel"), arg("ts"));
            if !state.posted.lock().expect("lock").contains(&key) {
                return fail("message_not_found");
            }
            json!({"ok": true, "channel": arg("channel"), "ts": arg("ts"), "text": arg("text")})
        }
        "chat.postEphemeral" => {
            if arg("user").is_empty() || arg("channel").is_empty() {
                return fail("user_not_in_channel");
            }
            json!({"ok": true, "message_ts": "1764000000.999999"})
        }
        "views.open" => {
            if !state
                .triggers
                .lock()
                .expect("lock")
                .remove(&arg("trigger_id"))
            {
                return fail("invalid_trigger_id");
            }
            json!({"ok": true, "view": {"id": "V0FAKE", "type": "modal"}})
        }
        "apps.connections.open" => {
            state.opened.fetch_add(1, Ordering::SeqCst);
            json!({"ok": true, "url": state.socket_url.lock().expect("lock").clone()})
        }
        _ => return fail("unknown_method"),
    };
    state.calls.record(&method, "", args);
    Json(answer).into_response()
}

/// One Socket Mode connection: hello, then the test's envelopes; acknowledgements recorded.
async fn serve_socket(state: Arc<Recorded>, tcp: tokio::net::TcpStream) {
    let Ok(socket) = tokio_tungstenite::accept_async(tcp).await else {
        return;
    };
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
    let hello = json!({"type": "hello", "num_connections": 1,
                       "debug_info": {"host": "applink-fake"},
                       "connection_info": {"app_id": "A0FAKE"}});
    if sink.send(Message::text(hello.to_string())).await.is_err() {
        return;
    }
    *state.socket.lock().expect("lock") = Some(tx);
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(m) => if sink.send(m).await.is_err() { return },
                None => return,
            },
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Text(t))) => {
                    if let Ok(ack) = serde_json::from_str::<Value>(&t) {
                        state.acks.lock().expect("lock").push(ack);
                    }
                }
                Some(Ok(_)) => {}
                _ => return,
            },
        }
    }
}

/// Slack's signature of `body` at `timestamp`.
pub fn signature(timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SIGNING_SECRET.as_bytes()).expect("key");
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("v0={hex}")
}

/// An interactivity body: form-encoded, one field `payload`.
pub fn interaction_body(payload: &Value) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload.to_string())
        .finish()
}

/// A `block_actions` payload for a click by `user` on the announcement `ts`.
pub fn block_actions(user: &str, trigger_id: &str, ts: &str, action: Value, state: Value) -> Value {
    json!({
        "type": "block_actions",
        "user": {"id": user, "username": "someone", "team_id": "T0FAKE"},
        "api_app_id": "A0FAKE",
        "team": {"id": "T0FAKE", "domain": "fake"},
        "trigger_id": trigger_id,
        "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL, "is_ephemeral": false},
        "channel": {"id": CHANNEL, "name": "ops"},
        "message": {"type": "message", "ts": ts},
        "state": {"values": state},
        "actions": [action],
    })
}

/// A `view_submission` payload of the modal with `private_metadata`.
pub fn view_submission(user: &str, private_metadata: &str, values: Value) -> Value {
    json!({
        "type": "view_submission",
        "user": {"id": user, "username": "someone", "team_id": "T0FAKE"},
        "team": {"id": "T0FAKE", "domain": "fake"},
        "view": {"id": "V0FAKE", "type": "modal", "callback_id": "clarify",
                 "private_metadata": private_metadata, "state": {"values": values}},
    })
}

/// An Events API callback: `user` typed `text` in the thread of message `thread_ts`.
pub fn thread_message(user: &str, text: &str, thread_ts: &str) -> Value {
    json!({
        "token": "legacy", "team_id": "T0FAKE", "api_app_id": "A0FAKE",
        "type": "event_callback", "event_id": "Ev0FAKE", "event_time": 1_764_000_000,
        "event": {"type": "message", "channel": CHANNEL, "user": user, "text": text,
                  "ts": "1764000100.000001", "thread_ts": thread_ts, "channel_type": "channel"},
    })
}
