//! The clarify MCP server: `ask_human`, `ask_human_async`, `get_answer` and `approve_tool_use`
//! for any MCP client, and [`gate`]: an approval gate in front of another MCP server.
//!
//! [`ClarifyMcp`] is one MCP server handler over an [`Upstream`], the place requests go: a store
//! opened in this process ([`Embedded`], one tenant) or a running clarify server
//! ([`clarify_client::Client`], one key). [`ClarifyMcp::serve_stdio`] speaks MCP on stdin and
//! stdout (`clarify mcp`); [`http_service`] is the Streamable HTTP endpoint a host mounts
//! behind its own authentication (`/mcp` on `clarify serve`), where each call runs in the
//! tenant of the [`HttpCaller`] the host attached to the HTTP request.
//!
//! The tools:
//! - `ask_human` creates the request and waits for its outcome, sending `notifications/progress`
//!   every [`Options::progress_interval`] (10 s by default) when the client asked for progress,
//!   so clients with request timeouts keep waiting. When the client cancels the call
//!   (`notifications/cancelled`) or goes away (stdin closes, the HTTP session ends), the request
//!   is cancelled too: nobody would receive its answer. When the HTTP host shuts down instead,
//!   the call returns the still-pending request id, so the agent can pick the answer up with
//!   `get_answer` from another instance.
//! - `ask_human_async` creates the request and returns `{request_id}` at once.
//! - `get_answer` waits up to `wait_seconds` (at most 50) for the outcome, or returns
//!   `{request_id, status: "pending"}`; cancelling it leaves the request alone.
//! - `approve_tool_use` (Claude Code's `--permission-prompt-tool`) allows a call an `always`
//!   grant covers, or raises an approval and waits for it like `ask_human`; its text result is
//!   `{"behavior": "allow", "updatedInput"}` or `{"behavior": "deny", "message"}`.
//!
//! Every protocol version rmcp knows is spoken (2025-06-18, 2025-11-25 and the stateless
//! 2026-07-28 among them). A client that can show forms is asked too, racing every other surface
//! (module `surface`; on 2026-07-28 through `input_required` and a sealed `requestState`, `state`),
//! and a client that declares the tasks extension gets `ask_human` as a task that is the stored
//! request (module `tasks`; on 2026-07-28 a pending task asks the client through its
//! `inputRequests`, answered with `tasks/update`).
//!
//! Arguments that do not make a valid request come back as a tool error (`isError: true`) with
//! the validation message, so the model can correct itself. This is the only crate that uses
//! `rmcp`.

mod elicit;
mod error;
pub mod gate;
mod http;
mod state;
mod surface;
mod tasks;
mod tools;
mod upstream;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use clarify_client::OutcomeBody;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, GetTaskParams,
    GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use error::{ServeError, ToolError};
pub use http::{HttpCaller, HttpOptions, HttpService, http_service};
pub use tools::{
    APPROVE_TOOL_USE, ASK_HUMAN, ASK_HUMAN_ASYNC, DEFAULT_WAIT_SECONDS, GET_ANSWER,
    MAX_WAIT_SECONDS, definitions, summary,
};
pub use upstream::{Admission, Embedded, Observer, Remote, Upstream};

/// How often a waiting call reports progress. Clients commonly give up on a request after 60 s
/// without a message, and the contract promises one at least every 15 s.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(10);

/// What `ask_human` returns when the server shuts down while it waits.
const SHUTDOWN_NOTE: &str = "the clarify server is shutting down, but the question is still open; \
call get_answer with this request_id to receive the answer";

/// The first and the longest pause before asking an unreachable store or server again.
const RETRY_FIRST: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(4);

const INSTRUCTIONS: &str = "clarify lets you ask a human and wait for the answer. Call ask_human \
when you are blocked on a decision only a person can make; it returns the answer (or says the \
human skipped, did not answer in time, or the question was cancelled). For long waits, \
ask_human_async returns a request_id at once and get_answer fetches the answer later.";

/// How long a `requestState` handed to a 2026-07-28 client stays good: long enough to fill in
/// a form, short enough that a leaked one is soon worthless.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(30 * 60);

/// How the tools behave.
#[derive(Debug, Clone)]
pub struct Options {
    /// How often a waiting call sends `notifications/progress` (when the client sent a progress
    /// token).
    pub progress_interval: Duration,
    /// How long a sealed `requestState` may be brought back.
    pub request_state_ttl: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
            request_state_ttl: DEFAULT_REQUEST_STATE_TTL,
        }
    }
}

