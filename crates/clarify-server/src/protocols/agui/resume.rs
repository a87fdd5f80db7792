//! Resuming an interrupted run: through the proxy, with a caller's `resume[]` (the caller's
//! answers become the requests' answers first), or by clarify itself once people answered every
//! request of the run elsewhere (the resume worker).
//!
//! Either way the run is claimed first, with a lease, by one conditional update of the store,
//! so a run is resumed once however many instances look at it. A resume that fails (the agent
//! unreachable, its stream broken) gives the run back, and the worker tries again later.

use std::time::Duration;

use axum::http::StatusCode;
use chrono::TimeDelta;
use clarify_core::agui::{Ask, ResumeEntry, RunInput};
use clarify_model::wire::{OutcomeBody, RecordBody};
use clarify_store::{AguiRun, RequestRecord, ResolveError};
use serde_json::{Value, json};

use super::{Asked, Party, Waiting, run};
use crate::middleware::auth::Caller;
use crate::shared::error::{ApiError, resolve_error};
use crate::state::{AguiAgent, AppState};

/// How long a claim holds a run while it is resumed (a resumed run may stream a while).
const LEASE: TimeDelta = TimeDelta::minutes(15);
/// When a failed resume is tried again.
const RETRY: TimeDelta = TimeDelta::seconds(30);
/// How often the worker looks for runs to resume without a wake-up.
const POLL: Duration = Duration::from_secs(2);
/// The least time between two looks.
const GAP: Duration = Duration::from_millis(200);

/// The run a resume sent through the proxy answers, claimed, with its requests answered as the
/// caller; `None` when clarify kept no interrupted run of the thread (the resume is forwarded
/// as it is).
pub(crate) async fn through_proxy(
    state: &AppState,
    caller: &Caller,
    agent: &AguiAgent,
    input: &RunInput,
) -> Result<Option<AguiRun>, ApiError> {
    let tenant = caller.tenant();
    let runs = state
        .store
        .agui_runs(tenant, &agent.name, &input.thread_id)
        .await
        .map_err(|e| ApiError::store(&e))?;
    let Some(run) = runs.into_iter().last() else {
        return Ok(None);
    };
    let waiting = read(&run).ok_or_else(|| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the kept interrupted run cannot be read",
        )
    })?;
    let entries = entries(input, &waiting)?;
    let raised = || {
        waiting
            .interrupts
            .iter()
            .map(|a| clarify_core::quoted(&a.interrupt.id))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for entry in &entries {
        if !waiting
            .interrupts
            .iter()
            .any(|a| a.interrupt.id == entry.interrupt_id)
        {
            return Err(ApiError {
                field: Some("resume".to_owned()),
                ..ApiError::bad_request(
                    "unknown_interrupt",
                    format!(
                        "resume names interrupt {}, which the thread's last run ({}) did not raise; it raised {}",
                        clarify_core::quoted(&entry.interrupt_id),
                        clarify_core::quoted(&waiting.run_id),
                        raised()
                    ),
                )
            });
        }
    }
    for asked in &waiting.interrupts {
        if !entries.iter().any(|e| e.interrupt_id == asked.interrupt.id) {
            return Err(ApiError {
                field: Some("resume".to_owned()),
                ..ApiError::bad_request(
                    "interrupt_not_covered",
                    format!(
                        "resume leaves out interrupt {} of run {}; AG-UI has a resume answer every interrupt of the run (status \"cancelled\" abandons one)",
                        clarify_core::quoted(&asked.interrupt.id),
                        clarify_core::quoted(&waiting.run_id)
                    ),
                )
            });
        }
    }
    let mut records = Vec::with_capacity(waiting.interrupts.len());
    for asked in &waiting.interrupts {
        let record = state
            .store
            .get(tenant, &asked.request_id)
            .await
            .map_err(|e| ApiError::store(&e))?
            .ok_or_else(|| gone(asked))?;
        if record.status.is_resolved() {
            return Err(answered_elsewhere(state, caller, asked, &record));
        }
        records.push(record);
    }
    if !state
        .store
        .agui_claim(&run.id, LEASE)
        .await
        .map_err(|e| ApiError::store(&e))?
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "resume_in_progress",
            "this run is being resumed already (its interrupts were answered elsewhere); read its events at GET /agui/{name}/threads/{threadId}/events",
        ));
    }
    let actor = clarify_store::Actor::new(caller.key.name.clone(), "agui")
        .as_principal(caller.principal.clone());
    for (asked, record) in waiting.interrupts.iter().zip(&records) {
        let Some(entry) = entries
            .iter()
            .find(|e| e.interrupt_id == asked.interrupt.id)
        else {
            continue;
        };
        let done = if entry.cancelled {
            state.store.cancel(tenant, &record.id, &actor).await
        } else {
            match answer_body(asked, entry.payload.as_ref()) {
                Ok(body) => state.store.answer(tenant, &record.id, &body, &actor).await,
                Err(message) => {
                    let _ = state.store.agui_release(&run.id, None).await;
                    return Err(ApiError {
                        field: Some("resume".to_owned()),
                        ..ApiError::bad_request("invalid_resume", message)
                    });
                }
            }
        };
        match done {
            Ok(record) => {
                state.metrics.resolved(&record);
                state.changed(&record);
            }
            Err(e) => {
                let _ = state.store.agui_release(&run.id, None).await;
                return Err(match e {
                    ResolveError::AlreadyResolved(record) => {
                        answered_elsewhere(state, caller, asked, &record)
                    }
                    ResolveError::Invalid(e) => ApiError {
                        field: Some("resume".to_owned()),
                        ..ApiError::bad_request(
                            "invalid_resume",
                            format!(
                                "the payload for interrupt {} does not answer its request: {e}",
                                clarify_core::quoted(&asked.interrupt.id)
                            ),
                        )
                    },
                    e => resolve_error(e, |r| RecordBody::new(r, None)),
                });
            }
        }
    }
    Ok(Some(run))
}

