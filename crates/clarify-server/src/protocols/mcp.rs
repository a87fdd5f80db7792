//! `/mcp`: the MCP tools (`ask_human`, `ask_human_async`, `get_answer`) over Streamable HTTP.
//!
//! The endpoint itself is `clarify-mcp`'s; this module puts it behind the API's keys. Every HTTP
//! request to `/mcp` must carry `Authorization: Bearer <key>` of an `agent` or `admin` key
//! (inbox cookies are not accepted, so no web page can call it); the caller's tenant scopes
//! every tool call of that request. A session belongs to the key that opened it: another key
//! presenting its `Mcp-Session-Id` is told the session does not exist. Each request counts
//! against the key's `--rate-limit` and, until its response ends, holds one of the
//! `--max-waiters` permits. A `callback_url` goes through the outbound guard's check before the
//! request is stored, as on `POST /v1/requests`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use clarify_mcp::{Admission, Embedded, HttpCaller, Observer};
use clarify_store::RequestRecord;
use http_body_util::BodyExt;

use crate::middleware::auth::Caller;
use crate::shared::error::ApiError;
use crate::state::AppState;

const SESSION_HEADER: &str = "mcp-session-id";

/// A session unseen this long is forgotten here (and has long been closed by its idle limit).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3_600);

/// The `/mcp` route.
pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    let store = Embedded::new(
        state.store.clone(),
        clarify_store::Clarify::DEFAULT_TENANT,
        state.config.limits,
    )
    .with_observer(Arc::new(Changes(state.clone())));
    let mut options = state.config.mcp.clone();
    options.max_body = state.config.body_limit;
    let service = clarify_mcp::http_service(store, options, state.shutdown.clone());
    let admission = McpAccess {
        state: state.clone(),
        sessions: Arc::new(Sessions::default()),
    };
    Router::new()
        .route_service("/mcp", service)
        .route_layer(axum::middleware::from_fn_with_state(admission, admit))
}

/// Tells this instance's event streams, webhook worker and metrics about changes made through
/// MCP, as the `/v1` routes do.
#[derive(Debug)]
struct Changes(AppState);

impl Observer for Changes {
    /// A `callback_url` (or `resume`) the outbound guard refuses is refused here as on
    /// `POST /v1/requests`.
    fn admit<'a>(&'a self, request: &'a clarify_core::NewRequest) -> Admission<'a> {
        Box::pin(async move {
            crate::api::requests::admit_targets(&self.0.config.outbound, request)
                .await
                .map_err(|e| (e.code.to_owned(), e.message))
        })
    }

    fn created(&self, record: &RequestRecord) {
        self.0.metrics.created();
        self.0.changed(record);
    }

    fn resolved(&self, record: &RequestRecord) {
        self.0.metrics.resolved(record);
        self.0.changed(record);
    }

    fn answer_url(&self, id: &str) -> Option<String> {
        Some(self.0.answer_url(id))
    }
}

/// Who may use `/mcp`: a key of the instance, and for a session the key that opened it.
#[derive(Debug, Clone)]
struct McpAccess {
    state: AppState,
    sessions: Arc<Sessions>,
}

/// Which key opened each session.
#[derive(Debug, Default)]
struct Sessions(Mutex<HashMap<String, (String, Instant)>>);

impl Sessions {
    /// Whether `key` may use session `id` (it opened it); marks the session as seen.
    fn admits(&self, id: &str, key: &str) -> bool {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match map.get_mut(id) {
            Some((owner, seen)) if owner == key => {
                *seen = Instant::now();
                true
            }
            _ => false,
        }
    }

    fn open(&self, id: &str, key: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, (_, seen)| seen.elapsed() < FORGET_AFTER);
        map.insert(id.to_owned(), (key.to_owned(), Instant::now()));
    }

    fn close(&self, id: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }
}

async fn admit(State(admission): State<McpAccess>, request: Request, next: Next) -> Response {
    match authorize(&admission, request, next).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn authorize(
    admission: &McpAccess,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    if !parts.headers.contains_key(header::AUTHORIZATION) {
        return Err(ApiError::unauthorized(
            "/mcp needs `Authorization: Bearer <key>` with an agent key (create one with `clarify keys create --role agent`)",
        ));
    }
    let caller = Caller::from_request_parts(&mut parts, &admission.state).await?;
    caller.must_ask()?;
    // Held until the response's body ends: an `ask_human` call waits inside it.
    let permit = admission.state.waiter()?;
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && !admission.sessions.admits(id, &caller.key.id)
    {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "session_not_found",
            "no such MCP session for this key; start a new one (initialize without Mcp-Session-Id)",
        ));
    }
    let closing = parts.method == Method::DELETE;
    parts.extensions.insert(HttpCaller {
        tenant: caller.key.tenant.clone(),
        name: caller.key.name.clone(),
        key_id: caller.key.id.clone(),
    });
    let response = next.run(Request::from_parts(parts, body)).await;
    match &session {
        None => {
            if let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
            {
                admission.sessions.open(id, &caller.key.id);
            }
        }
        Some(id) if closing && response.status().is_success() => admission.sessions.close(id),
        Some(_) => {}
    }
    Ok(response.map(|body| {
        Body::new(body.map_frame(move |frame| {
            let _held = &permit;
            frame
        }))
    }))
}
