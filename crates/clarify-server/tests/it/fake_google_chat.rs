//! A fake Google on 127.0.0.1: the OAuth token endpoint (checking the service account's signed
//! JWT assertion), the Chat system account's certificates (a map of key id to X.509
//! certificate, as Google publishes them), and the Chat API's messages (create, and patch with
//! an update mask), which check the token the endpoint gave; and events signed as Google Chat
//! signs them for an app whose audience is its project number.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde_json::{Value, json};

use crate::fake_calls::Calls;

pub const PROJECT: &str = "428613720593";
pub const SPACE: &str = "spaces/AAAAops1234";
pub const CLIENT_EMAIL: &str = "clarify@acme-chat.iam.gserviceaccount.com";
pub const KID: &str = "chat-test-key-1";
const ACCESS_TOKEN: &str = "ya29.fake-chat-token";
pub const PLATFORM_KEY: &str = include_str!("fixtures/platform-test-key.pem");
pub const FORGER_KEY: &str = include_str!("fixtures/forger-test-key.pem");
const PLATFORM_CERT: &str = include_str!("fixtures/platform-test-cert.pem");

/// The service account's JSON key (its key is the test key the fake's certificate holds).
pub fn credentials() -> String {
    json!({"type": "service_account", "project_id": "acme-chat", "private_key_id": "k1",
           "private_key": PLATFORM_KEY, "client_email": CLIENT_EMAIL,
           "token_uri": "https://oauth2.googleapis.com/token"})
    .to_string()
}

#[derive(Default)]
struct Recorded {
    calls: Calls,
    posted: Mutex<Vec<String>>,
    tokens_issued: AtomicUsize,
    next_id: AtomicU64,
    throttle: AtomicUsize,
}

pub struct FakeGoogle {
    pub base: String,
    state: Arc<Recorded>,
}

impl FakeGoogle {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let token_url = format!("{base}/token");
        let app = axum::Router::new()
            .route(
                "/token",
                axum::routing::post({
                    let token_url = token_url.clone();
                    move |state: State<Arc<Recorded>>,
                          form: Form<std::collections::HashMap<String, String>>| {
                        issue_token(state, form, token_url.clone())
                    }
                }),
            )
            .route(
                "/certs",
                axum::routing::get(|| async {
                    Json(json!({KID: PLATFORM_CERT, "another-key": PLATFORM_CERT}))
                }),
            )
            .route("/v1/spaces/{space}/messages", axum::routing::post(create))
            .route(
                "/v1/spaces/{space}/messages/{message}",
                axum::routing::patch(patch),
            )
            .with_state(Arc::clone(&state));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, state }
    }

    pub fn api_url(&self) -> String {
        format!("{}/v1", self.base)
    }

    pub fn token_url(&self) -> String {
        format!("{}/token", self.base)
    }

    pub fn certs_url(&self) -> String {
        format!("{}/certs", self.base)
    }

    pub fn throttle(&self, n: usize) {
        self.state.throttle.store(n, Ordering::SeqCst);
    }

    pub fn tokens_issued(&self) -> usize {
        self.state.tokens_issued.load(Ordering::SeqCst)
    }

    pub fn calls(&self, method: &str) -> Vec<(String, Value)> {
        self.state.calls.of(method)
    }

    pub async fn wait_for(&self, method: &str, n: usize) -> Vec<(String, Value)> {
        self.state.calls.wait_for(method, n).await
    }

    /// The names of the messages posted (replies included), in order.
    pub fn posted(&self) -> Vec<String> {
        self.state.posted.lock().expect("lock").clone()
    }
}

/// A token as Google Chat sends it to an app whose audience is `PROJECT`, signed with `key`,
/// with `claims` overriding the defaults.
pub fn token(key: &str, kid: &str, claims: Value) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut all = json!({"iss": "chat@system.gserviceaccount.com", "aud": PROJECT,
                         "iat": now - 10, "exp": now + 3_600});
    if let (Some(all), Some(over)) = (all.as_object_mut(), claims.as_object()) {
        for (k, v) in over {
            all.insert(k.clone(), v.clone());
        }
    }
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    encode(
        &header,
        &all,
        &EncodingKey::from_rsa_pem(key.as_bytes()).expect("test key"),
    )
    .expect("signed")
}

