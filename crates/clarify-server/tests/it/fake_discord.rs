//! A fake Discord REST API on 127.0.0.1 (`POST /channels/{id}/messages`, `PATCH
//! /channels/{id}/messages/{id}`) that checks the bot token and user agent, answers with message
//! objects shaped like Discord's, and rate-limits on demand (`429` with `retry_after` in the
//! body); and interactions signed with a fixed Ed25519 test key, as Discord signs them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};

use crate::fake_calls::Calls;

pub const BOT_TOKEN: &str = "MTAwMDAwMDAwMDAwMDAwMDA.fake.discord-bot-token";
pub const CHANNEL: &str = "1300000000000000001";
/// The test application's Ed25519 seed; its public key goes into the channel's configuration.
const SEED: [u8; 32] = [42; 32];

pub fn public_key() -> String {
    hex(SigningKey::from_bytes(&SEED).verifying_key().as_bytes())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `X-Signature-Ed25519` header for `body` sent at `timestamp`.
pub fn signature(timestamp: &str, body: &str) -> String {
    let mut message = timestamp.as_bytes().to_vec();
    message.extend_from_slice(body.as_bytes());
    hex(&SigningKey::from_bytes(&SEED).sign(&message).to_bytes())
}

#[derive(Default)]
struct Recorded {
    calls: Calls,
    posted: Mutex<Vec<String>>,
    next_id: AtomicU64,
    throttle: AtomicUsize,
}

pub struct FakeDiscord {
    pub api_url: String,
    state: Arc<Recorded>,
}

impl FakeDiscord {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        state
            .next_id
            .store(1_300_000_000_000_000_100, Ordering::SeqCst);
        let app = axum::Router::new()
            .route(
                "/api/v10/channels/{channel}/messages",
                axum::routing::post(post_message),
            )
            .route(
                "/api/v10/channels/{channel}/messages/{message}",
                axum::routing::patch(edit_message),
            )
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let api_url = format!("http://{}/api/v10", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { api_url, state }
    }

    pub fn throttle(&self, n: usize) {
        self.state.throttle.store(n, Ordering::SeqCst);
    }

    /// The bodies of the calls with `method` so far (`POST` posts, `PATCH` edits).
    pub fn calls(&self, method: &str) -> Vec<(String, Value)> {
        self.state.calls.of(method)
    }

    pub async fn wait_for(&self, method: &str, n: usize) -> Vec<(String, Value)> {
        self.state.calls.wait_for(method, n).await
    }

    /// The ids of the messages posted so far, in order.
    pub fn posted(&self) -> Vec<String> {
        self.state.posted.lock().expect("lock").clone()
    }
}

fn refuse(status: StatusCode, message: &str, code: u64) -> Response {
    (status, Json(json!({"message": message, "code": code}))).into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    header("authorization") == Some(&format!("Bot {BOT_TOKEN}"))
        && header("user-agent").is_some_and(|ua| ua.starts_with("DiscordBot ("))
}

async fn post_message(
    State(state): State<Arc<Recorded>>,
    Path(channel): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return refuse(StatusCode::UNAUTHORIZED, "401: Unauthorized", 0);
    }
    state.calls.record(
        "POST",
        format!("/channels/{channel}/messages"),
        body.clone(),
    );
    let throttled = state
        .throttle
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if throttled {
        let mut response = (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({"message": "You are being rate limited.", "retry_after": 1.0, "global": false})),
        )
            .into_response();
        response
            .headers_mut()
            .insert("retry-after", axum::http::HeaderValue::from_static("1"));
        return response;
    }
    if body["content"]
        .as_str()
        .is_none_or(|c| c.is_empty() || c.chars().count() > 2_000)
    {
        return refuse(StatusCode::BAD_REQUEST, "Invalid Form Body", 50035);
    }
    let id = state.next_id.fetch_add(1, Ordering::SeqCst).to_string();
    state.posted.lock().expect("lock").push(id.clone());
    Json(
        json!({"id": id, "channel_id": channel, "type": 0, "content": body["content"],
                "components": body["components"], "author": {"id": "1", "bot": true}}),
    )
    .into_response()
}

async fn edit_message(
    State(state): State<Arc<Recorded>>,
    Path((channel, message)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return refuse(StatusCode::UNAUTHORIZED, "401: Unauthorized", 0);
    }
    state.calls.record(
        "PATCH",
        format!("/channels/{channel}/messages/{message}"),
        body.clone(),
    );
    if !state.posted.lock().expect("lock").contains(&message) {
        return refuse(StatusCode::NOT_FOUND, "Unknown Message", 10008);
    }
    Json(json!({"id": message, "channel_id": channel, "content": body["content"]})).into_response()
}
