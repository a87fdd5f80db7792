//! The `/v1` routes: create, read, list, answer, cancel and wait for requests; webhook
//! deliveries; key management.
//!
//! Handlers parse raw input into core types (the one door of `clarify_core::parse_request`),
//! call the store for the caller's tenant, and render wire types. Nothing here decides what an
//! answer means; the store and core do.

use std::time::Duration;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clarify_core::Status;
use clarify_store::{ListQuery, RequestRecord, Role};
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody, resolve_error};
use crate::shared::extract::{JsonBody, query};
use crate::shared::wire::{OutcomeBody, RecordBody};
use crate::state::AppState;
use crate::wire::{
    AnswerRequestBody, CreateRequestBody, DeliveriesBody, DeliveryBody, KeyBody, NotificationBody,
    NotificationsBody, PageBody,
};

/// The longest a long-poll waits.
pub const MAX_WAIT_SECONDS: u64 = 60;
/// A long-poll's wait when `timeout_seconds` is absent.
pub const DEFAULT_WAIT_SECONDS: u64 = 30;

pub(crate) fn routes() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/v1/requests", post(create).get(list))
        .route("/v1/requests/{id}", get(show))
        .route("/v1/requests/{id}/answer", post(answer))
        .route("/v1/requests/{id}/cancel", post(cancel))
        .route("/v1/requests/{id}/wait", get(wait))
        .route("/v1/requests/{id}/deliveries", get(deliveries))
        .route("/v1/requests/{id}/notifications", get(notifications))
        .route("/v1/keys", get(list_keys).post(create_key))
        .route("/v1/keys/{name}/revoke", post(revoke_key))
        .route("/v1/webhook-secret", get(webhook_secret))
}

