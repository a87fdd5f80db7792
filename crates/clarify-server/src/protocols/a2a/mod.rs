//! A2A: clarify as an agent other agents call, with `[a2a] enabled = true`.
//!
//! `GET /.well-known/agent-card.json` describes it ([`card`]); `POST /a2a` takes JSON-RPC 2.0
//! in A2A's JSON-RPC binding. The version is the `A2A-Version` header (or query parameter):
//! `1.0` takes the 1.0 method names (`SendMessage`, `GetTask`, ...), and an absent header (or
//! `0.3`) the 0.3 names (`message/send`, `tasks/get`, ...) with 0.3's shapes; a name of the
//! other version, or any other version, is `-32009`, an unknown name `-32601`.
//!
//! A task is a clarify request ([`tasks`]): its id is the request id and its context the
//! request's `session`, so a task outlives a restart and every instance sees it alike. Its
//! push configuration ([`callbacks`]) makes the request's `callback_url`, so the webhook outbox
//! delivers its resolution, durably and through the outbound guard, as an A2A notification.
//! Like `/mcp`, every call needs `Authorization: Bearer <key>` of an agent or admin key and
//! works in that key's tenant; a wait (a blocking `SendMessage`, a stream) holds one of the
//! `--max-waiters` permits.
//!
//! The JSON-RPC envelope is read here by hand, not by a JSON-RPC crate: it is one object with
//! four members, and the errors must carry A2A's codes and `ErrorInfo` details.

mod callbacks;
mod card;
mod tasks;

use axum::Router;
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::middleware::auth::Caller;
use crate::shared::a2a::Version;
use crate::shared::error::ApiError;
use crate::shared::extract::RawBody;
use crate::state::AppState;

/// The routes of A2A, when `[a2a]` enables it; none otherwise (then both paths are `404`).
pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    if !state.config.a2a {
        return Router::new();
    }
    Router::new()
        .route("/.well-known/agent-card.json", get(card::card))
        .route("/a2a", post(rpc))
}

/// An A2A method, whichever version named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Send,
    Stream,
    Get,
    List,
    Cancel,
    Subscribe,
    PushCreate,
    PushGet,
    PushList,
    PushDelete,
    ExtendedCard,
}

/// The methods by their 1.0 and 0.3 names.
const METHODS: [(Method, &str, Option<&str>); 11] = [
    (Method::Send, "SendMessage", Some("message/send")),
    (
        Method::Stream,
        "SendStreamingMessage",
        Some("message/stream"),
    ),
    (Method::Get, "GetTask", Some("tasks/get")),
    (Method::List, "ListTasks", None),
    (Method::Cancel, "CancelTask", Some("tasks/cancel")),
    (
        Method::Subscribe,
        "SubscribeToTask",
        Some("tasks/resubscribe"),
    ),
    (
        Method::PushCreate,
        "CreateTaskPushNotificationConfig",
        Some("tasks/pushNotificationConfig/set"),
    ),
    (
        Method::PushGet,
        "GetTaskPushNotificationConfig",
        Some("tasks/pushNotificationConfig/get"),
    ),
    (
        Method::PushList,
        "ListTaskPushNotificationConfigs",
        Some("tasks/pushNotificationConfig/list"),
    ),
    (
        Method::PushDelete,
        "DeleteTaskPushNotificationConfig",
        Some("tasks/pushNotificationConfig/delete"),
    ),
    (
        Method::ExtendedCard,
        "GetExtendedAgentCard",
        Some("agent/getAuthenticatedExtendedCard"),
    ),
];

/// The method `name` names in `version`: `-32601` when no version knows it, `-32009` when only
/// the other does.
fn method(name: &str, version: Version) -> Result<Method, RpcError> {
    for (method, v10, v03) in METHODS {
        let (ours, theirs) = match version {
            Version::V10 => (Some(v10), v03),
            Version::V03 => (v03, Some(v10)),
        };
        if ours == Some(name) {
            return Ok(method);
        }
        if theirs == Some(name) {
            let (asked, needs) = match version {
                Version::V10 => ("1.0", "send it without A2A-Version (0.3)"),
                Version::V03 => ("0.3", "send it with `A2A-Version: 1.0`"),
            };
            return Err(RpcError::new(
                VERSION_NOT_SUPPORTED,
                "VERSION_NOT_SUPPORTED",
                format!("{name} is not a method of A2A {asked}; {needs}"),
            ));
        }
    }
    Err(RpcError::new(
        METHOD_NOT_FOUND,
        "METHOD_NOT_FOUND",
        format!(
            "no A2A method {}; clarify serves SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask and the push notification configs",
            clarify_core::quoted(name)
        ),
    ))
}

