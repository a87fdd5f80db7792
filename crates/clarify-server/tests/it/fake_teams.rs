//! A fake Microsoft identity platform and Bot Framework on 127.0.0.1: the client-credentials
//! token endpoint, the OpenID metadata and key set (with `endorsements`, as the Bot Framework
//! publishes them), and the Bot Connector's conversation activities (`POST`, reply, `PUT`),
//! which check the token the endpoint gave; and activities signed as the Bot Framework signs
//! them (RS256 with a test key whose public half the key set publishes).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

use crate::fake_calls::Calls;

pub const APP_ID: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";
pub const APP_PASSWORD: &str = "fake~teams~client~secret";
pub const TENANT: &str = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
pub const CONVERSATION: &str = "19:ops0000@thread.tacv2";
pub const KID: &str = "bf-test-key-1";
const ACCESS_TOKEN: &str = "fake-bot-connector-token";

/// The test key the fake's key set publishes.
pub const PLATFORM_KEY: &str = include_str!("fixtures/platform-test-key.pem");
/// A key nobody publishes.
pub const FORGER_KEY: &str = include_str!("fixtures/forger-test-key.pem");
const PLATFORM_JWK: &str = include_str!("fixtures/platform-test-jwk.json");

#[derive(Default)]
struct Recorded {
    calls: Calls,
    /// Activity ids posted to a conversation (not replies), in order.
    posted: Mutex<Vec<String>>,
    tokens_issued: AtomicUsize,
    key_fetches: AtomicUsize,
    next_id: AtomicU64,
    throttle: AtomicUsize,
}

pub struct FakeTeams {
    /// The base of everything: `<base>/token`, `<base>/openid`, `<base>/keys`, and the Bot
    /// Connector's service URL `<base>/connector/`.
    pub base: String,
    state: Arc<Recorded>,
}

impl FakeTeams {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let jwks_uri = format!("{base}/keys");
        let app = axum::Router::new()
            .route(
                "/{tenant}/oauth2/v2.0/token",
                axum::routing::post(issue_token),
            )
            .route(
                "/openid",
                axum::routing::get(move || {
                    let jwks_uri = jwks_uri.clone();
                    async move {
                        Json(json!({"issuer": "https://api.botframework.com",
                                    "jwks_uri": jwks_uri,
                                    "id_token_signing_alg_values_supported": ["RS256"]}))
                    }
                }),
            )
            .route("/keys", axum::routing::get(keys))
            .route(
                "/connector/v3/conversations/{conversation}/activities",
                axum::routing::post(send),
            )
            .route(
                "/connector/v3/conversations/{conversation}/activities/{activity}",
                axum::routing::post(reply).put(update),
            )
            .with_state(Arc::clone(&state));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, state }
    }

    pub fn login_url(&self) -> String {
        format!("{}/{TENANT}/oauth2/v2.0/token", self.base)
    }

    pub fn openid_url(&self) -> String {
        format!("{}/openid", self.base)
    }

    pub fn service_url(&self) -> String {
        format!("{}/connector/", self.base)
    }

    pub fn throttle(&self, n: usize) {
        self.state.throttle.store(n, Ordering::SeqCst);
    }

    pub fn tokens_issued(&self) -> usize {
        self.state.tokens_issued.load(Ordering::SeqCst)
    }

    pub fn key_fetches(&self) -> usize {
        self.state.key_fetches.load(Ordering::SeqCst)
    }

    pub fn calls(&self, method: &str) -> Vec<(String, Value)> {
        self.state.calls.of(method)
    }

    pub async fn wait_for(&self, method: &str, n: usize) -> Vec<(String, Value)> {
        self.state.calls.wait_for(method, n).await
    }

    pub fn posted(&self) -> Vec<String> {
        self.state.posted.lock().expect("lock").clone()
    }
}

