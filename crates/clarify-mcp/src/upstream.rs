//! Where requests go: a store opened in this process, or a clarify server over HTTP.
//!
//! Both take the same raw tool arguments and give back the same outcome, the wire's
//! [`OutcomeBody`] (on a store, made from the stored outcome as the server makes it), so the
//! tools do not care which one they talk to. On a store, the arguments enter the domain through
//! [`clarify_core::parse_request`] here; on a server, the server does exactly that with its own
//! limits (a server may allow more options than the default), and its refusal comes back with
//! the same message.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use clarify_client::wire::parse_time;
use clarify_client::{Client, ClientError, OutcomeBody, RecordBody};
use clarify_core::{Limits, NewRequest};
use clarify_store::{Actor, RequestRecord, ResolveError, Store};
use serde_json::Value;

use crate::error::ToolError;

/// How long a remote `ask_human` keeps trying to create its request once the server has been
/// seen (it restarts, or its store is briefly out of reach); under an idempotency key, so it
/// never asks twice.
const CREATE_RETRY_WINDOW: Duration = Duration::from_secs(60);

/// What [`Observer::admit`] decides: `Err((code, message))` refuses the request.
pub type Admission<'a> = Pin<Box<dyn Future<Output = Result<(), (String, String)>> + Send + 'a>>;

/// Hears about changes made through the MCP tools on an in-process store, so the host (the
/// HTTP server) can wake its event streams and count them, as it does for its own routes.
pub trait Observer: Send + Sync + fmt::Debug {
    /// The host's own checks of a valid request before it is stored (what its `callback_url`
    /// may reach): `Err((code, message))` refuses it, and nothing is stored.
    fn admit<'a>(&'a self, _request: &'a NewRequest) -> Admission<'a> {
        Box::pin(async { Ok(()) })
    }
    fn created(&self, record: &RequestRecord);
    fn resolved(&self, record: &RequestRecord);
    /// The signed answer link of request `id`, when the host serves one (MCP clients that show
    /// links are sent it for questions their form cannot hold).
    fn answer_url(&self, _id: &str) -> Option<String> {
        None
    }
}

/// Where the tools send requests.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A store opened by this process, for one tenant.
    Store(Embedded),
    /// A clarify server, through its HTTP API with one key (whose tenant scopes everything).
    Server(Remote),
}

impl Upstream {
    /// A clarify server, through its HTTP API with `client`'s key.
    pub fn server(client: Client) -> Self {
        Self::Server(Remote {
            client,
            tokens: Arc::default(),
        })
    }
}

/// A clarify server and what this process holds for the requests it created there.
///
/// Answers given in the MCP client go to the server's `POST /v1/requests/{id}/client-answer`,
/// which records them on the key's behalf through `mcp`, as `/mcp` does for its sessions. That
/// is simpler than forwarding the session to `/mcp`: this process keeps its one HTTP client,
/// its waits and its retries, and the server checks one token instead of proxying a protocol.
#[derive(Debug, Clone)]
pub struct Remote {
    client: Client,
    /// Each pending request's `client_answer_token`, by request id: what lets this key record
    /// the answer its MCP client's user gave. The server hands one out only in the response that
    /// created the request, to the key that created it, so an agent key answers nothing else
    /// (it answers nothing over `/answer`); that is why the client's form is asked here only for
    /// requests this process created. Dropped once the request is resolved.
    tokens: Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
}

impl Remote {
    fn token(&self, id: &str) -> Option<String> {
        self.tokens.lock().ok()?.get(id).cloned()
    }

    fn forget(&self, id: &str) {
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.remove(id);
        }
    }
}

/// A store and the tenant whose requests the tools create and read.
#[derive(Debug, Clone)]
pub struct Embedded {
    store: Store,
    tenant: String,
    limits: Limits,
    observer: Option<Arc<dyn Observer>>,
    /// Who the event log names as authenticated for an answer or cancellation made here
    /// (`key:<name>` behind `/mcp`); `None` for a local process no key identifies.
    principal: Option<String>,
}

