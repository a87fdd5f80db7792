//! Request bodies and queries, read with the API's errors: no extractor's plain-text rejection
//! reaches a client.
//!
//! [`RawBody`] is a body as bytes (`413 body_too_large` past the limit, with or without a
//! `Content-Length`); [`JsonBody`] parses one (`400` when it is not JSON, `422` when it is JSON
//! of the wrong shape); [`query`] turns a malformed query string into `400 invalid_query`.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{FromRequest, Query, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::shared::error::ApiError;

/// A JSON request body, with the API's errors: `413` when too large, `400` when it is not JSON,
/// `422` when it is JSON of the wrong shape. Any content type is accepted, so `curl -d` works.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// A request body as bytes, with the API's JSON errors: `413 body_too_large` past the body limit
/// (with or without a `Content-Length`), `400` when it cannot be read.
#[derive(Debug)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| match e {
            BytesRejection::FailedToBufferBody(f)
                if f.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    "the request body is too large; the limit is 256 KiB by default",
                )
            }
            other => ApiError::bad_request("unreadable_body", other.body_text()),
        })?;
        Ok(Self(bytes))
    }
}

/// A body the route has no use for, read to its end and dropped. hyper keeps a connection alive
/// only when the request body was read in full; a route that ignores a body still in flight (a
/// client's `{}` on `POST .../cancel`, sent in a second packet) would otherwise close it under a
/// client that is already reusing it, and that client sees "server disconnected".
#[derive(Debug)]
pub struct Drained;

impl<S: Send + Sync> FromRequest<S> for Drained {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        RawBody::from_request(req, state).await.map(|_| Self)
    }
}

/// `bytes` as JSON of type `T`, or the API's `400` (empty, not JSON) or `422` (wrong shape).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "malformed_json",
            "the request body is empty; send a JSON object",
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            format!("the request body does not fit: {e}"),
        ),
        _ => ApiError::bad_request(
            "malformed_json",
            format!("the request body is not valid JSON: {e}"),
        ),
    })
}

/// Query parameters, with the API's `400` on a malformed query string.
pub fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(params)| params).map_err(|e| {
        ApiError::bad_request(
            "invalid_query",
            format!("the query string is malformed: {}", e.body_text()),
        )
    })
}
