//! The A2A task a request is, in the JSON of A2A 1.0 and of 0.3: what `/a2a` answers and what a
//! push notification carries, so the protocol room and the webhook worker render it alike.
//!
//! A task is its request: the task id is the request id and nothing else is stored but the
//! push configuration (kept under [`push_key`]). Its state follows the request's status:
//! pending is `WORKING`, answered and skipped are `COMPLETED`, expired is `REJECTED`, cancelled
//! is `CANCELED`; a resolved task carries one artifact, `outcome`, whose one data part is the
//! outcome as `GET /v1/requests/{id}/wait` renders it. 1.0 writes states as
//! `TASK_STATE_COMPLETED` and parts as `{"data": ...}`; 0.3 writes `completed` and tags every
//! object with `kind`.

use clarify_core::Status;
use clarify_model::wire::{OutcomeBody, time};
use clarify_store::RequestRecord;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The versions of A2A spoken, chosen by the `A2A-Version` header (absent: 0.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Version {
    #[serde(rename = "0.3")]
    V03,
    #[serde(rename = "1.0")]
    V10,
}

/// A task's state, from its request's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Working,
    Completed,
    Rejected,
    Canceled,
}

impl TaskState {
    pub fn of(status: Status) -> Self {
        match status {
            Status::Pending => Self::Working,
            Status::Answered | Status::Skipped => Self::Completed,
            Status::Expired => Self::Rejected,
            Status::Cancelled => Self::Canceled,
        }
    }

    /// Whether the task has ended: every state but `WORKING`.
    pub fn is_terminal(self) -> bool {
        self != Self::Working
    }

    pub fn name(self, version: Version) -> &'static str {
        match (version, self) {
            (Version::V10, Self::Working) => "TASK_STATE_WORKING",
            (Version::V10, Self::Completed) => "TASK_STATE_COMPLETED",
            (Version::V10, Self::Rejected) => "TASK_STATE_REJECTED",
            (Version::V10, Self::Canceled) => "TASK_STATE_CANCELED",
            (Version::V03, Self::Working) => "working",
            (Version::V03, Self::Completed) => "completed",
            (Version::V03, Self::Rejected) => "rejected",
            (Version::V03, Self::Canceled) => "canceled",
        }
    }
}

/// The task's context: the request's `session`, or the task id when it has none.
pub fn context_id(record: &RequestRecord) -> &str {
    record.request.session.as_deref().unwrap_or(&record.id)
}

/// The task's status: its state, and when it was reached.
pub fn status(record: &RequestRecord, version: Version) -> Value {
    let at = record
        .resolution
        .as_ref()
        .map_or(record.created_at, |r| r.resolved_at);
    json!({
        "state": TaskState::of(record.status).name(version),
        "timestamp": time(at),
    })
}

/// The `outcome` artifact of a resolved request; `None` while it is pending.
pub fn artifact(record: &RequestRecord, version: Version) -> Option<Value> {
    let outcome = OutcomeBody::from(&record.outcome()?);
    let data = serde_json::to_value(outcome).ok()?;
    let part = match version {
        Version::V10 => json!({"data": data, "mediaType": "application/json"}),
        Version::V03 => json!({"kind": "data", "data": data}),
    };
    Some(json!({
        "artifactId": "outcome",
        "name": "outcome",
        "description": "How the request was resolved: the answers, who gave them and through what.",
        "parts": [part],
    }))
}

/// The task of `record`. `answer_url`, for callers who may see it, is put in its metadata.
pub fn task(record: &RequestRecord, version: Version, answer_url: Option<&str>) -> Value {
    let mut task = json!({
        "id": record.id,
        "contextId": context_id(record),
        "status": status(record, version),
    });
    if let Some(artifact) = artifact(record, version) {
        task["artifacts"] = json!([artifact]);
    }
    if let Some(url) = answer_url {
        task["metadata"] = json!({"answerUrl": url});
    }
    if version == Version::V03 {
        task["kind"] = json!("task");
    }
    task
}

/// A status update of the task, the last of a stream when the task has ended.
pub fn status_update(record: &RequestRecord, version: Version) -> Value {
    let mut event = json!({
        "taskId": record.id,
        "contextId": context_id(record),
        "status": status(record, version),
    });
    if version == Version::V03 {
        event["kind"] = json!("status-update");
        event["final"] = json!(TaskState::of(record.status).is_terminal());
    }
    event
}

/// The artifact update that carries a resolved task's outcome; `None` while it is pending.
pub fn artifact_update(record: &RequestRecord, version: Version) -> Option<Value> {
    let mut event = json!({
        "taskId": record.id,
        "contextId": context_id(record),
        "artifact": artifact(record, version)?,
        "lastChunk": true,
    });
    if version == Version::V03 {
        event["kind"] = json!("artifact-update");
    }
    Some(event)
}

/// The name a task's push configuration is kept under in the store.
pub fn push_key(task_id: &str) -> String {
    format!("a2a-push:{task_id}")
}

/// A task's push configuration as kept: where its resolution is POSTed (the request's
/// `callback_url`, so the webhook outbox delivers it) and with what credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushConfig {
    pub id: String,
    pub tenant: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// `Authorization: <scheme> <credentials>` on every notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    /// The version the configuration was made in, which its notifications are written in.
    pub version: Version,
    /// Deleted by the client: the resolution's delivery is dropped instead of sent.
    #[serde(default)]
    pub deleted: bool,
}

impl PushConfig {
    /// The notification of `record`'s resolution: a 1.0 `StreamResponse` holding the task, or
    /// the 0.3 task itself.
    pub fn body(&self, record: &RequestRecord) -> Value {
        let task = task(record, self.version, None);
        match self.version {
            Version::V10 => json!({"task": task}),
            Version::V03 => task,
        }
    }

    /// The headers of every notification besides its content type.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(token) = &self.token {
            headers.push(("x-a2a-notification-token", token.clone()));
        }
        if let (Some(scheme), Some(credentials)) = (&self.scheme, &self.credentials) {
            headers.push(("authorization", format!("{scheme} {credentials}")));
        }
        headers
    }
}
