//! The channel worker: announces requests on the configured channels (see `clarify-channels`),
//! and follows their announcements up.
//!
//! The store queues one notification per channel in the transaction that creates a request, so
//! none is lost to a crash. This worker claims due notifications through the outbox loop
//! ([`drain`]), has the channel post it, and records the attempt with the platform's message
//! reference. A failure that may pass (no connection, `408`, `429`, `5xx`) is retried with the
//! webhooks' backoff, or later when the platform's `Retry-After` says so, for as long as
//! webhooks are; any other refusal ends the notification `failed` at once.
//!
//! A later notification about a request (a reminder, an escalation, a vote, its resolution)
//! goes to the channel's announcement: a reply in its thread, or an edit of it. It waits while
//! that announcement has not gone out yet, so an edit never overtakes the message it edits.

use std::time::Instant;

use chrono::TimeDelta;
use clarify_channels::{Channel, Notice, Sent};
use clarify_store::{AfterAttempt, Attempt, Delivery, DeliveryStatus, EventKind, RequestRecord};

use crate::outbox::{Outbox, after_failure, attempt_number, client, drain};
use crate::state::AppState;

/// Sends channel notifications until shutdown, once each channel loaded what it needs (Teams
/// posts where its bot was added: known before the first announcement).
pub(crate) async fn run(state: AppState) {
    crate::chat::prepare(&state).await;
    if state.config.channels.is_empty() {
        return;
    }
    let Some(client) = client(&state, "nothing is announced") else {
        return;
    };
    drain(&state, Outbox::Channels, async |n| {
        notify(&state, &client, n).await
    })
    .await;
}

