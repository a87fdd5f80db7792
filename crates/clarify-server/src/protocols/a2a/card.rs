//! `GET /.well-known/agent-card.json`: clarify described as an A2A 1.0 agent card. Public, as
//! discovery needs; it names the JSON-RPC endpoint in both versions, the two skills, and the
//! bearer key every call needs.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};

use crate::shared::json::Json;
use crate::state::AppState;

/// The agent card of this instance.
pub(super) async fn card(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CACHE_CONTROL, "public, max-age=300")],
        Json(of(&state.config.public_url)),
    )
}

/// The card of an instance reached at `public_url`.
fn of(public_url: &str) -> Value {
    let endpoint = format!("{public_url}/a2a");
    json!({
        "name": "clarify",
        "description": "Asks a person and returns their answer: open questions, choices, forms, and approvals of an agent's actions, answered in clarify's inbox, in chat, by e-mail or on a phone. A task ends when the person answers (or the request expires or is cancelled); its artifact `outcome` holds the answer.",
        "supportedInterfaces": [
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "provider": {"organization": "clarify", "url": public_url},
        "version": env!("CARGO_PKG_VERSION"),
        "documentationUrl": format!("{public_url}/openapi.json"),
        "capabilities": {
            "streaming": true,
            "pushNotifications": true,
            "extendedAgentCard": false,
        },
        "securitySchemes": {
            "bearer": {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": "A clarify agent key: `clarify keys create --role agent`.",
                },
            },
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [
            {
                "id": "ask-human",
                "name": "Ask a human",
                "description": "A text part is asked as an open question; a data part is a clarify request body (`questions` of kind open, single, multi or form, `context`, `responders`, `timeout_seconds`, ...). The outcome artifact holds the answers.",
                "tags": ["human-in-the-loop", "question", "form"],
                "examples": [
                    "Which region should the new cluster run in?",
                    "{\"question\": \"Which database?\", \"choices\": [\"PostgreSQL\", \"SQLite\"]}",
                ],
                "inputModes": ["text/plain", "application/json"],
                "outputModes": ["application/json"],
            },
            {
                "id": "approve-action",
                "name": "Approve an action",
                "description": "A data part with an approval question (`kind: approval` and its `action`: `name` and `arguments`) asks a person to approve, edit or deny the action. The outcome artifact holds the decision.",
                "tags": ["human-in-the-loop", "approval"],
                "examples": [
                    "{\"questions\": [{\"kind\": \"approval\", \"text\": \"Deploy to production?\", \"action\": {\"name\": \"deploy\", \"arguments\": {\"env\": \"prod\"}}}]}",
                ],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"],
            },
        ],
    })
}
