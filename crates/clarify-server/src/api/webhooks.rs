//! Webhook deliveries: the outcome of a resolved request is POSTed to its `callback_url`, and so
//! are a pending request's reminders and escalation (`Clarify-Event: request.reminded` or
//! `request.escalated`, with the request's record as the body).
//!
//! The store queues a delivery in the same transaction that resolves the request (or writes the
//! reminder or escalation), so a crash cannot lose one. This worker claims due deliveries with a
//! lease (so instances sharing a store do not send the same delivery at once, and a delivery
//! whose worker died is retried when the lease runs out), POSTs the outcome, and records the
//! attempt. A non-2xx answer or a network error is retried with exponential backoff (10 s
//! doubling, at most an hour apart) until [`WebhookConfig::retry_for`] (25 hours) after the
//! resolution; then the delivery is `failed`. Delivery is at least once: receivers deduplicate
//! by the `Clarify-Delivery` header. The claim-send-wait loop (`drain`) and the backoff are
//! the channel worker's (`chat::worker`) and the Web Push worker's (`push`) too.
//!
//! A `callback_url` is an address the agent chose, so deliveries go through the outbound guard
//! (`shared::outbound`): an address it refuses, written in the URL or resolved from its name
//! when connecting, ends the delivery at once with the attempt recorded as `refused: address
//! not allowed (...)`, naming the rule and never anything of the target.
//!
//! A request that is an A2A task with a push configuration (given through `/a2a`) is delivered
//! in A2A's shape instead: the task as body (`application/a2a+json`), with the
//! configuration's `Authorization` and `X-A2A-Notification-Token`; a deleted configuration
//! ends the delivery unsent.
//!
//! Each POST is signed: `Clarify-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` over
//! `"<t>." + body`, with the tenant's webhook secret (`GET /v1/webhook-secret`).

use std::time::Instant;

use axum::Json;
use axum::extract::State;
use chrono::TimeDelta;
use clarify_store::{AfterAttempt, Attempt, Delivery};
use utoipa::ToSchema;

use crate::api::events::event_name;
use crate::middleware::auth::Caller;
use crate::shared::a2a::{self, PushConfig};
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::outbound::{OutboundGuard, Refusal};
use crate::shared::sign::{hex, mac};
use crate::shared::wire::{OutcomeBody, RecordBody};
use crate::state::{AppState, WebhookConfig};

/// The webhook secret of a tenant, derived from the server's webhook secret.
pub fn tenant_secret(state: &AppState, tenant: &str) -> String {
    let raw = mac(
        &state.secrets.webhook,
        format!("webhook:{tenant}").as_bytes(),
    );
    format!("whsec_{}", hex(&raw))
}

/// The secret webhooks of the caller's tenant are signed with.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct WebhookSecretBody {
    /// Verify `Clarify-Signature: t=<unix seconds>,v1=<hex>` as
    /// `hex(HMAC-SHA256(secret, "<t>." + raw body))`; reject stale `t`.
    pub secret: String,
}

