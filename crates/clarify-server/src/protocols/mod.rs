//! Everything here serves an agent protocol behind the API's bearer keys, never a session
//! cookie, so no web page can call it.
//!
//! A protocol's messages and sessions belong to the crate that implements it (`clarify-mcp` for
//! MCP, the only crate that imports rmcp); this room mounts its endpoint, checks the caller's
//! key and role, scopes its calls to the caller's tenant, counts it against the limits, and
//! tells the instance about the changes it makes, as the `/v1` routes do. Today: [`mcp`], the
//! MCP tools over Streamable HTTP at `/mcp`, and [`a2a`], clarify as an A2A agent at `/a2a`
//! (with its agent card), when `[a2a]` enables it, and [`agui`], the AG-UI proxy at `/agui/{name}`
//! for the `[[agui]]` agents.

pub mod a2a;
pub mod agui;
pub mod mcp;

use axum::Router;

use crate::state::AppState;

/// Every route of this room.
pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .merge(mcp::routes(state))
        .merge(a2a::routes(state))
        .merge(agui::routes(state))
}

/// Starts this room's background task: the AG-UI resume worker (only with `[[agui]]` agents).
pub(crate) fn start(state: &AppState) -> Option<tokio::task::JoinHandle<()>> {
    (!state.config.agui.is_empty()).then(|| tokio::spawn(agui::resume_worker(state.clone())))
}
