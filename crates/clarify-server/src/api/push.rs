//! Web Push (RFC 8030 delivery, RFC 8291 `aes128gcm` encryption, RFC 8292 VAPID): the routes a
//! browser subscribes through, and the worker that pushes new requests to it.
//!
//! `GET /v1/push/key` gives the VAPID public key (`applicationServerKey`); `POST
//! /v1/push/subscriptions` takes the browser's `PushSubscription` JSON for the person calling
//! (an inbox session or a responder's key), `GET` lists theirs and `DELETE
//! /v1/push/subscriptions/{id}` removes one of theirs (another's is `404`). An endpoint must be
//! `https` (plain `http` only to a loopback host, for tests; the outbound guard still decides
//! when sending), its keys a P-256 point and a 16-byte secret: any other is `422
//! invalid_subscription` naming the field. A person holds at most
//! [`MAX_SUBSCRIPTIONS_PER_PERSON`].
//!
//! The store queues a push per subscription whose person may answer a new request, in the
//! transaction that creates it, and one per reminder and escalation (channel
//! `push:<subscription id>`). This worker claims them with a lease (`webhooks::drain`), encrypts
//! the payload for the browser's keys (`web-push-native`), signs it (`state::push`), and POSTs it
//! through the outbound guard's client with `TTL` (the request's time left, at most a day) and
//! `Urgency: high`. `2xx` is delivered; `404` or `410` means the browser dropped the subscription,
//! which is removed (and its queued pushes end unsent); `429`, `5xx` and network errors are
//! retried with the webhooks' backoff, or later when `Retry-After` says so; other refusals end
//! the push `failed`. Resolutions are not pushed.
//!
//! The payload is JSON holding only `title` (the request's summary, cut), `id`, `url` (the
//! request in the inbox), `tag`, and `actions`: Approve and Deny for a one-question approval, or
//! the options of a one-question `single` of at most two, each with the `url` and JSON `body`
//! the service worker POSTs to answer through the person's push link (`answered_via` `push`);
//! none for a request that needs a passkey confirmation (`[decisions] step_up`), which the
//! notification only opens. Everything else is read over the signed-in session.

use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use clarify_core::QuestionKind;
use clarify_store::{
    AfterAttempt, Attempt, Delivery, EventKind, NewPushSubscription, PushSubscription,
    RequestRecord, push_subscription_of,
};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::api::webhooks::{Outbox, after_failure, drain, outbound_client};
use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::{Drained, JsonBody};
use crate::shared::outbound::OutboundGuard;
use crate::shared::wire::time;
use crate::state::AppState;

/// The most subscriptions (browsers) one person may hold; past it, `422
/// too_many_subscriptions` until one is removed.
pub const MAX_SUBSCRIPTIONS_PER_PERSON: usize = 20;
/// The longest endpoint accepted.
const MAX_ENDPOINT: usize = 2_048;
/// The longest title pushed, in characters; with the rest, the payload stays far below the
/// 4,096 bytes a push may carry.
const MAX_TITLE: usize = 160;
/// The longest option label on an action button.
const MAX_LABEL: usize = 40;
/// The most bytes of plaintext one `aes128gcm` record of 4,096 bytes holds (RFC 8291 §4).
const MAX_PAYLOAD: usize = 3_993;
/// How long a push service keeps a push for an offline browser, at most.
const MAX_TTL: i64 = 86_400;

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

fn decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(text)
        .or_else(|_| URL_SAFE.decode(text))
        .ok()
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

/// Sends Web Push notifications until shutdown.
pub(crate) async fn run(state: AppState) {
    let Some(client) = outbound_client(&state, "nothing is pushed") else {
        return;
    };
    drain(&state, Outbox::Push, async |n| {
        send(&state, &client, n).await
    })
    .await;
}

/// What became of one attempt.
struct Sent {
    status_code: Option<u16>,
    error: Option<String>,
    after: AfterAttempt,
}

impl Sent {
    fn done(why: Option<&str>) -> Self {
        Self {
            status_code: None,
            error: why.map(str::to_owned),
            after: AfterAttempt::Delivered,
        }
    }

    fn give_up(why: impl Into<String>) -> Self {
        Self {
            status_code: None,
            error: Some(why.into()),
            after: AfterAttempt::GiveUp,
        }
    }
}