pub(super) const INVALID_REQUEST: i64 = -32600;
pub(super) const METHOD_NOT_FOUND: i64 = -32601;
pub(super) const INVALID_PARAMS: i64 = -32602;
pub(super) const INTERNAL: i64 = -32603;
pub(super) const PARSE_ERROR: i64 = -32700;
pub(super) const TASK_NOT_FOUND: i64 = -32001;
pub(super) const TASK_NOT_CANCELABLE: i64 = -32002;
pub(super) const UNSUPPORTED_OPERATION: i64 = -32004;
pub(super) const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
pub(super) const VERSION_NOT_SUPPORTED: i64 = -32009;

/// A JSON-RPC error: its code, a message for the person reading it, and the `ErrorInfo`
/// reason a program can match on.
#[derive(Debug)]
pub(super) struct RpcError {
    code: i64,
    reason: &'static str,
    message: String,
}

impl RpcError {
    pub(super) fn new(code: i64, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
        }
    }

    pub(super) fn params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, "INVALID_PARAMS", message)
    }

    pub(super) fn task_not_found(id: &str) -> Self {
        Self::new(
            TASK_NOT_FOUND,
            "TASK_NOT_FOUND",
            format!("no task {} for this key's tenant", clarify_core::quoted(id)),
        )
    }

    /// The same error with another message.
    pub(super) fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    pub(super) fn unsupported(message: impl Into<String>) -> Self {
        Self::new(UNSUPPORTED_OPERATION, "UNSUPPORTED_OPERATION", message)
    }

    /// No permit to wait is left (`--max-waiters`): the call may be sent again later.
    pub(super) fn busy(message: impl Into<String>) -> Self {
        Self::new(INTERNAL, "TOO_MANY_WAITERS", message)
    }

    /// A store that failed: the call may be sent again; nothing was half-written.
    pub(super) fn store(e: &impl std::fmt::Display) -> Self {
        tracing::warn!(error = %e, "an A2A call failed in the store");
        Self::new(
            INTERNAL,
            "STORE_UNAVAILABLE",
            "the store could not be reached; send the call again",
        )
    }

    /// The error response to the call `id`.
    fn body(&self, id: &Value) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": self.code,
                "message": self.message,
                "data": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": self.reason,
                    "domain": "clarify",
                }],
            },
        })
    }
}

/// The success response to the call `id`.
pub(super) fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// One call: who makes it, in which version, with what.
pub(super) struct Call {
    pub state: AppState,
    pub caller: Caller,
    pub version: Version,
    /// The JSON-RPC id, echoed in every response (and every event of a stream).
    pub id: Value,
    pub params: Value,
}

impl Call {
    /// The caller's tenant.
    pub fn tenant(&self) -> &str {
        self.caller.tenant()
    }

    /// Who resolves what this call resolves: the caller's key, through `a2a`.
    pub fn actor(&self) -> clarify_store::Actor {
        clarify_store::Actor::new(self.caller.key.name.clone(), "a2a")
            .as_principal(self.caller.principal.clone())
    }

    /// The task id the params name in `field` (`id`, or `taskId`).
    pub fn task_id(&self, field: &str) -> Result<String, RpcError> {
        string(&self.params, field)?
            .filter(|s| !s.is_empty())
            .ok_or_else(|| RpcError::params(format!("params.{field}: the task id is required")))
    }
}

/// `value[field]` as a string: `None` when absent or null, an error naming it when another type.
pub(super) fn string(value: &Value, field: &str) -> Result<Option<String>, RpcError> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(RpcError::params(format!(
            "{field}: must be a string, got {}",
            kind(other)
        ))),
    }
}

