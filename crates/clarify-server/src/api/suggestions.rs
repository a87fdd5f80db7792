//! `/v1/suggestions`: actions people keep approving `once`, offered as standing `always`
//! grants, made only when a person accepts one.
//!
//! Reading and accepting are open to the roles that answer (responder, admin): the inbox shows
//! the suggestions and a person's click accepts one, recorded as a grant in their name with a
//! `grant.suggested_accepted` event.

use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::grants::GrantBody;
use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::JsonBody;
use crate::shared::json::Json;
use crate::state::AppState;

/// An action offered as an `always` grant.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct SuggestionBody {
    /// The tool, as it was called.
    pub tool: String,
    /// The arguments it ran with.
    pub arguments: Value,
    /// How many times a person approved it `once` in the window.
    pub approvals: usize,
    /// The latest of those requests: accept the suggestion by naming it.
    pub request_id: String,
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct SuggestionsBody {
    /// Most approved first.
    pub suggestions: Vec<SuggestionBody>,
    /// How many `once` approvals make a suggestion.
    pub after_approvals: usize,
    /// Within how many days.
    pub within_days: i64,
}

/// The body of `POST /v1/suggestions/accept`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptBody {
    /// A request whose `once` approval is part of the suggestion.
    pub request_id: String,
}

/// The actions people of the caller's tenant keep approving `once`.
#[utoipa::path(get, path = "/v1/suggestions", tag = "grants",
    responses(
        (status = 200, description = "The suggestions", body = SuggestionsBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 403, description = "Role may not answer (agents)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<SuggestionsBody>, ApiError> {
    caller.must_answer()?;
    let settings = state.config.suggest;
    let suggestions = state.store.suggestions(caller.tenant(), settings).await?;
    Ok(Json(SuggestionsBody {
        suggestions: suggestions
            .into_iter()
            .map(|s| SuggestionBody {
                tool: s.action.name,
                arguments: s.action.arguments,
                approvals: s.approvals,
                request_id: s.request_id,
            })
            .collect(),
        after_approvals: settings.approvals,
        within_days: settings.within.num_days(),
    }))
}

/// Accepts a suggestion: an `always` grant of its action in the caller's name.
#[utoipa::path(post, path = "/v1/suggestions/accept", tag = "grants", request_body = AcceptBody,
    responses(
        (status = 200, description = "The grant made", body = GrantBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 403, description = "Role may not answer (agents)", body = ErrorBody),
        (status = 409, description = "That action is not suggested (`not_suggested`): not approved often enough, or already always allowed", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "Not a request id", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn accept(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<AcceptBody>,
) -> Result<Json<GrantBody>, ApiError> {
    caller.must_answer()?;
    let grant = state
        .store
        .accept_suggestion(
            caller.tenant(),
            &body.request_id,
            state.config.suggest,
            &caller.actor(),
        )
        .await?
        .ok_or_else(|| {
            ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "not_suggested",
                "that action is not suggested: it was not approved once often enough lately, \
                 or it is always allowed already",
            )
        })?;
    Ok(Json(GrantBody::from(&grant)))
}
