//! The OpenAPI 3.1 document, generated from the handlers and wire types.
//!
//! It is committed as `api/openapi.json`; a test regenerates it and fails with the command to
//! run when the committed copy is stale.
//!
//! Each handler documents the answers of its own logic (`409 already_resolved`, `422` on an answer
//! that does not fit). The refusals that come from what an operation takes rather than what it
//! does (a JSON body, a path id, a query, a key, the store, the limits) are added to every
//! operation by `Refusals` from that shape, so a new route documents them without anyone
//! remembering to. schemathesis checks the result against a served instance
//! (`scripts/schemathesis`).

use crate::shared::json::Json;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, HeaderBuilder, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "clarify",
        description = "Ask a human and wait for the answer: durable questions and approvals for LLM agents.",
        license(name = "Apache-2.0")
    ),
    paths(
        crate::api::requests::create,
        crate::api::requests::list,
        crate::api::requests::show,
        crate::api::requests::answer,
        crate::api::requests::client_answer,
        crate::api::answers::batch,
        crate::api::requests::cancel,
        crate::api::requests::extend,
        crate::api::requests::wait,
        crate::api::requests::display_image,
        crate::api::deliveries::deliveries,
        crate::api::deliveries::notifications,
        crate::api::webhooks::webhook_secret,
        crate::api::keys::list_keys,
        crate::api::keys::create_key,
        crate::api::keys::revoke_key,
        crate::api::identities::list,
        crate::api::identities::remove,
        crate::api::push::key,
        crate::api::push::subscribe,
        crate::api::push::list,
        crate::api::push::unsubscribe,
        crate::api::grants::list,
        crate::api::grants::check,
        crate::api::grants::revoke,
        crate::api::policy::check,
        crate::api::suggestions::list,
        crate::api::suggestions::accept,
        crate::api::events::stream,
        crate::api::audit::list,
        crate::api::insights::insights,
        crate::api::sessions::login,
        crate::api::sessions::logout,
        crate::api::sessions::session,
        crate::api::passkeys::list,
        crate::api::passkeys::start_registration,
        crate::api::passkeys::finish_registration,
        crate::api::passkeys::remove,
        crate::api::passkeys::start_sign_in,
        crate::api::passkeys::finish_sign_in,
        crate::api::passkeys::start_step_up,
        crate::api::passkeys::finish_step_up,
        crate::api::receipts::jwks,
        crate::api::receipts::spend,
        crate::api::health::healthz,
        crate::api::health::readyz,
        crate::api::health::render,
    ),
    modifiers(&Bearer, &Refusals),
    tags(
        (name = "requests", description = "Ask, read, answer, cancel, extend and wait for requests"),
        (name = "events", description = "The live event stream"),
        (name = "webhooks", description = "Outcome deliveries to callback URLs"),
        (name = "channels", description = "Announcements on configured channels"),
        (name = "keys", description = "API key management (admins)"),
        (name = "identities", description = "Chat accounts people linked to themselves (admins)"),
        (name = "push", description = "Web Push: a person's browsers notified of new requests"),
        (name = "audit", description = "The hash-chained event log (admins)"),
        (name = "insights", description = "What the decisions add up to (responders, admins)"),
        (name = "grants", description = "Remembered approvals: list, check, revoke"),
        (name = "policy", description = "The server's rules: what they decide for a call"),
        (name = "receipts", description = "Signed decisions: the public keys, and spending a receipt once"),
        (name = "inbox", description = "Inbox sessions and passkeys"),
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

/// Adds to each operation the refusals its shape makes possible, each with the error body:
/// - a JSON body: `400` (not JSON), `413` (too large), `422` (JSON of the wrong shape);
/// - a path parameter: `400 invalid_path` (not UTF-8 once decoded) and `404`;
/// - a query: `400` (malformed or a bad value);
/// - a key (`bearer` security): `401`, `429 rate_limited` (`--rate-limit`), and on writes `403`
///   (the role, or an inbox session without its CSRF token);
/// - the store: `503 store_unavailable` (or `disk_full`) on everything but `/healthz`;
/// - a long-poll or a stream: `503 too_many_waiters` (`--max-waiters`).
///
/// A status an operation already documents keeps its own description.
struct Refusals;

impl Modify for Refusals {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in &mut openapi.paths.paths {
            let operations = [
                (false, &mut item.get),
                (true, &mut item.post),
                (true, &mut item.put),
                (true, &mut item.patch),
                (true, &mut item.delete),
            ];
            for (writes, operation) in operations {
                if let Some(operation) = operation.as_mut() {
                    refusals(path, writes, operation);
                }
            }
        }
    }
}

