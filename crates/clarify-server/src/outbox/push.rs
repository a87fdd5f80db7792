//! The Web Push worker (RFC 8030 delivery, RFC 8291 `aes128gcm` encryption, RFC 8292 VAPID):
//! pushes new requests, reminders and escalations to the browsers people subscribed
//! (`api::push`).
//!
//! The store queues a push per subscription whose person may answer a new request, in the
//! transaction that creates it, and one per reminder and escalation (channel
//! `push:<subscription id>`). This worker claims them through the outbox loop ([`drain`]),
//! encrypts the payload for the browser's keys (`web-push-native`), signs it (`state::push`),
//! and POSTs it through the outbound guard's client with `TTL` (the request's time left, at most
//! a day) and `Urgency: high`. `2xx` is delivered; `404` or `410` means the browser dropped the
//! subscription, which is removed (and its queued pushes end unsent); `429`, `5xx` and network
//! errors are retried with the webhooks' backoff, or later when `Retry-After` says so; other
//! refusals end the push `failed`. Resolutions are not pushed.
//!
//! The payload is JSON holding only `title` (the request's summary, cut), `id`, `url` (the
//! request in the inbox), `tag`, and `actions`: Approve and Deny for a one-question approval, or
//! the options of a one-question `single` of at most two, each with the `url` and JSON `body`
//! the service worker POSTs to answer through the person's push link (`answered_via` `push`);
//! none for a request that needs a passkey confirmation (`[decisions] step_up`), which the
//! notification only opens. Everything else is read over the signed-in session.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use clarify_channels::RetryAfter;
use clarify_core::QuestionKind;
use clarify_core::text::cut;
use clarify_store::{
    AfterAttempt, Attempt, Delivery, EventKind, PushSubscription, RequestRecord,
    push_subscription_of,
};
use serde_json::{Value, json};

use crate::outbox::{Outbox, after_failure, attempt_number, describe, drain, outbound_client};
use crate::shared::outbound::OutboundGuard;
use crate::shared::sign::base64url as decode;
use crate::state::AppState;

/// The longest title pushed, in characters; with the rest, the payload stays far below the
/// 4,096 bytes a push may carry.
const MAX_TITLE: usize = 160;
/// The longest option label on an action button.
const MAX_LABEL: usize = 40;
/// The most bytes of plaintext one `aes128gcm` record of 4,096 bytes holds (RFC 8291 §4).
const MAX_PAYLOAD: usize = 3_993;
/// How long a push service keeps a push for an offline browser, at most.
const MAX_TTL: i64 = 86_400;

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
    let number = attempt_number(&n);
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
        EventKind::Created | EventKind::Reminded | EventKind::Warned | EventKind::Escalated
    ) {
        return Some(Sent::done(Some(
            "only new requests, reminders, warnings before expiry and escalations are pushed",
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
        Err(e) => {
            let error = describe(&e, "the push service", "the push");
            return Some(retry(None, error, None));
        }
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
            let wait = RetryAfter::read(response.headers()).map(|r| r.wait(now));
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
        EventKind::Warned => format!("Expires soon: {summary}"),
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
                        &cut(&o.label, MAX_LABEL),
                        json!({"option": o.id}),
                    ));
                }
            }
            _ => {}
        }
    }
    let mut body = json!({
        "title": cut(&title, MAX_TITLE),
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