impl Embedded {
    pub fn new(store: Store, tenant: impl Into<String>, limits: Limits) -> Self {
        Self {
            store,
            tenant: tenant.into(),
            limits,
            observer: None,
            principal: None,
        }
    }

    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The store itself.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The same store and limits for another tenant, acting for the key `principal` names.
    pub(crate) fn for_caller(&self, tenant: &str, principal: String) -> Self {
        Self {
            tenant: tenant.to_owned(),
            principal: Some(principal),
            ..self.clone()
        }
    }

    /// `by`, through MCP, as this instance's principal.
    fn actor(&self, by: &str) -> Actor {
        Actor {
            principal: self.principal.clone(),
            ..Actor::new(by, "mcp")
        }
    }
}

/// A request just asked.
#[derive(Debug)]
pub(crate) struct Opened {
    pub id: String,
    /// How long the human has, from creation; `None` when it never expires.
    pub timeout: Option<Duration>,
}

/// A request as it now stands.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub request: Arc<clarify_core::NewRequest>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it was resolved (the latest change), if it was.
    pub resolved_at: Option<chrono::DateTime<chrono::Utc>>,
    pub status: clarify_core::Status,
    /// The outcome, once resolved.
    pub outcome: Option<OutcomeBody>,
}

/// What answering through the MCP client came to.
#[derive(Debug)]
pub(crate) enum Answered {
    /// This answer resolved the request (or lost to an earlier one): the outcome.
    Resolved(Box<OutcomeBody>),
    /// The answer does not fit; the request stays pending.
    Invalid(String),
}

/// Where a request stands.
#[derive(Debug)]
pub(crate) enum Polled {
    /// Resolved: the outcome.
    Resolved(Box<OutcomeBody>),
    Pending,
}

impl Upstream {
    /// Creates a request from raw tool arguments. `agent` names the asking agent when the
    /// arguments do not.
    pub(crate) async fn ask(
        &self,
        mut raw: Value,
        agent: Option<&str>,
    ) -> Result<Opened, ToolError> {
        match self {
            Self::Store(e) => {
                let mut request = clarify_core::parse_request(&raw, &e.limits)?;
                if request.agent.is_none() {
                    request.agent = agent.map(str::to_owned);
                }
                if let Some(o) = &e.observer {
                    o.admit(&request)
                        .await
                        .map_err(|(code, message)| ToolError::Refused { code, message })?;
                }
                let created = e.store.create(&e.tenant, request).await?;
                if created.created
                    && let Some(o) = &e.observer
                {
                    o.created(&created.record);
                }
                let record = created.record;
                let timeout = record
                    .expires_at
                    .and_then(|at| (at - record.created_at).to_std().ok());
                Ok(Opened {
                    id: record.id,
                    timeout,
                })
            }
            Self::Server(remote @ Remote { client, .. }) => {
                if let (Some(obj), Some(agent)) = (raw.as_object_mut(), agent)
                    && obj.get("agent").is_none_or(Value::is_null)
                {
                    obj.insert("agent".to_owned(), Value::String(agent.to_owned()));
                }
                let (record, _) = client
                    .create_retrying(&raw, CREATE_RETRY_WINDOW, |e| {
                        tracing::warn!(error = %e, "creating a request on the server; retrying");
                    })
                    .await
                    .map_err(|e| ToolError::from_client(e, None))?;
                if let Some(token) = &record.client_answer_token
                    && let Ok(mut tokens) = remote.tokens.lock()
                {
                    tokens.insert(record.id.clone(), token.clone());
                }
                Ok(Opened {
                    timeout: remote_timeout(&record),
                    id: record.id,
                })
            }
        }
    }

    /// Waits up to `wait` for the request to resolve (a zero wait only looks).
    pub(crate) async fn poll(&self, id: &str, wait: Duration) -> Result<Polled, ToolError> {
        match self {
            Self::Store(e) => {
                let record = e
                    .store
                    .wait(&e.tenant, id, wait)
                    .await
                    .map_err(|err| ToolError::from_resolve(err, id))?;
                Ok(match record.outcome() {
                    Some(outcome) => Polled::Resolved(Box::new(OutcomeBody::from(&outcome))),
                    None => Polled::Pending,
                })
            }
            Self::Server(remote @ Remote { client, .. }) => {
                let record = if wait.is_zero() {
                    client.get(id).await
                } else {
                    // The API long-polls in whole seconds.
                    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                    client.wait(id, seconds).await
                }
                .map_err(|e| ToolError::from_client(e, Some(id)))?;
                Ok(match record.outcome {
                    Some(outcome) => {
                        remote.forget(id);
                        Polled::Resolved(Box::new(outcome))
                    }
                    None => Polled::Pending,
                })
            }
        }
    }

