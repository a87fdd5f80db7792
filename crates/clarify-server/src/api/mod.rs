//! Everything here answers programs (`/v1`, `/openapi.json`, health and metrics) and never
//! renders HTML.
//!
//! Each file is one resource: its handlers, the JSON only it speaks, and its OpenAPI
//! annotations ([`openapi`] gathers them). Handlers read the caller ([`Caller`]), parse raw
//! input into core types, call the store for the caller's tenant, and render [`RecordBody`] and
//! the other wire types; nothing here decides what an answer means. One background task belongs
//! here too: the event tailer that feeds `/v1/events` (`events::tail`). The workers that send
//! what the store queued (webhooks, Web Push, channel notifications) are the `outbox` room's;
//! the routes that configure them (`webhooks`, `push`) are here.

pub mod answers;
pub mod audit;
pub mod deliveries;
pub mod events;
pub mod grants;
pub mod health;
pub mod identities;
pub mod insights;
pub mod keys;
pub mod openapi;
pub mod passkeys;
pub mod policy;
pub mod push;
pub mod receipts;
pub mod requests;
pub mod sessions;
pub mod suggestions;
pub mod webhooks;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};
use clarify_model::wire::RecordBody;
use clarify_store::RequestRecord;
use tokio::task::JoinHandle;

use crate::middleware::auth::Caller;
use crate::state::AppState;

/// The largest body `POST /v1/requests` takes: room for display blocks (their text up to
/// 256 KiB, images up to 2 MiB, base64 a third larger) beside the rest. Every other body is held
/// to the server's `body_limit`.
pub const CREATE_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// Every route of this room.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/v1/requests",
            post(requests::create)
                .layer(DefaultBodyLimit::max(CREATE_BODY_LIMIT))
                .get(requests::list),
        )
        .route("/v1/requests/{id}", get(requests::show))
        .route("/v1/answers", post(answers::batch))
        .route("/v1/requests/{id}/answer", post(requests::answer))
        .route(
            "/v1/requests/{id}/client-answer",
            post(requests::client_answer),
        )
        .route("/v1/requests/{id}/cancel", post(requests::cancel))
        .route("/v1/requests/{id}/extend", post(requests::extend))
        .route("/v1/requests/{id}/wait", get(requests::wait))
        .route(
            "/v1/requests/{id}/display/{n}",
            get(requests::display_image),
        )
        .route("/v1/requests/{id}/deliveries", get(deliveries::deliveries))
        .route(
            "/v1/requests/{id}/notifications",
            get(deliveries::notifications),
        )
        .route("/v1/events", get(events::stream))
        .route("/v1/grants", get(grants::list))
        .route("/v1/grants/check", post(grants::check))
        .route("/v1/grants/{id}", delete(grants::revoke))
        .route("/v1/policy/check", post(policy::check))
        .route("/v1/suggestions", get(suggestions::list))
        .route("/v1/suggestions/accept", post(suggestions::accept))
        .route("/v1/keys", get(keys::list_keys).post(keys::create_key))
        .route("/v1/keys/{name}/revoke", post(keys::revoke_key))
        .route("/v1/identities", get(identities::list))
        .route("/v1/identities/{id}", delete(identities::remove))
        .route("/v1/webhook-secret", get(webhooks::webhook_secret))
        .route("/v1/push/key", get(push::key))
        .route(
            "/v1/push/subscriptions",
            post(push::subscribe).get(push::list),
        )
        .route("/v1/push/subscriptions/{id}", delete(push::unsubscribe))
        .route("/v1/audit", get(audit::list))
        .route("/.well-known/jwks.json", get(receipts::jwks))
        .route("/v1/receipts/spend", post(receipts::spend))
        .route("/v1/insights", get(insights::insights))
        .route(
            "/v1/passkeys",
            get(passkeys::list).post(passkeys::finish_registration),
        )
        .route(
            "/v1/passkeys/registration",
            post(passkeys::start_registration),
        )
        .route("/v1/passkeys/{id}", delete(passkeys::remove))
        .route("/v1/passkeys/sign-in", post(passkeys::start_sign_in))
        .route(
            "/v1/passkeys/sign-in/finish",
            post(passkeys::finish_sign_in),
        )
        .route("/v1/requests/{id}/step-up", post(passkeys::start_step_up))
        .route(
            "/v1/requests/{id}/step-up/finish",
            post(passkeys::finish_step_up),
        )
        .route("/v1/login", post(sessions::login))
        .route("/v1/logout", post(sessions::logout))
        .route("/v1/session", get(sessions::session))
        .route("/openapi.json", get(openapi::document))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::render))
}

/// Starts this room's background tasks, the event tailer and the reading of the receipts' keys
/// (a rotation made by another process reaches this one); they end at shutdown.
pub(crate) fn start(state: &AppState) -> Vec<JoinHandle<()>> {
    vec![
        tokio::spawn(events::tail(state.clone())),
        tokio::spawn(reload_receipt_keys(state.clone())),
    ]
}

async fn reload_receipt_keys(state: AppState) {
    loop {
        tokio::select! {
            () = state.shutdown.cancelled() => return,
            () = tokio::time::sleep(crate::state::receipts::RELOAD) => {}
        }
        if let Err(e) = state.receipts.reload(&state.store).await {
            tracing::warn!(error = %e, "reading the receipts' keys failed; signing with the ones read before");
        }
    }
}

/// `record` as `caller` sees it: with its answer link for the roles that create requests.
pub(crate) fn render(state: &AppState, caller: &Caller, record: &RequestRecord) -> RecordBody {
    render_for(state, caller.sees_links(), record)
}

/// `record` with its answer link or without: [`render`] for a caller of either kind, before
/// the caller is known (the event streams render each event once for each kind).
pub(crate) fn render_for(state: &AppState, links: bool, record: &RequestRecord) -> RecordBody {
    let link = links.then(|| state.answer_url(&record.id));
    let mut body = RecordBody::new(record, link).with_receipt(state.receipts.sign(record));
    body.step_up = state.store.needs_step_up(&record.request);
    body
}