async fn issue_token(
    State(state): State<Arc<Recorded>>,
    Form(form): Form<std::collections::HashMap<String, String>>,
    token_url: String,
) -> Response {
    let refuse = |why: &str| {
        (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant", "error_description": why})),
        )
            .into_response()
    };
    if form.get("grant_type").map(String::as_str)
        != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    {
        return refuse("Invalid grant_type");
    }
    let Some(assertion) = form.get("assertion") else {
        return refuse("Missing assertion");
    };
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&[token_url]);
    validation.set_issuer(&[CLIENT_EMAIL]);
    let key = DecodingKey::from_rsa_pem(PLATFORM_CERT.as_bytes()).expect("cert");
    let Ok(data) = decode::<Value>(assertion, &key, &validation) else {
        return refuse("Invalid JWT Signature.");
    };
    if data.claims["scope"] != "https://www.googleapis.com/auth/chat.bot" {
        return refuse("Invalid scope");
    }
    state.tokens_issued.fetch_add(1, Ordering::SeqCst);
    Json(json!({"access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer"}))
        .into_response()
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"code": status.as_u16(), "message": message, "status": "INVALID_ARGUMENT"}})),
    )
        .into_response()
}

fn checked(
    state: &Recorded,
    headers: &HeaderMap,
    method: &str,
    path: String,
    body: &Value,
) -> Option<Response> {
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    if bearer != Some(&format!("Bearer {ACCESS_TOKEN}")) {
        return Some(refuse(
            StatusCode::UNAUTHORIZED,
            "Request had invalid authentication credentials.",
        ));
    }
    state.calls.record(method, path, body.clone());
    let throttled = state
        .throttle
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if throttled {
        let mut response = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "Resource has been exhausted (e.g. check quota).",
        );
        response
            .headers_mut()
            .insert("retry-after", axum::http::HeaderValue::from_static("1"));
        return Some(response);
    }
    if body.to_string().len() > 32_000 {
        return Some(refuse(StatusCode::BAD_REQUEST, "Message too large"));
    }
    None
}

async fn create(
    State(state): State<Arc<Recorded>>,
    Path(space): Path<String>,
    Query(query): Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/spaces/{space}/messages");
    if let Some(refused) = checked(&state, &headers, "POST", path, &body) {
        return refused;
    }
    if format!("spaces/{space}") != SPACE {
        return refuse(
            StatusCode::NOT_FOUND,
            "Space not found or the app is not a member.",
        );
    }
    let n = state.next_id.fetch_add(1, Ordering::SeqCst);
    let name = format!("{SPACE}/messages/m{n}");
    let thread = match body["thread"]["name"].as_str() {
        Some(t) if query.contains_key("messageReplyOption") => t.to_owned(),
        _ => format!("{SPACE}/threads/t{n}"),
    };
    state.posted.lock().expect("lock").push(name.clone());
    Json(
        json!({"name": name, "thread": {"name": thread}, "text": body["text"],
                "cardsV2": body["cardsV2"], "sender": {"name": "users/app", "type": "BOT"}}),
    )
    .into_response()
}

async fn patch(
    State(state): State<Arc<Recorded>>,
    Path((space, message)): Path<(String, String)>,
    Query(query): Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let name = format!("spaces/{space}/messages/{message}");
    if let Some(refused) = checked(&state, &headers, "PATCH", format!("/{name}"), &body) {
        return refused;
    }
    if query
        .get("updateMask")
        .is_none_or(|m| !m.split(',').any(|p| p == "cards_v2"))
    {
        return refuse(
            StatusCode::BAD_REQUEST,
            "updateMask must name the fields to update",
        );
    }
    if !state.posted.lock().expect("lock").contains(&name) {
        return refuse(StatusCode::NOT_FOUND, "Message not found.");
    }
    Json(json!({"name": name, "cardsV2": body["cardsV2"]})).into_response()
}
