//! An MCP client that drives a clarify MCP server the way an agent's client would, over any
//! rmcp transport (a pipe, a child process's stdio, Streamable HTTP), and records the progress
//! notifications it receives. A client may also declare form and URL elicitation (each
//! `elicitation/create` is handed to the test, which answers it, and the notifications rmcp has
//! no type for, such as `notifications/elicitation/complete`, are kept) and the tasks extension.

use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, CustomNotification, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProgressNotificationParam, ProtocolVersion,
    ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RequestHandle, RoleClient,
    RunningService,
};
use rmcp::transport::IntoTransport;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// How long a test waits for a session, a call or a notification before it fails.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The client's name, which the server records as the request's `agent`.
pub const CLIENT_NAME: &str = "test-agent";

/// What a test client declares.
#[derive(Debug, Clone)]
pub struct Declared {
    pub version: ProtocolVersion,
    /// Form elicitation: each `elicitation/create` goes to [`McpAgent::next_elicitation`].
    pub form: bool,
    /// URL-mode elicitation.
    pub url: bool,
    /// The tasks extension.
    pub tasks: bool,
}

impl Declared {
    /// A client on `version` declaring nothing.
    pub fn plain(version: ProtocolVersion) -> Self {
        Self {
            version,
            form: false,
            url: false,
            tasks: false,
        }
    }

    fn capabilities(&self) -> ClientCapabilities {
        let mut caps = json!({});
        if self.form || self.url {
            let mut elicitation = json!({});
            if self.form {
                elicitation["form"] = json!({});
            }
            if self.url {
                elicitation["url"] = json!({});
            }
            caps["elicitation"] = elicitation;
        }
        if self.tasks {
            caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
        }
        serde_json::from_value(caps).expect("capabilities")
    }
}

/// An `elicitation/create` the server sent; answer it through `reply`.
#[derive(Debug)]
pub struct Elicited {
    pub params: ElicitRequestParams,
    pub reply: oneshot::Sender<ElicitResult>,
}

impl Elicited {
    /// The request as JSON (`mode`, `message`, `requestedSchema` or `url`).
    pub fn json(&self) -> Value {
        serde_json::to_value(&self.params).expect("JSON")
    }

    /// Accepts with `content`.
    pub fn accept(self, content: Value) {
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        result.content = Some(content);
        let _ = self.reply.send(result);
    }

    pub fn answer(self, action: ElicitationAction) {
        let _ = self.reply.send(ElicitResult::new(action));
    }
}

