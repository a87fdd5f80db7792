//! Receipts: the public keys they are signed with (`GET /.well-known/jwks.json`) and spending one
//! (`POST /v1/receipts/spend`), for an executor that must run an approved action at most once.
//! Each resolved request carries its receipt (`receipt` on the record and the outcome);
//! `state::receipts` signs them.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::JsonBody;
use crate::shared::json::Json;
use crate::state::AppState;

/// The published keys (RFC 7517): Ed25519 public keys (`kty` `OKP`, `crv` `Ed25519`, `x`),
/// each with its `kid`; the one that signs now and every retired one still in its window.
#[derive(Debug, Serialize, ToSchema)]
pub struct JwksBody {
    #[schema(value_type = Vec<Object>)]
    pub keys: Vec<Value>,
}

/// The receipts' public keys. No key needed: verifying is done offline, by anyone.
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "receipts",
    responses((status = 200, description = "The key set", body = JwksBody)))]
pub async fn jwks(State(state): State<AppState>) -> Response {
    let keys = state
        .receipts
        .jwks()
        .keys
        .iter()
        .filter_map(|k| serde_json::to_value(k).ok())
        .collect();
    let mut response = Json(JwksBody { keys }).into_response();
    // Short enough that a rotation reaches verifiers soon; a verifier that meets an unknown
    // `kid` fetches the set again anyway.
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}

/// `POST /v1/receipts/spend`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SpendBody {
    /// The receipt, as the record or outcome carries it.
    pub receipt: String,
}

/// A receipt spent now.
#[derive(Debug, Serialize, ToSchema)]
pub struct SpentBody {
    /// The receipt's `jti`.
    pub jti: String,
    /// The request it decides.
    pub request_id: String,
    /// `answered`, `skipped`, `expired` or `cancelled`: what was decided (check the action and
    /// its arguments offline, or with `clarify receipts verify`).
    pub status: String,
}

/// Spends a receipt: `200` the first time on any instance, `409 receipt_spent` after. For an
/// executor that must run an approved action at most once: spend, then act. Any key of the
/// receipt's tenant may spend it.
#[utoipa::path(post, path = "/v1/receipts/spend", tag = "receipts",
    request_body = SpendBody,
    responses(
        (status = 200, description = "Spent now", body = SpentBody),
        (status = 400, description = "`receipt_invalid`: not a receipt of this server and tenant, or its signature does not match", body = ErrorBody),
        (status = 409, description = "`receipt_spent`: spent before", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn spend(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<SpendBody>,
) -> Result<Json<SpentBody>, ApiError> {
    let invalid = |why: String| ApiError::bad_request("receipt_invalid", why);
    let claims = state
        .receipts
        .verify(&body.receipt)
        .map_err(|e| invalid(e.to_string()))?;
    if claims.tid != caller.tenant() {
        return Err(invalid(
            "the receipt belongs to another tenant than this key's".to_owned(),
        ));
    }
    let spent = state
        .store
        .spend_receipt(caller.tenant(), &claims.jti, &claims.sub, &caller.actor())
        .await?;
    if !spent {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "receipt_spent",
            format!("receipt {} was spent before", claims.jti),
        ));
    }
    tracing::info!(jti = %claims.jti, request = %claims.sub, principal = %caller.principal, "receipt spent");
    Ok(Json(SpentBody {
        jti: claims.jti,
        request_id: claims.sub,
        status: claims.status,
    }))
}
