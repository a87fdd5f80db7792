//! `400 invalid_path` for a path that does not percent-decode to UTF-8, before a route's path
//! extractor would answer it in plain text.

use axum::response::{IntoResponse, Response};

use crate::shared::error::ApiError;

/// Middleware: `400 invalid_path` for a path that does not percent-decode to UTF-8. A layer of
/// its own rather than `axum::middleware::from_fn`, which clones the whole service stack under
/// it for each request.
#[derive(Debug, Clone, Copy)]
pub struct Utf8Path;

impl<S> tower::Layer<S> for Utf8Path {
    type Service = Utf8Checked<S>;

    fn layer(&self, inner: S) -> Utf8Checked<S> {
        Utf8Checked(inner)
    }
}

/// A service whose requests [`Utf8Path`] checks.
#[derive(Debug, Clone)]
pub struct Utf8Checked<S>(S);

impl<S> tower::Service<axum::extract::Request> for Utf8Checked<S>
where
    S: tower::Service<axum::extract::Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future =
        futures_util::future::Either<std::future::Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        let path = request.uri().path();
        if percent_encoding::percent_decode_str(path)
            .decode_utf8()
            .is_ok()
        {
            return futures_util::future::Either::Right(self.0.call(request));
        }
        futures_util::future::Either::Left(std::future::ready(Ok(ApiError::bad_request(
            "invalid_path",
            "the path is not UTF-8 once percent-decoded; check that the id or token was copied whole",
        )
        .into_response())))
    }
}
