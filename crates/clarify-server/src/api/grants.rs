//! The `/v1/grants` routes: list, check and revoke the grants that `session` and `always`
//! approvals gave.
//!
//! No route creates a grant: the store records one in the transaction that records the answer
//! giving it. Listing is open to every role of the tenant, checking to the roles that ask
//! (agent, admin), revoking to the roles that answer (responder, admin).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use clarify_core::Action;
use clarify_model::wire::time;
use clarify_store::StoredGrant;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::{Drained, JsonBody, query};
use crate::shared::json::Json;
use crate::state::AppState;

/// A grant: a human approved `tool` with `arguments` for `session` (scope `session`) or for the
/// whole tenant (scope `always`), so an identical call runs without asking again.
#[derive(Debug, Clone, serde::Serialize, ToSchema)]
pub struct GrantBody {
    pub id: String,
    /// The tool name, lowercased.
    pub tool: String,
    /// The arguments approved (with the human's edits).
    pub arguments: Value,
    /// `session` or `always`.
    pub scope: String,
    /// The session of a `session` grant; `null` for `always`.
    pub session: Option<String>,
    /// The approval request whose answer gave it.
    pub request_id: Option<String>,
    /// Who answered.
    pub granted_by: Option<String>,
    pub created_at: String,
    /// When it stops matching (`grant_ttl_seconds` after it was given); null never.
    pub expires_at: Option<String>,
    /// How many calls it lets through (`grant_max_uses`); null any number.
    pub max_uses: Option<u32>,
    /// How many calls it let through so far (counted by `POST /v1/grants/check`).
    pub uses: u32,
}

impl From<&StoredGrant> for GrantBody {
    fn from(g: &StoredGrant) -> Self {
        Self {
            id: g.id.clone(),
            tool: g.grant.tool.clone(),
            arguments: serde_json::from_str(&g.grant.arguments).unwrap_or(Value::Null),
            scope: g.grant.scope.as_str().to_owned(),
            session: g.grant.session.clone(),
            request_id: g.request_id.clone(),
            granted_by: g.granted_by.clone(),
            created_at: time(g.created_at),
            expires_at: g.expires_at.map(time),
            max_uses: g.max_uses,
            uses: g.uses,
        }
    }
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct GrantsBody {
    /// Oldest first.
    pub grants: Vec<GrantBody>,
}

/// The body of `POST /v1/grants/check`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckBody {
    /// The call: tool name and arguments.
    #[schema(value_type = Object)]
    pub action: Action,
    /// The session the call is made in; without one only `always` grants count.
    pub session: Option<String>,
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct CheckResultBody {
    /// Whether a grant lets the call run without asking.
    pub granted: bool,
    /// That grant (an `always` one before a `session` one), or `null`.
    pub grant: Option<GrantBody>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListGrantsParams {
    /// Only the `session` grants of this session.
    session: Option<String>,
}

/// The caller tenant's grants, oldest first.
#[utoipa::path(get, path = "/v1/grants", tag = "grants", params(ListGrantsParams),
    responses(
        (status = 200, description = "The grants", body = GrantsBody),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "No or bad key", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<ListGrantsParams>, QueryRejection>,
) -> Result<Json<GrantsBody>, ApiError> {
    let q = query(q)?;
    let session = q.session.filter(|s| !s.is_empty());
    let grants = state
        .store
        .list_grants(caller.tenant(), session.as_deref())
        .await?;
    Ok(Json(GrantsBody {
        grants: grants.iter().map(GrantBody::from).collect(),
    }))
}

/// Whether a grant lets this call run without asking a human. A grant found counts a use: past
/// its `max_uses` or its `expires_at` it no longer matches.
#[utoipa::path(post, path = "/v1/grants/check", tag = "grants", request_body = CheckBody,
    responses(
        (status = 200, description = "Granted or not", body = CheckResultBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 403, description = "Role may not check grants (responders)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "Not an action", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn check(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CheckBody>,
) -> Result<Json<CheckResultBody>, ApiError> {
    if !caller.key.role.may_ask() {
        return Err(ApiError::forbidden(
            "forbidden",
            format!(
                "{} cannot check grants; use an agent key",
                crate::middleware::auth::a_key(caller.key.role)
            ),
        ));
    }
    let session = body.session.filter(|s| !s.is_empty());
    let grant = state
        .store
        .check_grant(caller.tenant(), &body.action, session.as_deref())
        .await?;
    Ok(Json(CheckResultBody {
        granted: grant.is_some(),
        grant: grant.as_ref().map(GrantBody::from),
    }))
}

/// Revokes a grant: the next identical call asks a human again.
#[utoipa::path(delete, path = "/v1/grants/{id}", tag = "grants",
    params(("id" = String, Path, description = "Grant id")),
    responses(
        (status = 200, description = "Revoked; the grant as it was", body = GrantBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 403, description = "Role may not revoke grants (agents)", body = ErrorBody),
        (status = 404, description = "No such grant in the caller's tenant", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    _: Drained,
) -> Result<Json<GrantBody>, ApiError> {
    if !caller.key.role.may_answer() {
        return Err(ApiError::forbidden(
            "forbidden",
            format!(
                "{} cannot revoke grants; use a responder key",
                crate::middleware::auth::a_key(caller.key.role)
            ),
        ));
    }
    let grant = state
        .store
        .revoke_grant(caller.tenant(), &id, &caller.actor())
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(GrantBody::from(&grant)))
}