/// The MCP server handler; cheap to clone (every HTTP session gets a clone).
#[derive(Debug, Clone)]
pub struct ClarifyMcp {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    target: Target,
    options: Options,
    /// Every tool call in flight, so the host can let them finish (and cancel their requests)
    /// before the process ends.
    calls: TaskTracker,
    /// Cancelled when the host shuts down: waiting calls return the pending request id.
    shutdown: CancellationToken,
    /// Cancelled when the stdio client closes stdin: waiting calls end as if the client had
    /// cancelled them. (The MCP session would cancel them too, but only after a 5 s drain.)
    client_gone: CancellationToken,
    /// Seals and opens the `requestState` of 2026-07-28 calls.
    states: state::RequestStates,
    /// Who calls over stdio, for binding request states: this process, whose one client it is.
    instance: String,
    /// Asking tasks' requests in the client (2026-07-28): the round each is in.
    task_asks: std::sync::Mutex<std::collections::HashMap<String, tasks::TaskAsk>>,
}

#[derive(Debug)]
enum Target {
    /// Every call goes to the same place (stdio).
    Fixed(Upstream),
    /// Each call goes to this store, in the tenant of the HTTP caller.
    PerCaller(Embedded),
}

/// For whom and where one call works.
#[derive(Debug)]
struct Party {
    upstream: Upstream,
    /// Recorded as the request's `agent` when the arguments name none.
    agent: Option<String>,
    /// Recorded as who cancelled, when a call is cancelled, and who answered in the client.
    actor: String,
    /// Whom a `requestState` is bound to: the API key's id, or this stdio process.
    holder: String,
}

/// How a wait ended.
#[derive(Debug)]
enum Waited {
    Resolved(Box<OutcomeBody>),
    /// The wait's own deadline passed.
    Pending,
    /// The client cancelled the call or went away.
    Cancelled,
    ShuttingDown,
}

impl ClarifyMcp {
    /// A server whose every call goes to `upstream`.
    pub fn new(upstream: Upstream, options: Options) -> Self {
        Self::build(Target::Fixed(upstream), options, CancellationToken::new())
    }

    fn build(target: Target, options: Options, shutdown: CancellationToken) -> Self {
        let ttl = chrono::TimeDelta::from_std(options.request_state_ttl)
            .unwrap_or(chrono::TimeDelta::minutes(30));
        let states = match &target {
            Target::Fixed(Upstream::Store(e)) | Target::PerCaller(e) => {
                state::RequestStates::stored(e.store().clone(), ttl)
            }
            Target::Fixed(Upstream::Server(_)) => state::RequestStates::in_process(ttl),
        };
        Self {
            inner: Arc::new(Inner {
                target,
                options,
                calls: TaskTracker::new(),
                shutdown,
                client_gone: CancellationToken::new(),
                states,
                instance: format!("stdio:{}", uuid_like()),
                task_asks: std::sync::Mutex::default(),
            }),
        }
    }

