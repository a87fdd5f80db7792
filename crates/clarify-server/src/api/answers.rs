//! `POST /v1/answers`: several requests answered in one call, each exactly as answering it
//! alone would.
//!
//! Each item goes through the single-answer route's own handler code (`requests::answer_one`),
//! one after another, so an item is validated and resolved alone: a bad item gets its own error
//! and never blocks another, and every result is the HTTP status and body that item would have
//! had on its own. Only the batch itself can be refused as a whole: not a list of items, or more
//! than [`MAX_ITEMS`].

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::api::requests::answer_one;
use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::JsonBody;
use crate::shared::json::Json;
use crate::state::AppState;

/// The most items one batch answers.
pub const MAX_ITEMS: usize = 100;
/// The largest response body of one item that is read back into the batch's result.
const ITEM_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// The body of `POST /v1/answers`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct BatchBody {
    /// At most 100, each `{"id": "<request id>", "answer": <the body of
    /// POST /v1/requests/{id}/answer>}`.
    #[schema(value_type = Vec<Object>)]
    items: Vec<Value>,
}

/// One result per item, in order.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct BatchResultBody {
    /// Each `{"id", "status", "body"}`: the HTTP status and body answering that item alone gives.
    #[schema(value_type = Vec<Object>)]
    pub items: Vec<Value>,
}

/// Answers several requests, each as `POST /v1/requests/{id}/answer` would.
#[utoipa::path(post, path = "/v1/answers", tag = "requests", request_body = BatchBody,
    responses(
        (status = 200, description = "One result per item, in order, whatever each item's own status", body = BatchResultBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "Not a batch: `items` missing or not a list (`invalid_batch`), or more than 100 items (`too_many_items`)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn batch(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<BatchResultBody>, ApiError> {
    let unprocessable =
        |code, message: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message);
    let items = match &body {
        Value::Object(obj) => {
            if let Some(unknown) = obj.keys().find(|k| *k != "items") {
                return Err(unprocessable(
                    "unknown_field",
                    format!("{unknown}: unknown field; a batch is {{\"items\": [...]}}"),
                ));
            }
            match obj.get("items") {
                Some(Value::Array(items)) => items,
                _ => {
                    return Err(unprocessable(
                        "invalid_batch",
                        "items: must be a list of {\"id\", \"answer\"}".to_owned(),
                    ));
                }
            }
        }
        _ => {
            return Err(unprocessable(
                "invalid_batch",
                "the body must be {\"items\": [{\"id\", \"answer\"}, ...]}".to_owned(),
            ));
        }
    };
    if items.len() > MAX_ITEMS {
        return Err(unprocessable(
            "too_many_items",
            format!(
                "items: at most {MAX_ITEMS} per batch, got {}; send the rest in another",
                items.len()
            ),
        ));
    }
    let mut results = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let (id, status, body) = match read_item(i, item) {
            Ok((id, answer)) => {
                let response = match answer_one(&state, &caller, &id, answer, None).await {
                    Ok(response) => response,
                    Err(e) => e.into_response(),
                };
                let status = response.status();
                let bytes = axum::body::to_bytes(response.into_body(), ITEM_BODY_LIMIT)
                    .await
                    .unwrap_or_default();
                let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                (Value::from(id), status, body)
            }
            Err((id, e)) => {
                let status = e.status;
                let response = (*e).into_response();
                let bytes = axum::body::to_bytes(response.into_body(), ITEM_BODY_LIMIT)
                    .await
                    .unwrap_or_default();
                (
                    id,
                    status,
                    serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                )
            }
        };
        results.push(json!({"id": id, "status": status.as_u16(), "body": body}));
    }
    Ok(Json(BatchResultBody { items: results }))
}

/// An item's request id and answer body, or the error answering it alone would meet.
fn read_item(i: usize, item: &Value) -> Result<(String, &Value), (Value, Box<ApiError>)> {
    let fail = |id: Value, code, message: String| {
        (
            id,
            Box::new(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                code,
                message,
            )),
        )
    };
    let Value::Object(obj) = item else {
        return Err(fail(
            Value::Null,
            "invalid_batch_item",
            format!("items[{i}]: must be {{\"id\", \"answer\"}}"),
        ));
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    if let Some(unknown) = obj.keys().find(|k| *k != "id" && *k != "answer") {
        return Err(fail(
            id,
            "unknown_field",
            format!("items[{i}].{unknown}: unknown field; an item is {{\"id\", \"answer\"}}"),
        ));
    }
    let Some(text) = id.as_str().filter(|t| !t.is_empty()) else {
        return Err(fail(
            id.clone(),
            "invalid_batch_item",
            format!("items[{i}].id: must be a request id"),
        ));
    };
    let Some(answer) = obj.get("answer") else {
        return Err(fail(
            id.clone(),
            "invalid_batch_item",
            format!("items[{i}].answer: missing; give the answer body"),
        ));
    };
    Ok((text.to_owned(), answer))
}
