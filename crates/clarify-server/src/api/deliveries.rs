//! What was sent about a request: `/v1/requests/{id}/deliveries` (webhooks) and
//! `/v1/requests/{id}/notifications` (announcements on channels), each with its attempts.

use axum::extract::{Path, State};
use clarify_model::wire::{event_name, time};
use clarify_store::{Attempt, Delivery};
use serde::Serialize;
use utoipa::ToSchema;

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::json::Json;
use crate::state::AppState;

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

/// A webhook delivery and its attempts.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryBody {
    pub id: u64,
    pub url: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub created_at: String,
    pub next_attempt_at: Option<String>,
    /// The event it announces: `request.reminded` or `request.escalated` for a pending
    /// request; absent for the delivery of the resolution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    pub attempts: Vec<AttemptBody>,
}

impl From<&Delivery> for DeliveryBody {
    fn from(d: &Delivery) -> Self {
        Self {
            id: d.id,
            url: d.url.clone(),
            status: d.status.as_str().to_owned(),
            created_at: time(d.created_at),
            next_attempt_at: d.next_attempt_at.map(time),
            event: d.event.map(|e| event_name(e).to_owned()),
            attempts: d.attempts.iter().map(AttemptBody::from).collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptBody {
    pub number: u32,
    pub at: String,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl From<&Attempt> for AttemptBody {
    fn from(a: &Attempt) -> Self {
        Self {
            number: a.number,
            at: time(a.at),
            status_code: a.status_code,
            error: a.error.clone(),
            duration_ms: a.duration_ms,
        }
    }
}

/// An announcement of a request on a channel, and its attempts.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationBody {
    pub id: u64,
    /// The channel's configured name.
    pub channel: String,
    /// `request.created` for the announcement, `request.reminded` or `request.escalated`.
    pub event: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub created_at: String,
    pub next_attempt_at: Option<String>,
    /// The platform's reference to the message posted (ntfy: the message id).
    pub message_ref: Option<String>,
    pub attempts: Vec<AttemptBody>,
}

impl From<&Delivery> for NotificationBody {
    fn from(d: &Delivery) -> Self {
        Self {
            id: d.id,
            channel: d.channel.clone().unwrap_or_default(),
            event: event_name(d.event.unwrap_or(clarify_store::EventKind::Created)).to_owned(),
            status: d.status.as_str().to_owned(),
            created_at: time(d.created_at),
            next_attempt_at: d.next_attempt_at.map(time),
            message_ref: d.message_ref.clone(),
            attempts: d.attempts.iter().map(AttemptBody::from).collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationsBody {
    pub notifications: Vec<NotificationBody>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveriesBody {
    pub deliveries: Vec<DeliveryBody>,
}