async fn send(state: &AppState, client: &reqwest::Client, n: Delivery) {
    let number = u32::try_from(n.attempts.len())
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    let started = Instant::now();
    let Some(sent) = attempt(state, client, &n, number).await else {
        // A read failed: the lease runs out and the push is tried again.
        return;
    };
    if sent.after != AfterAttempt::Delivered
        && let Some(error) = &sent.error
    {
        tracing::warn!(push = n.id, channel = ?n.channel, %error, "a push did not go out");
    }
    let attempt = Attempt {
        number,
        at: state.store.now(),
        status_code: sent.status_code,
        error: sent.error,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    if let Some(telemetry) = &state.telemetry {
        telemetry.attempted(&n, &attempt);
    }
    if let Err(e) = state
        .store
        .finish_notification(n.id, attempt, sent.after, None)
        .await
    {
        tracing::warn!(error = %e, push = n.id, "recording a push attempt failed");
    }
}

/// Tries push `n`; `None` when the store could not be read (try again later).
async fn attempt(
    state: &AppState,
    client: &reqwest::Client,
    n: &Delivery,
    number: u32,
) -> Option<Sent> {
    let Some(id) = n.channel.as_deref().and_then(push_subscription_of) else {
        return Some(Sent::give_up("not a push"));
    };
    let subscription = match state.store.push_subscription(id).await {
        Ok(Some(s)) => s,
        Ok(None) => return Some(Sent::give_up("the subscription was removed")),
        Err(e) => {
            tracing::warn!(error = %e, "reading a push subscription failed");
            return None;
        }
    };
    let record = match state.store.get(&n.tenant, &n.request_id).await {
        Ok(Some(r)) => r,
        Ok(None) => return Some(Sent::give_up("the request no longer exists")),
        Err(e) => {
            tracing::warn!(error = %e, "reading a request for its push failed");
            return None;
        }
    };
    let event = n.event.unwrap_or(EventKind::Created);
    if !matches!(
        event,
        EventKind::Created | EventKind::Reminded | EventKind::Escalated
    ) {
        return Some(Sent::done(Some(
            "only new requests, reminders and escalations are pushed",
        )));
    }
    if record.status.is_resolved() {
        return Some(Sent::done(Some(
            "skipped: the request was already resolved",
        )));
    }
    let groups = state
        .store
        .groups_of(&subscription.person, &subscription.groups);
    if !record.allows_responder(&subscription.person, &groups) {
        return Some(Sent::done(Some(
            "skipped: the person may no longer answer it",
        )));
    }
    let Ok(endpoint) = url::Url::parse(&subscription.endpoint) else {
        return Some(Sent::give_up("the endpoint is not a URL"));
    };
    if let Err(refusal) = state.config.outbound.check_literal(&endpoint) {
        return Some(Sent::give_up(format!("refused: {refusal}")));
    }
    let payload = payload(state, &record, &subscription, event);
    let now = state.store.now();
    let request = match encrypt(state, &subscription, &endpoint, &record, &payload, now) {
        Ok(r) => r,
        Err(why) => return Some(Sent::give_up(why)),
    };
    let response = client.execute(request).await;
    if let Some(refusal) = response.as_ref().err().and_then(OutboundGuard::refusal_of) {
        return Some(Sent::give_up(format!("refused: {refusal}")));
    }
    let retry = |status_code: Option<u16>, error: String, wait: Option<Duration>| Sent {
        status_code,
        error: Some(error),
        after: after_failure(state, number, n.created_at, wait),
    };
    let response = match response {
        Ok(r) => r,
        Err(e) => return Some(retry(None, describe(&e), None)),
    };
    let status = response.status();
    let code = Some(status.as_u16());
    Some(match status.as_u16() {
        200..=299 => Sent {
            status_code: code,
            error: None,
            after: AfterAttempt::Delivered,
        },
        404 | 410 => {
            if let Err(e) = state.store.drop_push_subscription(&subscription.id).await {
                tracing::warn!(error = %e, "removing a push subscription the push service dropped failed");
                return None;
            }
            tracing::info!(subscription = %subscription.id, %status, "the push service dropped a subscription; removed it");
            Sent {
                status_code: code,
                error: Some(format!(
                    "the push service answered {status}: the subscription is gone, and was removed"
                )),
                after: AfterAttempt::GiveUp,
            }
        }
        429 | 500..=599 => {
            let wait = retry_after(response.headers(), now);
            retry(code, format!("the push service answered {status}"), wait)
        }
        _ => Sent {
            status_code: code,
            error: Some(format!("the push service refused it: {status}")),
            after: AfterAttempt::GiveUp,
        },
    })
}

/// The encrypted, signed POST of `payload` to the subscription's endpoint.
fn encrypt(
    state: &AppState,
    subscription: &PushSubscription,
    endpoint: &url::Url,
    record: &RequestRecord,
    payload: &[u8],
    now: DateTime<Utc>,
) -> Result<reqwest::Request, String> {
    let uri: http::Uri = endpoint
        .as_str()
        .parse()
        .map_err(|_| "the endpoint is not a URI".to_owned())?;
    let public = decode(&subscription.p256dh)
        .and_then(|bytes| p256::PublicKey::from_sec1_bytes(&bytes).ok())
        .ok_or("the subscription's p256dh is not a P-256 key")?;
    let auth = decode(&subscription.auth)
        .filter(|a| a.len() == 16)
        .ok_or("the subscription's auth is not 16 bytes")?;
    let ttl = record
        .expires_at
        .map_or(MAX_TTL, |at| (at - now).num_seconds().clamp(0, MAX_TTL));
    let built = web_push_native::WebPushBuilder::new(
        uri,
        public,
        web_push_native::Auth::clone_from_slice(&auth),
    )
    .with_valid_duration(Duration::from_secs(ttl.unsigned_abs()))
    .build(payload.to_vec())
    .map_err(|e| format!("encrypting the push failed: {e}"))?;
    let authorization = state
        .vapid
        .authorization(endpoint, now)
        .map_err(|e| format!("signing the push failed: {e}"))?;
    let mut request =
        reqwest::Request::try_from(built).map_err(|e| format!("the push is not sendable: {e}"))?;
    let headers = request.headers_mut();
    for (name, value) in [
        ("authorization", authorization.as_str()),
        ("urgency", "high"),
    ] {
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("the {name} header is not sendable"))?;
        headers.insert(name, value);
    }
    Ok(request)
}