/// The resume entries of `input`: its `resume[]`, or its `forwardedProps.command.resume` as the
/// answer to the run's one interrupt.
fn entries(input: &RunInput, waiting: &Waiting) -> Result<Vec<ResumeEntry>, ApiError> {
    if !input.resume.is_empty() {
        return Ok(input.resume.clone());
    }
    match (&input.legacy_resume, waiting.interrupts.as_slice()) {
        (Some(payload), [one]) => Ok(vec![ResumeEntry {
            interrupt_id: one.interrupt.id.clone(),
            cancelled: false,
            payload: Some(payload.clone()),
        }]),
        _ => Err(ApiError::bad_request(
            "interrupt_not_covered",
            format!(
                "forwardedProps.command.resume answers one interrupt, and run {} raised {}; send resume[] with an entry for each",
                clarify_core::quoted(&waiting.run_id),
                waiting.interrupts.len()
            ),
        )),
    }
}

fn gone(asked: &Asked) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "already_resolved",
        format!(
            "the request of interrupt {} is gone (resolved and purged)",
            clarify_core::quoted(&asked.interrupt.id)
        ),
    )
}

/// `409`: the interrupt's request was resolved elsewhere, naming the answer.
fn answered_elsewhere(
    state: &AppState,
    caller: &Caller,
    asked: &Asked,
    record: &RequestRecord,
) -> ApiError {
    let answer = record
        .outcome()
        .map(|o| OutcomeBody::from(&o))
        .map(|o| {
            let given = o
                .questions
                .first()
                .and_then(|q| serde_json::to_value(q).ok())
                .and_then(|q| q.get("answer").cloned())
                .filter(|a| !a.is_null())
                .map(|a| format!(": {a}"))
                .unwrap_or_default();
            let by = o
                .answered_by
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
            let via = o
                .answered_via
                .map(|v| format!(" via {v}"))
                .unwrap_or_default();
            format!("{}{given}{by}{via}", o.status)
        })
        .unwrap_or_else(|| record.status.to_string());
    ApiError {
        record: Some(Box::new(RecordBody::new(
            record,
            caller.sees_links().then(|| state.answer_url(&record.id)),
        ))),
        ..ApiError::new(
            StatusCode::CONFLICT,
            "already_resolved",
            format!(
                "interrupt {} was already answered elsewhere ({answer}); clarify resumes the run with that answer",
                clarify_core::quoted(&asked.interrupt.id)
            ),
        )
    }
}

/// The clarify answer body a resume payload gives the request of `asked`.
fn answer_body(asked: &Asked, payload: Option<&Value>) -> Result<Value, String> {
    let id = clarify_core::quoted(&asked.interrupt.id);
    let approved = || {
        payload
            .and_then(|p| p.get("approved"))
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("the payload for interrupt {id} needs `approved`, a boolean"))
    };
    match asked.ask {
        Ask::Approval => {
            let mut body = json!({"decision": if approved()? { "approve" } else { "deny" }});
            if let Some(edited) = payload.and_then(|p| p.get("editedArgs")) {
                body["edited_arguments"] = edited.clone();
            }
            if let Some(reason) = payload
                .and_then(|p| p.get("reason"))
                .and_then(Value::as_str)
            {
                body["reason"] = json!(reason);
            }
            Ok(body)
        }
        Ask::Confirmation => {
            let (yes, no) = if asked.interrupt.reason == "confirmation" {
                ("yes", "no")
            } else {
                ("approve", "deny")
            };
            Ok(json!({"option": if approved()? { yes } else { no }}))
        }
        Ask::Form => match payload {
            Some(values @ Value::Object(_)) => Ok(json!({"values": values})),
            _ => Err(format!(
                "the payload for interrupt {id} must be an object of the form's values"
            )),
        },
        Ask::Open => match payload {
            Some(Value::String(text)) => Ok(json!({"text": text})),
            Some(other) => Ok(json!({"text": other.to_string()})),
            None => Err(format!("the payload for interrupt {id} is missing")),
        },
    }
}

