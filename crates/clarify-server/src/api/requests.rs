//! `/v1/requests`: create, read, list, answer, cancel, extend and wait for requests.
//!
//! Handlers parse raw input into core types (the one door of `clarify_core::parse_request`),
//! call the store for the caller's tenant, and render wire types. Nothing here decides what an
//! answer means; the store and core do.

use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use clarify_core::Status;
use clarify_model::wire::{ActionBody, OutcomeBody, RecordBody};
use clarify_store::ListQuery;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::api::render;
use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody, extend_error, resolve_error};
use crate::shared::extract::{Drained, JsonBody, query};
use crate::shared::json::Json;
use crate::state::AppState;

/// The longest a long-poll waits.
pub const MAX_WAIT_SECONDS: u64 = 60;
/// A long-poll's wait when `timeout_seconds` is absent.
pub const DEFAULT_WAIT_SECONDS: u64 = 30;

/// An empty query value counts as absent (`?status=` lists every status).
fn given(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// Creates a request. A repeated idempotency key (body field or `Idempotency-Key` header)
/// returns the original record with `200`, whatever its status.
#[utoipa::path(post, path = "/v1/requests", tag = "requests", request_body = CreateRequestBody,
    params(("Idempotency-Key" = Option<String>, Header, description = "Returns the original request when repeated")),
    responses(
        (status = 201, description = "Created", body = RecordBody),
        (status = 200, description = "An existing request: same idempotency key, or `dedupe` matched a pending one", body = RecordBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 403, description = "Role may not create requests", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "Invalid request, or a `callback_url` whose address is not allowed (`address_not_allowed`); the code names the problem", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(mut raw): JsonBody<Value>,
) -> Result<Response, ApiError> {
    caller.must_ask()?;
    if let Some(key) = headers.get("idempotency-key") {
        let key = key.to_str().map_err(|_| {
            ApiError::bad_request("invalid_header", "the Idempotency-Key header must be text")
        })?;
        if let Some(obj) = raw.as_object_mut() {
            match obj.get("idempotency_key") {
                Some(Value::String(existing)) if existing != key => {
                    return Err(ApiError::bad_request(
                        "conflicting_idempotency_key",
                        "the Idempotency-Key header and the idempotency_key field differ; send one",
                    ));
                }
                _ => {
                    obj.insert("idempotency_key".to_owned(), Value::String(key.to_owned()));
                }
            }
        }
    }
    let request = clarify_core::parse_request(&raw, &state.config.limits)?;
    admit_targets(&state.config.outbound, &request).await?;
    let created = state.store.create(caller.tenant(), request).await?;
    let status = if created.created {
        state.metrics.created();
        state.changed(&created.record);
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut body = render(&state, &caller, &created.record);
    if created.created {
        body.client_answer_token = Some(crate::shared::sign::client_answer_token(
            &state.secrets.link,
            &caller.key.id,
            &created.record.id,
        ));
    }
    Ok((status, Json(body)).into_response())
}

/// One request, with its outcome once resolved.
#[utoipa::path(get, path = "/v1/requests/{id}", tag = "requests",
    params(("id" = String, Path, description = "Request id")),
    responses(
        (status = 200, description = "The request", body = RecordBody),
        (status = 404, description = "No such request in the caller's tenant", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RecordBody>, ApiError> {
    let record = state
        .store
        .get(caller.tenant(), &id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    // A resolved request carries its receipt here too, once the audit chain has numbered it
    // (at once, but for a decision just made on PostgreSQL, or one an instance of a release
    // before receipts numbered during a rolling upgrade).
    let record = if record.status.is_resolved() {
        state.numbered(record).await
    } else {
        record
    };
    Ok(Json(render(&state, &caller, &record)))
}

/// An image of a request's display blocks, by its position in `display` (same auth as the
/// record). Served as the type its bytes proved to be, with `nosniff` and a sandboxing policy.
#[utoipa::path(get, path = "/v1/requests/{id}/display/{n}", tag = "requests",
    params(("id" = String, Path, description = "Request id"),
           ("n" = usize, Path, description = "The block's position in `display`, from 0")),
    responses(
        (status = 200, description = "The image", content(
            (Vec<u8> = "image/png"), (Vec<u8> = "image/jpeg"), (Vec<u8> = "image/gif"), (Vec<u8> = "image/webp"))),
        (status = 404, description = "No such request in the caller's tenant, or no image block at that position", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn display_image(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, n)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let record = state
        .store
        .get(caller.tenant(), &id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    crate::shared::media::image(&record.request.display, &n)
}

/// Filters of `GET /v1/requests`. Values are parsed by the handler, so a bad one gets an error
/// that names it.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// `pending`, `answered`, `skipped`, `expired` or `cancelled`.
    status: Option<String>,
    session: Option<String>,
    agent: Option<String>,
    tag: Option<String>,
    /// 1 to 500; default 50.
    #[param(value_type = Option<usize>)]
    limit: Option<String>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// A page of the caller's requests, newest first.
#[utoipa::path(get, path = "/v1/requests", tag = "requests", params(ListParams),
    responses(
        (status = 200, description = "A page", body = PageBody),
        (status = 400, description = "Bad filter or cursor", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<PageBody>, ApiError> {
    let q = query(q)?;
    let status = match given(q.status) {
        None => None,
        Some(s) => Some(s.parse::<Status>().map_err(|_| {
            ApiError::bad_request(
                "invalid_status",
                format!(
                    "unknown status {}; use pending, answered, skipped, expired or cancelled",
                    clarify_core::quoted(&s)
                ),
            )
        })?),
    };
    let limit = match given(q.limit) {
        None => None,
        Some(l) => Some(
            l.parse::<usize>()
                .ok()
                .filter(|n| (1..=ListQuery::MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_limit",
                        format!(
                            "limit must be a number from 1 to {}, got {}",
                            ListQuery::MAX_LIMIT,
                            clarify_core::quoted(&l)
                        ),
                    )
                })?,
        ),
    };
    let query = ListQuery {
        status,
        session: given(q.session),
        agent: given(q.agent),
        tag: given(q.tag),
        limit,
        cursor: given(q.cursor),
    };
    let page = state.store.list(caller.tenant(), &query).await?;
    Ok(Json(PageBody {
        requests: page
            .records
            .iter()
            .map(|r| render(&state, &caller, r))
            .collect(),
        next_cursor: page.next_cursor,
    }))
}

/// Answers (or skips) a request. An answer that does not fit is refused with `422` and the
/// request stays pending. On a quorum request (`approvals_required` above 1) the answer is the
/// caller's vote: `202` with the record while more approvals are needed, `200` with the outcome
/// once this vote decides it.
#[utoipa::path(post, path = "/v1/requests/{id}/answer", tag = "requests",
    params(("id" = String, Path, description = "Request id")),
    request_body = AnswerRequestBody,
    responses(
        (status = 200, description = "Resolved; the outcome", body = OutcomeBody),
        (status = 202, description = "A vote on a quorum request, counted; the request is still pending and its record shows the votes so far", body = RecordBody),
        (status = 403, description = "Not an allowed responder (`not_a_responder`), the role may not answer, a quorum request answered without a responder name (`quorum_needs_identity`), the person the request acts for under four eyes (`self_approval`), or a high-risk request under `[decisions] step_up` answered without a fresh passkey confirmation for it in `X-Clarify-Step-Up` (`step_up_required`; an admin key needs none)", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody),
        (status = 409, description = "Already resolved (`already_resolved`; `record` shows by whom), or this responder already voted (`already_voted`)", body = ErrorBody),
        (status = 422, description = "The answer does not fit; still pending", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn answer(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    let proof = headers
        .get(crate::state::passkeys::STEP_UP_HEADER)
        .and_then(|v| v.to_str().ok());
    answer_one(&state, &caller, &id, &body, proof).await
}

/// Answers request `id` with `body` as the caller: what `POST /v1/requests/{id}/answer` does,
/// shared with the batch route.
pub(crate) async fn answer_one(
    state: &AppState,
    caller: &Caller,
    id: &str,
    body: &Value,
    step_up_proof: Option<&str>,
) -> Result<Response, ApiError> {
    caller.must_answer()?;
    let actor = crate::api::passkeys::answer_actor(state, caller, id, step_up_proof).await?;
    let record = state
        .store
        .answer(caller.tenant(), id, body, &actor)
        .await
        .map_err(|e| resolve_error(e, |r| render(state, caller, r)))?;
    tracing::info!(request = %id, principal = %caller.principal, via = caller.channel, "answered");
    if actor.step_up == clarify_store::StepUp::AdminKey
        && state.store.needs_step_up(&record.request)
    {
        // Recorded in the audit chain: an admin key answered without a passkey confirmation.
        let waived = clarify_store::AdminEvent::new(
            caller.tenant(),
            clarify_store::AdminKind::StepUpWaived,
            id,
            &actor,
        );
        if let Err(e) = state.store.record_admin(waived).await {
            tracing::warn!(error = %e, request = %id, "recording an admin key's answer without step-up failed");
        }
    }
    if record.status == Status::Pending {
        state.changed(&record);
        let body = render(state, caller, &record);
        return Ok((StatusCode::ACCEPTED, Json(body)).into_response());
    }
    let record = state.numbered(record).await;
    Ok(Json(state.resolved(&record)?).into_response())
}

/// The header carrying a request's `client_answer_token`.
const CLIENT_ANSWER_HEADER: &str = "x-clarify-client-answer";

/// Records the answer the asking agent's MCP client took from its user, for the key that
/// created the request.
///
/// The client's user answered a form elicitation; the server records it on the key's behalf:
/// `answered_via` is `mcp` and `answered_by` the key's name, as on `/mcp`. This is how
/// `clarify mcp --url` asks in the client too. An agent key
/// answers nothing else: the route needs the `client_answer_token` handed out only in the
/// response that created the request (an HMAC of the key and the request, so another key's, or
/// another request's, does not match), and the store takes it only while the request is pending
/// (a person's answer elsewhere wins first: `409` with the record). The process holding the key
/// sends it only for a client that declared form elicitation and answered the form.
#[utoipa::path(post, path = "/v1/requests/{id}/client-answer", tag = "requests",
    params(("id" = String, Path, description = "Request id"),
           ("X-Clarify-Client-Answer" = String, Header, description = "The `client_answer_token` of the response that created the request")),
    request_body = AnswerRequestBody,
    responses(
        (status = 200, description = "Resolved; the outcome", body = OutcomeBody),
        (status = 403, description = "The role may not create requests, the token is missing or is not this key's for this request (`not_the_creator`), or the request names its responders or needs several approvals (`not_for_client`)", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody),
        (status = 409, description = "Already resolved (`already_resolved`; `record` shows by whom)", body = ErrorBody),
        (status = 422, description = "The answer does not fit; still pending", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn client_answer(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    caller.must_ask()?;
    let expected =
        crate::shared::sign::client_answer_token(&state.secrets.link, &caller.key.id, &id);
    let given = headers
        .get(CLIENT_ANSWER_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !crate::shared::sign::equal(given.as_bytes(), expected.as_bytes()) {
        return Err(ApiError::forbidden(
            "not_the_creator",
            "only the key that created this request may record its MCP client's answer, with the client_answer_token it was given",
        ));
    }
    let asked = state
        .store
        .get(caller.tenant(), &id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    // As `/mcp` and the embedded mode never ask these in a client: the client's user is nobody
    // the request can name, and a key's answer must not count as a vote.
    if asked.request.is_quorum() || asked.request.responders.is_some() {
        return Err(ApiError::forbidden(
            "not_for_client",
            "a request that names its responders or needs several approvals is answered by those people, not in the MCP client",
        ));
    }
    let actor = clarify_store::Actor::new(caller.key.name.clone(), "mcp")
        .as_principal(caller.principal.clone());
    let record = state
        .store
        .answer(caller.tenant(), &id, &body, &actor)
        .await
        .map_err(|e| resolve_error(e, |r| render(&state, &caller, r)))?;
    tracing::info!(request = %id, principal = %caller.principal, "answered in the MCP client");
    let record = state.numbered(record).await;
    Ok(Json(state.resolved(&record)?).into_response())
}

/// Cancels a pending request.
#[utoipa::path(post, path = "/v1/requests/{id}/cancel", tag = "requests",
    params(("id" = String, Path, description = "Request id")),
    responses(
        (status = 200, description = "Cancelled; the record", body = RecordBody),
        (status = 404, description = "No such request", body = ErrorBody),
        (status = 409, description = "Already resolved", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    _: Drained,
) -> Result<Json<RecordBody>, ApiError> {
    caller.must_ask()?;
    let record = state
        .store
        .cancel(caller.tenant(), &id, &caller.actor())
        .await
        .map_err(|e| resolve_error(e, |r| render(&state, &caller, r)))?;
    state.resolved(&record)?;
    let record = state.numbered(record).await;
    Ok(Json(render(&state, &caller, &record)))
}

/// The body of `POST /v1/requests/{id}/extend`.
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct ExtendRequestBody {
    /// How much later the request expires: a duration (`30m`, `2h`, `1d`, `90s`) or a whole
    /// number of seconds.
    #[schema(value_type = String, example = "30m")]
    pub by: Value,
}

/// Moves a pending request's deadline (`expires_at`) later, by someone who may answer it (the
/// same rules as answering). The request may be extended, in all, up to `[decisions]
/// max_extension` (default one day) past its first deadline; further is refused, not clamped.
/// Its responders are warned again `warn_before` ahead of the new deadline, and the extension
/// is an `extended` event in the audit chain (`request.extended` on the event stream).
#[utoipa::path(post, path = "/v1/requests/{id}/extend", tag = "requests",
    params(("id" = String, Path, description = "Request id")),
    request_body = ExtendRequestBody,
    responses(
        (status = 200, description = "Extended; the record with its new `expires_at`", body = RecordBody),
        (status = 400, description = "`by` is missing, not a duration, zero, or would move the deadline past the furthest the server allows (`invalid_extension`, `extension_too_long`, whose message says by how much it may still be extended)", body = ErrorBody),
        (status = 403, description = "Not allowed to answer this request (`not_a_responder`, `self_approval`, `step_up_required`), or the role may not answer", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody),
        (status = 409, description = "Already resolved (`already_resolved`, with the `record`), or the request never expires (`never_expires`)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn extend(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<RecordBody>, ApiError> {
    caller.must_answer()?;
    let seconds = extension(&body)?;
    let proof = headers
        .get(crate::state::passkeys::STEP_UP_HEADER)
        .and_then(|v| v.to_str().ok());
    let actor = crate::api::passkeys::answer_actor(&state, &caller, &id, proof).await?;
    let record = state
        .extend(caller.tenant(), &id, seconds, &actor)
        .await
        .map_err(|e| extend_error(e, |r| render(&state, &caller, r)))?;
    tracing::info!(request = %id, principal = %caller.principal, seconds, "extended");
    Ok(Json(render(&state, &caller, &record)))
}

/// The seconds `{"by": "30m"}` (or `{"by": 1800}`) asks for.
fn extension(body: &Value) -> Result<u64, ApiError> {
    let bad = |message: String| ApiError::bad_request("invalid_extension", message);
    let Some(fields) = body.as_object() else {
        return Err(bad(
            "the body must be a JSON object such as {\"by\": \"30m\"}".to_owned(),
        ));
    };
    if let Some(key) = fields.keys().find(|k| *k != "by") {
        return Err(bad(format!(
            "unknown field {}; the body takes only \"by\", e.g. {{\"by\": \"30m\"}}",
            clarify_core::quoted(key)
        )));
    }
    match fields.get("by") {
        Some(Value::String(text)) => {
            clarify_core::text::parse_duration_seconds(text).map_err(|e| bad(format!("by: {e}")))
        }
        Some(Value::Number(n)) => n.as_u64().ok_or_else(|| {
            bad(format!(
                "by: must be a whole number of seconds or a duration such as \"30m\", got {n}"
            ))
        }),
        Some(other) if !other.is_null() => Err(bad(
            "by: must be a duration such as \"30m\" or a whole number of seconds".to_owned(),
        )),
        _ => Err(bad(
            "by is required: how much later the request expires, e.g. {\"by\": \"30m\"}".to_owned(),
        )),
    }
}

/// The query of `GET /v1/requests/{id}/wait`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitParams {
    /// 0 to 60; default 30; larger values wait 60.
    #[param(value_type = Option<u64>)]
    timeout_seconds: Option<String>,
}

/// Long-poll: returns as soon as the request is resolved, or the still-pending record after
/// `timeout_seconds` (default 30; values above 60 wait 60).
#[utoipa::path(get, path = "/v1/requests/{id}/wait", tag = "requests",
    params(("id" = String, Path, description = "Request id"), WaitParams),
    responses(
        (status = 200, description = "The record: resolved, or still pending when the time ran out", body = RecordBody),
        (status = 400, description = "timeout_seconds is not a number", body = ErrorBody),
        (status = 403, description = "The key's role may not wait for requests", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn wait(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    q: Result<Query<WaitParams>, QueryRejection>,
) -> Result<Json<RecordBody>, ApiError> {
    caller.must_ask()?;
    let seconds = match given(query(q)?.timeout_seconds) {
        None => DEFAULT_WAIT_SECONDS,
        Some(v) => v.parse::<u64>().map_err(|_| {
            ApiError::bad_request(
                "invalid_timeout",
                format!(
                    "timeout_seconds must be a whole number of seconds from 0 to {MAX_WAIT_SECONDS}, got {}",
                    clarify_core::quoted(&v)
                ),
            )
        })?,
    }
    .min(MAX_WAIT_SECONDS);
    let _permit = state.waiter()?;
    let started = std::time::Instant::now();
    let waited = tokio::select! {
        r = state.store.wait(caller.tenant(), &id, Duration::from_secs(seconds)) => Some(r),
        () = state.shutdown.cancelled() => None,
    };
    let record = match waited {
        Some(r) => r.map_err(|e| resolve_error(e, |r| render(&state, &caller, r)))?,
        // Shutting down: hand back the current state so the client polls another instance.
        None => state
            .store
            .get(caller.tenant(), &id)
            .await?
            .ok_or_else(ApiError::not_found)?,
    };
    state
        .metrics
        .waited(started.elapsed(), record.status.is_resolved());
    let record = state.numbered(record).await;
    Ok(Json(render(&state, &caller, &record)))
}

/// A page of requests, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageBody {
    pub requests: Vec<RecordBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// Refuses a request whose outcome would go where the outbound guard does not let calls go: its
/// `callback_url`, or the workflow engine its `resume` names (`422 address_not_allowed`).
pub(crate) async fn admit_targets(
    guard: &crate::shared::outbound::OutboundGuard,
    request: &clarify_core::NewRequest,
) -> Result<(), ApiError> {
    if let Some(url) = &request.callback_url {
        guard.check_field("callback_url", url).await?;
    }
    if let Some(clarify_core::Resume::Restate { ingress, .. }) = &request.resume {
        guard.check_field("resume.restate.ingress", ingress).await?;
    }
    Ok(())
}

/// The body of `POST /v1/requests`, in its canonical shape. LLM-shaped variants (`question` with
/// `choices`, `prompt` with `options`, option objects with `title`, ...) are accepted too and
/// coerced before validation.
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct CreateRequestBody {
    /// 1 to 5 questions answered together.
    pub questions: Vec<NewQuestionBody>,
    /// Text, or a JSON object, shown to the human.
    pub context: Option<Value>,
    pub session: Option<String>,
    pub agent: Option<String>,
    /// At most 10.
    pub tags: Option<Vec<String>>,
    /// The LLM's id for the tool call that raised this request.
    pub tool_call_id: Option<String>,
    /// Absent: the server default (3600); `0`: never expires.
    pub timeout_seconds: Option<u64>,
    /// Default true.
    pub allow_skip: Option<bool>,
    /// Names of the responders allowed to answer (`group:NAME` for every member of a group);
    /// absent lets every responder answer.
    pub responders: Option<Vec<String>>,
    /// The person the agent acts for. With `[decisions] forbid_self_approval`, that person's
    /// answer or vote is refused (`403 self_approval`) on every path.
    pub on_behalf_of: Option<String>,
    /// Where the outcome is POSTed once resolved (signed; see `GET /v1/webhook-secret`).
    pub callback_url: Option<String>,
    /// A durable workflow the outcome resumes: `{"restate": {"ingress": URL, "awakeable": ID}}`
    /// resolves that Restate awakeable with the outcome through the ingress, once the request
    /// resolves, delivered like a `callback_url` (retried; listed in the deliveries).
    #[schema(value_type = Option<Object>)]
    pub resume: Option<Value>,
    /// Or the `Idempotency-Key` header: a repeated key returns the original request.
    pub idempotency_key: Option<String>,
    /// Return an identical pending request of the same session instead of asking again.
    pub dedupe: Option<bool>,
    /// 1 to 10 (default 1); above 1 every question must be an approval, each allowed
    /// responder's decision is a vote, and a deny is final.
    pub approvals_required: Option<u32>,
    /// At least 60: while pending, announce the request again this often.
    pub remind_every_seconds: Option<u64>,
    /// Warn the responders this long before the request expires, once (`0`: no warning);
    /// absent, the route's `warn_before` or the server's default, 10 minutes. A request whose
    /// whole life is shorter gets no warning.
    pub warn_before_seconds: Option<u64>,
    /// At least 1, with `escalate_to`: after this long pending, those responders may answer.
    pub escalate_after_seconds: Option<u64>,
    pub escalate_to: Option<Vec<String>>,
    /// The answer applied at expiry: `{"decision": "approve"|"deny", "reason"?}` for
    /// approvals, `{"option": id}` or `"recommended"` for a single choice.
    #[schema(value_type = Option<Object>)]
    pub on_timeout: Option<Value>,
    /// At most 20 blocks shown above the questions (their text at most 256 KiB together; each
    /// image at most 1 MiB, all at most 2 MiB): `{"type": "markdown", "text"}`,
    /// `{"type": "diff", "path"?, "diff"}` or `{"type": "diff", "path"?, "before", "after"}`,
    /// `{"type": "code", "language"?, "text"}`, `{"type": "fields", "items": [{"label",
    /// "value"}]}`, `{"type": "image", "data": "data:image/png;base64,...", "alt"}`,
    /// `{"type": "link", "url"}`; each may have a `title`. An approval sent without any gets
    /// blocks derived from its action.
    #[schema(value_type = Option<Vec<Object>>)]
    pub display: Option<Vec<Value>>,
    /// At most 120 characters naming what is asked; derived when absent.
    pub summary: Option<String>,
    /// The id of an earlier, resolved request of the same tenant that this one revises.
    pub revises: Option<String>,
    /// `low`, `normal` (default) or `high`. With `[decisions] step_up = "high"`, a high-risk
    /// request is answered only after a passkey confirmation (inbox and link page); a
    /// responder key's answer is refused with `403 step_up_required`.
    #[schema(value_type = Option<String>)]
    pub risk: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct NewQuestionBody {
    /// Default `q1`, `q2`, ... by position.
    pub id: Option<String>,
    /// At most 32 characters.
    pub header: Option<String>,
    /// Required; at most 4,000 characters.
    pub text: String,
    /// `open`, `single`, `multi`, `approval` or `form`.
    pub kind: Option<String>,
    /// form: 1 to 20 fields, `{id, label, type, required?, description?, default?, ...}` with
    /// the limits of their type.
    #[schema(value_type = Option<Vec<Object>>)]
    pub fields: Option<Vec<Value>>,
    /// form, instead of `fields`: a flat JSON Schema object (MCP elicitation's
    /// `requestedSchema` shape), coerced into fields.
    #[schema(value_type = Option<Object>)]
    pub schema: Option<Value>,
    /// single and multi: `{id?, label, description?}` objects or bare label strings.
    #[schema(value_type = Option<Vec<Object>>)]
    pub options: Option<Vec<Value>>,
    pub allow_other: Option<bool>,
    pub recommended: Option<String>,
    pub action: Option<ActionBody>,
    pub scopes: Option<Vec<String>>,
    pub allow_edit: Option<bool>,
}

/// The body of an answer: per-question answers, `{"skip": true}`, or (for a one-question
/// request) the answer object itself.
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct AnswerRequestBody {
    /// Question id → `{"option": id}` | `{"other": text}` | `{"options": [ids], "other"?}` |
    /// `{"text": text}` | `{"decision": "approve"|"deny", "scope"?, "edited_arguments"?, "reason"?}`
    /// | `{"decision": "revise", "reason"}` (request changes; the reason says which).
    #[schema(value_type = Option<Object>)]
    pub answers: Option<Value>,
    pub skip: Option<bool>,
}
