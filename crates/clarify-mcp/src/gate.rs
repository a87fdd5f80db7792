//! `clarify gate`: an MCP server that stands in front of another MCP server and lets a tool call
//! through only when the policy allows it, a grant covers it, or a human approves it.
//!
//! The gate is an rmcp client of the upstream server (a child process on stdio, or a Streamable
//! HTTP URL) and an rmcp server to its own client on stdio. The client sees the upstream's
//! server info, capabilities, tools, resources and prompts unchanged, and `tools/list_changed`
//! notifications are passed on. A `tools/call` is decided by the [`Policy`]: allowed calls are
//! forwarded, denied ones are a tool error; anything else checks the grants (an earlier `always`
//! approval of the same call) and otherwise raises an approval request (agent: the upstream's
//! name) and waits for it like `ask_human` does, with progress notifications and the client's
//! cancellation (which cancels the request, and a forwarded call is cancelled upstream by
//! dropping it). An approved call is forwarded with the human's edited arguments when there are
//! any, and the upstream's result is returned unchanged; a denial is a tool error carrying the
//! reason. When the client goes away, the upstream session is closed and its child process
//! ended.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use clarify_core::policy::{
    ApprovalReply, ApprovalSpec, Policy, PolicyDecision, Refusal, Verdict, settle,
};
use clarify_core::{Action, Scope};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ContentBlock,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService, ServiceError};
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{ClarifyMcp, Options, Party, ServeError, ToolError, Upstream, Waited, WatchEof};

/// The MCP server the gate stands in front of.
#[derive(Debug, Clone)]
pub enum GatedServer {
    /// A command speaking MCP on stdio, started as a child process.
    Command { program: String, args: Vec<String> },
    /// A Streamable HTTP endpoint.
    Url(String),
}

/// How the gate decides.
#[derive(Debug, Clone)]
pub struct GateOptions {
    pub policy: Policy,
    /// Progress notifications while a call waits for a human.
    pub progress_interval: Duration,
}

/// Starts `server`, then serves the gate on stdin and stdout until the client goes away or
/// `stop` completes; approvals go to `approvals`. Only protocol messages are written to stdout.
pub async fn serve_stdio(
    server: GatedServer,
    approvals: Upstream,
    options: GateOptions,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), ServeError> {
    let downstream: Arc<Mutex<Option<Peer<RoleServer>>>> = Arc::default();
    let relay = Relay {
        downstream: Arc::clone(&downstream),
    };
    let upstream = connect(&server, relay).await?;
    let info = upstream
        .peer()
        .peer_info()
        .ok_or_else(|| ServeError::Upstream("the server sent no initialize result".to_owned()))?;
    let name = info
        .server_info
        .as_ref()
        .map(|i| i.name.trim().to_owned())
        .unwrap_or_default();
    // The upstream's answer to initialize, shown to the client as the gate's own.
    let mut shown = ServerConfig::new(info.capabilities.clone());
    shown.protocol_version = info.protocol_version.clone();
    if let Some(server_info) = &info.server_info {
        shown.server_info = server_info.clone();
    }
    shown.instructions = info.instructions.clone();
    let clarify = ClarifyMcp::new(
        approvals.clone(),
        Options {
            progress_interval: options.progress_interval,
            ..Options::default()
        },
    );
    let gate = Gate {
        upstream: upstream.peer().clone(),
        info: shown,
        agent: if name.is_empty() {
            "mcp-server".to_owned()
        } else {
            name
        },
        policy: options.policy,
        approvals,
        clarify: clarify.clone(),
        downstream,
    };
    let running = gate
        .serve((
            WatchEof::new(tokio::io::stdin(), clarify.inner.client_gone.clone()),
            tokio::io::stdout(),
        ))
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = stop => {
            cancel.cancel();
            waiting.await
        }
    };
    clarify.finish(Duration::from_secs(10)).await;
    // Closing the session ends the child process.
    if let Err(e) = upstream.cancel().await {
        tracing::debug!(error = %e, "closing the upstream session");
    }
    ended
        .map(|reason| tracing::debug!(?reason, "gate session ended"))
        .map_err(|e| ServeError::Session(e.to_string()))
}

async fn connect(
    server: &GatedServer,
    relay: Relay,
) -> Result<RunningService<RoleClient, Relay>, ServeError> {
    let failed = |e: &dyn std::fmt::Display| ServeError::Upstream(e.to_string());
    match server {
        GatedServer::Command { program, args } => {
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            let (transport, _) = rmcp::transport::TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .map_err(|e| ServeError::Upstream(format!("cannot start {program:?}: {e}")))?;
            relay.serve(transport).await.map_err(|e| failed(&e))
        }
        GatedServer::Url(url) => {
            let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
            relay.serve(transport).await.map_err(|e| failed(&e))
        }
    }
}

/// The gate's client side: passes the upstream's list-changed notifications to the client.
#[derive(Debug, Clone)]
struct Relay {
    downstream: Arc<Mutex<Option<Peer<RoleServer>>>>,
}