fn refusals(path: &str, writes: bool, operation: &mut Operation) {
    let has = |place: ParameterIn| {
        operation
            .parameters
            .iter()
            .flatten()
            .any(|p| p.parameter_in == place)
    };
    // (status, description, whether it carries `Retry-After`)
    let mut add: Vec<(&str, &str, bool)> = Vec::new();
    if operation.request_body.is_some() {
        add.push(("400", "The body is not JSON", false));
        add.push(("413", "The body is too large (`body_too_large`)", false));
        add.push((
            "422",
            "The body is JSON of the wrong shape; the code names the problem",
            false,
        ));
    }
    if has(ParameterIn::Path) {
        add.push((
            "400",
            "The path is not UTF-8 once percent-decoded (`invalid_path`)",
            false,
        ));
        add.push(("404", "Not found in the caller's tenant", false));
    }
    if has(ParameterIn::Query) {
        add.push((
            "400",
            "The query is malformed or a value is invalid; the code names it",
            false,
        ));
    }
    let keyed = operation.security.as_ref().is_some_and(|s| !s.is_empty());
    if keyed {
        add.push((
            "401",
            "No key, or an unknown or revoked one (`unauthorized`)",
            false,
        ));
        if writes {
            add.push((
                "403",
                "The key's role may not do this, or an inbox session sent no CSRF token",
                false,
            ));
        }
        add.push(("429", "This key sent more than `--rate-limit` requests per second (`rate_limited`); retry after `Retry-After` seconds", true));
    }
    if path.ends_with("/wait") || path == "/v1/events" {
        add.push(("503", "Too many long-polls and event streams are open (`too_many_waiters`), or the store is unreachable (`store_unavailable`); retry after `Retry-After` seconds", true));
    }
    if path != "/healthz" {
        add.push((
            "503",
            "The store is unreachable (`store_unavailable`) or its disk is full (`disk_full`); nothing was changed",
            false,
        ));
    }
    let responses = &mut operation.responses.responses;
    for (status, description, retry_after) in add {
        if responses.contains_key(status) {
            continue;
        }
        let mut response = ResponseBuilder::new().description(description).content(
            "application/json",
            Content::new(Some(Ref::from_schema_name("ErrorBody"))),
        );
        if retry_after {
            response = response.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::Integer))
                    .description(Some("Seconds to wait before retrying"))
                    .build(),
            );
        }
        responses.insert(status.to_owned(), RefOr::T(response.build()));
    }
}

/// The document as pretty JSON, exactly as committed.
pub fn json() -> String {
    let mut doc = Document::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    let mut value = serde_json::to_value(&doc).unwrap_or_default();
    add_links(&mut value);
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// Links from a created request to what can be done with its id, so clients (and
/// schemathesis's stateful phase) know where the id goes. Written into the JSON because utoipa
/// 5 serializes a link's `operationId` as `operation_id`.
fn add_links(doc: &mut serde_json::Value) {
    let links: serde_json::Map<String, serde_json::Value> = [
        "show",
        "answer",
        "cancel",
        "wait",
        "deliveries",
        "notifications",
    ]
    .into_iter()
    .map(|operation| {
        let link = serde_json::json!({
            "operationId": operation,
            "parameters": {"id": "$response.body#/id"},
        });
        (operation.to_owned(), link)
    })
    .collect();
    for status in ["200", "201"] {
        if let Some(response) = doc
            .pointer_mut(&format!("/paths/~1v1~1requests/post/responses/{status}"))
            .and_then(serde_json::Value::as_object_mut)
        {
            response.insert("links".to_owned(), links.clone().into());
        }
    }
}

/// `GET /openapi.json`.
pub async fn document() -> axum::response::Response {
    use axum::response::IntoResponse;
    let value: serde_json::Value = serde_json::from_str(&json()).unwrap_or_default();
    Json(value).into_response()
}