fn read(run: &AguiRun) -> Option<Waiting> {
    serde_json::from_str(&run.data).ok()
}

/// The resume worker: resumes each kept run whose requests are all resolved, on whichever
/// instance claims it first. Looks when the event log grows (a resolution anywhere) and every
/// `POLL`, until shutdown.
pub(crate) async fn run(state: AppState) {
    let mut newest = state.hub.subscribe();
    loop {
        tokio::select! {
            () = state.shutdown.cancelled() => return,
            changed = newest.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(POLL) => {}
        }
        look(&state).await;
        tokio::time::sleep(GAP).await;
    }
}

/// One look at the waiting runs, page by page.
async fn look(state: &AppState) {
    let mut after = 0;
    loop {
        let page = match state.store.agui_waiting(after).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, "reading the waiting AG-UI runs failed; retrying");
                return;
            }
        };
        let Some(last) = page.last() else { return };
        after = last.seq;
        let full = page.len() == clarify_store::AGUI_BATCH;
        for run in page {
            consider(state, run).await;
        }
        if !full {
            return;
        }
    }
}

/// Resumes waiting run `run` when all its requests are resolved and this instance claims it.
async fn consider(state: &AppState, run: AguiRun) {
    let Some(agent) = state
        .config
        .agui
        .iter()
        .find(|a| a.name == run.agent)
        .cloned()
    else {
        return;
    };
    let Some(kept) = read(&run) else {
        tracing::error!(run = %run.id, "a kept AG-UI run cannot be read; it is not resumed");
        let _ = state.store.agui_finish(&run.id, None).await;
        return;
    };
    let mut outcomes = Vec::with_capacity(kept.interrupts.len());
    for asked in &kept.interrupts {
        match state.store.get(&run.tenant, &asked.request_id).await {
            Ok(Some(record)) if record.status.is_resolved() => {
                let outcome = record
                    .outcome()
                    .and_then(|o| serde_json::to_value(OutcomeBody::from(&o)).ok())
                    .unwrap_or(Value::Null);
                outcomes.push(outcome);
            }
            Ok(Some(_)) => break,
            // Purged: nobody's answer is left to give.
            Ok(None) => outcomes.push(json!({"status": "cancelled"})),
            Err(e) => {
                tracing::warn!(error = %e, "reading an AG-UI run's request failed; retrying");
                break;
            }
        }
    }
    if outcomes.len() < kept.interrupts.len() {
        return;
    }
    match state.store.agui_claim(&run.id, LEASE).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            tracing::warn!(error = %e, "claiming an AG-UI run failed; retrying");
            return;
        }
    }
    let state = state.clone();
    tokio::spawn(async move { resume(&state, &agent, run, kept, outcomes).await });
}

/// Resumes claimed run `run` with its requests' outcomes, keeping the resumed run's events.
async fn resume(
    state: &AppState,
    agent: &AguiAgent,
    run: AguiRun,
    kept: Waiting,
    outcomes: Vec<Value>,
) {
    let entries: Vec<ResumeEntry> = kept
        .interrupts
        .iter()
        .zip(&outcomes)
        .map(|(a, o)| clarify_core::agui::resume_entry(&a.interrupt.id, a.ask, o))
        .collect();
    let input = clarify_core::agui::resume_input(
        kept.input.clone(),
        &format!("{}-resumed", kept.run_id),
        &entries,
        kept.legacy,
    );
    let parsed = match clarify_core::agui::parse_input(&input) {
        Ok(parsed) => parsed,
        Err(e) => {
            tracing::error!(run = %run.id, error = %e, "an AG-UI run's resume input is not valid; it is not resumed");
            let _ = state.store.agui_finish(&run.id, None).await;
            return;
        }
    };
    let body = serde_json::to_vec(&input).unwrap_or_default();
    let upstream = match run::send(state, agent, body).await {
        Ok(upstream) => upstream,
        Err(e) => {
            tracing::warn!(run = %run.id, error = %e.message, "resuming an AG-UI run failed; trying again in 30 s");
            let _ = state.store.agui_release(&run.id, Some(RETRY)).await;
            return;
        }
    };
    let party = Party {
        tenant: run.tenant.clone(),
        links: true,
    };
    let events = run::relay(
        state,
        agent,
        &party,
        &parsed,
        upstream,
        run::Sink::Kept,
        false,
    )
    .await;
    let broken = events
        .last()
        .is_some_and(|e| e.get("code").and_then(Value::as_str) == Some(run::BROKEN));
    if broken {
        let _ = state.store.agui_release(&run.id, Some(RETRY)).await;
        return;
    }
    tracing::info!(run = %run.id, events = events.len(), "resumed an AG-UI run whose interrupts were answered elsewhere");
    if let Err(e) = state
        .store
        .agui_finish(&run.id, serde_json::to_string(&events).ok())
        .await
    {
        tracing::warn!(run = %run.id, error = %e, "recording a resumed AG-UI run failed");
    }
}
