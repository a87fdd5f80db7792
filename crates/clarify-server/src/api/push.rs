//! Web Push subscriptions (RFC 8030, RFC 8291, RFC 8292): the routes a browser subscribes
//! through. The worker that pushes to them is the outbox's (`outbox::push`).
//!
//! `GET /v1/push/key` gives the VAPID public key (`applicationServerKey`); `POST
//! /v1/push/subscriptions` takes the browser's `PushSubscription` JSON for the person calling
//! (an inbox session or a responder's key), `GET` lists theirs and `DELETE
//! /v1/push/subscriptions/{id}` removes one of theirs (another's is `404`). An endpoint must be
//! `https` (plain `http` only to a loopback host, for tests; the outbound guard still decides
//! when sending), its keys a P-256 point and a 16-byte secret: any other is `422
//! invalid_subscription` naming the field. A person holds at most
//! [`MAX_SUBSCRIPTIONS_PER_PERSON`].

use axum::extract::{Path, State};
use axum::http::StatusCode;
use clarify_model::wire::time;
use clarify_store::{NewPushSubscription, PushSubscription};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::{Drained, JsonBody};
use crate::shared::json::Json;
use crate::shared::sign::base64url as decode;
use crate::state::AppState;

/// The most subscriptions (browsers) one person may hold; past it, `422
/// too_many_subscriptions` until one is removed.
pub const MAX_SUBSCRIPTIONS_PER_PERSON: usize = 20;
/// The longest endpoint accepted.
const MAX_ENDPOINT: usize = 2_048;

/// The key browsers subscribe with.
#[derive(Debug, Serialize, ToSchema)]
pub struct PushKeyBody {
    /// The VAPID public key (an uncompressed P-256 point, URL-safe base64): pass it as
    /// `applicationServerKey` to `pushManager.subscribe`.
    pub key: String,
}

/// A browser subscribed to Web Push for the person who made it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionBody {
    pub id: String,
    /// The responder name it notifies.
    pub person: String,
    pub endpoint: String,
    pub created_at: String,
}

impl From<&PushSubscription> for SubscriptionBody {
    fn from(s: &PushSubscription) -> Self {
        Self {
            id: s.id.clone(),
            person: s.person.clone(),
            endpoint: s.endpoint.clone(),
            created_at: time(s.created_at),
        }
    }
}

/// The caller's subscriptions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionsBody {
    pub items: Vec<SubscriptionBody>,
}

/// What a browser's `PushSubscription.toJSON()` gives.
#[derive(Debug, serde::Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct SubscribeBody {
    /// The push service's URL for this browser: `https`.
    pub endpoint: String,
    /// Milliseconds since the epoch, or `null`; not used.
    #[serde(rename = "expirationTime")]
    pub expiration_time: Option<f64>,
    pub keys: SubscribeKeys,
}

/// The browser's keys, URL-safe base64.
#[derive(Debug, serde::Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct SubscribeKeys {
    /// Its P-256 public key, an uncompressed point (65 bytes).
    pub p256dh: String,
    /// Its authentication secret (16 bytes).
    pub auth: String,
}

/// The public key browsers subscribe with (any key or session).
#[utoipa::path(get, path = "/v1/push/key", tag = "push",
    responses((status = 200, description = "The VAPID public key", body = PushKeyBody)),
    security(("bearer" = [])))]
pub async fn key(State(state): State<AppState>, _caller: Caller) -> Json<PushKeyBody> {
    Json(PushKeyBody {
        key: state.vapid.key.public_key().to_owned(),
    })
}

/// Subscribes the browser for the caller (a person: an inbox session or a responder key): each
/// new request they may answer is pushed to it. The same endpoint again replaces its earlier
/// subscription. Recorded in the audit chain as `push.subscribed`.
#[utoipa::path(post, path = "/v1/push/subscriptions", tag = "push",
    request_body(content = SubscribeBody, description = "The browser's `PushSubscription` JSON"),
    responses(
        (status = 201, description = "Subscribed", body = SubscriptionBody),
        (status = 403, description = "The key's role may not answer requests", body = ErrorBody),
        (status = 422, description = "An endpoint that is not `https` or keys that do not decode (`invalid_subscription`, naming the field), or too many subscriptions (`too_many_subscriptions`)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn subscribe(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(raw): JsonBody<Value>,
) -> Result<(StatusCode, Json<SubscriptionBody>), ApiError> {
    caller.must_answer()?;
    let new = read_subscription(&raw)?;
    let actor = caller.actor();
    let person = actor.name.clone().unwrap_or_default();
    let theirs = state
        .store
        .push_subscriptions(caller.tenant())
        .await?
        .into_iter()
        .filter(|s| s.person == person && s.endpoint != new.endpoint)
        .count();
    if theirs >= MAX_SUBSCRIPTIONS_PER_PERSON {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "too_many_subscriptions",
            format!(
                "{person} has {theirs} browsers subscribed, the most there may be; remove one first (DELETE /v1/push/subscriptions/{{id}})"
            ),
        ));
    }
    let made = state
        .store
        .subscribe_push(caller.tenant(), &actor, new)
        .await?;
    tracing::info!(subscription = %made.id, by = %caller.principal, "a browser subscribed to Web Push");
    Ok((StatusCode::CREATED, Json(SubscriptionBody::from(&made))))
}

