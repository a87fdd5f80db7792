//! Tasks: `SendMessage` creates a request, `GetTask` reads it, `CancelTask` cancels it, and
//! `SendStreamingMessage` and `SubscribeToTask` stream it until it ends (0.3: `message/send`,
//! `tasks/get`, `tasks/cancel`, `message/stream`, `tasks/resubscribe`).
//!
//! A message's text parts are an open question; a data part is a clarify request body, taken
//! through the same door as `POST /v1/requests` (`clarify_core::parse_request`), with any text
//! beside it as its `context`. Its `contextId` is the request's `session`, and its `messageId`
//! the idempotency key (`a2a:<messageId>`), so a message sent again returns the same task. A
//! blocking send waits until the request is resolved; `returnImmediately` (0.3: `blocking:
//! false`) returns the `WORKING` task at once. A stream sends the task, then, once it ends, the
//! `outcome` artifact and the final status.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use clarify_store::{RequestRecord, ResolveError, StoreError};
use futures_util::StreamExt;
use futures_util::stream;
use serde_json::{Map, Value, json};

use super::callbacks::{self, Given};
use super::{
    CONTENT_TYPE_NOT_SUPPORTED, Call, RpcError, TASK_NOT_CANCELABLE, kind, result, string,
};
use crate::shared::a2a::{self, TaskState, Version};
use crate::shared::json::Json;
use crate::state::AppState;

/// One long wait of the store, repeated until the request is resolved.
const WAIT: Duration = Duration::from_secs(60);

/// `SendMessage` (`stream` false) and `SendStreamingMessage`.
pub(super) async fn send(call: Call, stream: bool) -> Result<Response, RpcError> {
    let message = match call.params.get("message") {
        Some(m @ Value::Object(_)) => m,
        Some(other) => {
            return Err(RpcError::params(format!(
                "params.message: must be an object, got {}",
                kind(other)
            )));
        }
        None => return Err(RpcError::params("params.message: required")),
    };
    if let Some(task) = string(message, "taskId")?.filter(|t| !t.is_empty()) {
        // A task waits for a person, never for more from its caller.
        return Err(match call.state.store.get(call.tenant(), &task).await {
            Ok(None) => RpcError::task_not_found(&task),
            Ok(Some(_)) => RpcError::unsupported(
                "a clarify task takes no further messages: a person answers it; send a new message without taskId to ask again",
            ),
            Err(e) => RpcError::store(&e),
        });
    }
    let configuration = call
        .params
        .get("configuration")
        .cloned()
        .unwrap_or(Value::Null);
    let immediately = match call.version {
        Version::V10 => configuration.get("returnImmediately") == Some(&json!(true)),
        Version::V03 => configuration.get("blocking") == Some(&json!(false)),
    };
    // Taken before anything is created, so a refused wait leaves nothing behind.
    let permit = if stream || !immediately {
        Some(call.state.waiter().map_err(|e| RpcError::busy(e.message))?)
    } else {
        None
    };
    let given_push = callbacks::inline(&configuration, call.version)?;
    let body = request_body(message, given_push.as_ref())?;
    let request = clarify_core::parse_request(&Value::Object(body), &call.state.config.limits)
        .map_err(|e| RpcError::params(format!("the request: {e}")))?;
    if let (Some(url), Some(given)) = (&request.callback_url, &given_push) {
        call.state
            .config
            .outbound
            .check_field(given.field, url)
            .await
            .map_err(|e| RpcError::params(e.message))?;
    }
    let created = call
        .state
        .store
        .create(call.tenant(), request)
        .await
        .map_err(|e| match e {
            // Valid alone but not against what is stored (a `revises` naming no resolved
            // request): the caller's to fix, like any other invalid request.
            StoreError::Rejected(e) => RpcError::params(format!("the request: {e}")),
            e => RpcError::store(&e),
        })?;
    let record = created.record;
    if created.created {
        call.state.metrics.created();
        call.state.changed(&record);
    }
    if let Some(given) = given_push {
        callbacks::keep(&call, &record.id, given).await?;
    }
    let _held = match (stream, permit) {
        (true, Some(permit)) => return Ok(events(call, record, permit)),
        (_, permit) => permit,
    };
    let record = if immediately || TaskState::of(record.status).is_terminal() {
        record
    } else {
        match resolved(&call.state, call.tenant(), &record.id).await? {
            Some(r) => r,
            // Shutting down: the task as it is, to read again from another instance.
            None => record,
        }
    };
    let task = task(&call, &record);
    let body = match call.version {
        Version::V10 => json!({"task": task}),
        Version::V03 => task,
    };
    Ok(Json(result(&call.id, body)).into_response())
}