/// A Bot Framework token for an activity from `service_url`, signed with `key` (PEM), with
/// `claims` overriding the defaults (`iss`, `aud`, `exp` an hour from `now`, `serviceurl`).
pub fn token(key: &str, kid: &str, service_url: &str, claims: Value) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut all = json!({"iss": "https://api.botframework.com", "aud": APP_ID,
                         "nbf": now - 60, "exp": now + 3_600, "serviceurl": service_url});
    if let (Some(all), Some(over)) = (all.as_object_mut(), claims.as_object()) {
        for (k, v) in over {
            if v.is_null() {
                all.remove(k);
            } else {
                all.insert(k.clone(), v.clone());
            }
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

async fn token_endpoint_checks(
    tenant: &str,
    form: &std::collections::HashMap<String, String>,
) -> bool {
    tenant == TENANT
        && form.get("grant_type").map(String::as_str) == Some("client_credentials")
        && form.get("client_id").map(String::as_str) == Some(APP_ID)
        && form.get("client_secret").map(String::as_str) == Some(APP_PASSWORD)
        && form.get("scope").map(String::as_str) == Some("https://api.botframework.com/.default")
}

async fn issue_token(
    State(state): State<Arc<Recorded>>,
    Path(tenant): Path<String>,
    Form(form): Form<std::collections::HashMap<String, String>>,
) -> Response {
    if !token_endpoint_checks(&tenant, &form).await {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."})),
        )
            .into_response();
    }
    state.tokens_issued.fetch_add(1, Ordering::SeqCst);
    Json(
        json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                "access_token": ACCESS_TOKEN}),
    )
    .into_response()
}

async fn keys(State(state): State<Arc<Recorded>>) -> Json<Value> {
    state.key_fetches.fetch_add(1, Ordering::SeqCst);
    let mut key: Value = serde_json::from_str(PLATFORM_JWK).expect("jwk fixture");
    key["kid"] = json!(KID);
    key["endorsements"] = json!(["msteams", "webchat"]);
    // A key that endorses another channel only.
    let mut other = key.clone();
    other["kid"] = json!("bf-test-key-skype");
    other["endorsements"] = json!(["skype"]);
    Json(json!({"keys": [key, other]}))
}

fn refuse(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {ACCESS_TOKEN}"))
}

fn checked(
    state: &Recorded,
    headers: &HeaderMap,
    method: &str,
    path: String,
    body: &Value,
) -> Option<Response> {
    if !authorized(headers) {
        return Some(refuse(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "Authorization has been denied for this request.",
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
            "Throttled",
            "Too many requests",
        );
        response
            .headers_mut()
            .insert("retry-after", axum::http::HeaderValue::from_static("1"));
        return Some(response);
    }
    let card = body["attachments"][0]["content"].clone();
    let is_card = body["attachments"][0]["contentType"]
        == "application/vnd.microsoft.card.adaptive"
        && card["type"] == "AdaptiveCard"
        && card["version"] == "1.5";
    if body["type"] != "message" || (!is_card && body["text"].as_str().is_none()) {
        return Some(refuse(
            StatusCode::BAD_REQUEST,
            "BadArgument",
            "Unknown activity type",
        ));
    }
    None
}

async fn send(
    State(state): State<Arc<Recorded>>,
    Path(conversation): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refused) = checked(
        &state,
        &headers,
        "POST",
        format!("/v3/conversations/{conversation}/activities"),
        &body,
    ) {
        return refused;
    }
    if conversation != CONVERSATION {
        return refuse(
            StatusCode::FORBIDDEN,
            "BotNotInConversationRoster",
            "The bot is not part of the conversation roster.",
        );
    }
    let id = format!("1{:012}", state.next_id.fetch_add(1, Ordering::SeqCst));
    state.posted.lock().expect("lock").push(id.clone());
    (StatusCode::CREATED, Json(json!({"id": id}))).into_response()
}

async fn reply(
    State(state): State<Arc<Recorded>>,
    Path((conversation, activity)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refused) = checked(
        &state,
        &headers,
        "POST",
        format!("/v3/conversations/{conversation}/activities/{activity}"),
        &body,
    ) {
        return refused;
    }
    if !state.posted.lock().expect("lock").contains(&activity) {
        return refuse(
            StatusCode::NOT_FOUND,
            "ActivityNotFound",
            "Unknown activity",
        );
    }
    let id = format!("2{:012}", state.next_id.fetch_add(1, Ordering::SeqCst));
    (StatusCode::CREATED, Json(json!({"id": id}))).into_response()
}

async fn update(
    State(state): State<Arc<Recorded>>,
    Path((conversation, activity)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refused) = checked(
        &state,
        &headers,
        "PUT",
        format!("/v3/conversations/{conversation}/activities/{activity}"),
        &body,
    ) {
        return refused;
    }
    if !state.posted.lock().expect("lock").contains(&activity) {
        return refuse(
            StatusCode::NOT_FOUND,
            "ActivityNotFound",
            "Unknown activity",
        );
    }
    Json(json!({"id": activity})).into_response()
}
