//! The webhook secret of the caller's tenant (`GET /v1/webhook-secret`), which webhooks are
//! signed with. The deliveries themselves are the outbox's (`outbox::webhooks`).

use axum::extract::State;
use utoipa::ToSchema;

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::json::Json;
use crate::shared::sign::tenant_secret;
use crate::state::AppState;

/// The secret webhooks of the caller's tenant are signed with.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct WebhookSecretBody {
    /// Verify `Clarify-Signature: t=<unix seconds>,v1=<hex>` as
    /// `hex(HMAC-SHA256(secret, "<t>." + raw body))`; reject stale `t`.
    pub secret: String,
}

/// The webhook signing secret of the caller's tenant (agents and admins).
#[utoipa::path(get, path = "/v1/webhook-secret", tag = "webhooks",
    responses(
        (status = 200, description = "The secret", body = WebhookSecretBody),
        (status = 403, description = "The key's role may not read it", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn webhook_secret(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<WebhookSecretBody>, ApiError> {
    caller.must_ask()?;
    Ok(Json(WebhookSecretBody {
        secret: tenant_secret(&state.secrets.webhook, caller.tenant()),
    }))
}
