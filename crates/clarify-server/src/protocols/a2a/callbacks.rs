//! Push notification configurations: where a task's end is POSTed, and with what credentials.
//!
//! A configuration is given with the message that creates the task (1.0:
//! `configuration.taskPushNotificationConfig`; 0.3: `configuration.pushNotificationConfig`).
//! Its URL becomes the request's `callback_url`, checked by the outbound guard like any other
//! (a refused address is `-32602`), so the webhook outbox queues the notification in the
//! transaction that resolves the request and delivers it at least once, retrying, also after a
//! restart. Its id, token and `authentication` are kept in the store beside it
//! ([`a2a::push_key`]); the webhook worker reads them to send an A2A notification (the task,
//! `Authorization: <scheme> <credentials>`, `X-A2A-Notification-Token`) instead of a clarify
//! webhook. A task has one configuration: `CreateTaskPushNotificationConfig` may give the
//! URL its message gave new credentials, and `DeleteTaskPushNotificationConfig` drops the
//! notification; a request's `callback_url` is fixed when it is created, so another URL is
//! refused.

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{Call, RpcError, kind, result, string};
use crate::shared::a2a::{self, PushConfig, Version};
use crate::shared::json::Json;

/// The id of a configuration given without one.
const DEFAULT_ID: &str = "default";

/// A configuration as a call gives it.
#[derive(Debug)]
pub(super) struct Given {
    /// Where its URL was, for messages.
    pub field: &'static str,
    pub id: Option<String>,
    pub url: String,
    pub token: Option<String>,
    pub scheme: Option<String>,
    pub credentials: Option<String>,
}

/// The configuration a message's `configuration` gives, if any.
pub(super) fn inline(configuration: &Value, version: Version) -> Result<Option<Given>, RpcError> {
    let (name, field) = match version {
        Version::V10 => (
            "taskPushNotificationConfig",
            "params.configuration.taskPushNotificationConfig.url",
        ),
        Version::V03 => (
            "pushNotificationConfig",
            "params.configuration.pushNotificationConfig.url",
        ),
    };
    match configuration.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(config) => parse(config, version, field).map(Some),
    }
}

/// A configuration object of `version`; `field` names its URL in messages.
fn parse(config: &Value, version: Version, field: &'static str) -> Result<Given, RpcError> {
    if !config.is_object() {
        return Err(RpcError::params(format!(
            "{}: must be an object, got {}",
            field.trim_end_matches(".url"),
            kind(config)
        )));
    }
    let url = string(config, "url")?
        .filter(|u| !u.is_empty())
        .ok_or_else(|| RpcError::params(format!("{field}: required")))?;
    let (scheme, credentials) = match config.get("authentication") {
        None | Some(Value::Null) => (None, None),
        Some(auth) => {
            let scheme = match version {
                Version::V10 => string(auth, "scheme")?,
                Version::V03 => match auth.get("schemes") {
                    Some(Value::Array(schemes)) => {
                        schemes.iter().find_map(|s| s.as_str().map(str::to_owned))
                    }
                    _ => None,
                },
            };
            (scheme, string(auth, "credentials")?)
        }
    };
    Ok(Given {
        field,
        id: string(config, "id")?.filter(|i| !i.is_empty()),
        url,
        token: string(config, "token")?.filter(|t| !t.is_empty()),
        scheme,
        credentials,
    })
}

/// Keeps `given` as task `task_id`'s configuration.
pub(super) async fn keep(call: &Call, task_id: &str, given: Given) -> Result<PushConfig, RpcError> {
    let config = PushConfig {
        id: given.id.unwrap_or_else(|| DEFAULT_ID.to_owned()),
        tenant: call.tenant().to_owned(),
        url: given.url,
        token: given.token,
        scheme: given.scheme,
        credentials: given.credentials,
        version: call.version,
        deleted: false,
    };
    store(call, task_id, &config).await?;
    Ok(config)
}

async fn store(call: &Call, task_id: &str, config: &PushConfig) -> Result<(), RpcError> {
    let bytes = serde_json::to_vec(config).map_err(|e| RpcError::store(&e))?;
    call.state
        .store
        .keep(&a2a::push_key(task_id), bytes)
        .await
        .map_err(|e| RpcError::store(&e))
}

/// Task `task_id`'s request (its `callback_url`) and live configuration, in the caller's tenant.
async fn read(
    call: &Call,
    task_id: &str,
) -> Result<(Option<String>, Option<PushConfig>), RpcError> {
    let record = call
        .state
        .store
        .get(call.tenant(), task_id)
        .await
        .map_err(|e| RpcError::store(&e))?
        .ok_or_else(|| RpcError::task_not_found(task_id))?;
    let kept = call
        .state
        .store
        .kept(&a2a::push_key(task_id))
        .await
        .map_err(|e| RpcError::store(&e))?;
    let config = kept
        .and_then(|bytes| serde_json::from_slice::<PushConfig>(&bytes).ok())
        .filter(|c| c.tenant == call.tenant() && !c.deleted);
    Ok((record.request.callback_url.clone(), config))
}