/// The webhook signing secret of the caller's tenant (agents and admins).
#[utoipa::path(get, path = "/v1/webhook-secret", tag = "webhooks",
    responses(
        (status = 200, description = "The secret", body = WebhookSecretBody),
        (status = 403, description = "The key's role may not read it", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn webhook_secret(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<WebhookSecretBody>, ApiError> {
    caller.must_ask()?;
    Ok(Json(WebhookSecretBody {
        secret: tenant_secret(&state, caller.tenant()),
    }))
}

/// The `Clarify-Signature` header value for `body` sent at unix time `t`.
pub fn signature(secret: &str, t: i64, body: &[u8]) -> String {
    let mut message = format!("{t}.").into_bytes();
    message.extend_from_slice(body);
    format!("t={t},v1={}", hex(&mac(secret.as_bytes(), &message)))
}

/// The wait after `failures` failed attempts.
pub fn backoff(config: &WebhookConfig, failures: u32) -> TimeDelta {
    let exp = failures.saturating_sub(1).min(20);
    let wait = config.first_backoff * 2i32.pow(exp);
    wait.min(config.max_backoff)
}

/// Delivers webhooks until shutdown.
pub(crate) async fn run(state: AppState) {
    let Some(client) = outbound_client(&state, "webhooks are not delivered") else {
        return;
    };
    drain(&state, Outbox::Webhooks, async |d| {
        deliver(&state, &client, d).await
    })
    .await;
}

/// The client for addresses others chose (webhook receivers, push services): through the
/// outbound guard, with the webhooks' timeout; `None`, logged with `otherwise`, when it cannot
/// be built.
pub(crate) fn outbound_client(state: &AppState, otherwise: &str) -> Option<reqwest::Client> {
    match state.config.outbound.client(
        reqwest::Client::builder()
            .timeout(state.config.webhooks.timeout)
            .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION"))),
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::error!(error = %e, "cannot build an HTTP client; {otherwise}");
            None
        }
    }
}

/// What follows the failed attempt `number` of an outbox item created at `created_at`: a retry
/// after the backoff, or later when the other side asked to `wait`, unless that is past
/// [`WebhookConfig::retry_for`], when it is given up. Every outbox worker decides by this.
pub(crate) fn after_failure(
    state: &AppState,
    number: u32,
    created_at: chrono::DateTime<chrono::Utc>,
    wait: Option<std::time::Duration>,
) -> AfterAttempt {
    let now = state.store.now();
    let mut next = now + backoff(&state.config.webhooks, number);
    if let Some(wait) = wait.and_then(|w| TimeDelta::from_std(w).ok()) {
        next = next.max(now + wait);
    }
    if next > created_at + state.config.webhooks.retry_for {
        AfterAttempt::GiveUp
    } else {
        AfterAttempt::RetryAt(next)
    }
}

/// The outbox a worker drains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outbox {
    Webhooks,
    Channels,
    Push,
}

/// The HTTP client of the channel worker: the webhooks' timeout, no redirects followed (a
/// receiver's redirect is its error, not an address to send a signed body to). Channels'
/// addresses are the admin's own, so it is not guarded; webhooks use the outbound guard's.
pub(crate) fn client(state: &AppState, otherwise: &str) -> Option<reqwest::Client> {
    match reqwest::Client::builder()
        .timeout(state.config.webhooks.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::error!(error = %e, "cannot build an HTTP client; {otherwise}");
            None
        }
    }
}

/// Claims due items of `outbox` with a lease, `send`s each batch at once, and waits for more
/// (woken by this instance's writes that may have queued one, or polling for the reaper's and
/// other instances'), until shutdown.
pub(crate) async fn drain<F: Future<Output = ()>>(
    state: &AppState,
    outbox: Outbox,
    send: impl Fn(Delivery) -> F,
) {
    loop {
        // A claim outlives its send by a margin, so a worker that died mid-send holds the item
        // no longer than that before another worker (or this one restarted) retries.
        let lease = TimeDelta::from_std(state.config.webhooks.timeout).unwrap_or(TimeDelta::MAX)
            + TimeDelta::seconds(5);
        let lease_until = state.store.now() + lease;
        let claimed = match outbox {
            Outbox::Webhooks => state.store.claim_deliveries(lease_until, 16).await,
            Outbox::Channels => state.store.claim_notifications(lease_until, 16).await,
            Outbox::Push => state.store.claim_pushes(lease_until, 16).await,
        };
        match claimed {
            Ok(batch) if !batch.is_empty() => {
                futures_util::future::join_all(batch.into_iter().map(&send)).await;
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, ?outbox, "claiming from the outbox failed; retrying")
            }
        }
        let due = match outbox {
            Outbox::Webhooks => &state.webhooks_due,
            Outbox::Channels => &state.channels_due,
            Outbox::Push => &state.pushes_due,
        };
        tokio::select! {
            () = state.shutdown.cancelled() => return,
            () = due.notified() => {}
            () = tokio::time::sleep(state.config.webhooks.poll) => {}
        }
    }
}

