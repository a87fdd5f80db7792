//! An MCP client connected to a [`ClarifyMcp`] through an in-memory pipe.

use std::time::Duration;

use clarify_mcp::ClarifyMcp;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;

pub type Client = RunningService<RoleClient, ClientConfig>;

pub async fn connect(mcp: ClarifyMcp) -> Client {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = mcp.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let mut config = ClientConfig::default();
    config.protocol_version = ProtocolVersion::V_2025_06_18;
    config
        .serve(client_side)
        .await
        .expect("the session initializes")
}

pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("tool arguments are an object")
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
    tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
        .await
        .expect("the call returns in time")
        .expect("the call succeeds at the protocol level")
}

pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}
