//! `/v1/keys`: list, create and revoke the API keys of the caller's tenant (admins).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use clarify_model::wire::time;
use clarify_store::{ApiKey, Role};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::{Drained, JsonBody};
use crate::shared::json::Json;
use crate::state::AppState;

/// The keys of the caller's tenant (admins).
#[utoipa::path(get, path = "/v1/keys", tag = "keys",
    responses(
        (status = 200, description = "Keys, revoked ones included", body = Vec<KeyBody>),
        (status = 403, description = "Not an admin key", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_keys(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<KeyBody>>, ApiError> {
    caller.must_admin()?;
    let keys = state.store.keys().await?;
    Ok(Json(
        keys.iter()
            .filter(|k| k.tenant == caller.tenant())
            .map(KeyBody::from)
            .collect(),
    ))
}

/// The body of `POST /v1/keys`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewKeyBody {
    pub name: String,
    /// `agent`, `responder` or `admin`.
    pub role: String,
}

/// A new key: the only time its secret is shown.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct CreatedKeyBody {
    pub key: KeyBody,
    /// Send as `Authorization: Bearer <token>`.
    pub token: String,
}

/// Creates a key in the caller's tenant (admins).
#[utoipa::path(post, path = "/v1/keys", tag = "keys", request_body = NewKeyBody,
    responses(
        (status = 201, description = "Created", body = CreatedKeyBody),
        (status = 409, description = "An active key has this name", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create_key(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewKeyBody>,
) -> Result<Response, ApiError> {
    caller.must_admin()?;
    let role = Role::parse(&body.role).ok_or_else(|| {
        ApiError::bad_request(
            "invalid_role",
            format!(
                "unknown role {:?}; use agent, responder or admin",
                body.role
            ),
        )
    })?;
    let new = state
        .store
        .create_key(&body.name, role, caller.tenant(), &caller.actor())
        .await?;
    let body = CreatedKeyBody {
        key: KeyBody::from(&new.key),
        token: new.token,
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Revokes the active key `name` of the caller's tenant (admins).
#[utoipa::path(post, path = "/v1/keys/{name}/revoke", tag = "keys",
    params(("name" = String, Path, description = "Key name")),
    responses(
        (status = 200, description = "Revoked", body = KeyBody),
        (status = 404, description = "No active key has this name", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn revoke_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    _: Drained,
) -> Result<Json<KeyBody>, ApiError> {
    caller.must_admin()?;
    let in_tenant = state
        .store
        .keys()
        .await?
        .iter()
        .any(|k| k.name == name && k.revoked_at.is_none() && k.tenant == caller.tenant());
    if !in_tenant {
        return Err(clarify_store::KeyError::NotFound(name).into());
    }
    let key = state.store.revoke_key(&name, &caller.actor()).await?;
    state.keys.forget(&key.id);
    state.hub.keys_changed();
    Ok(Json(KeyBody::from(&key)))
}

/// An API key, without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyBody {
    pub id: String,
    pub name: String,
    /// `agent`, `responder` or `admin`.
    pub role: String,
    pub tenant: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

impl From<&ApiKey> for KeyBody {
    fn from(k: &ApiKey) -> Self {
        Self {
            id: k.id.clone(),
            name: k.name.clone(),
            role: k.role.as_str().to_owned(),
            tenant: k.tenant.clone(),
            created_at: time(k.created_at),
            revoked_at: k.revoked_at.map(time),
        }
    }
}
