//! What operators and their tools ask: `/healthz` (the process answers), `/readyz` (the store
//! answers, and this instance is not shutting down) and `/metrics` (Prometheus).

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::shared::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is alive", content_type = "text/plain")))]
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: the store answers.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, description = "The store answers", content_type = "text/plain"),
    (status = 503, description = "The store is unreachable", body = ErrorBody)))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.shutdown.is_cancelled() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "this instance is shutting down",
        )
        .into_response();
    }
    match state.store.ping().await {
        Ok(()) => "ready\n".into_response(),
        Err(e) => ApiError::store(&e).into_response(),
    }
}

/// The metrics in Prometheus text format.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses((status = 200, description = "OpenMetrics text exposition (Prometheus reads it)", content_type = "application/openmetrics-text")))]
pub async fn render(State(state): State<AppState>) -> Response {
    if let Err(e) = state.metrics.count_pending(&state.store).await {
        return ApiError::store(&e).into_response();
    }
    let Ok(text) = state.metrics.encode(state.waiters.open()) else {
        return ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the metrics could not be rendered",
        )
        .into_response();
    };
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    response
}