async fn deliver(state: &AppState, client: &reqwest::Client, delivery: Delivery) {
    let number = u32::try_from(delivery.attempts.len())
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    let record = match state
        .store
        .get(&delivery.tenant, &delivery.request_id)
        .await
    {
        Ok(Some(r)) => r,
        Ok(None) => {
            // The request is gone (a memory store forgot it): nothing left to send.
            finish(
                state,
                &delivery,
                number,
                None,
                Some("the request no longer exists".to_owned()),
                0,
                AfterAttempt::GiveUp,
            )
            .await;
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, "reading a request for its webhook failed; retrying later");
            return;
        }
    };
    // A reminder or an escalation announces the pending request: its record, as on the event
    // stream. The resolution's delivery carries the outcome.
    let (event, body) = match delivery.event {
        Some(kind) => (kind, serde_json::to_vec(&RecordBody::new(&record, None))),
        None => {
            let Some(outcome) = record.outcome() else {
                return;
            };
            (
                clarify_store::EventKind::for_status(record.status),
                serde_json::to_vec(&OutcomeBody::from(&outcome)),
            )
        }
    };
    let push = match a2a_push(state, &record, &delivery).await {
        Ok(push) => push,
        Err(e) => {
            tracing::warn!(error = %e, "reading a task's A2A push configuration failed; retrying later");
            return;
        }
    };
    if push.as_ref().is_some_and(|p| p.deleted) {
        finish(
            state,
            &delivery,
            number,
            None,
            Some("the A2A push configuration was deleted".to_owned()),
            0,
            AfterAttempt::GiveUp,
        )
        .await;
        return;
    }
    let body = match &push {
        Some(push) => serde_json::to_vec(&push.body(&record)),
        None => body,
    };
    let Ok(body) = body else { return };
    let refused = match url::Url::parse(&delivery.url) {
        Ok(url) => state.config.outbound.check_literal(&url).err(),
        // Stored URLs were parsed when the request was created; reqwest names any other problem.
        Err(_) => None,
    };
    if let Some(refusal) = refused {
        refuse(state, &delivery, number, &refusal).await;
        return;
    }
    let now = state.store.now();
    let secret = tenant_secret(state, &delivery.tenant);
    let started = Instant::now();
    let mut post = client.post(&delivery.url);
    if let Some(push) = &push {
        for (name, value) in push.headers() {
            post = post.header(name, value);
        }
    }
    let content_type = if push.is_some() {
        "application/a2a+json"
    } else {
        "application/json"
    };
    let sent = post
        .header("content-type", content_type)
        .header("clarify-delivery", delivery.id.to_string())
        .header("clarify-event", event_name(event))
        .header(
            "clarify-signature",
            signature(&secret, now.timestamp(), &body),
        )
        .body(body)
        .send()
        .await;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if let Some(refusal) = sent.as_ref().err().and_then(OutboundGuard::refusal_of) {
        refuse(state, &delivery, number, &refusal).await;
        return;
    }
    let (status_code, error) = match &sent {
        Ok(r) if r.status().is_success() => (Some(r.status().as_u16()), None),
        Ok(r) => (
            Some(r.status().as_u16()),
            Some(format!("the receiver answered {}", r.status())),
        ),
        Err(e) => (None, Some(describe(e))),
    };
    let after = if error.is_none() {
        AfterAttempt::Delivered
    } else {
        state.metrics.webhook_failed();
        after_failure(state, number, delivery.created_at, None)
    };
    finish(
        state,
        &delivery,
        number,
        status_code,
        error,
        duration_ms,
        after,
    )
    .await;
}

/// The A2A push configuration `delivery` goes out under: the one kept for its request when the
/// request is an A2A task whose message gave this URL. Its deliveries carry the task in A2A's
/// shape, with the configuration's credentials, instead of a clarify webhook.
async fn a2a_push(
    state: &AppState,
    record: &clarify_store::RequestRecord,
    delivery: &Delivery,
) -> Result<Option<PushConfig>, clarify_store::StoreError> {
    let Some(bytes) = state.store.kept(&a2a::push_key(&record.id)).await? else {
        return Ok(None);
    };
    Ok(serde_json::from_slice::<PushConfig>(&bytes)
        .ok()
        .filter(|c| c.tenant == record.tenant && c.url == delivery.url))
}

/// Ends a delivery the outbound guard refused: recorded, never retried.
async fn refuse(state: &AppState, delivery: &Delivery, number: u32, refusal: &Refusal) {
    tracing::warn!(delivery = delivery.id, request = %delivery.request_id, %refusal,
        "a webhook's address is not allowed; allow it with [server] outbound_allow");
    state.metrics.webhook_failed();
    finish(
        state,
        delivery,
        number,
        None,
        Some(format!("refused: {refusal}")),
        0,
        AfterAttempt::GiveUp,
    )
    .await;
}

async fn finish(
    state: &AppState,
    delivery: &Delivery,
    number: u32,
    status_code: Option<u16>,
    error: Option<String>,
    duration_ms: u64,
    after: AfterAttempt,
) {
    let attempt = Attempt {
        number,
        at: state.store.now(),
        status_code,
        error,
        duration_ms,
    };
    if let Some(telemetry) = &state.telemetry {
        telemetry.attempted(delivery, &attempt);
    }
    if let Err(e) = state
        .store
        .finish_attempt(delivery.id, attempt, after)
        .await
    {
        // The lease runs out and the delivery is tried again: at least once.
        tracing::warn!(error = %e, delivery = delivery.id, "recording a webhook attempt failed");
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "the receiver did not answer in time".to_owned()
    } else if e.is_connect() {
        "could not connect to the receiver".to_owned()
    } else {
        format!("the request failed: {e}")
    }
}
