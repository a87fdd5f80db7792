//! One run: the input sent to the agent, its events read as they come and passed on unchanged,
//! what the run streamed that a resume needs (the last state and messages snapshots, the tool
//! calls and their arguments), and, when it finishes with interrupts, their requests and the
//! kept run.

use std::time::Duration;

use axum::body::Bytes;
use axum::http::StatusCode;
use clarify_core::agui::{Origin, RunInput, Trace};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Asked, Party, Waiting, emit};
use crate::shared::error::ApiError;
use crate::state::{AguiAgent, AppState};

/// The `code` of the `RUN_ERROR` clarify ends a stream with that broke before the run finished.
pub(crate) const BROKEN: &str = "clarify_agent_stream";

/// How long connecting and the agent's first response may take.
const CONNECT: Duration = Duration::from_secs(30);

/// Where a run's events go: a client's stream through the proxy, or nowhere but the kept
/// events (a run clarify resumes itself).
pub(crate) enum Sink {
    Client(mpsc::Sender<Bytes>),
    Kept,
}

impl Sink {
    /// Sends one SSE event; whether the client still listens (a run goes on without one).
    async fn send(&self, data: &str) -> bool {
        match self {
            Self::Client(tx) => tx
                .send(Bytes::from(format!("data: {data}\n\n")))
                .await
                .is_ok(),
            Self::Kept => false,
        }
    }
}

/// The client of the agent `agent`, made once: no redirects, no proxy, and the outbound guard
/// allowing the configured host (the admin's own address) besides what `outbound_allow` allows.
fn client(state: &AppState, agent: &AguiAgent) -> Result<reqwest::Client, ApiError> {
    if let Some(client) = agent.client.get() {
        return Ok(client.clone());
    }
    let client = state
        .config
        .outbound
        .clone()
        .with_host(agent.url.host_str().unwrap_or_default())
        .client(
            clarify_client::http::builder()
                .connect_timeout(CONNECT)
                .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION"))),
        )
        .map_err(|e| {
            tracing::error!(error = %e, "cannot build the AG-UI client");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the server could not make its HTTP client",
            )
        })?;
    Ok(agent.client.get_or_init(|| client).clone())
}

/// Sends `body` (a `RunAgentInput`) to the agent; the response once its status is `2xx`, else
/// `502` naming what the agent answered.
pub(crate) async fn send(
    state: &AppState,
    agent: &AguiAgent,
    body: Vec<u8>,
) -> Result<reqwest::Response, ApiError> {
    let client = client(state, agent)?;
    let mut post = client
        .post(agent.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .body(body);
    for (name, value) in &agent.headers {
        post = post.header(name.as_str(), value.as_str());
    }
    let unreachable = |e: String| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "agent_unreachable",
            format!("the AG-UI agent {} could not be reached: {e}", agent.name),
        )
    };
    let response = tokio::time::timeout(CONNECT, post.send())
        .await
        .map_err(|_| unreachable("no response within 30 s".to_owned()))?
        .map_err(|e| unreachable(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        let text: String = text.chars().take(500).collect();
        return Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "agent_refused",
            format!(
                "the AG-UI agent {} answered {}: {}",
                agent.name,
                status.as_u16(),
                text.trim()
            ),
        ));
    }
    Ok(response)
}

/// Reads the run's events from `upstream` and passes each on to `sink` unchanged as it
/// arrives (with the emitter's events between them, when `emitting`). Returns every event the
/// run streamed, in order, as sent. A run that finishes with interrupts has its requests made,
/// `clarify.requests` sent before its `RUN_FINISHED`, and its resume kept; a stream that ends
/// before `RUN_FINISHED` (or `RUN_ERROR`) ends with a `RUN_ERROR` of clarify's and leaves no
/// request.
pub(crate) async fn relay(
    state: &AppState,
    agent: &AguiAgent,
    party: &Party,
    input: &RunInput,
    upstream: reqwest::Response,
    sink: Sink,
    emitting: bool,
) -> Vec<Value> {
    let mut events = sse_stream::SseStream::from_bytes_stream(upstream.bytes_stream());
    let mut seen = Trace::default();
    let mut sent: Vec<Value> = Vec::new();
    let mut listening = true;
    let mut emitter = if emitting {
        emit::Emitter::start(state, party, &input.thread_id).await
    } else {
        None
    };
    let ended = loop {
        let next = match emitter.as_mut() {
            Some(emitter) if seen.started => tokio::select! {
                next = events.next() => next,
                extra = emitter.next(state) => {
                    for event in extra {
                        if listening {
                            listening = sink.send(&event.to_string()).await;
                        }
                        sent.push(event);
                    }
                    continue;
                }
            },
            _ => events.next().await,
        };
        let data = match next {
            Some(Ok(sse)) => match sse.data {
                Some(data) if !data.trim().is_empty() => data,
                _ => continue,
            },
            Some(Err(e)) => break Err(format!("the agent's stream broke: {e}")),
            None => break Err("the agent closed the stream before the run finished".to_owned()),
        };
        let Ok(event) = serde_json::from_str::<Value>(&data) else {
            // Passed on as the agent sent it; the client's parser says what is wrong.
            if listening {
                listening = sink.send(&data).await;
            }
            continue;
        };
        seen.note(&event);
        match event.get("type").and_then(Value::as_str) {
            Some("RUN_FINISHED") => {
                match interrupts(state, agent, party, input, &seen, &event).await {
                    Ok(Some(announced)) => {
                        if listening {
                            listening = sink.send(&announced.to_string()).await;
                        }
                        sent.push(announced);
                    }
                    Ok(None) => {}
                    Err(message) => break Err(message),
                }
                if listening {
                    sink.send(&data).await;
                }
                sent.push(event);
                break Ok(());
            }
            Some("RUN_ERROR") => {
                if listening {
                    sink.send(&data).await;
                }
                sent.push(event);
                break Ok(());
            }
            _ => {
                if listening {
                    listening = sink.send(&data).await;
                }
                sent.push(event);
            }
        }
    };
    if let Err(message) = ended {
        tracing::warn!(agent = %agent.name, thread = %input.thread_id, %message, "an AG-UI run ended without finishing");
        let error = json!({"type": "RUN_ERROR", "message": message, "code": BROKEN});
        if listening {
            sink.send(&error.to_string()).await;
        }
        sent.push(error);
    }
    sent
}