async fn notify(state: &AppState, client: &reqwest::Client, n: Delivery) {
    let number = attempt_number(&n);
    let give_up = |why: &str| (None, Some(why.to_owned()), AfterAttempt::GiveUp);
    let channel = state
        .config
        .channels
        .iter()
        .find(|c| Some(&c.name) == n.channel.as_ref());
    let record = match state.store.get(&n.tenant, &n.request_id).await {
        Ok(r) => r,
        Err(e) => {
            // The lease runs out and the notification is tried again.
            tracing::warn!(error = %e, "reading a request for its notification failed");
            return;
        }
    };
    let started = Instant::now();
    let (status_code, error, after, message_ref) = match (channel, record) {
        (None, _) => {
            let (s, e, a) = give_up("the channel is no longer configured");
            (s, e, a, None)
        }
        (_, None) => {
            let (s, e, a) = give_up("the request no longer exists");
            (s, e, a, None)
        }
        (Some(channel), Some(record)) => {
            let answer_url = state.answer_url(&record.id);
            let event = n.event.unwrap_or(EventKind::Created);
            let announcement = match event {
                EventKind::Created => Ok(None),
                _ => match on_call_read(&record, event, state.store.now()) {
                    Ok(()) => announcement(state, &n)
                        .await
                        .map_err(|ms| (ms, "waiting for the announcement to go out first")),
                    Err(ms) => Err((ms, "waiting for the on-call schedules to be read again")),
                },
            };
            let announcement = match announcement {
                Ok(a) => a,
                Err((wait, why)) => {
                    let next = state.store.now() + TimeDelta::milliseconds(wait);
                    let attempt = Attempt {
                        number,
                        at: state.store.now(),
                        status_code: None,
                        error: Some(why.to_owned()),
                        duration_ms: 0,
                    };
                    if let Err(e) = state
                        .store
                        .finish_notification(n.id, attempt, AfterAttempt::RetryAt(next), None)
                        .await
                    {
                        tracing::warn!(error = %e, notification = n.id, "recording a notification attempt failed");
                    }
                    return;
                }
            };
            let hook_url = channel.hook_url(&state.config.public_url);
            let notice = Notice {
                record: &record,
                event,
                answer_url: &answer_url,
                announcement: announcement.as_deref(),
                mention: if event == EventKind::Escalated {
                    mentions(state, channel, &record)
                } else {
                    Vec::new()
                },
                recipients: recipients(state, channel, &record, event),
                action_key: &state.secrets.chat,
                hook_url: &hook_url,
                personal: personal_links(state, channel, &record, event),
                step_up: state.store.needs_step_up(&record.request),
            };
            match channel
                .deliver(&crate::chat::desk::ChatDesk(state.clone()), client, &notice)
                .await
            {
                Ok(Sent::Posted { message_ref }) => {
                    (None, None, AfterAttempt::Delivered, message_ref)
                }
                Ok(Sent::Edited) => (None, None, AfterAttempt::Delivered, None),
                Ok(Sent::Skipped { why }) => {
                    (None, Some(why.to_owned()), AfterAttempt::Delivered, None)
                }
                Err(e) if e.retryable() => {
                    let after = after_failure(
                        state,
                        number,
                        n.created_at,
                        e.retry_after(state.store.now()),
                    );
                    (e.status(), Some(e.to_string()), after, None)
                }
                Err(e) => (e.status(), Some(e.to_string()), AfterAttempt::GiveUp, None),
            }
        }
    };
    if let Some(error) = &error {
        tracing::warn!(notification = n.id, channel = ?n.channel, %error, "a channel notification did not go out");
    }
    let attempt = Attempt {
        number,
        at: state.store.now(),
        status_code,
        error,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    if let Some(telemetry) = &state.telemetry {
        telemetry.attempted(&n, &attempt);
    }
    if let Err(e) = state
        .store
        .finish_notification(n.id, attempt, after, message_ref)
        .await
    {
        tracing::warn!(error = %e, notification = n.id, "recording a notification attempt failed");
    }
}

/// How long an escalation waits at most for the instance that escalated the request to read its
/// on-call schedules again (longer than any reading may take).
const ON_CALL_READ_WAIT: TimeDelta = TimeDelta::seconds(30);

/// `Err(ms)` to try again in that many milliseconds while an escalated request's on-call
/// schedules are being read again (the store reads them just after escalating), so the
/// escalation goes to whoever is on call now; `Ok` once read, or after [`ON_CALL_READ_WAIT`].
fn on_call_read(
    record: &RequestRecord,
    event: EventKind,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), i64> {
    let Some(at) = record
        .escalated_at
        .filter(|_| event == EventKind::Escalated)
    else {
        return Ok(());
    };
    let read = record.on_call.iter().any(|s| s.read_at >= at);
    if read || record.on_call_responders().is_empty() || now > at + ON_CALL_READ_WAIT {
        Ok(())
    } else {
        Err(250)
    }
}

/// The platform's reference to the channel's announcement of `n`'s request: `Ok(None)` when
/// there is none (it failed, or was skipped), `Err(ms)` to try again in that many milliseconds
/// while it has not gone out yet.
async fn announcement(state: &AppState, n: &Delivery) -> Result<Option<String>, i64> {
    let all = match state.store.notifications(&n.tenant, &n.request_id).await {
        Ok(all) => all,
        Err(e) => {
            tracing::warn!(error = %e, "reading a request's announcements failed");
            return Err(1_000);
        }
    };
    let first = all
        .into_iter()
        .find(|d| d.channel == n.channel && d.event == Some(EventKind::Created));
    match first {
        Some(d) if d.status == DeliveryStatus::Pending => Err(250),
        Some(d) => Ok(d.message_ref),
        None => Ok(None),
    }
}

/// The platform user ids of `record`'s `escalate_to` responders (whoever is on call for an
/// `oncall:` one) that `[identities]` maps, for `channel`'s platform.
fn mentions(state: &AppState, channel: &Channel, record: &RequestRecord) -> Vec<String> {
    let prefix = channel.identity_of("");
    let escalated_to: Vec<String> = record
        .request
        .escalate_to
        .iter()
        .flat_map(|name| match name.starts_with(clarify_core::ONCALL_PREFIX) {
            true => record.on_call_people(name),
            false => vec![name.clone()],
        })
        .collect();
    state
        .config
        .identities
        .iter()
        .filter(|(_, name)| escalated_to.contains(name))
        .filter_map(|(who, _)| who.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

/// The people `name` (a responder or `escalate_to` entry of `record`) stands for: a group's
/// configured members, whoever was found on call for an `oncall:` one, or the person.
fn people_named(state: &AppState, record: &RequestRecord, name: &str) -> Vec<String> {
    if let Some(group) = name.strip_prefix(clarify_core::GROUP_PREFIX) {
        return state.store.members_of(group);
    }
    if name.starts_with(clarify_core::ONCALL_PREFIX) {
        return record.on_call_people(name);
    }
    vec![name.to_owned()]
}

/// A personal link for each person `record` names, for a channel whose messages cannot tell who
/// answers (e-mail and ntfy): its responders (a group by its configured members, an on-call
/// schedule by whoever was found on call) and, for an escalation, its `escalate_to`. None for
/// a request open to everyone.
fn personal_links(
    state: &AppState,
    channel: &Channel,
    record: &RequestRecord,
    event: EventKind,
) -> Vec<(String, String)> {
    if !matches!(channel.platform_name(), "email" | "ntfy") {
        return Vec::new();
    }
    let request = &record.request;
    let Some(responders) = &request.responders else {
        return Vec::new();
    };
    let escalated = event == EventKind::Escalated || record.escalated_at.is_some();
    let named = responders
        .iter()
        .chain(request.escalate_to.iter().filter(|_| escalated));
    let mut people: Vec<String> = Vec::new();
    for name in named {
        for member in people_named(state, record, name) {
            if !people.contains(&member) {
                people.push(member);
            }
        }
    }
    people
        .into_iter()
        .map(|name| {
            let url = state.personal_url(&record.id, &name);
            (name, url)
        })
        .collect()
}

/// The platform addresses `[identities]` gives `record`'s responders (and, for an escalation,
/// its `escalate_to`), for `channel`'s platform (by its `[identities]` prefix: `phone` for the
/// channels that text or call a number): whom a channel without `to` writes to.
fn recipients(
    state: &AppState,
    channel: &Channel,
    record: &RequestRecord,
    event: EventKind,
) -> Vec<String> {
    let prefix = channel.identity_of("");
    let request = &record.request;
    let names_them = |names: &[String], name: &String| {
        names
            .iter()
            .any(|n| people_named(state, record, n).contains(name))
    };
    let for_them = |name: &String| {
        request
            .responders
            .as_ref()
            .is_some_and(|r| names_them(r, name))
            || (event == EventKind::Escalated && names_them(&request.escalate_to, name))
    };
    state
        .config
        .identities
        .iter()
        .filter(|(_, name)| for_them(name))
        .filter_map(|(who, _)| who.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}
