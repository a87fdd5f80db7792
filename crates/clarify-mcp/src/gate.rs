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
//!
//! The gated server's own elicitations (an `elicitation/create` it sends while a forwarded call
//! runs, or on 2026-07-28 the `input_required` result of that call) become clarify form requests
//! with the server's requested schema (agent: the upstream's name). When the gate's client can
//! show forms itself (it declared form elicitation, before 2026-07-28), the same elicitation is
//! sent to it too and the first answer wins: a clarify answer goes back to the server as the
//! form's content and the client's elicitation is withdrawn; the client's answer goes back
//! verbatim and resolves the clarify request (where the key may answer; otherwise it is
//! cancelled). On 2026-07-28 the gate answers the server's `input_required` this way and retries
//! the call with the answers and the server's `requestState`, so its own client sees one call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, InputRequest,
    InputResponses, ProtocolVersion, ServerRequest,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;

use clarify_client::OutcomeBody;
use clarify_core::policy::{ApprovalSpec, Policy, PolicyDecision, Refusal, Verdict, settle};
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
    let clarify = ClarifyMcp::new(
        approvals.clone(),
        Options {
            progress_interval: options.progress_interval,
            ..Options::default()
        },
    );
    let desk = Arc::new(Desk {
        approvals: approvals.clone(),
        clarify: clarify.clone(),
        agent: Mutex::new("mcp-server".to_owned()),
        calls: Mutex::default(),
    });
    let relay = Relay {
        downstream: Arc::clone(&downstream),
        desk: Arc::clone(&desk),
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
    if !name.is_empty() {
        *desk.agent.lock().unwrap_or_else(|p| p.into_inner()) = name.clone();
    }
    let gate = GateServer {
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
        desk,
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
    match connect_with(server, relay.clone(), newest()).await {
        Ok(running) => Ok(running),
        // A server that answers `server/discover` without 2026-07-28 in its versions is
        // started again and spoken to over the `initialize` handshake.
        Err(e) => {
            tracing::debug!(error = %e, "the gated server does not speak 2026-07-28; initializing");
            connect_with(server, relay, ClientLifecycleMode::Initialize).await
        }
    }
}

async fn connect_with(
    server: &GatedServer,
    relay: Relay,
    lifecycle: ClientLifecycleMode,
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
            relay
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| failed(&e))
        }
        GatedServer::Url(url) => {
            // The workspace's client (TLS included), not rmcp's own default one.
            let http = clarify_client::http::client().map_err(|e| failed(&e))?;
            let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                http,
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                ),
            );
            relay
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| failed(&e))
        }
    }
}

/// The newest protocol the server speaks: 2026-07-28 where it answers `server/discover`, else
/// the newest with an `initialize` handshake.
fn newest() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// The gate's client side: passes the upstream's list-changed notifications to the client, and
/// takes its elicitations to the [`Desk`].
#[derive(Debug, Clone)]
struct Relay {
    downstream: Arc<Mutex<Option<Peer<RoleServer>>>>,
    desk: Arc<Desk>,
}

/// Where the gated server's elicitations are answered: clarify, racing the gate's own client.
#[derive(Debug)]
struct Desk {
    approvals: Upstream,
    clarify: ClarifyMcp,
    /// The upstream's name: the `agent` of the requests its elicitations become.
    agent: Mutex<String>,
    /// The client's calls being forwarded, newest last: an elicitation belongs to one of them
    /// (waits report progress on it and end with its cancellation).
    calls: Mutex<Vec<RequestContext<RoleServer>>>,
}

impl Desk {
    fn call(&self) -> Option<RequestContext<RoleServer>> {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .cloned()
    }