/// The push's JSON: the title, the request, where it is in the inbox, and the actions that
/// answer it through the person's push link (none when the request needs a passkey
/// confirmation). Nothing else of the request travels.
fn payload(
    state: &AppState,
    record: &RequestRecord,
    subscription: &PushSubscription,
    event: EventKind,
) -> Vec<u8> {
    let request = &record.request;
    let summary = if request.summary.is_empty() {
        request
            .questions
            .first()
            .map(|q| q.text.clone())
            .unwrap_or_default()
    } else {
        request.summary.clone()
    };
    let title = match event {
        EventKind::Reminded => format!("Reminder: {summary}"),
        EventKind::Escalated => format!("Escalated: {summary}"),
        _ => summary,
    };
    let link = state.push_url(&record.id, &subscription.person, &subscription.id);
    let action = |action: String, title: &str, body: Value| json!({"action": action, "title": title, "url": link, "body": body});
    let mut actions = Vec::new();
    // A request that needs a passkey confirmation is answered only in clarify: the notification
    // opens it there.
    let step_up = state.store.needs_step_up(request);
    if let ([q], false) = (request.questions.as_slice(), step_up) {
        match &q.kind {
            QuestionKind::Approval(_) => {
                actions.push(action(
                    "approve".to_owned(),
                    "Approve",
                    json!({"decision": "approve"}),
                ));
                actions.push(action(
                    "deny".to_owned(),
                    "Deny",
                    json!({"decision": "deny"}),
                ));
            }
            QuestionKind::Single(c) if c.options.len() <= 2 => {
                for o in &c.options {
                    actions.push(action(
                        format!("option:{}", o.id),
                        &clarify_channels::cut(&o.label, MAX_LABEL),
                        json!({"option": o.id}),
                    ));
                }
            }
            _ => {}
        }
    }
    let mut body = json!({
        "title": clarify_channels::cut(&title, MAX_TITLE),
        "id": record.id,
        "url": format!("{}/#/requests/{}", state.config.public_url, record.id),
        "tag": format!("clarify-{}", record.id),
        "actions": actions,
    });
    let mut bytes = serde_json::to_vec(&body).unwrap_or_default();
    if bytes.len() > MAX_PAYLOAD {
        // Long option ids only: the taps are left to the inbox.
        body["actions"] = json!([]);
        bytes = serde_json::to_vec(&body).unwrap_or_default();
    }
    bytes
}

/// `Retry-After` as seconds or an HTTP date, at most an hour ahead.
fn retry_after(headers: &reqwest::header::HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let text = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    let seconds = match text.parse::<u64>() {
        Ok(s) => s,
        Err(_) => {
            let at = DateTime::parse_from_rfc2822(text).ok()?;
            u64::try_from((at.with_timezone(&Utc) - now).num_seconds()).unwrap_or(0)
        }
    };
    Some(Duration::from_secs(seconds.min(3_600)))
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "the push service did not answer in time".to_owned()
    } else if e.is_connect() {
        "could not connect to the push service".to_owned()
    } else {
        format!("the push failed: {e}")
    }
}