/// For a `RUN_FINISHED` with interrupts: their requests made and the run kept; the
/// `clarify.requests` event to send before it. `Ok(None)` for a run that finished otherwise.
/// A failure cancels the requests made so far, so none is left half-made.
async fn interrupts(
    state: &AppState,
    agent: &AguiAgent,
    party: &Party,
    input: &RunInput,
    seen: &Trace,
    finished: &Value,
) -> Result<Option<Value>, String> {
    let (found, legacy) = match seen.interrupts(finished) {
        Ok(Some(found)) => found,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("the agent's RUN_FINISHED does not fit AG-UI: {e}")),
    };
    let run_id = finished
        .get("runId")
        .and_then(Value::as_str)
        .unwrap_or(&input.run_id)
        .to_owned();
    let mut asked: Vec<Asked> = Vec::new();
    let mut failure = None;
    for interrupt in found {
        let call = interrupt
            .tool_call_id
            .as_ref()
            .and_then(|id| seen.tool_call(id));
        let tool_call = call.as_ref().map(|(name, args)| (name.as_str(), args));
        let origin = Origin {
            agent: &agent.name,
            thread_id: &input.thread_id,
            run_id: &run_id,
            tool_call,
        };
        let (body, ask) = clarify_core::agui::request_body(&interrupt, origin);
        let made = match clarify_core::parse_request(&body, &state.config.limits) {
            Ok(request) => state
                .store
                .create(&party.tenant, request)
                .await
                .map_err(|e| format!("storing the request of interrupt {}: {e}", interrupt.id)),
            Err(e) => Err(format!(
                "interrupt {} cannot be asked: {e}",
                clarify_core::quoted(&interrupt.id)
            )),
        };
        match made {
            Ok(created) => {
                if created.created {
                    state.metrics.created();
                    state.changed(&created.record);
                }
                asked.push(Asked {
                    interrupt,
                    request_id: created.record.id.clone(),
                    ask,
                });
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let next = seen.next_input(&input.raw);
    let waiting = Waiting {
        input: next,
        run_id: run_id.clone(),
        legacy,
        interrupts: asked.clone(),
    };
    if failure.is_none() {
        // Its requests' idempotency keys name the run: a run sent again finds them, and its
        // kept resume, as they were.
        let id = format!("{}:{}:{}", agent.name, input.thread_id, run_id);
        let data = serde_json::to_string(&waiting).unwrap_or_default();
        let kept = match state
            .store
            .agui_runs(&party.tenant, &agent.name, &input.thread_id)
            .await
        {
            Ok(runs) => Ok(runs.iter().any(|r| r.id == id)),
            Err(e) => Err(e),
        };
        let stored = match kept {
            Ok(true) => Ok(()),
            Ok(false) => state
                .store
                .agui_insert(&id, &party.tenant, &agent.name, &input.thread_id, data)
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = stored {
            failure = Some(format!("keeping the interrupted run failed: {e}"));
        }
    }
    if let Some(failure) = failure {
        let actor = clarify_store::Actor::new("agui", "agui");
        for a in &asked {
            if let Ok(record) = state
                .store
                .cancel(&party.tenant, &a.request_id, &actor)
                .await
            {
                state.metrics.resolved(&record);
                state.changed(&record);
            }
        }
        return Err(failure);
    }
    let requests: Vec<Value> = asked
        .iter()
        .map(|a| {
            let mut r = json!({
                "interruptId": a.interrupt.id,
                "requestId": a.request_id,
            });
            if party.links {
                r["answerUrl"] = json!(state.answer_url(&a.request_id));
            }
            r
        })
        .collect();
    Ok(Some(json!({
        "type": "CUSTOM",
        "name": "clarify.requests",
        "value": {"threadId": input.thread_id, "runId": run_id, "requests": requests},
    })))
}