    /// Cancels the request on behalf of `by`; the outcome it now has (someone else's, when
    /// another resolution came first).
    pub(crate) async fn cancel(
        &self,
        id: &str,
        by: &str,
    ) -> Result<Option<OutcomeBody>, ToolError> {
        match self {
            Self::Store(e) => {
                let record = match e.store.cancel(&e.tenant, id, &e.actor(by)).await {
                    Ok(record) => {
                        if let Some(o) = &e.observer {
                            o.resolved(&record);
                        }
                        record
                    }
                    Err(ResolveError::AlreadyResolved(record)) => *record,
                    Err(err) => return Err(ToolError::from_resolve(err, id)),
                };
                Ok(record.outcome().map(|o| OutcomeBody::from(&o)))
            }
            Self::Server(Remote { client, .. }) => {
                let record = match client.cancel(id).await {
                    Ok(record) => record,
                    Err(ClientError::Api {
                        record: Some(record),
                        ..
                    }) => *record,
                    Err(err) => return Err(ToolError::from_client(err, Some(id))),
                };
                Ok(record.outcome)
            }
        }
    }
}

impl Upstream {
    /// The request `id` as it now stands.
    pub(crate) async fn snapshot(&self, id: &str) -> Result<Snapshot, ToolError> {
        match self {
            Self::Store(e) => {
                let record = e
                    .store
                    .get(&e.tenant, id)
                    .await?
                    .ok_or_else(|| ToolError::NotFound(id.to_owned()))?;
                Ok(Snapshot {
                    outcome: record.outcome().map(|o| OutcomeBody::from(&o)),
                    resolved_at: record.resolution.as_ref().map(|r| r.resolved_at),
                    request: Arc::clone(&record.request),
                    created_at: record.created_at,
                    status: record.status,
                })
            }
            Self::Server(Remote { client, .. }) => {
                let record = client
                    .get(id)
                    .await
                    .map_err(|e| ToolError::from_client(e, Some(id)))?;
                let request = record.request().map_err(|e| {
                    ToolError::Unreachable(format!(
                        "the server sent a request this client cannot read: {e}"
                    ))
                })?;
                Ok(Snapshot {
                    request: Arc::new(request),
                    created_at: parse_time(&record.created_at).unwrap_or_else(chrono::Utc::now),
                    resolved_at: record.resolved_at.as_deref().and_then(parse_time),
                    status: record
                        .status
                        .parse()
                        .unwrap_or(clarify_core::Status::Pending),
                    outcome: record.outcome,
                })
            }
        }
    }

    /// Whether an answer given in the MCP client to request `id` can be stored here: on a store
    /// this process holds, and on a server for a request this process created (it holds the
    /// request's `client_answer_token`).
    pub(crate) fn answers_in_client(&self, id: &str) -> bool {
        match self {
            Self::Store(_) => true,
            Self::Server(remote) => remote.token(id).is_some(),
        }
    }

