//! A fake Telegram Bot API on 127.0.0.1: `<url>/bot<token>/<method>` with the token checked,
//! `{"ok": true, "result": …}` answers shaped like Telegram's, flood control (`429` with
//! `parameters.retry_after`) on demand, and a long-polling `getUpdates` that hands out the
//! updates a test queues, forgetting those below the offset it is asked for.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::fake_calls::Calls;
use tokio::sync::Notify;

pub const BOT_ID: i64 = 7_000_000_001;
pub const BOT_TOKEN: &str = "7000000001:AAtestTOKENfortheFAKEbotapi";
pub const CHAT: i64 = -1_001_234_567_890;

#[derive(Default)]
struct Recorded {
    calls: Calls,
    /// Messages the bot sent, by id: what a reply's `reply_to_message` shows.
    sent: Mutex<Vec<Value>>,
    next_message: AtomicI64,
    next_update: AtomicI64,
    updates: Mutex<Vec<Value>>,
    arrived: Notify,
    /// Flood-control this many `sendMessage` calls first.
    throttle: AtomicUsize,
    offsets: Mutex<Vec<Option<i64>>>,
}

pub struct FakeTelegram {
    pub api_url: String,
    state: Arc<Recorded>,
}

impl FakeTelegram {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        state.next_message.store(100, Ordering::SeqCst);
        state.next_update.store(500, Ordering::SeqCst);
        let app = axum::Router::new()
            .route("/{bot}/{method}", axum::routing::post(bot_api))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let api_url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { api_url, state }
    }

    pub fn throttle(&self, n: usize) {
        self.state.throttle.store(n, Ordering::SeqCst);
    }

    pub fn calls_to(&self, method: &str) -> Vec<Value> {
        self.state
            .calls
            .of(method)
            .into_iter()
            .map(|(_, args)| args)
            .collect()
    }

    pub async fn wait_for(&self, method: &str, n: usize) -> Vec<Value> {
        let found = self.state.calls.wait_for(method, n).await;
        found.into_iter().map(|(_, args)| args).collect()
    }

    /// The offsets `getUpdates` was called with, in order.
    pub fn offsets(&self) -> Vec<Option<i64>> {
        self.state.offsets.lock().expect("lock").clone()
    }

    /// Queues an update (given its payload, e.g. `{"message": …}`); its `update_id`.
    pub fn push(&self, mut update: Value) -> i64 {
        let id = self.state.next_update.fetch_add(1, Ordering::SeqCst);
        update["update_id"] = json!(id);
        self.state.updates.lock().expect("lock").push(update);
        self.state.arrived.notify_waiters();
        id
    }

    /// The update a press of the button `data` on message `message_id` by `user` makes.
    pub fn press_update(&self, user: i64, message_id: i64, data: &str) -> Value {
        json!({"callback_query": {
            "id": format!("cq-{user}-{message_id}-{data}"),
            "from": {"id": user, "is_bot": false, "first_name": "Someone"},
            "chat_instance": "-4242",
            "message": self.message(message_id),
            "data": data,
        }})
    }

    pub fn press(&self, user: i64, message_id: i64, data: &str) -> i64 {
        self.push(self.press_update(user, message_id, data))
    }

    /// The update of `user` replying `text` to message `message_id`.
    pub fn reply_update(&self, user: i64, message_id: i64, text: &str) -> Value {
        let id = self.state.next_message.fetch_add(1, Ordering::SeqCst);
        json!({"message": {
            "message_id": id,
            "from": {"id": user, "is_bot": false, "first_name": "Someone"},
            "chat": {"id": CHAT, "type": "supergroup"},
            "date": 1_764_000_000,
            "text": text,
            "reply_to_message": self.message(message_id),
        }})
    }

    pub fn reply(&self, user: i64, message_id: i64, text: &str) -> i64 {
        self.push(self.reply_update(user, message_id, text))
    }

    /// A message the bot sent (as Telegram shows it in updates); a stranger's if it sent none.
    fn message(&self, message_id: i64) -> Value {
        self.state
            .sent
            .lock()
            .expect("lock")
            .iter()
            .find(|m| m["message_id"] == message_id)
            .cloned()
            .unwrap_or_else(|| {
                json!({"message_id": message_id, "date": 1_764_000_000,
                       "from": {"id": 5, "is_bot": false, "first_name": "Stranger"},
                       "chat": {"id": CHAT, "type": "supergroup"}, "text": "hello"})
            })
    }

    /// The message ids of `sendMessage` calls that went through, in order.
    pub fn sent_ids(&self) -> Vec<i64> {
        self.state
            .sent
            .lock()
            .expect("lock")
            .iter()
            .filter_map(|m| m["message_id"].as_i64())
            .collect()
    }
}

