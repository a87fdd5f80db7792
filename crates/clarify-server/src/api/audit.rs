//! `GET /v1/audit`: the caller tenant's events with their audit-chain hashes (admins): the
//! requests' events and the admin actions (keys created and revoked, grants revoked, ...).
//!
//! The chain is one per store and runs through every tenant's events; a tenant's admin sees its
//! own events and their hashes, and the whole chain is recomputed on the store with `clarify
//! audit verify`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use clarify_model::wire::time;
use clarify_store::AuditEvent;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::query;
use crate::shared::json::Json;
use crate::state::AppState;

const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1_000;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Events after this sequence number; default 0 (from the first).
    #[param(value_type = Option<u64>)]
    after: Option<String>,
    /// 1 to 1000; default 100.
    #[param(value_type = Option<usize>)]
    limit: Option<String>,
}

/// One event of the log with its place in the audit chain.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct AuditEventBody {
    /// The event's sequence number in the store's feed.
    pub seq: u64,
    /// A request's: `created`, `answered`, `skipped`, `expired`, `cancelled`, `voted`,
    /// `reminded`, `warned`, `extended` (its deadline moved, by `actor`), `refused` (an answer through a channel refused, nothing changed: `principal` names its sender) or `escalated`. An admin action's: `key.created`, `key.revoked`,
    /// `grant.revoked`, `grant.suggested_accepted` (a suggested grant accepted), `identity.linked`, `identity.unlinked`, `push.subscribed`,
    /// `push.unsubscribed`, `passkey.registered`, `passkey.removed` or
    /// `request.step_up_waived` (an admin key answered a high-risk request without a passkey
    /// confirmation). `purged` for an event retention emptied.
    pub kind: String,
    /// The request a request's event concerns.
    pub request_id: Option<String>,
    /// What an admin action acted on: `key:<key id>`, `grant:<grant id>`,
    /// `identity:<platform>:<user id>`, `push:<subscription id>`, `passkey:<passkey id>` or
    /// `request:<request id>`.
    pub subject: Option<String>,
    /// Who acted, if a person or key did.
    pub actor: Option<String>,
    /// Through what: `api`, `inbox`, `link`, `slack`, `system`, `policy` (a rule decided;
    /// `actor` is `policy:<rule name>`), ...
    pub channel: Option<String>,
    /// Who was authenticated: `key:<name>`, `oidc:<issuer>#<sub>`, `<platform>:<user id>` for a
    /// chat click, `personal_link:<name>`, `push:<subscription id>` for a tap on a Web Push
    /// notification; absent for the system, an anonymous link, or an event stored before
    /// principals were kept. Hashed into the chain when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// A key event's key (`key.created`, `key.revoked`): its name and role, so the event says
    /// which key it was without another lookup. Read from the key, not hashed (the chain hashes
    /// the key's id in `subject`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<AuditKeyBody>,
    pub at: String,
    /// Hex SHA-256 of the previous event's hash and this event's canonical JSON.
    pub hash: String,
}

impl From<&AuditEvent> for AuditEventBody {
    fn from(e: &AuditEvent) -> Self {
        Self {
            seq: e.seq,
            kind: e.kind.clone(),
            request_id: e.request_id.clone(),
            subject: e.subject.clone(),
            actor: e.actor.clone(),
            principal: e.principal.clone(),
            channel: e.channel.clone(),
            key: e.key.as_ref().map(|k| AuditKeyBody {
                name: k.name.clone(),
                role: k.role.as_str().to_owned(),
            }),
            at: time(e.at),
            hash: e.hash.clone(),
        }
    }
}

/// The key a key event concerns.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct AuditKeyBody {
    /// The key's name (recorded as `answered_by` when it answers).
    pub name: String,
    /// `agent`, `responder` or `admin`.
    pub role: String,
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct AuditPageBody {
    /// Oldest first.
    pub events: Vec<AuditEventBody>,
    /// Pass as `after` for the next page; `null` when this page is the last.
    pub next_after: Option<u64>,
}

/// The caller tenant's events with their audit-chain hashes, oldest first (admins).
#[utoipa::path(get, path = "/v1/audit", tag = "audit", params(AuditParams),
    responses(
        (status = 200, description = "A page of events", body = AuditPageBody),
        (status = 400, description = "after or limit is not a valid number", body = ErrorBody),
        (status = 401, description = "No or bad key", body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<AuditParams>, QueryRejection>,
) -> Result<Json<AuditPageBody>, ApiError> {
    caller.must_admin()?;
    let q = query(q)?;
    let after = match q.after.filter(|a| !a.is_empty()) {
        None => 0,
        Some(a) => a.parse::<u64>().map_err(|_| {
            ApiError::bad_request(
                "invalid_after",
                format!(
                    "after must be an event's sequence number, got {}",
                    clarify_core::quoted(&a)
                ),
            )
        })?,
    };
    let limit = match q.limit.filter(|l| !l.is_empty()) {
        None => DEFAULT_LIMIT,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_limit",
                    format!(
                        "limit must be a number from 1 to {MAX_LIMIT}, got {}",
                        clarify_core::quoted(&l)
                    ),
                )
            })?,
    };
    // What was written before this call is in the page (PostgreSQL numbers events just after
    // their commit).
    state.store.sync_feed().await?;
    let events = state
        .store
        .audit_events(Some(caller.tenant()), after, limit)
        .await?;
    let next_after = (events.len() == limit)
        .then(|| events.last().map(|e| e.seq))
        .flatten();
    Ok(Json(AuditPageBody {
        events: events.iter().map(AuditEventBody::from).collect(),
        next_after,
    }))
}
