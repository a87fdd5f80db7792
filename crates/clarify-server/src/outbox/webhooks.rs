//! The webhook worker: the outcome of a resolved request is POSTed to its `callback_url`, and so
//! are a pending request's reminders and escalation (`Clarify-Event: request.reminded` or
//! `request.escalated`, with the request's record as the body).
//!
//! The store queues a delivery in the same transaction that resolves the request (or writes the
//! reminder or escalation), so a crash cannot lose one. This worker claims due deliveries through
//! the outbox loop ([`drain`]), POSTs the outcome, and records the attempt. A non-2xx answer or a
//! network error is retried with exponential backoff (10 s doubling, at most an hour apart) until
//! [`WebhookConfig::retry_for`](crate::state::WebhookConfig::retry_for) (25 hours) after the
//! resolution; then the delivery is `failed`. Delivery is at least once: receivers deduplicate
//! by the `Clarify-Delivery` header.
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
//! `"<t>." + body`, with the tenant's webhook secret (`GET /v1/webhook-secret`,
//! [`tenant_secret`]).

use std::time::Instant;

use clarify_channels::RetryAfter;
use clarify_model::wire::{OutcomeBody, RecordBody, event_name};
use clarify_store::{AfterAttempt, Attempt, Delivery};

use crate::outbox::{Outbox, after_failure, attempt_number, describe, drain, outbound_client};
use crate::shared::a2a::{self, PushConfig};
use crate::shared::outbound::{OutboundGuard, Refusal};
use crate::shared::sign::{signature, tenant_secret};
use crate::state::AppState;

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

async fn deliver(state: &AppState, client: &reqwest::Client, delivery: Delivery) {
    let number = attempt_number(&delivery);
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
            let record = state.numbered(record.clone()).await;
            let Some(outcome) = record.outcome() else {
                return;
            };
            (
                clarify_store::EventKind::for_status(record.status),
                serde_json::to_vec(
                    &OutcomeBody::from(&outcome).with_receipt(state.receipts.sign(&record)),
                ),
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
    let secret = tenant_secret(&state.secrets.webhook, &delivery.tenant);
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
        Err(e) => (None, Some(describe(e, "the receiver", "the request"))),
    };
    let after = if error.is_none() {
        AfterAttempt::Delivered
    } else {
        state.metrics.webhook_failed();
        // A receiver that answers 429 or 503 may say when to come back.
        let wait = sent
            .as_ref()
            .ok()
            .and_then(|r| RetryAfter::read(r.headers()))
            .map(|r| r.wait(now));
        after_failure(state, number, delivery.created_at, wait)
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
