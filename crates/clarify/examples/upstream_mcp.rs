//! A small MCP server on stdio for the `clarify gate` tests: the server a gate stands in front
//! of. Tools: `echo` (returns its arguments as JSON text), `delete_file` (the same; its name is
//! what the tests' policy denies), `wait` (never returns, so a test can cancel a forwarded
//! call) and `count` (how many calls reached this server, so a test can tell a call was never
//! forwarded) and `confirm` (asks its client for a form, `elicitation/create` before 2026-07-28
//! and `input_required` from then on, and returns what came back as JSON text). With
//! `--legacy` it speaks only the protocol versions that have an `initialize` handshake.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::borrow::Cow;
use std::collections::BTreeMap;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    Implementation, InputRequest, InputRequiredResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Debug, Clone, Default)]
struct Upstream {
    calls: Arc<AtomicUsize>,
    legacy: bool,
}

/// What `confirm` asks.
fn confirm_form() -> serde_json::Value {
    json!({
        "mode": "form",
        "message": "Delete the staging database?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "confirm": {"type": "boolean", "title": "Delete it"},
                "note": {"type": "string", "title": "Note"}
            },
            "required": ["confirm"]
        }
    })
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
            tool("confirm", "Asks its client to confirm."),
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
            "echo" | "delete_file" => {
                let mut echoed = json!({"tool": request.name, "arguments": args});
                // What a tool server checks before it acts: the receipt of the person's approval
                // that `clarify gate` forwards in the call's `_meta`.
                if let Some(receipt) = context.meta.get("clarify/receipt") {
                    echoed["receipt"] = receipt.clone();
                }
                echoed.to_string()
            }
            "count" => (calls - 1).to_string(),
            "confirm" => {
                let modern = context
                    .protocol_version()
                    .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
                if modern {
                    match request
                        .input_responses
                        .as_ref()
                        .and_then(|r| r.get("confirm"))
                    {
                        Some(answer) if request.request_state.as_deref() == Some("confirm-1") => {
                            json!({"protocol": "2026-07-28", "elicited": answer}).to_string()
                        }
                        _ => {
                            let ask: InputRequest = serde_json::from_value(json!({
                                "method": "elicitation/create", "params": confirm_form()}))
                            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                            let asks = BTreeMap::from([("confirm".to_owned(), ask)]);
                            return Ok(InputRequiredResult::new(
                                Some(asks),
                                Some("confirm-1".to_owned()),
                            )
                            .into());
                        }
                    }
                } else {
                    let params: ElicitRequestParams = serde_json::from_value(confirm_form())
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                    let answer = context
                        .peer
                        .create_elicitation(params)
                        .await
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                    json!({"protocol": "legacy", "elicited": answer}).to_string()
                }
            }
            "wait" => {
                context.ct.cancelled().await;
                eprintln!("upstream: wait was cancelled");
                "cancelled".to_owned()
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.legacy {
            Cow::Owned(
                ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .filter(|v| v.has_initialize())
                    .cloned()
                    .collect(),
            )
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    eprintln!("upstream: pid {}", std::process::id());
    let upstream = Upstream {
        legacy: std::env::args().any(|a| a == "--legacy"),
        ..Upstream::default()
    };
    let running = match upstream
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
