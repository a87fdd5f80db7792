//! Approval gating over a store: a tool call the model proposes runs only when the policy or a
//! remembered grant allows it, or a human approves it.
//!
//! The decisions are core's ([`Policy::decide`], [`ApprovalSpec::request`], [`settle`]); this
//! module adds the waiting and the remembering. A call goes through [`Gate::propose`], which
//! either settles it at once (allowed, granted, blocked) or raises an `approval` request; the
//! request is settled by [`Gate::settle`], which reads the action back from the stored request,
//! so an agent that stops in between needs to keep only the request id. Approvals given with
//! scope `session` are remembered for the session the call was made in, `always` for the whole
//! tenant, both in the store. [`Gate::call`] does all of it in place for an agent that waits.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use clarify_core::{Action, policy::Policy};
//! use clarify_store::{Clarify, Gate, Gated};
//! let clarify = Clarify::open("sqlite://clarify.db").await?;
//! let gate = Gate::new(clarify, Policy::new(&["read_*"], &["rm"])).with_session("chat-7");
//! let action = Action {
//!     name: "deploy".into(),
//!     arguments: serde_json::json!({"env": "prod"}),
//! };
//! let result = match gate.call(&action, Some("call_1"), |args| async move {
//!     format!("deployed with {args}")
//! }).await? {
//!     Gated::Ran { output, .. } => output,
//!     Gated::Refused(refusal) => refusal.tool_result(),
//! };
//! # let _ = result; Ok(()) }
//! ```

use std::future::Future;
use std::time::Duration;

use clarify_core::policy::{
    ApprovalError, ApprovalReply, ApprovalSpec, Policy, PolicyDecision, Refusal, Verdict,
    approval_action, settle,
};
use clarify_core::{Action, Scope};
use serde_json::Value;

use crate::agent::{Asked, Clarify};
use crate::error::{AskError, ResolveError, StoreError};

/// Why a gated call could not be decided. Nothing ran.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// The idempotency key returned an approval of another call.
    #[error(
        "idempotency key {key:?} already belongs to request {request_id}, which asks about another call; use one key per call"
    )]
    KeyReused { key: String, request_id: String },
}

/// What became of a proposed call before any human saw it.
// One is made per proposed call and consumed at once; boxing `Asked` would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Proposal {
    /// Run it now with these arguments: the policy allows it (`granted: None`) or a human
    /// granted it earlier with this scope.
    Run {
        arguments: Value,
        granted: Option<Scope>,
    },
    /// Do not run it: the policy denies the tool.
    Refuse(Refusal),
    /// A human must decide: an approval request was raised; settle it with [`Gate::settle`].
    Ask(Asked),
}

/// How a call made through [`Gate::call`] ended.
#[derive(Debug)]
pub enum Gated<T> {
    /// The tool ran with `arguments` (a human's edit of the proposed ones when `edited`).
    Ran {
        output: T,
        arguments: Value,
        edited: bool,
    },
    /// The tool did not run; [`Refusal::tool_result`] tells the model why.
    Refused(Refusal),
}

/// Gates tool calls of one agent session.
#[derive(Debug, Clone)]
pub struct Gate {
    clarify: Clarify,
    policy: Policy,
    spec: ApprovalSpec,
    session: Option<String>,
}

impl Gate {
    /// A gate asking through `clarify` whatever `policy` does not settle, with every scope
    /// offered and no edits (see [`Gate::with_spec`]).
    pub fn new(clarify: Clarify, policy: Policy) -> Self {
        Self {
            clarify,
            policy,
            spec: ApprovalSpec::default(),
            session: None,
        }
    }

    /// The session calls are made in: the home of `session` grants, and the `session` of
    /// approval requests. Without one, `session` scope is not offered.
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// How approvals are asked: scopes offered, edits, time limit.
    pub fn with_spec(mut self, spec: ApprovalSpec) -> Self {
        self.spec = spec;
        self
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Decides a proposed call of `action`, raised by the model's tool call `tool_call_id`;
    /// raises an approval request when a human must decide. With an `idempotency_key`, proposing
    /// the same call again (an agent resumed after a crash) returns the request already raised.
    pub async fn propose(
        &self,
        action: &Action,
        tool_call_id: Option<&str>,
        idempotency_key: Option<&str>,
    ) -> Result<Proposal, GateError> {
        let session = self.session.as_deref();
        let grants = self
            .clarify
            .store()
            .grants(self.clarify.tenant(), &action.name)
            .await?;
        match self
            .policy
            .decide(&action.name, &action.arguments, session, &grants)
        {
            PolicyDecision::Allowed => Ok(Proposal::Run {
                arguments: action.arguments.clone(),
                granted: None,
            }),
            PolicyDecision::Granted(scope) => Ok(Proposal::Run {
                arguments: action.arguments.clone(),
                granted: Some(scope),
            }),
            PolicyDecision::Denied => Ok(Proposal::Refuse(Refusal::blocked(&action.name))),
            PolicyDecision::Ask => {
                let mut body = self.spec.request(action, tool_call_id, session);
                if let (Some(key), Value::Object(map)) = (idempotency_key, &mut body) {
                    map.insert("idempotency_key".to_owned(), Value::from(key));
                }
                let asked = self.clarify.ask(&body).await?;
                if !asked.created && approval_action(&asked.record.request) != Some(action) {
                    return Err(GateError::KeyReused {
                        key: idempotency_key.unwrap_or_default().to_owned(),
                        request_id: asked.record.id,
                    });
                }
                Ok(Proposal::Ask(asked))
            }
        }
    }

    /// Waits up to `timeout` for approval request `request_id` and settles it: returns what to
    /// do with the call. `None` while the request is still pending. (The grant a `session` or
    /// `always` approval gives was recorded by the store with the answer.)
    pub async fn settle(
        &self,
        request_id: &str,
        timeout: Duration,
    ) -> Result<Option<Verdict>, GateError> {
        let store = self.clarify.store();
        let record = store
            .wait(self.clarify.tenant(), request_id, timeout)
            .await?;
        let Some(outcome) = record.outcome() else {
            return Ok(None);
        };
        let action =
            approval_action(&record.request).ok_or_else(|| ApprovalError::NotAnApproval {
                request_id: request_id.to_owned(),
            })?;
        let reply = ApprovalReply::from_outcome(&outcome)?;
        Ok(Some(settle(
            action,
            record.request.session.as_deref(),
            &reply,
        )))
    }

    /// The whole flow in place: propose, wait for a human when one must decide (as long as the
    /// approval's own time limit allows), then run `tool` with the arguments to use, or not.
    pub async fn call<F, Fut, T>(
        &self,
        action: &Action,
        tool_call_id: Option<&str>,
        tool: F,
    ) -> Result<Gated<T>, GateError>
    where
        F: FnOnce(Value) -> Fut,
        Fut: Future<Output = T>,
    {
        let verdict = match self.propose(action, tool_call_id, None).await? {
            Proposal::Run { arguments, .. } => Verdict::Run {
                arguments,
                edited: false,
                grant: None,
            },
            Proposal::Refuse(refusal) => Verdict::Refuse(refusal),
            Proposal::Ask(asked) => loop {
                if let Some(verdict) = self.settle(asked.id(), Duration::from_secs(3_600)).await? {
                    break verdict;
                }
            },
        };
        Ok(match verdict {
            Verdict::Run {
                arguments, edited, ..
            } => Gated::Ran {
                output: tool(arguments.clone()).await,
                arguments,
                edited,
            },
            Verdict::Refuse(refusal) => Gated::Refused(refusal),
        })
    }
}
