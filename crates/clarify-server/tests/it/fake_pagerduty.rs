//! A fake PagerDuty REST API on 127.0.0.1: `GET /oncalls` filtered by `schedule_ids[]` or
//! `escalation_policy_ids[]`, answering PagerDuty's JSON shape (`oncalls` entries with a `user`,
//! its `email` with `include[]=users`, the `escalation_level`); `401` with PagerDuty's error
//! body unless `Authorization: Token token=<the token>` and the v2 `Accept` header come with
//! it; and, on demand, an outage (a status) or a slow answer. Who is on call can change while
//! a test runs (a handover).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::fake_calls::Calls;

pub const TOKEN: &str = "u+pdTESTtokenFORfakeAPI";

/// A PagerDuty user: their id and e-mail address.
#[derive(Debug, Clone)]
pub struct PdUser {
    pub id: &'static str,
    pub email: &'static str,
}

#[derive(Default)]
struct Recorded {
    calls: Calls,
    /// Schedule id → who is on call, in escalation levels (level 1 first).
    schedules: Mutex<HashMap<String, Vec<PdUser>>>,
    /// Escalation policy id → who is on call at each level (level 1 first).
    policies: Mutex<HashMap<String, Vec<Vec<PdUser>>>>,
    /// Answer every call with this status, as an outage would.
    down: Mutex<Option<StatusCode>>,
    /// Answer this late.
    delay: Mutex<Option<Duration>>,
}

pub struct FakePagerDuty {
    pub api_url: String,
    state: Arc<Recorded>,
}

impl FakePagerDuty {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        let app = axum::Router::new()
            .route("/oncalls", axum::routing::get(oncalls))
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

    /// From now on, `people` are on call for schedule `id`.
    pub fn on_call(&self, id: &str, people: &[PdUser]) {
        self.state
            .schedules
            .lock()
            .expect("lock")
            .insert(id.to_owned(), people.to_vec());
    }

    /// From now on, escalation policy `id` has `levels` on call (level 1 first).
    pub fn policy(&self, id: &str, levels: &[&[PdUser]]) {
        self.state
            .policies
            .lock()
            .expect("lock")
            .insert(id.to_owned(), levels.iter().map(|l| l.to_vec()).collect());
    }

    /// Answers every call with `status` (`None`: up again).
    pub fn down(&self, status: Option<StatusCode>) {
        *self.state.down.lock().expect("lock") = status;
    }

    /// Answers every call `delay` late.
    pub fn slow(&self, delay: Duration) {
        *self.state.delay.lock().expect("lock") = Some(delay);
    }

    /// The query strings of the calls to `/oncalls` so far.
    pub fn calls(&self) -> Vec<String> {
        self.state
            .calls
            .of("GET")
            .into_iter()
            .map(|(query, _)| query)
            .collect()
    }
}

fn error(status: StatusCode, message: &str, code: u32) -> Response {
    (
        status,
        Json(json!({"error": {"message": message, "code": code}})),
    )
        .into_response()
}

async fn oncalls(
    State(state): State<Arc<Recorded>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.unwrap_or_default();
    state.calls.record("GET", query.clone(), Value::Null);
    let delay = *state.delay.lock().expect("lock");
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("authorization") != Some(&format!("Token token={TOKEN}")) {
        return error(StatusCode::UNAUTHORIZED, "Access Denied", 2006);
    }
    if header("accept") != Some("application/vnd.pagerduty+json;version=2") {
        return error(StatusCode::BAD_REQUEST, "Invalid Input Provided", 2001);
    }
    let down = *state.down.lock().expect("lock");
    if let Some(status) = down {
        return error(status, "Internal Server Error", 2000);
    }
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let value = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let with_users = pairs.iter().any(|(k, v)| k == "include[]" && v == "users");
    let user = |u: &PdUser| {
        let mut user = json!({
            "id": u.id, "type": "user_reference", "summary": u.email,
            "self": format!("https://api.pagerduty.com/users/{}", u.id),
        });
        if with_users {
            user["type"] = json!("user");
            user["email"] = json!(u.email);
        }
        user
    };
    let mut entries = Vec::new();
    if let Some(id) = value("schedule_ids[]") {
        let on_call = state.schedules.lock().expect("lock").get(&id).cloned();
        for u in on_call.unwrap_or_default() {
            entries.push(json!({
                "escalation_policy": {"id": "PPOLICY", "type": "escalation_policy_reference"},
                "escalation_level": 1,
                "schedule": {"id": id, "type": "schedule_reference"},
                "user": user(&u),
                "start": "2026-12-07T00:00:00Z", "end": "2026-12-08T00:00:00Z",
            }));
        }
    } else if let Some(id) = value("escalation_policy_ids[]") {
        let levels = state.policies.lock().expect("lock").get(&id).cloned();
        for (level, people) in levels.unwrap_or_default().iter().enumerate() {
            for u in people {
                entries.push(json!({
                    "escalation_policy": {"id": id, "type": "escalation_policy_reference"},
                    "escalation_level": level + 1,
                    "schedule": null,
                    "user": user(u),
                    "start": null, "end": null,
                }));
            }
        }
    }
    Json(json!({"oncalls": entries, "limit": 25, "offset": 0, "more": false, "total": null}))
        .into_response()
}