/// A configuration as `version` writes it.
fn render(config: &PushConfig, task_id: &str, version: Version) -> Value {
    let mut inner = json!({"id": config.id, "url": config.url});
    if let Some(token) = &config.token {
        inner["token"] = json!(token);
    }
    if let Some(scheme) = &config.scheme {
        inner["authentication"] = match version {
            Version::V10 => json!({"scheme": scheme, "credentials": config.credentials}),
            Version::V03 => json!({"schemes": [scheme], "credentials": config.credentials}),
        };
    }
    match version {
        Version::V10 => {
            inner["taskId"] = json!(task_id);
            inner
        }
        Version::V03 => json!({"taskId": task_id, "pushNotificationConfig": inner}),
    }
}

/// The task id and configuration id a get or delete names.
fn names(call: &Call) -> Result<(String, Option<String>), RpcError> {
    match call.version {
        Version::V10 => Ok((
            call.task_id("taskId")?,
            string(&call.params, "id")?.filter(|i| !i.is_empty()),
        )),
        Version::V03 => Ok((
            call.task_id("id")?,
            string(&call.params, "pushNotificationConfigId")?.filter(|i| !i.is_empty()),
        )),
    }
}

fn not_found(config: Option<&str>, task_id: &str) -> RpcError {
    RpcError::task_not_found(task_id).with_message(format!(
        "task {} has no push configuration{}",
        clarify_core::quoted(task_id),
        config
            .map(|c| format!(" {}", clarify_core::quoted(c)))
            .unwrap_or_default()
    ))
}

/// `CreateTaskPushNotificationConfig` (0.3: `tasks/pushNotificationConfig/set`).
pub(super) async fn create(call: Call) -> Result<Response, RpcError> {
    let (task_id, given) = match call.version {
        Version::V10 => (
            call.task_id("taskId")?,
            parse(&call.params, Version::V10, "params.url")?,
        ),
        Version::V03 => {
            let config = call
                .params
                .get("pushNotificationConfig")
                .ok_or_else(|| RpcError::params("params.pushNotificationConfig: required"))?;
            (
                call.task_id("taskId")?,
                parse(config, Version::V03, "params.pushNotificationConfig.url")?,
            )
        }
    };
    let (callback_url, _) = read(&call, &task_id).await?;
    if callback_url.as_deref() != Some(given.url.as_str()) {
        return Err(RpcError::unsupported(
            "a task's push URL is given with the message that creates it (configuration.taskPushNotificationConfig) and cannot change; this call may only give that URL new credentials",
        ));
    }
    let config = keep(&call, &task_id, given).await?;
    Ok(Json(result(&call.id, render(&config, &task_id, call.version))).into_response())
}

/// `GetTaskPushNotificationConfig` (0.3: `tasks/pushNotificationConfig/get`).
pub(super) async fn get(call: Call) -> Result<Response, RpcError> {
    let (task_id, id) = names(&call)?;
    let (_, config) = read(&call, &task_id).await?;
    let config = config
        .filter(|c| id.as_ref().is_none_or(|id| *id == c.id))
        .ok_or_else(|| not_found(id.as_deref(), &task_id))?;
    Ok(Json(result(&call.id, render(&config, &task_id, call.version))).into_response())
}

/// `ListTaskPushNotificationConfigs` (0.3: `tasks/pushNotificationConfig/list`).
pub(super) async fn list(call: Call) -> Result<Response, RpcError> {
    let task_id = match call.version {
        Version::V10 => call.task_id("taskId")?,
        Version::V03 => call.task_id("id")?,
    };
    let (_, config) = read(&call, &task_id).await?;
    let configs: Vec<Value> = config
        .iter()
        .map(|c| render(c, &task_id, call.version))
        .collect();
    let body = match call.version {
        Version::V10 => json!({"configs": configs, "nextPageToken": ""}),
        Version::V03 => json!(configs),
    };
    Ok(Json(result(&call.id, body)).into_response())
}

/// `DeleteTaskPushNotificationConfig` (0.3: `tasks/pushNotificationConfig/delete`): the task's
/// end is no longer sent. Deleting what is gone succeeds.
pub(super) async fn delete(call: Call) -> Result<Response, RpcError> {
    let (task_id, id) = names(&call)?;
    let (_, config) = read(&call, &task_id).await?;
    if let Some(mut config) = config.filter(|c| id.as_ref().is_none_or(|id| *id == c.id)) {
        config.deleted = true;
        store(&call, &task_id, &config).await?;
    }
    let body = match call.version {
        Version::V10 => json!({}),
        Version::V03 => Value::Null,
    };
    Ok(Json(result(&call.id, body)).into_response())
}