/// What kind of JSON value `v` is, for messages.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The version a request asks for: the `A2A-Version` header, else the query parameter, else
/// 0.3; any version but 0.3 and 1.x is `-32009`.
fn version(headers: &HeaderMap, query: Option<&str>) -> Result<Version, RpcError> {
    let given = match headers.get("a2a-version") {
        Some(v) => Some(v.to_str().unwrap_or("?").trim().to_owned()),
        None => query.and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k.eq_ignore_ascii_case("a2a-version"))
                .map(|(_, v)| v.trim().to_owned())
        }),
    };
    let Some(given) = given.filter(|v| !v.is_empty()) else {
        return Ok(Version::V03);
    };
    let mut numbers = given.split('.');
    match (numbers.next(), numbers.next()) {
        (Some("1"), Some(_) | None) => Ok(Version::V10),
        (Some("0"), Some("3")) => Ok(Version::V03),
        _ => Err(RpcError::new(
            VERSION_NOT_SUPPORTED,
            "VERSION_NOT_SUPPORTED",
            format!(
                "A2A version {} is not supported; clarify speaks 1.0 (`A2A-Version: 1.0`) and 0.3 (no header)",
                clarify_core::quoted(&given)
            ),
        )),
    }
}

/// `POST /a2a`: one JSON-RPC call.
async fn rpc(State(state): State<AppState>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    if !parts.headers.contains_key(header::AUTHORIZATION) {
        return ApiError::unauthorized(
            "/a2a needs `Authorization: Bearer <key>` with an agent key (create one with `clarify keys create --role agent`)",
        )
        .into_response();
    }
    let caller = match Caller::from_request_parts(&mut parts, &state).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = caller.must_ask() {
        return e.into_response();
    }
    let version = version(&parts.headers, parts.uri.query());
    let RawBody(bytes) = match RawBody::from_request(Request::from_parts(parts, body), &state).await
    {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let envelope: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            let error = RpcError::new(
                PARSE_ERROR,
                "PARSE_ERROR",
                format!("the body is not JSON: {e}"),
            );
            return crate::shared::json::Json(error.body(&Value::Null)).into_response();
        }
    };
    let id = envelope.get("id").cloned().unwrap_or(Value::Null);
    match call(state, caller, version, envelope).await {
        Ok(response) => response,
        Err(e) => crate::shared::json::Json(e.body(&id)).into_response(),
    }
}

/// Reads the envelope and runs its method.
async fn call(
    state: AppState,
    caller: Caller,
    version: Result<Version, RpcError>,
    envelope: Value,
) -> Result<Response, RpcError> {
    let Value::Object(mut envelope) = envelope else {
        return Err(RpcError::new(
            INVALID_REQUEST,
            "INVALID_REQUEST",
            "the body must be one JSON-RPC request object (batches are not served)",
        ));
    };
    if envelope.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(RpcError::new(
            INVALID_REQUEST,
            "INVALID_REQUEST",
            "`jsonrpc` must be \"2.0\"",
        ));
    }
    let id = envelope.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return Err(RpcError::new(
            INVALID_REQUEST,
            "INVALID_REQUEST",
            "`id` must be a string or a number",
        ));
    }
    let Some(Value::String(name)) = envelope.remove("method") else {
        return Err(RpcError::new(
            INVALID_REQUEST,
            "INVALID_REQUEST",
            "`method` must be a string naming an A2A method",
        ));
    };
    let version = version?;
    let method = method(&name, version)?;
    let params = match envelope.remove("params") {
        None | Some(Value::Null) => json!({}),
        Some(p @ Value::Object(_)) => p,
        Some(other) => {
            return Err(RpcError::params(format!(
                "params: must be an object, got {}",
                kind(&other)
            )));
        }
    };
    let call = Call {
        state,
        caller,
        version,
        id,
        params,
    };
    match method {
        Method::Send => tasks::send(call, false).await,
        Method::Stream => tasks::send(call, true).await,
        Method::Get => tasks::get(call).await,
        Method::Cancel => tasks::cancel(call).await,
        Method::Subscribe => tasks::subscribe(call).await,
        Method::PushCreate => callbacks::create(call).await,
        Method::PushGet => callbacks::get(call).await,
        Method::PushList => callbacks::list(call).await,
        Method::PushDelete => callbacks::delete(call).await,
        Method::List => Err(RpcError::unsupported(
            "ListTasks is not served; list requests with GET /v1/requests?session=<contextId>",
        )),
        Method::ExtendedCard => Err(RpcError::unsupported(
            "clarify has no extended agent card; its public card says everything",
        )),
    }
}
