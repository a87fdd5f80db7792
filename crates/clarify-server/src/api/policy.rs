//! `POST /v1/policy/check`: what the server's `[[rules]]` would decide for a call, without
//! creating anything.
//!
//! The hooks and the gate ask it after their own policy file; every approval created by any
//! path is decided by the same rules in the store (`Store::create`), so what this route says is
//! what creating the approval would do. Open to the roles that ask (agent, admin).

use axum::extract::State;
use clarify_core::Action;
use clarify_core::rules::{Call, Decide, Matched};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::JsonBody;
use crate::shared::json::Json;
use crate::state::AppState;

/// The body of `POST /v1/policy/check`: the call as an approval would carry it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyCheckBody {
    /// The call: tool name and arguments.
    #[schema(value_type = Object)]
    pub action: Action,
    pub session: Option<String>,
    pub agent: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// The working directory the call is made in (`cwd` in a rule).
    pub cwd: Option<String>,
    /// The person the agent acts for.
    pub on_behalf_of: Option<String>,
}

/// What the rules decide.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct PolicyDecisionBody {
    /// `allow` or `deny` (an approval created for this call is resolved at once by the rule), or
    /// `ask` (a person is asked; with `rule` null when no rule matched).
    pub decision: String,
    /// The rule that matched, or null.
    pub rule: Option<String>,
    /// The rule's reason, or null.
    pub reason: Option<String>,
    /// What an `ask` rule sets on the request (responders, approvals_required, risk,
    /// timeout_seconds, on_timeout, tags); null otherwise.
    #[schema(value_type = Option<Object>)]
    pub ask: Option<Value>,
    /// Rules whose condition failed to evaluate on this call (and so did not match), each
    /// `{rule, error}`.
    #[schema(value_type = Vec<Object>)]
    pub errors: Vec<Value>,
}

impl PolicyDecisionBody {
    fn of(matched: Option<&Matched>, errors: Vec<Value>) -> Self {
        let ask = matched.filter(|m| m.decide == Decide::Ask).map(|m| {
            let a = &m.ask;
            let mut out = serde_json::Map::new();
            if let Some(r) = &a.responders {
                out.insert("responders".into(), Value::from(r.clone()));
            }
            if let Some(n) = a.approvals_required {
                out.insert("approvals_required".into(), Value::from(n));
            }
            if let Some(r) = &a.risk {
                out.insert("risk".into(), Value::from(r.as_str()));
            }
            if let Some(t) = a.timeout_seconds {
                out.insert("timeout_seconds".into(), Value::from(t));
            }
            if let Some(d) = &a.on_timeout {
                out.insert(
                    "on_timeout".into(),
                    serde_json::to_value(d).unwrap_or(Value::Null),
                );
            }
            if !a.tags.is_empty() {
                out.insert("tags".into(), Value::from(a.tags.clone()));
            }
            Value::Object(out)
        });
        Self {
            decision: matched.map_or("ask", |m| m.decide.as_str()).to_owned(),
            rule: matched.map(|m| m.name.clone()),
            reason: matched.and_then(|m| m.reason.clone()),
            ask,
            errors,
        }
    }
}

/// What the server's rules would decide for this call; nothing is created.
#[utoipa::path(post, path = "/v1/policy/check", tag = "policy", request_body = PolicyCheckBody,
    responses(
        (status = 200, description = "The decision", body = PolicyDecisionBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 403, description = "Role may not check the policy (responders)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "Not a call", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn check(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<PolicyCheckBody>,
) -> Result<Json<PolicyDecisionBody>, ApiError> {
    if !caller.key.role.may_ask() {
        return Err(ApiError::forbidden(
            "forbidden",
            format!(
                "{} cannot check the policy; use an agent key",
                crate::middleware::auth::a_key(caller.key.role)
            ),
        ));
    }
    if body.action.name.trim().is_empty() {
        return Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_action",
            "action.name: must not be empty",
        ));
    }
    let call = Call {
        tool: body.action.name,
        args: body.action.arguments,
        agent: body.agent,
        session: body.session.filter(|s| !s.is_empty()),
        tags: body.tags,
        cwd: body.cwd,
        on_behalf_of: body.on_behalf_of,
    };
    let Some(verdict) = state.store.check_rules(&call) else {
        return Ok(Json(PolicyDecisionBody::of(None, Vec::new())));
    };
    let errors = verdict
        .errors
        .iter()
        .map(|f| serde_json::json!({"rule": f.rule, "error": f.error}))
        .collect();
    Ok(Json(PolicyDecisionBody::of(
        verdict.matched.as_ref(),
        errors,
    )))
}