impl Relay {
    fn peer(&self) -> Option<Peer<RoleServer>> {
        self.downstream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.client_info = Implementation::new("clarify-gate", env!("CARGO_PKG_VERSION"));
        config
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(peer) = self.peer()
            && let Err(e) = peer.notify_tool_list_changed().await
        {
            tracing::debug!(error = %e, "passing on tools/list_changed");
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(peer) = self.peer()
            && let Err(e) = peer.notify_resource_list_changed().await
        {
            tracing::debug!(error = %e, "passing on resources/list_changed");
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(peer) = self.peer()
            && let Err(e) = peer.notify_prompt_list_changed().await
        {
            tracing::debug!(error = %e, "passing on prompts/list_changed");
        }
    }
}

/// The gate's server side.
#[derive(Debug, Clone)]
struct Gate {
    upstream: Peer<RoleClient>,
    /// The upstream's initialize result, shown to the client as the gate's own.
    info: ServerConfig,
    /// The upstream's name: the `agent` of the approvals it raises.
    agent: String,
    policy: Policy,
    approvals: Upstream,
    clarify: ClarifyMcp,
    downstream: Arc<Mutex<Option<Peer<RoleServer>>>>,
}

/// What becomes of a call before it is forwarded.
enum Decided {
    Forward(Value),
    Refuse(String),
}

impl Gate {
    async fn decide(
        &self,
        action: &Action,
        context: &RequestContext<RoleServer>,
    ) -> Result<Decided, ToolError> {
        match self
            .policy
            .decide(&action.name, &action.arguments, None, &[])
        {
            PolicyDecision::Denied => {
                return Ok(Decided::Refuse(Refusal::blocked(&action.name).reason));
            }
            PolicyDecision::Allowed | PolicyDecision::Granted(_) => {
                return Ok(Decided::Forward(action.arguments.clone()));
            }
            PolicyDecision::Ask => {}
        }
        if self.approvals.granted(action, None).await? {
            return Ok(Decided::Forward(action.arguments.clone()));
        }
        // An MCP session carries no clarify session, so `session` scope is not offered.
        let spec = ApprovalSpec {
            scopes: vec![Scope::Once, Scope::Always],
            allow_edit: true,
            timeout_seconds: None,
        };
        let body = spec.request(action, None, None);
        let opened = self.approvals.ask(body, Some(&self.agent)).await?;
        let party = Party {
            upstream: self.approvals.clone(),
            agent: Some(self.agent.clone()),
            actor: client_name(context).unwrap_or_else(|| "mcp".to_owned()),
            holder: self.clarify.inner.instance.clone(),
        };
        let outcome = match self
            .clarify
            .wait(&party, &opened.id, opened.timeout, None, context)
            .await?
        {
            Waited::Resolved(outcome) => outcome,
            waited => {
                tracing::info!(id = %opened.id, ?waited, "a gated call ended before its approval; cancelling the request");
                self.approvals.cancel(&opened.id, &party.actor).await?;
                return Ok(Decided::Refuse(
                    "The call was abandoned before a human approved it, so it was not run."
                        .to_owned(),
                ));
            }
        };
        let reply =
            ApprovalReply::from_json(&outcome).map_err(|e| ToolError::Arguments(e.to_string()))?;
        Ok(match settle(action, None, &reply) {
            Verdict::Run { arguments, .. } => Decided::Forward(arguments),
            Verdict::Refuse(refusal) => Decided::Refuse(refusal.reason),
        })
    }
}

fn client_name(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .peer
        .peer_info()
        .map(|info| info.client_info.name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

fn upstream_error(e: ServiceError) -> ErrorData {
    match e {
        ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(format!("the gated server failed: {other}"), None),
    }
}

impl ServerHandler for Gate {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        *self.downstream.lock().unwrap_or_else(|p| p.into_inner()) = Some(context.peer);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream
            .list_tools(request)
            .await
            .map_err(upstream_error)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let _in_flight = self.clarify.inner.calls.token();
        let action = Action {
            name: request.name.to_string(),
            arguments: Value::Object(request.arguments.clone().unwrap_or_default()),
        };
        let arguments = match self.decide(&action, &context).await {
            Ok(Decided::Forward(arguments)) => arguments,
            Ok(Decided::Refuse(reason)) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(reason)]).into());
            }
            Err(e) => return Ok(crate::tools::error(&e).into()),
        };
        let mut forwarded = request;
        forwarded.arguments = match arguments {
            Value::Object(map) => Some(map),
            _ => None,
        };
        // Dropped when the client cancels, which cancels the call upstream too.
        let ct: CancellationToken = context.ct.clone();
        tokio::select! {
            () = ct.cancelled() => Err(ErrorData::internal_error("cancelled by the client", None)),
            result = self.upstream.call_tool_once(forwarded) => result.map_err(upstream_error),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.upstream
            .list_resources(request)
            .await
            .map_err(upstream_error)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.upstream
            .list_resource_templates(request)
            .await
            .map_err(upstream_error)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.upstream
            .read_resource_once(request)
            .await
            .map_err(upstream_error)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.upstream
            .list_prompts(request)
            .await
            .map_err(upstream_error)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.upstream
            .get_prompt_once(request)
            .await
            .map_err(upstream_error)
    }
}
