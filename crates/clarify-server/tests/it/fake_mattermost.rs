//! A fake Mattermost server on 127.0.0.1: the REST API v4 calls clarify makes (`POST /posts`,
//! `PUT /posts/{id}/patch`, `POST /actions/dialogs/open`, `GET /users/{id}`), checking the bot
//! token and rate-limiting on demand (`429` with `Retry-After`); and, as Mattermost does, it
//! calls a button's integration URL with the button's stored context when someone presses it,
//! applies the `update` the integration answers with to the post, and posts a submitted
//! dialog to the dialog's URL with its `state`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::fake_calls::Calls;

pub const BOT_TOKEN: &str = "mm-fake-bot-token-6c1e9b";
pub const CHANNEL: &str = "4xp9fdt9tbfo7dsbbbse2s8p8c";

#[derive(Default)]
struct Recorded {
    calls: Calls,
    /// Post id → the post as it is now.
    posts: Mutex<BTreeMap<String, Value>>,
    /// Post ids in the order they were created.
    order: Mutex<Vec<String>>,
    /// Opened dialogs (the body of `dialogs/open`).
    dialogs: Mutex<Vec<Value>>,
    users: Mutex<BTreeMap<String, String>>,
    next_id: AtomicU64,
    throttle: AtomicUsize,
}

pub struct FakeMattermost {
    pub url: String,
    state: Arc<Recorded>,
    http: reqwest::Client,
}

/// What clarify answered to a press or a dialog submission.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl FakeMattermost {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        let app = axum::Router::new()
            .route("/api/v4/posts", axum::routing::post(create_post))
            .route("/api/v4/posts/{id}/patch", axum::routing::put(patch_post))
            .route(
                "/api/v4/actions/dialogs/open",
                axum::routing::post(open_dialog),
            )
            .route("/api/v4/users/{id}", axum::routing::get(user))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            state,
            http: clarify_client::http::client().expect("an HTTP client"),
        }
    }

    pub fn add_user(&self, id: &str, username: &str) {
        self.state
            .users
            .lock()
            .expect("lock")
            .insert(id.to_owned(), username.to_owned());
    }

    pub fn throttle(&self, n: usize) {
        self.state.throttle.store(n, Ordering::SeqCst);
    }

    pub async fn wait_for(&self, method: &str, n: usize) -> Vec<(String, Value)> {
        self.state.calls.wait_for(method, n).await
    }

    /// The ids of the posts created so far, in order (replies included).
    pub fn posted(&self) -> Vec<String> {
        self.state.order.lock().expect("lock").clone()
    }

    /// The post `id` as it is now.
    pub fn post(&self, id: &str) -> Value {
        self.state
            .posts
            .lock()
            .expect("lock")
            .get(id)
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// The ids of the post's actions (buttons and menus), in order.
    pub fn actions(&self, id: &str) -> Vec<String> {
        self.post(id)["props"]["attachments"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|a| a["actions"].as_array().cloned().unwrap_or_default())
            .filter_map(|a| a["id"].as_str().map(str::to_owned))
            .collect()
    }

    pub fn dialogs(&self) -> Vec<Value> {
        self.state.dialogs.lock().expect("lock").clone()
    }

    /// `user` presses the action `action` of post `post` (choosing `selected` in a menu), as
    /// Mattermost does: its stored integration is called with its context; an `update` in the
    /// answer replaces the post's message and props.
    pub async fn press(
        &self,
        post: &str,
        action: &str,
        user: &str,
        selected: Option<&str>,
    ) -> Answer {
        let found = self
            .post(post)
            .pointer("/props/attachments/0/actions")
            .and_then(Value::as_array)
            .and_then(|actions| actions.iter().find(|a| a["id"] == action).cloned())
            .unwrap_or_else(|| panic!("post {post} has no action {action}"));
        let mut context = found["integration"]["context"].clone();
        if let Some(selected) = selected {
            context["selected_option"] = json!(selected);
        }
        let url = found["integration"]["url"]
            .as_str()
            .expect("integration url")
            .to_owned();
        let trigger = format!(
            "trigger-{}",
            self.state.next_id.fetch_add(1, Ordering::SeqCst)
        );
        let body = json!({
            "user_id": user, "user_name": "someone", "channel_id": CHANNEL,
            "channel_name": "ops", "team_id": "team1", "team_domain": "acme",
            "post_id": post, "trigger_id": trigger,
            "type": found["type"], "data_source": "", "context": context,
        });
        let answer = self.integration(&url, &body).await;
        if let Some(update) = answer.body.get("update").filter(|u| u.is_object()) {
            let mut posts = self.state.posts.lock().expect("lock");
            if let Some(p) = posts.get_mut(post) {
                if let Some(message) = update.get("message") {
                    p["message"] = message.clone();
                }
                if let Some(props) = update.get("props").filter(|p| !p.is_null()) {
                    p["props"] = props.clone();
                }
            }
        }
        answer
    }

    /// `user` submits the last dialog opened with `submission`.
    pub async fn submit(&self, user: &str, submission: Value) -> Answer {
        let opened = self.dialogs().pop().expect("a dialog was opened");
        let url = opened["url"].as_str().expect("dialog url").to_owned();
        let dialog = &opened["dialog"];
        let body = json!({
            "type": "dialog_submission", "callback_id": dialog["callback_id"],
            "state": dialog["state"], "user_id": user, "channel_id": CHANNEL,
            "team_id": "team1", "submission": submission, "cancelled": false,
        });
        self.integration(&url, &body).await
    }

    /// Posts `body` to an integration URL, as the Mattermost server does.
    pub async fn integration(&self, url: &str, body: &Value) -> Answer {
        let response = self
            .http
            .post(url)
            .json(body)
            .send()
            .await
            .expect("integration call");
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        Answer { status, body }
    }
}