    /// Answers request `id` with an answer body, as `by` through MCP: the same path as every
    /// other answer, so its announcements are edited to the outcome.
    pub(crate) async fn answer(
        &self,
        id: &str,
        body: &Value,
        by: &str,
    ) -> Result<Answered, ToolError> {
        let e = match self {
            Self::Store(e) => e,
            Self::Server(remote) => {
                // Recorded by the server as this key's answer through `mcp`, like `/mcp`'s.
                let Some(token) = remote.token(id) else {
                    return Err(ToolError::Refused {
                        code: "not_the_creator".to_owned(),
                        message: "this process did not create the request, so it cannot record an answer to it".to_owned(),
                    });
                };
                let answered = if body.get("skip") == Some(&Value::Bool(true)) {
                    remote
                        .client
                        .client_answer(id, &token, &serde_json::json!({"skip": true}))
                        .await
                } else {
                    remote.client.client_answer(id, &token, body).await
                };
                if !matches!(answered, Err(ClientError::Api { status: 422, .. })) {
                    remote.forget(id);
                }
                return match answered {
                    Ok(outcome) => Ok(Answered::Resolved(Box::new(outcome))),
                    Err(ClientError::Api {
                        record: Some(record),
                        ..
                    }) => Ok(match record.outcome {
                        Some(outcome) => Answered::Resolved(Box::new(outcome)),
                        None => Answered::Invalid(format!("request {id} is {}", record.status)),
                    }),
                    Err(ClientError::Api {
                        status: 422,
                        message,
                        ..
                    }) => Ok(Answered::Invalid(message)),
                    Err(err) => Err(ToolError::from_client(err, Some(id))),
                };
            }
        };
        let actor = e.actor(by);
        let skip = body.get("skip") == Some(&Value::Bool(true));
        let resolved = if skip {
            e.store.skip(&e.tenant, id, &actor).await
        } else {
            e.store.answer(&e.tenant, id, body, &actor).await
        };
        let record = match resolved {
            Ok(record) => {
                if let Some(o) = &e.observer {
                    o.resolved(&record);
                }
                record
            }
            Err(ResolveError::AlreadyResolved(record)) => *record,
            Err(ResolveError::Invalid(err)) => return Ok(Answered::Invalid(err.to_string())),
            Err(err) => return Err(ToolError::from_resolve(err, id)),
        };
        Ok(match record.outcome() {
            Some(outcome) => Answered::Resolved(Box::new(OutcomeBody::from(&outcome))),
            // A vote on a quorum request; such requests are never asked in the client.
            None => Answered::Invalid("the request is still waiting for other votes".to_owned()),
        })
    }

    /// The signed answer link of request `id`, when there is one.
    pub(crate) async fn answer_url(&self, id: &str) -> Option<String> {
        match self {
            Self::Store(e) => e.observer.as_ref().and_then(|o| o.answer_url(id)),
            Self::Server(Remote { client, .. }) => {
                client.get(id).await.ok().and_then(|r| r.answer_url)
            }
        }
    }

    /// Whether one of the server's rules allows or denies `action` by `agent`: the approval
    /// raised for it is then resolved by that rule when created, whatever grants say. A server
    /// without the policy route has no rules.
    pub(crate) async fn rule_decides(
        &self,
        action: &clarify_core::Action,
        agent: Option<&str>,
    ) -> Result<bool, ToolError> {
        use clarify_core::rules::{Call, Decide};
        match self {
            Self::Store(e) => {
                let call = Call {
                    tool: action.name.clone(),
                    args: action.arguments.clone(),
                    agent: agent.map(str::to_owned),
                    ..Call::default()
                };
                Ok(e.store.check_rules(&call).is_some_and(|v| {
                    v.matched
                        .is_some_and(|m| matches!(m.decide, Decide::Allow | Decide::Deny))
                }))
            }
            Self::Server(Remote { client, .. }) => {
                let body = serde_json::json!({
                    "action": {"name": action.name, "arguments": action.arguments},
                    "agent": agent,
                });
                match client.check_policy(&body).await {
                    Ok(decided) => Ok(matches!(
                        decided["decision"].as_str(),
                        Some("allow" | "deny")
                    )),
                    Err(clarify_client::ClientError::Api { status: 404, .. }) => Ok(false),
                    Err(e) => Err(ToolError::from_client(e, None)),
                }
            }
        }
    }

    /// Whether a stored grant lets `action` run in `session` without asking.
    pub(crate) async fn granted(
        &self,
        action: &clarify_core::Action,
        session: Option<&str>,
    ) -> Result<bool, ToolError> {
        match self {
            Self::Store(e) => Ok(e
                .store
                .check_grant(&e.tenant, action, session)
                .await?
                .is_some()),
            Self::Server(Remote { client, .. }) => {
                let action =
                    serde_json::json!({"name": action.name, "arguments": action.arguments});
                let checked = client
                    .check_grant(&action, session)
                    .await
                    .map_err(|e| ToolError::from_client(e, None))?;
                Ok(checked["granted"] == true)
            }
        }
    }
}

/// A server record's time limit: from `created_at` to `expires_at`.
fn remote_timeout(record: &RecordBody) -> Option<Duration> {
    let expires_at = parse_time(record.expires_at.as_deref()?)?;
    (expires_at - parse_time(&record.created_at)?).to_std().ok()
}
