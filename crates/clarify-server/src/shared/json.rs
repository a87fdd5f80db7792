//! JSON responses, written into one buffer sized for a record.
//!
//! `axum::Json` serializes through a `BytesMut` writer that starts at 128 bytes: a request's
//! record (a kilobyte or two) grows it four times, copying what was written each time, and each
//! of serde's few hundred small writes goes through `BufMut::put_slice`'s checks. This writes
//! into a `Vec` that holds a record at once and hands it to the body without a copy; the bytes
//! are `axum::Json`'s.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// What most responses start with room for: a request's record with its links.
const START: usize = 2048;

/// A JSON response body: `application/json`, serialized on the way out, as `axum::Json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut buf = Vec::with_capacity(START);
        match serde_json::to_writer(&mut buf, &self.0) {
            Ok(()) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                buf,
            )
                .into_response(),
            Err(err) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                )],
                err.to_string(),
            )
                .into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_what_axum_json_writes() {
        let value = serde_json::json!({"id": "r1", "question": "Deploy \"prod\"?", "n": [1, 2]});
        let ours = Json(&value).into_response();
        let theirs = axum::Json(&value).into_response();
        assert_eq!(ours.status(), theirs.status());
        assert_eq!(
            ours.headers().get(header::CONTENT_TYPE),
            theirs.headers().get(header::CONTENT_TYPE)
        );
        let body = |r: Response| async move {
            axum::body::to_bytes(r.into_body(), usize::MAX)
                .await
                .expect("body")
        };
        assert_eq!(body(ours).await, body(theirs).await);
    }
}
