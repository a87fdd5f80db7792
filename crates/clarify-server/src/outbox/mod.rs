//! Everything here sends what the store queued to someone outside, and nothing here answers a
//! call.
//!
//! The store queues each outgoing message (a webhook, a channel notification, a Web Push) in
//! the transaction that made it due, so a crash cannot lose one. One worker a kind drains its
//! outbox through the same loop ([`drain`]): claim due items with a lease (instances sharing a
//! store do not send the same item at once, and one whose worker died is retried when the lease
//! runs out), send each, record the attempt. A failed attempt is retried by one rule
//! ([`after_failure`]: the backoff, the other side's `Retry-After` as
//! `clarify_channels::RetryAfter` reads it, the
//! retry window) and described by one ([`describe`]).
//!
//! The workers: webhook deliveries to `callback_url`s ([`webhooks`]), channel announcements and
//! their follow-ups ([`chat`]), and Web Push to subscribed browsers ([`push`]). The routes that
//! configure them (`/v1/webhook-secret`, the push subscriptions) are `api`'s; the chat
//! platforms' inbound side is `chat`'s, whose Teams conversations the channel worker restores
//! before its first announcement.

pub mod chat;
pub mod push;
pub mod webhooks;

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use clarify_store::{AfterAttempt, Delivery};
use tokio::task::JoinHandle;

use crate::state::{AppState, WebhookConfig};

/// Starts the outbox workers (webhooks, Web Push, channels); each ends at shutdown, and their
/// handles are returned to wait for.
pub(crate) fn start(state: &AppState) -> Vec<JoinHandle<()>> {
    vec![
        tokio::spawn(webhooks::run(state.clone())),
        tokio::spawn(push::run(state.clone())),
        tokio::spawn(chat::run(state.clone())),
    ]
}

/// The outbox a worker drains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outbox {
    Webhooks,
    Channels,
    Push,
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

/// The number of the attempt about to be made on `item`: one more than those recorded.
pub(crate) fn attempt_number(item: &Delivery) -> u32 {
    u32::try_from(item.attempts.len())
        .unwrap_or(u32::MAX)
        .saturating_add(1)
}

/// The wait after `failures` failed attempts.
pub fn backoff(config: &WebhookConfig, failures: u32) -> TimeDelta {
    let exp = failures.saturating_sub(1).min(20);
    let wait = config.first_backoff * 2i32.pow(exp);
    wait.min(config.max_backoff)
}

/// What follows the failed attempt `number` of an outbox item created at `created_at`: a retry
/// after the backoff, or later when the other side asked to `wait`, unless that is past
/// [`WebhookConfig::retry_for`], when it is given up. Every outbox worker decides by this.
pub(crate) fn after_failure(
    state: &AppState,
    number: u32,
    created_at: DateTime<Utc>,
    wait: Option<Duration>,
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

/// A failed send in words for the attempt's record: `peer` is who was called ("the receiver"),
/// `sending` what was sent ("the request"). Never more of the target than reqwest says.
pub(crate) fn describe(e: &reqwest::Error, peer: &str, sending: &str) -> String {
    if e.is_timeout() {
        format!("{peer} did not answer in time")
    } else if e.is_connect() {
        format!("could not connect to {peer}")
    } else {
        format!("{sending} failed: {e}")
    }
}

/// The client for addresses others chose (webhook receivers, push services): through the
/// outbound guard, with the webhooks' timeout; `None`, logged with `otherwise`, when it cannot
/// be built.
pub(crate) fn outbound_client(state: &AppState, otherwise: &str) -> Option<reqwest::Client> {
    built(
        state.config.outbound.client(
            clarify_client::http::builder()
                .timeout(state.config.webhooks.timeout)
                .user_agent(USER_AGENT),
        ),
        otherwise,
    )
}

/// The HTTP client of the channel worker: the webhooks' timeout, no redirects followed (a
/// receiver's redirect is its error, not an address to send a signed body to). Channels'
/// addresses are the admin's own, so it is not guarded; webhooks use the outbound guard's.
pub(crate) fn client(state: &AppState, otherwise: &str) -> Option<reqwest::Client> {
    built(
        clarify_client::http::builder()
            .timeout(state.config.webhooks.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .build(),
        otherwise,
    )
}

const USER_AGENT: &str = concat!("clarify/", env!("CARGO_PKG_VERSION"));

fn built<E: std::fmt::Display>(
    client: Result<reqwest::Client, E>,
    otherwise: &str,
) -> Option<reqwest::Client> {
    match client {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::error!(error = %e, "cannot build an HTTP client; {otherwise}");
            None
        }
    }
}
