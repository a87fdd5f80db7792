//! Serving a display block's image: the bytes, as the type they proved to be, and nothing a
//! browser could be talked into running.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clarify_core::display::{Block, Content, ImageData};

use crate::shared::error::ApiError;

/// The image of block `n`, or `404` when there is no such block or it is no image.
pub fn image(blocks: &[Block], n: &str) -> Result<Response, ApiError> {
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "this request has no image block with that number",
        )
    };
    let n: usize = n.parse().map_err(|_| not_found())?;
    let Some(Content::Image { data, .. }) = blocks.get(n).map(|b| &b.content) else {
        return Err(not_found());
    };
    // Checked when the request was made; a stored image that no longer reads is not served.
    let image = ImageData::parse(data).map_err(|_| not_found())?;
    let mut response = (StatusCode::OK, image.bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(image.media_type),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    // A request's blocks never change, but who may read them does.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    Ok(response)
}
