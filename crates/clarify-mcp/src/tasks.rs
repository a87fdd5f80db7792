//! `ask_human` as a task (the `io.modelcontextprotocol/tasks` extension), for clients that
//! declare it.
//!
//! The task is the clarify request: its id is the request id, and `tasks/get` reads the request
//! from the store (or the server) each time, so a task outlives a restart of clarify and is seen
//! alike by every instance. A pending request is `working`; a resolved one `completed`, its
//! result what `ask_human` would have returned (also for skipped and expired requests, whose
//! outcome says so); a cancelled one `cancelled`. `tasks/cancel` cancels the request. A task id
//! that is no request of the caller's tenant is an error.
//!
//! On 2026-07-28 a client that can show the request itself (form elicitation, or URL mode for a
//! request no form holds) sees a pending task as `input_required`, its `inputRequests` the same
//! form (or link) a call without tasks gets in its `input_required` result: the extension's way
//! of asking the client's user mid-task. `tasks/update` brings the answer, which resolves the
//! request through the store like any other (channel `mcp`); the other surfaces stay open
//! meanwhile, and the first answer wins (the next poll shows `completed`). An answer that does
//! not fit is acknowledged, as the extension asks, and the next poll asks again under a new key
//! with what was wrong above the form. A form the user dismissed (or a link they opened) is not
//! asked again: the task shows `working` until the person answers elsewhere. Which round a task
//! is in is kept by this process, so after a restart (or on another instance) the form is asked
//! again from its first key; the answer is the request's either way. Before 2026-07-28 there are
//! no input requests in tasks, and a task never asks in the client.

use clarify_core::Status;
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, DetailedTask, ElicitResult, GetTaskParams, GetTaskResult,
    InputRequests, JsonObject, Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use crate::error::ToolError;
use crate::surface::{ClientSurface, INPUT_KEY, Taken};
use crate::upstream::Snapshot;
use crate::{ClarifyMcp, tools};

/// How often clients are asked to poll a task.
const POLL_INTERVAL_MS: u64 = 2_000;

const WAITING: &str = "waiting for a human to answer";
const ASKING: &str = "waiting for a human to answer, here or on clarify's other surfaces";

/// Where asking a task's request in the client stands, in this process.
#[derive(Debug, Default, Clone)]
pub(crate) struct TaskAsk {
    /// How many answers did not fit: the round's input key is [`input_key`] of it.
    round: usize,
    /// What was wrong with the last answer.
    note: Option<String>,
    /// The user dismissed the form (or opened the link): it is not asked again.
    done: bool,
}

/// The key of round `round`'s input request: keys are unique over a task's life.
fn input_key(round: usize) -> String {
    if round == 0 {
        INPUT_KEY.to_owned()
    } else {
        format!("{INPUT_KEY}-{}", round + 1)
    }
}

/// Whether `key` is one of [`input_key`]'s.
fn is_input_key(key: &str) -> bool {
    key == INPUT_KEY
        || key
            .strip_prefix(INPUT_KEY)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|n| n.parse::<usize>().is_ok())
}

impl ClarifyMcp {
    /// The task standing for request `id`, just created.
    pub(crate) async fn task_created(
        &self,
        party: &crate::Party,
        id: &str,
    ) -> Result<CreateTaskResult, ToolError> {
        let snapshot = party.upstream.snapshot(id).await?;
        Ok(CreateTaskResult::new(task(id, &snapshot).task))
    }

    pub(crate) async fn task_get(
        &self,
        params: GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let party = self.party(context).map_err(task_error)?;
        let id = &params.task_id;
        let snapshot = party.upstream.snapshot(id).await.map_err(task_error)?;
        let mut detailed = task(id, &snapshot);
        if snapshot.outcome.is_none()
            && let Some((requests, note)) = self
                .task_input(&party, id, context)
                .await
                .map_err(task_error)?
        {
            let message = note.unwrap_or_else(|| ASKING.to_owned());
            detailed = DetailedTask::new(
                detailed.task.with_status_message(message),
                TaskPayload::InputRequired {
                    input_requests: requests,
                },
            );
        } else if snapshot.outcome.is_some() {
            self.task_asks().remove(id);
        }
        Ok(GetTaskResult::new(detailed))
    }

