//! `/v1/identities`: the chat accounts people linked to themselves in the caller's tenant
//! (admins): listed, and removed. `[identities]` in the configuration is not listed here; it
//! wins over a link.

use axum::extract::{Path, State};
use clarify_model::wire::time;
use clarify_store::LinkedIdentity;
use serde::Serialize;
use utoipa::ToSchema;

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::Drained;
use crate::shared::json::Json;
use crate::state::AppState;

/// A chat account linked to a person.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityBody {
    /// `<platform>:<user id>`, e.g. `slack:U012ABCDEF`.
    pub id: String,
    /// The responder name the account answers as.
    pub name: String,
    pub tenant: String,
    /// Who opened the link: `key:<name>` or `oidc:<issuer>#<sub>`.
    pub linked_by: Option<String>,
    pub linked_at: String,
}

impl From<&LinkedIdentity> for IdentityBody {
    fn from(link: &LinkedIdentity) -> Self {
        Self {
            id: link.id.clone(),
            name: link.name.clone(),
            tenant: link.tenant.clone(),
            linked_by: link.linked_by.clone(),
            linked_at: time(link.linked_at),
        }
    }
}

/// The linked chat accounts of the caller's tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentitiesBody {
    pub items: Vec<IdentityBody>,
}

/// The chat accounts people linked to themselves, in the caller's tenant (admins).
#[utoipa::path(get, path = "/v1/identities", tag = "identities",
    responses(
        (status = 200, description = "Linked chat accounts, by id", body = IdentitiesBody),
        (status = 403, description = "Not an admin key", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<IdentitiesBody>, ApiError> {
    caller.must_admin()?;
    let links = state.store.linked_identities(Some(caller.tenant())).await?;
    Ok(Json(IdentitiesBody {
        items: links.iter().map(IdentityBody::from).collect(),
    }))
}

/// Removes the link of chat account `id` (admins): its clicks answer as nobody again until it
/// is linked anew. Recorded in the audit chain as `identity.unlinked`.
#[utoipa::path(delete, path = "/v1/identities/{id}", tag = "identities",
    params(("id" = String, Path, description = "The account, `<platform>:<user id>`")),
    responses(
        (status = 200, description = "Removed; the link it was", body = IdentityBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
        (status = 404, description = "No such link in the caller's tenant", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    _: Drained,
) -> Result<Json<IdentityBody>, ApiError> {
    caller.must_admin()?;
    let removed = state
        .store
        .unlink_identity(&id, caller.tenant(), &caller.actor())
        .await?
        .ok_or_else(ApiError::not_found)?;
    tracing::info!(account = %removed.id, by = %caller.principal, "removed a linked chat account");
    Ok(Json(IdentityBody::from(&removed)))
}
