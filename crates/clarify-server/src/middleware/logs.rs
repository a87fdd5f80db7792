//! What the server logs of each HTTP request.
//!
//! Every request gets an id (the client's `X-Request-Id` when it sends one, otherwise a new
//! UUID), sent back in the response's `X-Request-Id`. Each request runs in a `http` span holding
//! that id, the method and the matched route (never the raw path, which carries ids and
//! tokens), so every log line written while handling it carries them too, and one line at
//! `info` says how it finished (status, latency). How lines are written (text or JSON, colour or
//! not) is the binary's choice.

use axum::Router;
use axum::extract::{MatchedPath, Request};
use tower_http::LatencyUnit;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

/// Wraps `router` so each request is logged with its id and route.
pub(crate) fn layer<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .layer(
            TraceLayer::new_for_http().make_span_with(span).on_response(
                DefaultOnResponse::new()
                    .level(Level::INFO)
                    .latency_unit(LatencyUnit::Millis),
            ),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

fn span(request: &Request) -> tracing::Span {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str);
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!("http", method = %request.method(), route, request_id)
}
