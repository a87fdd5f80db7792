//! An MCP client that drives a clarify MCP server the way an agent's client would, over any
//! rmcp transport (a pipe, a child process's stdio, Streamable HTTP), and records the progress
//! notifications it receives.

use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, Implementation, ProgressNotificationParam, ProtocolVersion, ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestHandle, RoleClient, RunningService,
};
use rmcp::transport::IntoTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How long a test waits for a session, a call or a notification before it fails.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The client's name, which the server records as the request's `agent`.
pub const CLIENT_NAME: &str = "test-agent";

/// The client side of a session: forwards every progress notification.
#[derive(Debug, Clone)]
pub struct Listener {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    version: ProtocolVersion,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(CLIENT_NAME, "1.0"),
        );
        config.protocol_version = self.version.clone();
        config
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
        let (tx, progress) = mpsc::unbounded_channel();
        let listener = Listener {
            progress: tx,
            version,
        };
        let client = tokio::time::timeout(PATIENCE, listener.serve(transport))
            .await
            .expect("initialized in time")
            .expect("the session initializes");
        Self { client, progress }
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
