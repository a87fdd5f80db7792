//! A small MCP server on stdio for the `clarify gate` tests: the server a gate stands in front
//! of. Tools: `echo` (returns its arguments as JSON text), `delete_file` (the same; its name is
//! what the tests' policy denies), `wait` (never returns, so a test can cancel a forwarded
//! call) and `count` (how many calls reached this server, so a test can tell a call was never
//! forwarded).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Debug, Clone, Default)]
struct Upstream {
    calls: Arc<AtomicUsize>,
}

fn tool(name: &'static str, description: &'static str) -> Tool {
    let schema = match json!({"type": "object"}) {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    Tool::new(name, description, Arc::new(schema))
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("files-test", "1.2.3");
        info.instructions = Some("a test server".to_owned());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("echo", "Echoes its arguments."),
            tool("delete_file", "Pretends to delete a file."),
            tool("wait", "Never returns."),
            tool("count", "How many calls reached this server."),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let calls = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let args = Value::Object(request.arguments.unwrap_or_default());
        let text = match request.name.as_ref() {
            "echo" | "delete_file" => json!({"tool": request.name, "arguments": args}).to_string(),
            "count" => (calls - 1).to_string(),
            "wait" => {
                context.ct.cancelled().await;
                eprintln!("upstream: wait was cancelled");
                "cancelled".to_owned()
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    eprintln!("upstream: pid {}", std::process::id());
    let running = match Upstream::default()
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
    {
        Ok(running) => running,
        Err(e) => {
            eprintln!("upstream: {e}");
            std::process::exit(1);
        }
    };
    let _ = running.waiting().await;
}
