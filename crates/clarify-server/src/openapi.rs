//! The OpenAPI 3.1 document, generated from the handlers and wire types.
//!
//! It is committed as `api/openapi.json`; a test regenerates it and fails with the command to
//! run when the committed copy is stale.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "clarify",
        description = "Ask a human and wait for the answer: durable questions and approvals for LLM agents.",
        license(name = "Apache-2.0")
    ),
    paths(
        crate::api::create,
        crate::api::list,
        crate::api::show,
        crate::api::answer,
        crate::api::cancel,
        crate::api::wait,
        crate::api::deliveries,
        crate::api::webhook_secret,
        crate::api::list_keys,
        crate::api::create_key,
        crate::api::revoke_key,
        crate::grants::list,
        crate::grants::check,
        crate::grants::revoke,
        crate::events::stream,
        crate::auth::login,
        crate::auth::logout,
        crate::auth::session,
        crate::healthz,
        crate::readyz,
        crate::metrics::render,
    ),
    modifiers(&Bearer),
    tags(
        (name = "requests", description = "Ask, read, answer, cancel and wait for requests"),
        (name = "events", description = "The live event stream"),
        (name = "webhooks", description = "Outcome deliveries to callback URLs"),
        (name = "keys", description = "API key management (admins)"),
        (name = "grants", description = "Remembered approvals: list, check, revoke"),
        (name = "inbox", description = "Inbox sessions"),
        (name = "health", description = "Liveness, readiness and metrics"),
    )
)]
struct Document;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            components.add_security_scheme(
                "bearer",
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .description(Some("An API key: `Authorization: Bearer ck_...`"))
                        .build(),
                ),
            );
        }
    }
}

/// The document as pretty JSON, exactly as committed.
pub fn json() -> String {
    let mut doc = Document::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    let mut text = doc.to_pretty_json().unwrap_or_default();
    text.push('\n');
    text
}

/// `GET /openapi.json`.
pub async fn document() -> axum::response::Response {
    use axum::response::IntoResponse;
    let value: serde_json::Value = serde_json::from_str(&json()).unwrap_or_default();
    Json(value).into_response()
}
