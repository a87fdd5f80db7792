//! What the server logs of each HTTP request.
//!
//! Every request gets an id (the client's `X-Request-Id` when it sends one, otherwise a new
//! UUID), sent back in the response's `X-Request-Id`. Each request runs in a `http` span holding
//! that id, the method and the matched route (never the raw path, which carries ids and
//! tokens), so every log line written while handling it carries them too, and one line at
//! `info` says how it finished (status, latency). How lines are written (text or JSON, colour or
//! not) is the binary's choice.

use axum::extract::{MatchedPath, Request};
use tower::ServiceBuilder;
use tower::layer::util::{Identity, Stack};
use tower_http::LatencyUnit;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::{Level, Span};

/// The stack that gives each request its id (outermost), sends it back, and runs the request in
/// its span, logging how it finished.
pub(crate) type Logs = ServiceBuilder<
    Stack<
        TraceLayer<SharedClassifier<ServerErrorsAsFailures>, fn(&Request) -> Span>,
        Stack<PropagateRequestIdLayer, Stack<SetRequestIdLayer<MakeRequestUuid>, Identity>>,
    >,
>;

/// The layers that log each request with its id and route, as one stack (see [`Logs`]).
pub(crate) fn layer() -> Logs {
    ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(span as fn(&Request) -> Span)
                .on_response(
                    DefaultOnResponse::new()
                        .level(Level::INFO)
                        .latency_unit(LatencyUnit::Millis),
                ),
        )
}

fn span(request: &Request) -> Span {
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
