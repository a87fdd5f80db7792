//! A fake WhatsApp Cloud API on 127.0.0.1: `POST <url>/<version>/<phone number id>/messages`
//! with the bearer token checked, answered as Meta answers (`{"messaging_product": "whatsapp",
//! "contacts": [...], "messages": [{"id": "wamid..."}]}`), or, for a number a test marks as
//! outside its 24-hour window, a free-form message refused with error 131047 as the Graph API
//! words it; and a sender of webhook notifications signed like Meta's (`X-Hub-Signature-256`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::fake_calls::Calls;

pub const ACCESS_TOKEN: &str = "EAAGtestTOKENforTHEfakeGRAPHapi";
pub const APP_SECRET: &str = "app-secret-0123456789abcdef";
pub const PHONE_NUMBER_ID: &str = "106540352242922";
pub const VERSION: &str = "v21.0";

#[derive(Default)]
struct Recorded {
    calls: Calls,
    next: AtomicU64,
    /// Numbers (digits) outside their window: free-form messages to them are refused.
    quiet: Mutex<Vec<String>>,
}

pub struct FakeWhatsAppCloud {
    pub api_url: String,
    state: Arc<Recorded>,
}

impl FakeWhatsAppCloud {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        let app = axum::Router::new()
            .route("/{version}/{phone}/messages", axum::routing::post(messages))
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

    /// Refuses free-form messages to `number` (`+4930…`) with error 131047 from now on.
    pub fn outside_window(&self, number: &str) {
        let digits: String = number.chars().filter(char::is_ascii_digit).collect();
        self.state.quiet.lock().expect("lock").push(digits);
    }

    /// Every message accepted so far, in order, with the id it was given.
    pub fn sent(&self) -> Vec<Value> {
        self.state
            .calls
            .of("sent")
            .into_iter()
            .map(|(_, m)| m)
            .collect()
    }

    /// Every message refused so far.
    pub fn refused(&self) -> Vec<Value> {
        self.state
            .calls
            .of("refused")
            .into_iter()
            .map(|(_, m)| m)
            .collect()
    }

    /// Waits until `n` messages were accepted; all of them.
    pub async fn wait_for(&self, n: usize) -> Vec<Value> {
        let found = self.state.calls.wait_for("sent", n).await;
        found.into_iter().map(|(_, m)| m).collect()
    }
}

async fn messages(
    State(state): State<Arc<Recorded>>,
    Path((version, phone)): Path<(String, String)>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let error = |status: StatusCode, code: i64, message: &str, details: &str| {
        let body = json!({"error": {"message": message, "type": "OAuthException", "code": code,
                          "error_data": {"messaging_product": "whatsapp", "details": details},
                          "fbtrace_id": "AbCdEf"}});
        (status, Json(body)).into_response()
    };
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer != Some(ACCESS_TOKEN) {
        return error(
            StatusCode::UNAUTHORIZED,
            190,
            "Invalid OAuth access token - Cannot parse access token",
            "",
        );
    }
    if version != VERSION || phone != PHONE_NUMBER_ID {
        return error(
            StatusCode::BAD_REQUEST,
            100,
            "Unsupported post request.",
            "no such phone number id",
        );
    }
    let Ok(mut message) = serde_json::from_str::<Value>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            100,
            "Invalid parameter",
            "not JSON",
        );
    };
    let to = message["to"].as_str().unwrap_or_default().to_owned();
    let kind = message["type"].as_str().unwrap_or_default().to_owned();
    let known = ["text", "interactive", "template"].contains(&kind.as_str());
    if message["messaging_product"] != "whatsapp" || to.is_empty() || !known {
        return error(
            StatusCode::BAD_REQUEST,
            100,
            "Invalid parameter",
            "bad message",
        );
    }
    if kind != "template" && state.quiet.lock().expect("lock").contains(&to) {
        state.calls.record("refused", "", message);
        return error(
            StatusCode::BAD_REQUEST,
            131_047,
            "Re-engagement message",
            "Message failed to send because more than 24 hours have passed since the customer \
             last replied to this number.",
        );
    }
    let id = format!(
        "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI{}",
        state.next.fetch_add(1, Ordering::SeqCst)
    );
    message["id"] = json!(id);
    state.calls.record("sent", "", message);
    Json(json!({
        "messaging_product": "whatsapp",
        "contacts": [{"input": to, "wa_id": to}],
        "messages": [{"id": id}],
    }))
    .into_response()
}

/// `X-Hub-Signature-256` of `body`, signed with `secret` as Meta signs it.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

/// A notification carrying `message` (given its type's fields) from `from` (`+4930…`).
pub fn notification(from: &str, message: Value) -> Value {
    static N: AtomicU64 = AtomicU64::new(0);
    let digits: String = from.chars().filter(char::is_ascii_digit).collect();
    let mut m = json!({
        "from": digits,
        "id": format!("wamid.IN{}", N.fetch_add(1, Ordering::SeqCst)),
        "timestamp": "1764000000",
    });
    if let (Some(m), Some(fields)) = (m.as_object_mut(), message.as_object()) {
        m.extend(fields.clone());
    }
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{
        "field": "messages",
        "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881", "phone_number_id": PHONE_NUMBER_ID},
            "contacts": [{"profile": {"name": "Someone"}, "wa_id": digits}],
            "messages": [m],
        },
    }]}]})
}

/// Posts `body` to `hook_url` signed with `secret` (or with no signature); the status.
pub async fn post(hook_url: &str, body: &Value, secret: Option<&str>) -> reqwest::StatusCode {
    let raw = serde_json::to_vec(body).expect("json");
    let mut request = clarify_client::http::client()
        .expect("an HTTP client")
        .post(hook_url)
        .header("content-type", "application/json");
    if let Some(secret) = secret {
        request = request.header("x-hub-signature-256", signature(secret, &raw));
    }
    request.body(raw).send().await.expect("hook").status()
}