    /// What a pending task asks the client, when it can show it: the input requests of the
    /// current round, and what was wrong with the last answer.
    async fn task_input(
        &self,
        party: &crate::Party,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<(InputRequests, Option<String>)>, ToolError> {
        let surface = ClientSurface::of(context);
        if !surface.input_required {
            return Ok(None);
        }
        let state = self.task_asks().get(id).cloned().unwrap_or_default();
        if state.done {
            return Ok(None);
        }
        let Some(ask) = self.client_ask(party, id, surface).await? else {
            return Ok(None);
        };
        let Some(request) = ask.input_request(id, state.note.as_deref()) else {
            return Ok(None);
        };
        Ok(Some((
            InputRequests::from([(input_key(state.round), request)]),
            state.note,
        )))
    }

    fn task_asks(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, TaskAsk>> {
        self.inner
            .task_asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) async fn task_cancel(
        &self,
        params: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let party = self.party(context).map_err(task_error)?;
        self.task_asks().remove(&params.task_id);
        // Someone else's resolution may have come first; the task then shows that.
        party
            .upstream
            .cancel(&params.task_id, &party.actor)
            .await
            .map(|_| ())
            .map_err(task_error)
    }

    /// Takes the client's answer to a task's input request. Responses under keys that are not
    /// ours, or to a task that no longer waits, are ignored, as the extension asks.
    pub(crate) async fn task_update(
        &self,
        params: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let party = self.party(context).map_err(task_error)?;
        let id = &params.task_id;
        let snapshot = party.upstream.snapshot(id).await.map_err(task_error)?;
        if snapshot.outcome.is_some() {
            return Ok(());
        }
        let Some(result) = params
            .input_responses
            .iter()
            .filter(|(key, _)| is_input_key(key))
            .find_map(|(_, value)| serde_json::from_value::<ElicitResult>(value.clone()).ok())
        else {
            return Ok(());
        };
        let surface = ClientSurface::of(context);
        let Some(ask) = self
            .client_ask(&party, id, surface)
            .await
            .map_err(task_error)?
        else {
            return Ok(());
        };
        let taken = self
            .take_answer(&party, id, &ask, &result)
            .await
            .map_err(task_error)?;
        let mut asks = self.task_asks();
        match taken {
            Taken::Resolved(_) => {
                asks.remove(id);
            }
            Taken::Misfit(why) => {
                tracing::info!(id, %why, "a task's answer from the client did not fit");
                let state = asks.entry(id.clone()).or_default();
                state.round += 1;
                state.note = Some(format!(
                    "That answer did not fit ({why}); the question is still open."
                ));
            }
            Taken::Nothing => asks.entry(id.clone()).or_default().done = true,
        }
        Ok(())
    }
}

/// A request as a task.
fn task(id: &str, snapshot: &Snapshot) -> DetailedTask {
    let created = snapshot.created_at.to_rfc3339();
    let updated = snapshot
        .resolved_at
        .unwrap_or(snapshot.created_at)
        .to_rfc3339();
    let base = Task::new(id, TaskStatus::Working, created, updated)
        .with_poll_interval_ms(POLL_INTERVAL_MS);
    match (&snapshot.outcome, snapshot.status) {
        (None, _) => DetailedTask::new(base.with_status_message(WAITING), TaskPayload::Working),
        (Some(outcome), Status::Cancelled) => {
            let note = outcome.note.as_deref().unwrap_or("cancelled").to_owned();
            DetailedTask::new(base.with_status_message(note), TaskPayload::Cancelled)
        }
        (Some(outcome), _) => {
            let result = tools::outcome(outcome);
            let result: JsonObject = match serde_json::to_value(&result) {
                Ok(serde_json::Value::Object(map)) => map,
                _ => JsonObject::new(),
            };
            DetailedTask::new(
                base.with_status_message(tools::summary(outcome)),
                TaskPayload::Completed { result },
            )
        }
    }
}

/// A failed task method, as a JSON-RPC error (an unknown task is invalid parameters).
fn task_error(e: ToolError) -> ErrorData {
    match e {
        ToolError::NotFound(id) => ErrorData::invalid_params(
            format!("no task {id:?} is known here; use the taskId that ask_human returned"),
            None,
        ),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}