fn refuse(status: StatusCode, id: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"id": id, "message": message, "status_code": status.as_u16()})),
    )
        .into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {BOT_TOKEN}"))
}

fn record(state: &Recorded, method: &str, path: String, body: &Value) {
    state.calls.record(method, path, body.clone());
}

async fn create_post(
    State(state): State<Arc<Recorded>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "api.context.session_expired.app_error",
            "Invalid or expired session, please login again.",
        );
    }
    record(&state, "POST", "/posts".to_owned(), &body);
    let throttled = state
        .throttle
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if throttled {
        let mut response = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "api.context.429.app_error",
            "Too many requests",
        );
        response
            .headers_mut()
            .insert("retry-after", axum::http::HeaderValue::from_static("1"));
        return response;
    }
    if body["channel_id"] != CHANNEL {
        return refuse(
            StatusCode::FORBIDDEN,
            "api.context.permissions.app_error",
            "You do not have the appropriate permissions.",
        );
    }
    let message = body["message"].as_str().unwrap_or_default();
    if message.is_empty() || message.chars().count() > 16_383 {
        return refuse(
            StatusCode::BAD_REQUEST,
            "model.post.is_valid.msg.app_error",
            "Invalid message.",
        );
    }
    let root = body["root_id"].as_str().unwrap_or_default();
    if !root.is_empty() && !state.posts.lock().expect("lock").contains_key(root) {
        return refuse(
            StatusCode::BAD_REQUEST,
            "api.post.create_post.root_id.app_error",
            "Invalid RootId parameter.",
        );
    }
    let n = state.next_id.fetch_add(1, Ordering::SeqCst);
    let id = format!("{n:0>26}");
    let post = json!({"id": id, "channel_id": CHANNEL, "root_id": root, "message": message,
                      "props": body.get("props").cloned().unwrap_or(json!({})),
                      "user_id": "botuserid00000000000000000"});
    state
        .posts
        .lock()
        .expect("lock")
        .insert(id.clone(), post.clone());
    state.order.lock().expect("lock").push(id);
    (StatusCode::CREATED, Json(post)).into_response()
}

async fn patch_post(
    State(state): State<Arc<Recorded>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "api.context.session_expired.app_error",
            "Invalid or expired session, please login again.",
        );
    }
    record(&state, "PUT", format!("/posts/{id}/patch"), &body);
    let mut posts = state.posts.lock().expect("lock");
    let Some(post) = posts.get_mut(&id) else {
        return refuse(
            StatusCode::NOT_FOUND,
            "app.post.get.app_error",
            "Unable to get the post.",
        );
    };
    if let Some(message) = body.get("message") {
        post["message"] = message.clone();
    }
    if let Some(props) = body.get("props") {
        post["props"] = props.clone();
    }
    Json(post.clone()).into_response()
}

async fn open_dialog(
    State(state): State<Arc<Recorded>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "api.context.session_expired.app_error",
            "Invalid or expired session, please login again.",
        );
    }
    record(&state, "POST", "/actions/dialogs/open".to_owned(), &body);
    let title = body["dialog"]["title"].as_str().unwrap_or_default();
    let valid = body["trigger_id"]
        .as_str()
        .is_some_and(|t| t.starts_with("trigger-"))
        && body["url"].as_str().is_some_and(|u| u.starts_with("http"))
        && !title.is_empty()
        && title.chars().count() <= 24;
    if !valid {
        return refuse(
            StatusCode::BAD_REQUEST,
            "api.dialog.open.app_error",
            "Invalid dialog.",
        );
    }
    state.dialogs.lock().expect("lock").push(body);
    Json(json!({"status": "OK"})).into_response()
}

async fn user(
    State(state): State<Arc<Recorded>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&headers) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "api.context.session_expired.app_error",
            "Invalid or expired session, please login again.",
        );
    }
    record(&state, "GET", format!("/users/{id}"), &Value::Null);
    match state.users.lock().expect("lock").get(&id) {
        Some(name) => Json(json!({"id": id, "username": name})).into_response(),
        None => refuse(
            StatusCode::NOT_FOUND,
            "app.user.missing_account.const",
            "Unable to find the user.",
        ),
    }
}