/// The request body a message makes.
fn request_body(
    message: &Value,
    given_push: Option<&Given>,
) -> Result<Map<String, Value>, RpcError> {
    let parts = match message.get("parts") {
        Some(Value::Array(parts)) if !parts.is_empty() => parts,
        _ => {
            return Err(RpcError::params(
                "params.message.parts: needs a text part (a question) or a data part (a clarify request body)",
            ));
        }
    };
    let mut texts = Vec::new();
    let mut data = None;
    for (i, part) in parts.iter().enumerate() {
        if let Some(text) = part.get("text") {
            let Value::String(text) = text else {
                return Err(RpcError::params(format!(
                    "params.message.parts[{i}].text: must be a string"
                )));
            };
            texts.push(text.as_str());
        } else if let Some(value) = part.get("data") {
            let Value::Object(body) = value else {
                return Err(RpcError::params(format!(
                    "params.message.parts[{i}].data: must be an object, a clarify request body; got {}",
                    kind(value)
                )));
            };
            if data.replace(body.clone()).is_some() {
                return Err(RpcError::params(format!(
                    "params.message.parts[{i}]: one data part per message (one request)"
                )));
            }
        } else {
            return Err(RpcError::new(
                CONTENT_TYPE_NOT_SUPPORTED,
                "CONTENT_TYPE_NOT_SUPPORTED",
                format!("params.message.parts[{i}]: clarify takes text and data parts, not files"),
            ));
        }
    }
    let text = texts.join("\n\n");
    let mut body = match data {
        Some(mut body) => {
            if !text.trim().is_empty() && !body.contains_key("context") {
                body.insert("context".to_owned(), Value::String(text));
            }
            body
        }
        None if text.trim().is_empty() => {
            return Err(RpcError::params(
                "params.message.parts: the text parts are empty; write the question",
            ));
        }
        None => {
            let mut body = Map::new();
            body.insert("questions".to_owned(), json!([{"text": text}]));
            body
        }
    };
    if let Some(context) = string(message, "contextId")?.filter(|c| !c.is_empty()) {
        match body.get("session") {
            Some(Value::String(session)) if *session != context => {
                return Err(RpcError::params(format!(
                    "params.message.contextId {} and the request's session {} differ; send one",
                    clarify_core::quoted(&context),
                    clarify_core::quoted(session)
                )));
            }
            _ => {
                body.insert("session".to_owned(), Value::String(context));
            }
        }
    }
    if let Some(id) = string(message, "messageId")?.filter(|m| !m.is_empty())
        && !body.contains_key("idempotency_key")
    {
        body.insert(
            "idempotency_key".to_owned(),
            Value::String(format!("a2a:{id}")),
        );
    }
    if let Some(given) = given_push {
        if body.get("callback_url").is_some_and(|v| !v.is_null()) {
            return Err(RpcError::params(format!(
                "{} and the request's callback_url both name where the outcome goes; send one",
                given.field
            )));
        }
        body.insert("callback_url".to_owned(), Value::String(given.url.clone()));
    }
    Ok(body)
}

/// `GetTask` (0.3: `tasks/get`).
pub(super) async fn get(call: Call) -> Result<Response, RpcError> {
    let id = call.task_id("id")?;
    let record = read(&call, &id).await?;
    Ok(Json(result(&call.id, task(&call, &record))).into_response())
}

