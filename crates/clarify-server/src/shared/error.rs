//! Every HTTP error the server sends, made in one place.
//!
//! An [`ApiError`] carries the status, a stable snake_case `code` clients match on, a message for
//! the person reading it, and optionally the record that explains a conflict (who answered
//! first). Internal detail goes to the log, never to the client. Store failures are `503`
//! (`store_unavailable`, or `disk_full` when the database's disk has no room): the request may
//! be retried; nothing was half-written.

use crate::shared::json::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use clarify_core::{AnswerError, ValidationError};
use clarify_model::wire::RecordBody;
use clarify_store::{ExtendError, KeyError, ResolveError, StoreError};
use serde::Serialize;
use utoipa::ToSchema;

/// An error response: `{"error": {"code", "message"}}`, plus the current record on a conflict.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// For `409 already_resolved`: the request as it now is.
    pub record: Option<Box<RecordBody>>,
    /// For answers that do not fit: where in the body, such as `answers.q1.values.budget`.
    pub field: Option<String>,
    /// Seconds for a `Retry-After` header (`429`, `503 too_many_waiters`).
    pub retry_after: Option<u64>,
}

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
    /// On `409 already_resolved`: the request as resolved by whoever came first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<Box<RecordBody>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable snake_case code, e.g. `invalid_answer`, `already_resolved`, `not_found`.
    pub code: String,
    /// What went wrong, for a person.
    pub message: String,
    /// Where in the request body the problem is, when it is one place (answers:
    /// `answers.q1.values.budget`), so a form can show the error beside its input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            record: None,
            field: None,
            retry_after: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such request; check the id (requests of other tenants are not visible)",
        )
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn store(e: &StoreError) -> Self {
        if let StoreError::Rejected(invalid) = e {
            return Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                invalid.code(),
                invalid.to_string(),
            );
        }
        tracing::warn!(error = %e, "store operation failed");
        match e {
            StoreError::InvalidCursor => Self::bad_request("invalid_cursor", e.to_string()),
            StoreError::InvalidQuery(m) => Self::bad_request("invalid_range", m.clone()),
            StoreError::DiskFull(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "disk_full",
                "the database's disk is full: nothing was changed; free space on it and retry",
            ),
            _ => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                "the store is not reachable right now; nothing was changed, retry shortly",
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
                field: self.field,
            },
            record: self.record,
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        Self::store(&e)
    }
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, e.code(), e.to_string())
    }
}

impl From<AnswerError> for ApiError {
    fn from(e: AnswerError) -> Self {
        let mut error = Self::new(StatusCode::UNPROCESSABLE_ENTITY, e.code(), e.to_string());
        error.field = e.path();
        error
    }
}

impl From<KeyError> for ApiError {
    fn from(e: KeyError) -> Self {
        match e {
            KeyError::InvalidName { .. } => Self::bad_request("invalid_name", e.to_string()),
            KeyError::NameTaken(_) => Self::new(StatusCode::CONFLICT, "name_taken", e.to_string()),
            KeyError::NotFound(_) => Self::new(StatusCode::NOT_FOUND, "not_found", e.to_string()),
            KeyError::Store(e) => Self::store(&e),
        }
    }
}

/// Turns a failed resolution into its response; `record` renders the winner of a conflict.
/// The API's error for an extension the store refused.
pub fn extend_error(
    e: ExtendError,
    render: impl FnOnce(&clarify_store::RequestRecord) -> RecordBody,
) -> ApiError {
    match e {
        ExtendError::Resolve(e) => resolve_error(e, render),
        ExtendError::NoDeadline => {
            ApiError::new(StatusCode::CONFLICT, "never_expires", e.to_string())
        }
        ExtendError::Empty => ApiError::bad_request("invalid_extension", e.to_string()),
        ExtendError::TooFar { .. } => ApiError::bad_request("extension_too_long", e.to_string()),
    }
}

pub fn resolve_error(
    e: ResolveError,
    render: impl FnOnce(&clarify_store::RequestRecord) -> RecordBody,
) -> ApiError {
    match e {
        ResolveError::NotFound => ApiError::not_found(),
        ResolveError::AlreadyResolved(record) => {
            let by = record
                .resolution
                .as_ref()
                .and_then(|r| r.actor.name.clone());
            let message = match by {
                Some(name) => format!("the request is already {} (by {name})", record.status),
                None => format!("the request is already {}", record.status),
            };
            ApiError {
                record: Some(Box::new(render(&record))),
                ..ApiError::new(StatusCode::CONFLICT, "already_resolved", message)
            }
        }
        ResolveError::NotAllowed { .. } => ApiError::forbidden("not_a_responder", e.to_string()),
        ResolveError::SelfApproval { .. } | ResolveError::SelfApprovalNeedsIdentity { .. } => {
            ApiError::forbidden("self_approval", e.to_string())
        }
        ResolveError::QuorumNeedsIdentity { .. } => {
            ApiError::forbidden("quorum_needs_identity", e.to_string())
        }
        ResolveError::StepUpRequired => ApiError::forbidden("step_up_required", e.to_string()),
        ResolveError::AlreadyVoted { ref record, .. } => ApiError {
            record: Some(Box::new(render(record))),
            ..ApiError::new(StatusCode::CONFLICT, "already_voted", e.to_string())
        },
        ResolveError::Invalid(e) => e.into(),
        ResolveError::Store(e) => ApiError::store(&e),
    }
}
