//! An MCP client connected to a [`ClarifyMcp`] through an in-memory pipe.

use clarify_mcp::ClarifyMcp;
use clarify_testkit::mcp::McpAgent;
use rmcp::ServiceExt;

pub use clarify_testkit::mcp::text;

pub type Client = McpAgent;

pub async fn connect(mcp: ClarifyMcp) -> Client {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = mcp.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    McpAgent::connect(client_side).await
}