    /// Answers one elicitation of the gated server.
    async fn elicit(&self, params: ElicitRequestParams) -> ElicitResult {
        let Some(call) = self.call() else {
            tracing::info!("the gated server asked for input outside a call; declining");
            return ElicitResult::new(ElicitationAction::Decline);
        };
        let agent = self.agent.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let wire = serde_json::to_value(&params).unwrap_or(Value::Null);
        let body = match wire["mode"].as_str() {
            Some("url") => None,
            _ => Some(json!({"questions": [{
                "question": wire["message"],
                "kind": "form",
                "schema": wire["requestedSchema"],
            }]})),
        };
        let opened = match body {
            Some(body) => match self.approvals.ask(body, Some(&agent)).await {
                Ok(opened) => Some(opened),
                Err(e) => {
                    tracing::warn!(error = %e, "the gated server's form is not one clarify can ask");
                    None
                }
            },
            None => None,
        };
        let surface = crate::surface::ClientSurface::of(&call);
        let is_url = wire["mode"] == "url";
        let client_can = !surface.input_required
            && if is_url {
                surface.url
            } else {
                surface.form.is_some()
            };
        let Some(opened) = opened else {
            return if client_can {
                self.in_client(&call, params, CancellationToken::new())
                    .await
                    .unwrap_or_else(|| ElicitResult::new(ElicitationAction::Cancel))
            } else {
                ElicitResult::new(ElicitationAction::Decline)
            };
        };
        let party = Party {
            upstream: self.approvals.clone(),
            agent: Some(agent),
            actor: client_name(&call).unwrap_or_else(|| "mcp".to_owned()),
            holder: self.clarify.inner.instance.clone(),
        };
        let withdraw = CancellationToken::new();
        let in_client = async {
            if client_can {
                self.in_client(&call, params, withdraw.clone()).await
            } else {
                withdraw.cancelled().await;
                None
            }
        };
        let waiting = self
            .clarify
            .wait(&party, &opened.id, opened.timeout, None, &call);
        tokio::pin!(in_client, waiting);
        let waited = tokio::select! {
            answered = &mut in_client => match answered {
                Some(result) => {
                    self.settle(&party, &opened.id, &result).await;
                    return result;
                }
                None => waiting.await,
            },
            waited = &mut waiting => {
                withdraw.cancel();
                in_client.await;
                waited
            }
        };
        match waited {
            Ok(Waited::Resolved(outcome)) => from_outcome(&outcome),
            other => {
                if let Err(e) = self.approvals.cancel(&opened.id, &party.actor).await {
                    tracing::debug!(error = %e, "cancelling an unanswered elicitation");
                }
                tracing::info!(?other, "the gated server's elicitation ended unanswered");
                ElicitResult::new(ElicitationAction::Cancel)
            }
        }
    }

    /// Sends the elicitation to the gate's client; its answer, or `None` when it was dismissed
    /// or failed (then only after `withdraw`) or withdrawn.
    async fn in_client(
        &self,
        call: &RequestContext<RoleServer>,
        params: ElicitRequestParams,
        withdraw: CancellationToken,
    ) -> Option<ElicitResult> {
        let sent = call
            .peer
            .send_cancellable_request(
                ServerRequest::ElicitRequest(ElicitRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await;
        let answered = match sent {
            Ok(mut handle) => tokio::select! {
                response = &mut handle.rx => match response {
                    Ok(Ok(ClientResult::ElicitResult(result)))
                        if result.action != ElicitationAction::Cancel => Some(result),
                    _ => None,
                },
                () = withdraw.cancelled() => {
                    if let Err(e) = handle.cancel(Some("answered elsewhere".to_owned())).await {
                        tracing::debug!(error = %e, "withdrawing the elicitation");
                    }
                    return None;
                }
            },
            Err(e) => {
                tracing::debug!(error = %e, "the client could not be asked");
                None
            }
        };
        if answered.is_none() {
            withdraw.cancelled().await;
        }
        answered
    }

    /// The client answered first: its answer resolves the clarify request too, where it may;
    /// otherwise the request is cancelled, since nobody needs it any more.
    async fn settle(&self, party: &Party, id: &str, result: &ElicitResult) {
        let body = match (&result.action, &result.content) {
            (ElicitationAction::Accept, Some(content)) => {
                json!({"answers": {"q1": {"values": content}}})
            }
            _ => json!({"skip": true}),
        };
        // Where `answered_via` is recorded, this answer is the MCP client's (`mcp`).
        let answered = self.approvals.answer(id, &body, &party.actor).await;
        if !matches!(answered, Ok(crate::upstream::Answered::Resolved(_))) {
            tracing::debug!(
                ?answered,
                "the client's answer did not resolve the request; cancelling it"
            );
            if let Err(e) = self.approvals.cancel(id, &party.actor).await {
                tracing::debug!(error = %e, "cancelling an elicitation the client answered");
            }
        }
    }
}

/// What a resolved form request answers the gated server.
fn from_outcome(outcome: &OutcomeBody) -> ElicitResult {
    match outcome.status.as_str() {
        "answered" => {
            let mut result = ElicitResult::new(ElicitationAction::Accept);
            result.content = Some(
                outcome
                    .questions
                    .first()
                    .map_or(Value::Null, |q| q.answer.clone()),
            );
            result
        }
        "skipped" => ElicitResult::new(ElicitationAction::Decline),
        _ => ElicitResult::new(ElicitationAction::Cancel),
    }
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
        let mut config = ClientConfig::new(
            ClientCapabilities::builder()
                .enable_elicitation_with(
                    ElicitationCapability::new().with_form(FormElicitationCapability::new()),
                )
                .build(),
            Implementation::new("clarify-gate", env!("CARGO_PKG_VERSION")),
        );
        config.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.desk.elicit(request).await)
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

/// The gate's server side: what the client talks to, in front of the upstream server.
#[derive(Debug, Clone)]
struct GateServer {
    upstream: Peer<RoleClient>,
    /// The upstream's initialize result, shown to the client as the gate's own.
    info: ServerConfig,
    /// The upstream's name: the `agent` of the approvals it raises.
    agent: String,
    policy: Policy,
    approvals: Upstream,
    clarify: ClarifyMcp,
    downstream: Arc<Mutex<Option<Peer<RoleServer>>>>,
    desk: Arc<Desk>,
}

/// What becomes of a call before it is forwarded: its arguments, with the receipt of the
/// person's approval when one was asked (for the gated server to check), or a refusal.
enum Decided {
    Forward(Value, Option<String>),
    Refuse(String),
}

/// The `_meta` key under which a forwarded call carries the receipt of its approval.
pub const RECEIPT_META_KEY: &str = "clarify/receipt";

impl GateServer {
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
                return Ok(Decided::Forward(action.arguments.clone(), None));
            }
            PolicyDecision::Ask => {}
        }
        // The server's rules come after the policy file and before grants: a rule that allows
        // or denies the call resolves the approval raised below as soon as it is created.
        if !self
            .approvals
            .rule_decides(action, Some(&self.agent))
            .await?
            && self.approvals.granted(action, None).await?
        {
            return Ok(Decided::Forward(action.arguments.clone(), None));
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
            .wait_with_client(&party, &opened.id, opened.timeout, context)
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
        let reply = outcome
            .approval()
            .map_err(|e| ToolError::Arguments(e.to_string()))?;
        let receipt = outcome.receipt;
        Ok(match settle(action, None, &reply) {
            Verdict::Run { arguments, .. } => Decided::Forward(arguments, receipt),
            Verdict::Refuse(refusal) => Decided::Refuse(refusal.reason),
        })
    }
}