/// `CancelTask` (0.3: `tasks/cancel`): the request is cancelled, as by its agent.
pub(super) async fn cancel(call: Call) -> Result<Response, RpcError> {
    let id = call.task_id("id")?;
    let record = match call
        .state
        .store
        .cancel(call.tenant(), &id, &call.actor())
        .await
    {
        Ok(record) => {
            call.state.metrics.resolved(&record);
            call.state.changed(&record);
            record
        }
        Err(ResolveError::NotFound) => return Err(RpcError::task_not_found(&id)),
        Err(ResolveError::AlreadyResolved(record)) => {
            return Err(RpcError::new(
                TASK_NOT_CANCELABLE,
                "TASK_NOT_CANCELABLE",
                format!("the task has ended: its request is {}", record.status),
            ));
        }
        Err(e) => return Err(RpcError::store(&e)),
    };
    Ok(Json(result(&call.id, task(&call, &record))).into_response())
}

/// `SubscribeToTask` (0.3: `tasks/resubscribe`): the task's stream, from its current state.
pub(super) async fn subscribe(call: Call) -> Result<Response, RpcError> {
    let id = call.task_id("id")?;
    let record = read(&call, &id).await?;
    if TaskState::of(record.status).is_terminal() {
        return Err(RpcError::unsupported(format!(
            "the task has ended (its request is {}); read it with GetTask",
            record.status
        )));
    }
    let permit = call.state.waiter().map_err(|e| RpcError::busy(e.message))?;
    Ok(events(call, record, permit))
}

/// The request of task `id` in the caller's tenant.
async fn read(call: &Call, id: &str) -> Result<RequestRecord, RpcError> {
    call.state
        .store
        .get(call.tenant(), id)
        .await
        .map_err(|e| RpcError::store(&e))?
        .ok_or_else(|| RpcError::task_not_found(id))
}

/// The task of `record` as this caller sees it (with its answer link while pending).
fn task(call: &Call, record: &RequestRecord) -> Value {
    let link = (call.caller.sees_links() && !record.status.is_resolved())
        .then(|| call.state.answer_url(&record.id));
    a2a::task(record, call.version, link.as_deref())
}

/// Waits until request `id` is resolved; `None` when the server shuts down first.
async fn resolved(
    state: &AppState,
    tenant: &str,
    id: &str,
) -> Result<Option<RequestRecord>, RpcError> {
    loop {
        tokio::select! {
            waited = state.store.wait(tenant, id, WAIT) => match waited {
                Ok(record) if record.status.is_resolved() => return Ok(Some(record)),
                Ok(_) => {}
                Err(ResolveError::NotFound) => return Err(RpcError::task_not_found(id)),
                Err(e) => return Err(RpcError::store(&e)),
            },
            () = state.shutdown.cancelled() => return Ok(None),
        }
    }
}

/// The SSE stream of a task: the task now, then (once it ends) its outcome artifact and final
/// status. Each event is a JSON-RPC response to the call; the stream ends with the task, or at
/// shutdown (the client subscribes again elsewhere).
fn events(
    call: Call,
    record: RequestRecord,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Response {
    let version = call.version;
    let first = frame(&call.id, version, "task", task(&call, &record));
    let ended = TaskState::of(record.status).is_terminal();
    let rest = async move {
        let _held = permit;
        if ended {
            return Vec::new();
        }
        match resolved(&call.state, call.tenant(), &record.id).await {
            Ok(Some(record)) => {
                let mut events = Vec::new();
                if let Some(update) = a2a::artifact_update(&record, version) {
                    events.push(frame(&call.id, version, "artifactUpdate", update));
                }
                events.push(frame(
                    &call.id,
                    version,
                    "statusUpdate",
                    a2a::status_update(&record, version),
                ));
                events
            }
            Ok(None) => Vec::new(),
            Err(e) => vec![Event::default().data(e.body(&call.id).to_string())],
        }
    };
    let events = stream::once(async move { first })
        .chain(stream::once(rest).flat_map(stream::iter))
        .map(Ok::<Event, Infallible>);
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// One event of a stream: a 1.0 `StreamResponse` holding `value` under `field`, or (0.3) the
/// value itself, which names its kind.
fn frame(id: &Value, version: Version, field: &str, value: Value) -> Event {
    let value = match version {
        Version::V10 => json!({ field: value }),
        Version::V03 => value,
    };
    Event::default().data(result(id, value).to_string())
}
