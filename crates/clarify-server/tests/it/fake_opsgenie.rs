//! A fake Opsgenie Who Is On Call API on 127.0.0.1: `GET /v2/schedules/{identifier}/on-calls`
//! by name or id (`scheduleIdentifierType`), answering Opsgenie's JSON shape (`data._parent`,
//! `data.onCallRecipients` with `flat=true`); `401` with Opsgenie's error body unless
//! `Authorization: GenieKey <the key>` comes with it, `404` for an unknown schedule; and, on
//! demand, an outage (a status). Who is on call can change while a test runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::fake_calls::Calls;

pub const API_KEY: &str = "eb243592-faa2-4ba2-a551q-1afdf565c889";
const SCHEDULE_ID: &str = "d875alp4-9b4e-4219-alp3-0c26936d18de";

#[derive(Default)]
struct Recorded {
    calls: Calls,
    /// Schedule name → the e-mail addresses on call.
    schedules: Mutex<HashMap<String, Vec<String>>>,
    down: Mutex<Option<StatusCode>>,
}

pub struct FakeOpsgenie {
    pub api_url: String,
    state: Arc<Recorded>,
}

impl FakeOpsgenie {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        let app = axum::Router::new()
            .route(
                "/v2/schedules/{identifier}/on-calls",
                axum::routing::get(on_calls),
            )
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

    /// From now on, `emails` are on call for the schedule named `name`.
    pub fn on_call(&self, name: &str, emails: &[&str]) {
        self.state.schedules.lock().expect("lock").insert(
            name.to_owned(),
            emails.iter().map(|e| (*e).to_owned()).collect(),
        );
    }

    /// Answers every call with `status` (`None`: up again).
    pub fn down(&self, status: Option<StatusCode>) {
        *self.state.down.lock().expect("lock") = status;
    }

    /// The schedule identifiers of the calls so far, with their query.
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.state.calls.of("GET")
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({"message": message, "took": 0.002, "requestId": "7a0b3c1e-fake"})),
    )
        .into_response()
}

async fn on_calls(
    State(state): State<Arc<Recorded>>,
    headers: HeaderMap,
    Path(identifier): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    state.calls.record("GET", identifier.clone(), json!(query));
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
    if authorization != Some(&format!("GenieKey {API_KEY}")) {
        return error(
            StatusCode::UNAUTHORIZED,
            "Could not authenticate. Key is not valid!",
        );
    }
    let down = *state.down.lock().expect("lock");
    if let Some(status) = down {
        return error(status, "Internal Server Error");
    }
    let by_name = query.get("scheduleIdentifierType").map(String::as_str) == Some("name");
    let found = if by_name {
        state
            .schedules
            .lock()
            .expect("lock")
            .get(&identifier)
            .cloned()
    } else {
        None
    };
    let Some(recipients) = found else {
        let kind = if by_name { "name" } else { "id" };
        return error(
            StatusCode::NOT_FOUND,
            &format!("No schedule exists with {kind} [{identifier}]"),
        );
    };
    let mut data = json!({
        "_parent": {"id": SCHEDULE_ID, "name": identifier, "enabled": true},
    });
    if query.get("flat").map(String::as_str) == Some("true") {
        data["onCallRecipients"] = json!(recipients);
    } else {
        data["onCallParticipants"] = recipients
            .iter()
            .map(|r| json!({"name": r, "type": "user"}))
            .collect();
    }
    Json(json!({"data": data, "took": 0.104, "requestId": "3b2e2a8a-fake"})).into_response()
}