fn refuse(status: StatusCode, description: &str, retry_after: Option<u64>) -> Response {
    let mut body = json!({"ok": false, "error_code": status.as_u16(), "description": description});
    if let Some(seconds) = retry_after {
        body["parameters"] = json!({"retry_after": seconds});
    }
    (status, Json(body)).into_response()
}

async fn bot_api(
    State(state): State<Arc<Recorded>>,
    Path((bot, method)): Path<(String, String)>,
    body: String,
) -> Response {
    if bot.strip_prefix("bot") != Some(BOT_TOKEN) {
        return refuse(StatusCode::UNAUTHORIZED, "Unauthorized", None);
    }
    let Ok(args) = serde_json::from_str::<Value>(&body) else {
        return refuse(StatusCode::BAD_REQUEST, "Bad Request: invalid JSON", None);
    };
    if method != "getUpdates" {
        state.calls.record(&method, "", args.clone());
    }
    let ok = |result: Value| Json(json!({"ok": true, "result": result})).into_response();
    match method.as_str() {
        "sendMessage" => {
            let throttled = state
                .throttle
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if throttled {
                return refuse(
                    StatusCode::TOO_MANY_REQUESTS,
                    "Too Many Requests: retry after 1",
                    Some(1),
                );
            }
            if args["text"].as_str().is_none_or(str::is_empty) {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message text is empty",
                    None,
                );
            }
            let id = state.next_message.fetch_add(1, Ordering::SeqCst);
            let message = json!({
                "message_id": id,
                "from": {"id": BOT_ID, "is_bot": true, "first_name": "clarify", "username": "clarify_bot"},
                "chat": {"id": args["chat_id"].as_i64().unwrap_or(CHAT),
                         "type": "supergroup"},
                "date": 1_764_000_000,
                "text": args["text"],
            });
            state.sent.lock().expect("lock").push(message.clone());
            ok(message)
        }
        "editMessageText" | "editMessageReplyMarkup" => {
            let id = args["message_id"].as_i64();
            let known = id.is_some_and(|id| {
                state
                    .sent
                    .lock()
                    .expect("lock")
                    .iter()
                    .any(|m| m["message_id"] == id)
            });
            if !known {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message to edit not found",
                    None,
                );
            }
            ok(json!({"message_id": id, "chat": {"id": CHAT}, "text": args["text"]}))
        }
        "answerCallbackQuery" => ok(json!(true)),
        "getUpdates" => {
            let offset = args["offset"].as_i64();
            state.offsets.lock().expect("lock").push(offset);
            let wait = Duration::from_secs(args["timeout"].as_u64().unwrap_or(0));
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                let arrived = state.arrived.notified();
                let ready: Vec<Value> = {
                    let mut queue = state.updates.lock().expect("lock");
                    // Telegram forgets what lies below the offset: it was confirmed.
                    if let Some(offset) = offset {
                        queue.retain(|u| u["update_id"].as_i64().is_some_and(|i| i >= offset));
                    }
                    queue.clone()
                };
                if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
                    return ok(json!(ready));
                }
                let _ = tokio::time::timeout_at(deadline, arrived).await;
            }
        }
        _ => refuse(StatusCode::NOT_FOUND, "Not Found: method not found", None),
    }
}