    /// Serves MCP on stdin and stdout until the client closes stdin or `stop` completes, then
    /// lets calls in flight finish (cancelling their requests). Only protocol messages are
    /// written to stdout.
    pub async fn serve_stdio(self, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
        let running = self
            .clone()
            .serve((
                WatchEof::new(tokio::io::stdin(), self.inner.client_gone.clone()),
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
        self.finish(Duration::from_secs(10)).await;
        ended
            .map(|reason| tracing::debug!(?reason, "MCP session ended"))
            .map_err(|e| ServeError::Session(e.to_string()))
    }

    /// Waits up to `within` for the calls in flight to finish; no new call is tracked after.
    pub async fn finish(&self, within: Duration) {
        self.inner.calls.close();
        if tokio::time::timeout(within, self.inner.calls.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                calls = self.inner.calls.len(),
                "MCP calls still running at exit; their requests stay pending until they expire"
            );
        }
    }

    fn party(&self, context: &RequestContext<RoleServer>) -> Result<Party, ToolError> {
        let client = context
            .client_info()
            .map(|info| info.name.trim().to_owned())
            .filter(|name| !name.is_empty());
        match &self.inner.target {
            Target::Fixed(upstream) => Ok(Party {
                upstream: upstream.clone(),
                actor: client.clone().unwrap_or_else(|| "mcp".to_owned()),
                agent: client,
                holder: self.inner.instance.clone(),
            }),
            Target::PerCaller(embedded) => {
                let caller = context
                    .extensions
                    .get::<::http::request::Parts>()
                    .and_then(|parts| parts.extensions.get::<HttpCaller>())
                    .ok_or(ToolError::NoCaller)?;
                Ok(Party {
                    upstream: Upstream::Store(
                        embedded.for_caller(&caller.tenant, format!("key:{}", caller.name)),
                    ),
                    agent: client.or_else(|| Some(caller.name.clone())),
                    actor: caller.name.clone(),
                    holder: caller.key_id.clone(),
                })
            }
        }
    }

    async fn ask_human(
        &self,
        party: &Party,
        args: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ToolError> {
        let opened = party.upstream.ask(args, party.agent.as_deref()).await?;
        let surface = surface::ClientSurface::of(context);
        if surface.tasks {
            return Ok(self.task_created(party, &opened.id).await?.into());
        }
        if let Some(asked) = self
            .ask_in_result(party, ASK_HUMAN, &opened.id, context)
            .await?
        {
            return Ok(asked);
        }
        let waited = self
            .wait_with_client(party, &opened.id, opened.timeout, context)
            .await?;
        Ok(self.asked_human(party, &opened.id, waited).await?.into())
    }

    /// On 2026-07-28, the `input_required` result asking the client about request `id`, when it
    /// can show it.
    async fn ask_in_result(
        &self,
        party: &Party,
        tool: &str,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<CallToolResponse>, ToolError> {
        let surface = surface::ClientSurface::of(context);
        if !surface.input_required {
            return Ok(None);
        }
        let Some(ask) = self.client_ask(party, id, surface).await? else {
            return Ok(None);
        };
        let state = self.inner.states.seal(&party.holder, tool, id).await?;
        Ok(ask.input_required(id, None, state).map(Into::into))
    }

    /// `ask_human`'s result once its wait ended.
    async fn asked_human(
        &self,
        party: &Party,
        id: &str,
        waited: Waited,
    ) -> Result<CallToolResult, ToolError> {
        match waited {
            Waited::Resolved(outcome) => Ok(tools::outcome(&outcome)),
            Waited::Cancelled => {
                tracing::info!(
                    id,
                    "the MCP client cancelled ask_human; cancelling the request"
                );
                Ok(match party.upstream.cancel(id, &party.actor).await? {
                    Some(outcome) => tools::outcome(&outcome),
                    None => tools::pending(id, None),
                })
            }
            Waited::ShuttingDown => Ok(tools::pending(id, Some(SHUTDOWN_NOTE))),
            Waited::Pending => Ok(tools::pending(id, None)),
        }
    }

    /// A 2026-07-28 retry of `tool` carrying the client's answer and the sealed state: the
    /// answer is taken (or, when it does not fit, asked for again), then the call goes on as
    /// it would have. A state that does not open is a JSON-RPC error and answers nothing.
    async fn resume(
        &self,
        party: &Party,
        tool: &str,
        params: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<CallToolResponse, ErrorData>, ToolError> {
        let Some(sealed) = params.request_state.as_deref() else {
            return Ok(Err(ErrorData::invalid_params(
                "inputResponses came without the requestState they answer; echo the requestState of the input_required result",
                None,
            )));
        };
        let id = match self.inner.states.open(&party.holder, tool, sealed).await? {
            Ok(id) => id,
            Err(refused) => {
                tracing::info!(tool, %refused, "a requestState was refused");
                return Ok(Err(surface::refused_state(&refused)));
            }
        };
        let snapshot = party.upstream.snapshot(&id).await?;
        let waited = match snapshot.outcome {
            // Another surface answered first: the client's answer is not needed.
            Some(outcome) => Waited::Resolved(Box::new(outcome)),
            None => {
                let surface = surface::ClientSurface::of(context);
                let ask = self.client_ask(party, &id, surface).await?;
                let result = surface::input_response(params.input_responses.as_ref());
                let taken = match (&ask, &result) {
                    (Some(ask), Some(result)) => self.take_answer(party, &id, ask, result).await?,
                    _ => surface::Taken::Nothing,
                };
                match (taken, ask) {
                    (surface::Taken::Resolved(outcome), _) => Waited::Resolved(outcome),
                    (surface::Taken::Misfit(why), Some(ask)) => {
                        let state = self.inner.states.seal(&party.holder, tool, &id).await?;
                        let note =
                            format!("That answer did not fit ({why}); the question is still open.");
                        if let Some(again) = ask.input_required(&id, Some(&note), state) {
                            return Ok(Ok(again.into()));
                        }
                        self.wait(party, &id, None, None, context).await?
                    }
                    _ => self.wait(party, &id, None, None, context).await?,
                }
            }
        };
        let args = Value::Object(params.arguments.clone().unwrap_or_default());
        let result = if tool == APPROVE_TOOL_USE {
            let call = tools::approve_tool_use_args(&args)?;
            self.approval_settled(party, &call.action, &id, waited)
                .await?
        } else {
            self.asked_human(party, &id, waited).await?
        };
        Ok(Ok(result.into()))
    }

    async fn get_answer(
        &self,
        party: &Party,
        args: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let args = tools::get_answer_args(args)?;
        let deadline = Instant::now() + args.wait;
        Ok(
            match self
                .wait(party, &args.request_id, None, Some(deadline), context)
                .await?
            {
                Waited::Resolved(outcome) => tools::outcome(&outcome),
                Waited::ShuttingDown => tools::pending(&args.request_id, Some(SHUTDOWN_NOTE)),
                Waited::Pending | Waited::Cancelled => tools::pending(&args.request_id, None),
            },
        )
    }

    async fn approve_tool_use(
        &self,
        party: &Party,
        args: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ToolError> {
        use clarify_core::policy::ApprovalSpec;
        let call = tools::approve_tool_use_args(args)?;
        let action = &call.action;
        // A server rule that allows or denies the call comes before grants: the approval raised
        // below is then resolved by it as soon as it is created.
        if !party
            .upstream
            .rule_decides(action, party.agent.as_deref())
            .await?
            && party.upstream.granted(action, None).await?
        {
            return Ok(allow(&action.arguments).into());
        }
        // Claude Code sends no session, so `session` scope has nothing to hold in.
        let spec = ApprovalSpec {
            scopes: vec![clarify_core::Scope::Once, clarify_core::Scope::Always],
            allow_edit: true,
            timeout_seconds: None,
        };
        let body = spec.request(action, call.tool_use_id.as_deref(), None);
        let opened = party.upstream.ask(body, party.agent.as_deref()).await?;
        if let Some(asked) = self
            .ask_in_result(party, APPROVE_TOOL_USE, &opened.id, context)
            .await?
        {
            return Ok(asked);
        }
        let waited = self
            .wait_with_client(party, &opened.id, opened.timeout, context)
            .await?;
        Ok(self
            .approval_settled(party, action, &opened.id, waited)
            .await?
            .into())
    }

    /// `approve_tool_use`'s result once the wait for approval `id` of `action` ended.
    async fn approval_settled(
        &self,
        party: &Party,
        action: &clarify_core::Action,
        id: &str,
        waited: Waited,
    ) -> Result<CallToolResult, ToolError> {
        use clarify_core::policy::{Verdict, settle};
        let outcome = match waited {
            Waited::Resolved(outcome) => outcome,
            waited => {
                tracing::info!(
                    id,
                    ?waited,
                    "approve_tool_use ended before an answer; cancelling the request"
                );
                party.upstream.cancel(id, &party.actor).await?;
                return Ok(deny(
                    "The approval was abandoned before a human answered, so the call was not run.",
                ));
            }
        };
        let reply = outcome
            .approval()
            .map_err(|e| ToolError::Arguments(e.to_string()))?;
        Ok(match settle(action, None, &reply) {
            Verdict::Run { arguments, .. } => allow(&arguments),
            Verdict::Refuse(refusal) => deny(&refusal.reason),
        })
    }

    /// Waits for request `id` until it resolves, `deadline` passes, the client cancels or the
    /// host shuts down; reports progress meanwhile. `timeout` is the request's own time limit,
    /// shown as the progress total.
    async fn wait(
        &self,
        party: &Party,
        id: &str,
        timeout: Option<Duration>,
        deadline: Option<Instant>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Waited, ToolError> {
        let interval = self
            .inner
            .options
            .progress_interval
            .max(Duration::from_millis(10));
        let token = context.meta.get_progress_token();
        let started = Instant::now();
        let mut next_progress = started + interval;
        let mut backoff = RETRY_FIRST;
        loop {
            let until = deadline.map_or(next_progress, |d| d.min(next_progress));
            let slice = until.saturating_duration_since(Instant::now());
            let step = async {
                let polled = party.upstream.poll(id, slice).await;
                if let Err(e) = &polled
                    && e.is_transient()
                {
                    tracing::warn!(error = %e, "waiting for request {id}; retrying");
                    tokio::time::sleep(backoff).await;
                }
                polled
            };
            let polled = tokio::select! {
                biased;
                () = context.ct.cancelled() => return Ok(Waited::Cancelled),
                () = self.inner.client_gone.cancelled() => return Ok(Waited::Cancelled),
                () = self.inner.shutdown.cancelled() => return Ok(Waited::ShuttingDown),
                polled = step => polled,
            };
            match polled {
                Ok(upstream::Polled::Resolved(outcome)) => return Ok(Waited::Resolved(outcome)),
                Ok(upstream::Polled::Pending) => backoff = RETRY_FIRST,
                Err(e) if e.is_transient() => backoff = (backoff * 2).min(RETRY_MAX),
                Err(e) => return Err(e),
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(Waited::Pending);
            }
            if now >= next_progress {
                if let Some(token) = &token {
                    let elapsed = now.duration_since(started);
                    let mut progress =
                        ProgressNotificationParam::new(token.clone(), elapsed.as_secs_f64())
                            .with_message(progress_message(elapsed, timeout));
                    if let Some(total) = timeout {
                        progress.total = Some(total.as_secs_f64());
                        progress.progress = progress.progress.min(total.as_secs_f64());
                    }
                    if let Err(e) = context.peer.notify_progress(progress).await {
                        tracing::debug!(error = %e, "a progress notification was not sent");
                    }
                }
                next_progress = now + interval;
            }
        }
    }
}

fn allow(arguments: &Value) -> CallToolResult {
    tools::permission(serde_json::json!({"behavior": "allow", "updatedInput": arguments}))
}

fn deny(message: &str) -> CallToolResult {
    tools::permission(serde_json::json!({"behavior": "deny", "message": message}))
}

/// 128 random bits in hex: the stdio instance a request state is bound to.
fn uuid_like() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads through to `inner` and cancels `eof` when it reaches the end (or fails): a stdio MCP
/// client closes stdin to end the session.
struct WatchEof<R> {
    inner: R,
    eof: CancellationToken,
}

impl<R> WatchEof<R> {
    fn new(inner: R, eof: CancellationToken) -> Self {
        Self { inner, eof }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WatchEof<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let asked = buf.remaining() > 0;
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            std::task::Poll::Ready(Ok(())) if asked && buf.filled().len() == before => {
                self.eof.cancel();
            }
            std::task::Poll::Ready(Err(_)) => self.eof.cancel(),
            _ => {}
        }
        polled
    }
}

fn progress_message(elapsed: Duration, timeout: Option<Duration>) -> String {
    let waited = clarify_core::humanize_seconds(elapsed.as_secs());
    match timeout {
        Some(t) => format!(
            "waiting for a human to answer: {waited} so far; the question expires after {}",
            clarify_core::humanize_seconds(t.as_secs())
        ),
        None => format!("waiting for a human to answer: {waited} so far"),
    }
}

impl ServerHandler for ClarifyMcp {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        );
        info.server_info = Implementation::new("clarify", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(INSTRUCTIONS.to_owned());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(definitions()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        definitions().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if ![ASK_HUMAN, ASK_HUMAN_ASYNC, GET_ANSWER, APPROVE_TOOL_USE].contains(&name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {name:?}; the tools are {ASK_HUMAN}, {ASK_HUMAN_ASYNC}, {GET_ANSWER} and {APPROVE_TOOL_USE}"
                ),
                None,
            ));
        }
        let _in_flight = self.inner.calls.token();
        let retry = request.request_state.is_some() || request.input_responses.is_some();
        if retry && ![ASK_HUMAN, APPROVE_TOOL_USE].contains(&name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "{name} never asks for input, so it takes no requestState or inputResponses"
                ),
                None,
            ));
        }
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let result = match self.party(&context) {
            Err(e) => Err(e),
            Ok(party) if retry => match self.resume(&party, name, &request, &context).await {
                Ok(Err(refused)) => return Err(refused),
                Ok(Ok(response)) => Ok(response),
                Err(e) => Err(e),
            },
            Ok(party) => match name {
                ASK_HUMAN => self.ask_human(&party, args, &context).await,
                ASK_HUMAN_ASYNC => party
                    .upstream
                    .ask(args, party.agent.as_deref())
                    .await
                    .map(|opened| tools::asked(&opened.id).into()),
                APPROVE_TOOL_USE => self.approve_tool_use(&party, &args, &context).await,
                _ => self
                    .get_answer(&party, &args, &context)
                    .await
                    .map(Into::into),
            },
        };
        Ok(result.unwrap_or_else(|e| {
            tracing::debug!(tool = name, error = %e, "tool call failed");
            tools::error(&e).into()
        }))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.task_get(request, &context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_update(request, &context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_cancel(request, &context).await
    }
}
