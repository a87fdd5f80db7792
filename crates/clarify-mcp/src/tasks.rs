//! `ask_human` as a task (the `io.modelcontextprotocol/tasks` extension), for clients that
//! declare it.
//!
//! The task is the clarify request: its id is the request id, and `tasks/get` reads the request
//! from the store (or the server) each time, so a task outlives a restart of clarify and is seen
//! alike by every instance. A pending request is `working`; a resolved one `completed`, its
//! result what `ask_human` would have returned (also for skipped and expired requests, whose
//! outcome says so); a cancelled one `cancelled`. `tasks/cancel` cancels the request, and
//! `tasks/update` has nothing to take (these tasks never ask for input: the person answers on
//! clarify's own surfaces). A task id that is no request of the caller's tenant is an error.

use clarify_core::Status;
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, JsonObject,
    Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use crate::error::ToolError;
use crate::upstream::Snapshot;
use crate::{ClarifyMcp, tools};

/// How often clients are asked to poll a task.
const POLL_INTERVAL_MS: u64 = 2_000;

const WAITING: &str = "waiting for a human to answer";

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
        let snapshot = party
            .upstream
            .snapshot(&params.task_id)
            .await
            .map_err(task_error)?;
        Ok(GetTaskResult::new(task(&params.task_id, &snapshot)))
    }

    pub(crate) async fn task_cancel(
        &self,
        params: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let party = self.party(context).map_err(task_error)?;
        // Someone else's resolution may have come first; the task then shows that.
        party
            .upstream
            .cancel(&params.task_id, &party.actor)
            .await
            .map(|_| ())
            .map_err(task_error)
    }

    pub(crate) async fn task_update(
        &self,
        params: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let party = self.party(context).map_err(task_error)?;
        // No input is ever asked for in a task, so every response is for an unknown key and is
        // ignored, as the extension asks; only the task itself must exist.
        party
            .upstream
            .snapshot(&params.task_id)
            .await
            .map(|_| ())
            .map_err(task_error)
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
            let note = outcome["note"].as_str().unwrap_or("cancelled").to_owned();
            DetailedTask::new(base.with_status_message(note), TaskPayload::Cancelled)
        }
        (Some(outcome), _) => {
            let result = tools::outcome(outcome.clone());
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
