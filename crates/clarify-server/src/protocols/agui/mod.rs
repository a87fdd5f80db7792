//! AG-UI: a proxy for the `[[agui]]` agents, so their interrupts wait in clarify.
//!
//! `POST /agui/{name}` takes a `RunAgentInput` (AG-UI's HTTP + SSE binding), checks it (a
//! malformed one is `400` before anything is forwarded), forwards it to the agent's `url` and
//! streams the agent's events back unchanged, each as it arrives. When the run finishes with
//! interrupts (AG-UI 1.0's `outcome.type = "interrupt"`, or LangGraph's `on_interrupt` custom
//! events), each interrupt becomes a clarify request (`clarify_core::agui` maps them) with
//! `session` the `threadId`, and a `CUSTOM` event `clarify.requests` (their ids and answer links)
//! goes out before `RUN_FINISHED` ([`run`]). What resuming the run needs is kept in the store
//! ([`clarify_store::AguiRun`]), so a restart loses nothing.
//!
//! A resume sent through the proxy (`resume[]`, or `forwardedProps.command.resume`) answers the
//! run's requests as the caller before it is forwarded ([`resume::through_proxy`]): it must
//! cover exactly the run's interrupts (an unknown or a missing one is `400`, as the AG-UI spec
//! has the consumer enforce), and a request already answered elsewhere is `409`, naming the
//! answer. When people answer every request of a run elsewhere (the inbox, chat, a phone), the
//! resume worker ([`resume::run`]) resumes the run itself and keeps the resumed run's events,
//! which `GET /agui/{name}/threads/{threadId}/events` replays for a frontend that comes back.
//!
//! While a run streams through the proxy, every request created with `session` equal to its
//! `threadId` (the agent calling `ask_human` over MCP mid-run) is sent into the stream as a
//! `CUSTOM` event `clarify.request` (the record) and its resolution as `clarify.resolved` (the
//! outcome), heard from the event hub ([`emit`]).
//!
//! Every call needs an agent (or admin) key, as `/mcp` and `/a2a` do, and works in that key's
//! tenant. The agent's URL is the admin's own (the configuration names it), so the outbound
//! guard allows its host; the client follows no redirect elsewhere.

mod emit;
mod resume;
mod run;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use clarify_core::agui::{Ask, Interrupt, RunInput};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::middleware::auth::Caller;
use crate::shared::error::ApiError;
use crate::shared::extract::RawBody;
use crate::state::{AguiAgent, AppState};

pub(crate) use resume::run as resume_worker;

/// The routes of AG-UI; none without `[[agui]]` entries.
pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    if state.config.agui.is_empty() {
        return Router::new();
    }
    Router::new()
        .route("/agui/{name}", post(proxy))
        .route("/agui/{name}/threads/{thread}/events", get(replay))
}

/// A run that ended waiting for people, as the store keeps it (`AguiRun::data`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Waiting {
    /// The run's input, with the last state and messages snapshots it streamed: the next run's
    /// input but for its `runId` and `resume`.
    pub input: Value,
    pub run_id: String,
    /// Interrupted through LangGraph's `on_interrupt` event only: resumed through
    /// `forwardedProps.command.resume`.
    pub legacy: bool,
    pub interrupts: Vec<Asked>,
}

/// One interrupt and the request that asks it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Asked {
    pub interrupt: Interrupt,
    pub request_id: String,
    pub ask: Ask,
}

/// Who a run streams for: the tenant, whether the caller sees answer links, and the actor its
/// requests are answered as.
#[derive(Debug, Clone)]
pub(crate) struct Party {
    pub tenant: String,
    pub links: bool,
}

/// The agent `name` of `[[agui]]`, or `404`.
fn agent(state: &AppState, name: &str) -> Result<Arc<AguiAgent>, ApiError> {
    state
        .config
        .agui
        .iter()
        .find(|a| a.name == name)
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!(
                    "no [[agui]] agent {}; the configuration names the agents the proxy serves",
                    clarify_core::quoted(name)
                ),
            )
        })
}

/// The caller of an AG-UI route: an agent or admin key.
async fn caller(
    state: &AppState,
    parts: &mut axum::http::request::Parts,
) -> Result<Caller, ApiError> {
    if !parts.headers.contains_key(header::AUTHORIZATION) {
        return Err(ApiError::unauthorized(
            "/agui needs `Authorization: Bearer <key>` with an agent key (create one with `clarify keys create --role agent`)",
        ));
    }
    let caller = Caller::from_request_parts(parts, state).await?;
    caller.must_ask()?;
    Ok(caller)
}

/// `POST /agui/{name}`: one run through the proxy.
async fn proxy(
    State(state): State<AppState>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let caller = caller(&state, &mut parts).await?;
    let agent = agent(&state, &name)?;
    let RawBody(bytes) = RawBody::from_request(Request::from_parts(parts, body), &state).await?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request("invalid_input", format!("the body is not JSON: {e}"))
    })?;
    let input: RunInput = clarify_core::agui::parse_input(&value)
        .map_err(|m| ApiError::bad_request("invalid_input", format!("RunAgentInput: {m}")))?;
    let party = Party {
        tenant: caller.tenant().to_owned(),
        links: caller.sees_links(),
    };
    let resumed = if input.resume.is_empty() && input.legacy_resume.is_none() {
        None
    } else {
        resume::through_proxy(&state, &caller, &agent, &input).await?
    };
    let permit = state.waiter()?;
    let upstream = match run::send(&state, &agent, bytes.to_vec()).await {
        Ok(upstream) => upstream,
        Err(e) => {
            if let Some(run) = &resumed {
                // The requests are answered; the resume worker sends the resume itself.
                let _ = state.store.agui_release(&run.id, None).await;
            }
            return Err(e);
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<axum::body::Bytes>(64);
    let state2 = state.clone();
    tokio::spawn(async move {
        let _held = permit;
        let events = run::relay(
            &state2,
            &agent,
            &party,
            &input,
            upstream,
            run::Sink::Client(tx),
            true,
        )
        .await;
        if let Some(resumed) = resumed {
            let events = serde_json::to_string(&events).ok();
            if let Err(e) = state2.store.agui_finish(&resumed.id, events).await {
                tracing::warn!(error = %e, run = %resumed.id, "recording a resumed AG-UI run failed");
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// `GET /agui/{name}/threads/{thread}/events`: the events of the runs clarify resumed (or
/// forwarded a resume of) in this thread, oldest first, as one SSE stream that ends.
async fn replay(
    State(state): State<AppState>,
    Path((name, thread)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    let (mut parts, _) = request.into_parts();
    let caller = caller(&state, &mut parts).await?;
    agent(&state, &name)?;
    let runs = state
        .store
        .agui_runs(caller.tenant(), &name, &thread)
        .await
        .map_err(|e| ApiError::store(&e))?;
    let mut out = String::new();
    for run in runs {
        let Some(events) = run.events else { continue };
        let Ok(Value::Array(events)) = serde_json::from_str::<Value>(&events) else {
            continue;
        };
        for event in events {
            out.push_str("data: ");
            out.push_str(&event.to_string());
            out.push_str("\n\n");
        }
    }
    let mut response = Response::new(Body::from(out));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    Ok(response)
}