/// The caller's own subscriptions, oldest first.
#[utoipa::path(get, path = "/v1/push/subscriptions", tag = "push",
    responses(
        (status = 200, description = "The caller's subscriptions", body = SubscriptionsBody),
        (status = 403, description = "The key's role may not answer requests", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<SubscriptionsBody>, ApiError> {
    caller.must_answer()?;
    let person = caller.actor().name.unwrap_or_default();
    let items = state
        .store
        .push_subscriptions(caller.tenant())
        .await?
        .iter()
        .filter(|s| s.person == person)
        .map(SubscriptionBody::from)
        .collect();
    Ok(Json(SubscriptionsBody { items }))
}

/// Removes one of the caller's subscriptions: nothing more is pushed to that browser, and the
/// links already pushed to it stop answering. Recorded as `push.unsubscribed`.
#[utoipa::path(delete, path = "/v1/push/subscriptions/{id}", tag = "push",
    params(("id" = String, Path, description = "The subscription's id")),
    responses(
        (status = 200, description = "Removed; the subscription it was", body = SubscriptionBody),
        (status = 403, description = "The key's role may not answer requests", body = ErrorBody),
        (status = 404, description = "None of the caller's has this id", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn unsubscribe(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    _: Drained,
) -> Result<Json<SubscriptionBody>, ApiError> {
    caller.must_answer()?;
    let removed = state
        .store
        .unsubscribe_push(caller.tenant(), &id, &caller.actor())
        .await?
        .ok_or_else(ApiError::not_found)?;
    tracing::info!(subscription = %removed.id, by = %caller.principal, "a browser unsubscribed from Web Push");
    Ok(Json(SubscriptionBody::from(&removed)))
}

fn invalid(field: &str, what: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_subscription",
        format!("{field}: {what}"),
    )
}

/// A browser's `PushSubscription` JSON, checked: an `https` endpoint (or `http` to a loopback
/// host), a P-256 public key and a 16-byte secret.
fn read_subscription(raw: &Value) -> Result<NewPushSubscription, ApiError> {
    let Some(body) = raw.as_object() else {
        return Err(invalid("body", "must be a PushSubscription's JSON object"));
    };
    let text = |field: &str, v: Option<&Value>| -> Result<String, ApiError> {
        match v {
            Some(Value::String(s)) => Ok(s.clone()),
            None | Some(Value::Null) => Err(invalid(field, "is required")),
            Some(_) => Err(invalid(field, "must be a string")),
        }
    };
    let endpoint = text("endpoint", body.get("endpoint"))?;
    check_endpoint(&endpoint)?;
    let keys = match body.get("keys") {
        Some(Value::Object(keys)) => keys,
        None | Some(Value::Null) => return Err(invalid("keys", "is required")),
        Some(_) => return Err(invalid("keys", "must be an object with p256dh and auth")),
    };
    let p256dh = text("keys.p256dh", keys.get("p256dh"))?;
    let point = decode(&p256dh).ok_or_else(|| invalid("keys.p256dh", "is not URL-safe base64"))?;
    if point.len() != 65 || point.first() != Some(&4) {
        return Err(invalid(
            "keys.p256dh",
            format!(
                "must be an uncompressed P-256 point of 65 bytes, got {} bytes",
                point.len()
            ),
        ));
    }
    if p256::PublicKey::from_sec1_bytes(&point).is_err() {
        return Err(invalid("keys.p256dh", "is not a point on the P-256 curve"));
    }
    let auth = text("keys.auth", keys.get("auth"))?;
    let secret = decode(&auth).ok_or_else(|| invalid("keys.auth", "is not URL-safe base64"))?;
    if secret.len() != 16 {
        return Err(invalid(
            "keys.auth",
            format!("must be 16 bytes, got {}", secret.len()),
        ));
    }
    Ok(NewPushSubscription {
        endpoint,
        p256dh,
        auth,
    })
}

fn check_endpoint(endpoint: &str) -> Result<(), ApiError> {
    if endpoint.len() > MAX_ENDPOINT {
        return Err(invalid(
            "endpoint",
            format!(
                "is {} bytes long, more than the {MAX_ENDPOINT} allowed",
                endpoint.len()
            ),
        ));
    }
    let Ok(url) = url::Url::parse(endpoint) else {
        return Err(invalid("endpoint", "is not a URL"));
    };
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" if url.has_host() => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(invalid(
            "endpoint",
            format!(
                "must be an https URL, as a browser's push service gives; got {}",
                clarify_core::quoted(endpoint)
            ),
        )),
    }
}