/// An empty query value counts as absent (`?status=` lists every status).
fn given(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

pub(crate) fn render(state: &AppState, caller: &Caller, record: &RequestRecord) -> RecordBody {
    let link = caller.sees_links().then(|| state.answer_url(&record.id));
    RecordBody::new(record, link)
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
        (status = 422, description = "Invalid request; the code names the problem", body = ErrorBody)),
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
    let created = state.store.create(caller.tenant(), request).await?;
    let status = if created.created {
        state.metrics.created();
        state.changed(&created.record);
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(render(&state, &caller, &created.record))).into_response())
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
    Ok(Json(render(&state, &caller, &record)))
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
        (status = 403, description = "Not an allowed responder (`not_a_responder`), the role may not answer, or a quorum request answered without a responder name (`quorum_needs_identity`)", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody),
        (status = 409, description = "Already resolved (`already_resolved`; `record` shows by whom), or this responder already voted (`already_voted`)", body = ErrorBody),
        (status = 422, description = "The answer does not fit; still pending", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn answer(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    caller.must_answer()?;
    let record = state
        .store
        .answer(caller.tenant(), &id, &body, &caller.actor())
        .await
        .map_err(|e| resolve_error(e, |r| render(&state, &caller, r)))?;
    if record.status == Status::Pending {
        state.changed(&record);
        let body = render(&state, &caller, &record);
        return Ok((StatusCode::ACCEPTED, Json(body)).into_response());
    }
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
) -> Result<Json<RecordBody>, ApiError> {
    caller.must_ask()?;
    let record = state
        .store
        .cancel(caller.tenant(), &id, &caller.actor())
        .await
        .map_err(|e| resolve_error(e, |r| render(&state, &caller, r)))?;
    state.resolved(&record)?;
    Ok(Json(render(&state, &caller, &record)))
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
    Ok(Json(render(&state, &caller, &record)))
}

/// The webhook deliveries of a request, with every attempt.
#[utoipa::path(get, path = "/v1/requests/{id}/deliveries", tag = "webhooks",
    params(("id" = String, Path, description = "Request id")),
    responses(
        (status = 200, description = "Deliveries, oldest first", body = DeliveriesBody),
        (status = 403, description = "The key's role may not read deliveries", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<DeliveriesBody>, ApiError> {
    caller.must_ask()?;
    if state.store.get(caller.tenant(), &id).await?.is_none() {
        return Err(ApiError::not_found());
    }
    let deliveries = state.store.deliveries(caller.tenant(), &id).await?;
    Ok(Json(DeliveriesBody {
        deliveries: deliveries.iter().map(DeliveryBody::from).collect(),
    }))
}

/// The channel notifications of a request (its announcements on the configured channels), with
/// every attempt and the platform's message reference.
#[utoipa::path(get, path = "/v1/requests/{id}/notifications", tag = "channels",
    params(("id" = String, Path, description = "Request id")),
    responses(
        (status = 200, description = "Notifications, oldest first", body = NotificationsBody),
        (status = 403, description = "The key's role may not read notifications", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn notifications(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<NotificationsBody>, ApiError> {
    caller.must_ask()?;
    if state.store.get(caller.tenant(), &id).await?.is_none() {
        return Err(ApiError::not_found());
    }
    let found = state.store.notifications(caller.tenant(), &id).await?;
    Ok(Json(NotificationsBody {
        notifications: found.iter().map(NotificationBody::from).collect(),
    }))
}

/// The secret webhooks of the caller's tenant are signed with.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct WebhookSecretBody {
    /// Verify `Clarify-Signature: t=<unix seconds>,v1=<hex>` as
    /// `hex(HMAC-SHA256(secret, "<t>." + raw body))`; reject stale `t`.
    pub secret: String,
}

/// The webhook signing secret of the caller's tenant (agents and admins).
#[utoipa::path(get, path = "/v1/webhook-secret", tag = "webhooks",
    responses(
        (status = 200, description = "The secret", body = WebhookSecretBody),
        (status = 403, description = "The key's role may not read it", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn webhook_secret(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<WebhookSecretBody>, ApiError> {
    caller.must_ask()?;
    Ok(Json(WebhookSecretBody {
        secret: crate::webhooks::tenant_secret(&state, caller.tenant()),
    }))
}

/// The keys of the caller's tenant (admins).
#[utoipa::path(get, path = "/v1/keys", tag = "keys",
    responses(
        (status = 200, description = "Keys, revoked ones included", body = Vec<KeyBody>),
        (status = 403, description = "Not an admin key", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_keys(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<KeyBody>>, ApiError> {
    caller.must_admin()?;
    let keys = state.store.keys().await?;
    Ok(Json(
        keys.iter()
            .filter(|k| k.tenant == caller.tenant())
            .map(KeyBody::from)
            .collect(),
    ))
}

/// The body of `POST /v1/keys`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewKeyBody {
    pub name: String,
    /// `agent`, `responder` or `admin`.
    pub role: String,
}

/// A new key: the only time its secret is shown.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct CreatedKeyBody {
    pub key: KeyBody,
    /// Send as `Authorization: Bearer <token>`.
    pub token: String,
}

/// Creates a key in the caller's tenant (admins).
#[utoipa::path(post, path = "/v1/keys", tag = "keys", request_body = NewKeyBody,
    responses(
        (status = 201, description = "Created", body = CreatedKeyBody),
        (status = 409, description = "An active key has this name", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create_key(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewKeyBody>,
) -> Result<Response, ApiError> {
    caller.must_admin()?;
    let role = Role::parse(&body.role).ok_or_else(|| {
        ApiError::bad_request(
            "invalid_role",
            format!(
                "unknown role {:?}; use agent, responder or admin",
                body.role
            ),
        )
    })?;
    let new = state
        .store
        .create_key(&body.name, role, caller.tenant())
        .await?;
    let body = CreatedKeyBody {
        key: KeyBody::from(&new.key),
        token: new.token,
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Revokes the active key `name` of the caller's tenant (admins).
#[utoipa::path(post, path = "/v1/keys/{name}/revoke", tag = "keys",
    params(("name" = String, Path, description = "Key name")),
    responses(
        (status = 200, description = "Revoked", body = KeyBody),
        (status = 404, description = "No active key has this name", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn revoke_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<KeyBody>, ApiError> {
    caller.must_admin()?;
    let in_tenant = state
        .store
        .keys()
        .await?
        .iter()
        .any(|k| k.name == name && k.revoked_at.is_none() && k.tenant == caller.tenant());
    if !in_tenant {
        return Err(clarify_store::KeyError::NotFound(name).into());
    }
    let key = state.store.revoke_key(&name).await?;
    state.keys.forget(&key.id);
    Ok(Json(KeyBody::from(&key)))
}