/// How many `input_required` rounds of the gated server the gate answers for one call.
const MAX_INPUT_ROUNDS: usize = 10;

impl GateServer {
    /// Forwards a call, answering the server's `input_required` rounds (2026-07-28) at the
    /// [`Desk`] and retrying with the answers and the server's `requestState`.
    async fn forward(
        &self,
        mut params: CallToolRequestParams,
    ) -> Result<CallToolResponse, ErrorData> {
        for _ in 0..MAX_INPUT_ROUNDS {
            let asked = match self
                .upstream
                .call_tool_once(params.clone())
                .await
                .map_err(upstream_error)?
            {
                CallToolResponse::InputRequired(asked) => asked,
                done => return Ok(done),
            };
            let mut responses = InputResponses::new();
            for (key, request) in asked.input_requests.unwrap_or_default() {
                let InputRequest::Elicitation(request) = request else {
                    return Err(ErrorData::internal_error(
                        "the gated server asked for input the gate cannot give (only elicitation is answered)",
                        None,
                    ));
                };
                let result = self.desk.elicit(request.params).await;
                responses.insert(key, serde_json::to_value(result).unwrap_or(Value::Null));
            }
            params.input_responses = (!responses.is_empty()).then_some(responses);
            params.request_state = asked.request_state;
        }
        Err(ErrorData::internal_error(
            format!(
                "the gated server asked for input more than {MAX_INPUT_ROUNDS} times in one call"
            ),
            None,
        ))
    }
}

fn client_name(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .client_info()
        .map(|info| info.name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

fn upstream_error(e: ServiceError) -> ErrorData {
    match e {
        ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(format!("the gated server failed: {other}"), None),
    }
}

impl ServerHandler for GateServer {
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
        let (arguments, receipt) = match self.decide(&action, &context).await {
            Ok(Decided::Forward(arguments, receipt)) => (arguments, receipt),
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
        // The gated server may check that a person approved exactly these arguments, offline
        // against the server's keys (`clarify receipts verify`, the SDKs' verify helpers).
        if let Some(receipt) = receipt {
            forwarded
                .meta
                .get_or_insert_with(Default::default)
                .insert(RECEIPT_META_KEY.to_owned(), Value::String(receipt));
        }
        // Dropped when the client cancels, which cancels the call upstream too.
        let ct: CancellationToken = context.ct.clone();
        self.desk
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(context.clone());
        let result = tokio::select! {
            () = ct.cancelled() => Err(ErrorData::internal_error("cancelled by the client", None)),
            result = self.forward(forwarded) => result,
        };
        self.desk
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|c| c.id != context.id);
        result
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