/// The client side of a session: forwards every progress notification, elicitation and
/// cancellation.
#[derive(Debug, Clone)]
pub struct Listener {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    elicitations: mpsc::UnboundedSender<Elicited>,
    cancelled: mpsc::UnboundedSender<CancelledNotificationParam>,
    notices: mpsc::UnboundedSender<CustomNotification>,
    declared: Declared,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::new(
            self.declared.capabilities(),
            Implementation::new(CLIENT_NAME, "1.0"),
        );
        config.protocol_version = self.declared.version.clone();
        config
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let (reply, answer) = oneshot::channel();
        let _ = self.elicitations.send(Elicited { params, reply });
        tokio::select! {
            answer = answer => Ok(answer.unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel))),
            () = context.ct.cancelled() => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        }
    }

    async fn on_cancelled(
        &self,
        params: CancelledNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.cancelled.send(params);
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.notices.send(notification);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

/// An initialized MCP session, as an agent holds it.
#[derive(Debug)]
pub struct McpAgent {
    pub client: RunningService<RoleClient, Listener>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    elicitations: mpsc::UnboundedReceiver<Elicited>,
    cancelled: mpsc::UnboundedReceiver<CancelledNotificationParam>,
    notices: mpsc::UnboundedReceiver<CustomNotification>,
}

impl McpAgent {
    /// Initializes a session over `transport` on protocol 2025-06-18 (what clients speak today).
    pub async fn connect<T, E, A>(transport: T) -> Self
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        Self::connect_with(transport, ProtocolVersion::V_2025_06_18).await
    }

    /// Initializes a session over `transport`, offering protocol `version`.
    pub async fn connect_with<T, E, A>(transport: T, version: ProtocolVersion) -> Self
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        Self::connect_as(transport, Declared::plain(version)).await
    }

    /// Initializes a session over `transport` as a client declaring `declared`.
    pub async fn connect_as<T, E, A>(transport: T, declared: Declared) -> Self
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let (tx, progress) = mpsc::unbounded_channel();
        let (elicit_tx, elicitations) = mpsc::unbounded_channel();
        let (cancel_tx, cancelled) = mpsc::unbounded_channel();
        let (notice_tx, notices) = mpsc::unbounded_channel();
        let version = declared.version.clone();
        let listener = Listener {
            progress: tx,
            elicitations: elicit_tx,
            cancelled: cancel_tx,
            notices: notice_tx,
            declared,
        };
        // 2026-07-28 has no `initialize`: offered there, a server would settle on 2025-11-25.
        let lifecycle = if version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
            ClientLifecycleMode::Discover {
                preferred_versions: vec![version.clone()],
            }
        } else {
            ClientLifecycleMode::Initialize
        };
        let client = tokio::time::timeout(
            PATIENCE,
            listener.serve_with_lifecycle(transport, lifecycle),
        )
        .await
        .expect("initialized in time")
        .expect("the session initializes");
        if let Some(info) = client.peer().peer_info() {
            assert_eq!(
                info.protocol_version, version,
                "the server settled on another version than the one offered"
            );
        }
        Self {
            client,
            progress,
            elicitations,
            cancelled,
            notices,
        }
    }

    /// The next notification the server sent that rmcp has no type for (such as
    /// `notifications/elicitation/complete`).
    pub async fn next_notice(&mut self) -> CustomNotification {
        tokio::time::timeout(PATIENCE, self.notices.recv())
            .await
            .expect("a notification in time")
            .expect("the client is running")
    }

    /// The next `elicitation/create` the server sent.
    pub async fn next_elicitation(&mut self) -> Elicited {
        tokio::time::timeout(PATIENCE, self.elicitations.recv())
            .await
            .expect("an elicitation in time")
            .expect("the client is running")
    }

    /// The next `notifications/cancelled` the server sent.
    pub async fn next_cancelled(&mut self) -> CancelledNotificationParam {
        tokio::time::timeout(PATIENCE, self.cancelled.recv())
            .await
            .expect("a cancellation in time")
            .expect("the client is running")
    }

    /// Calls `tool` and waits for its result.
    pub async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        finish(self.begin(tool, args).await).await
    }

    /// Sends a call without waiting for it (so it can be cancelled).
    pub async fn begin(&self, tool: &str, args: Value) -> RequestHandle<RoleClient> {
        let Value::Object(args) = args else {
            panic!("tool arguments are an object")
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        self.client
            .peer()
            .send_cancellable_request(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .expect("the call is sent")
    }

    /// The next progress notification.
    pub async fn next_progress(&mut self) -> ProgressNotificationParam {
        tokio::time::timeout(PATIENCE, self.progress.recv())
            .await
            .expect("a progress notification in time")
            .expect("the client is running")
    }
}

/// Waits for the result of a call sent with [`McpAgent::begin`].
pub async fn finish(handle: RequestHandle<RoleClient>) -> CallToolResult {
    let response = tokio::time::timeout(PATIENCE, handle.await_response())
        .await
        .expect("the call returns in time")
        .expect("the call succeeds at the protocol level");
    match response {
        ServerResult::CallToolResult(result) => result,
        other => panic!("not a tool result: {other:?}"),
    }
}

/// The first text block of a result.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// The result's structured content (the outcome JSON).
pub fn structured(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// `ask_human` arguments: one single-choice question asking `text`.
pub fn question(text: &str) -> Value {
    json!({"questions": [{
        "question": text,
        "kind": "single",
        "options": [{"label": "Postgres"}, {"label": "SQLite"}],
    }]})
}
