//! The layer that counts every HTTP request into the metrics registry.

use std::convert::Infallible;
use std::task::Poll;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::response::Response;

use crate::state::AppState;

/// Counts and times every request by its matched route. A layer of its own rather than
/// `axum::middleware::from_fn`, which clones the whole service stack under it for each request.
#[derive(Debug, Clone)]
pub(crate) struct Track(pub(crate) AppState);

impl<S> tower::Layer<S> for Track {
    type Service = Tracked<S>;

    fn layer(&self, inner: S) -> Tracked<S> {
        Tracked {
            inner,
            state: self.0.clone(),
        }
    }
}

/// A service whose requests [`Track`] counts and times.
#[derive(Debug, Clone)]
pub(crate) struct Tracked<S> {
    inner: S,
    state: AppState,
}

impl<S> tower::Service<Request> for Tracked<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures_util::future::BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| "unmatched".to_owned());
        let started = Instant::now();
        let response = self.inner.call(request);
        let state = self.state.clone();
        Box::pin(async move {
            let response = response.await?;
            state
                .metrics
                .http_request(route, response.status().as_u16(), started.elapsed());
            Ok(response)
        })
    }
}
