//! The Rust API agents use: ask a human and await the outcome, or submit now and come back later.
//! Approval gating of a model's tool calls, on top of it, is in [`gate`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! let clarify = clarify_store::Clarify::open("sqlite://clarify.db").await?;
//! let asked = clarify
//!     .ask(&serde_json::json!({"question": "Deploy to prod?", "choices": ["yes", "no"]}))
//!     .await?;
//! match asked.outcome(Duration::from_secs(600)).await? {
//!     Some(outcome) => println!("{}", serde_json::to_string(&outcome)?),
//!     None => println!("still pending; resume later with {}", asked.id()),
//! }
//! # Ok(()) }
//! ```

pub(crate) mod gate;

use std::time::Duration;

use clarify_core::{Limits, NewRequest, Outcome, parse_request};
use serde_json::Value;

use crate::error::{AskError, ResolveError, StoreError};
use crate::record::{Actor, ListQuery, Page, RequestRecord};
use crate::{Store, StoreOptions};

/// An agent's handle on clarify: one tenant, one agent name, one set of limits.
#[derive(Debug, Clone)]
pub struct Clarify {
    store: Store,
    tenant: String,
    agent: Option<String>,
    limits: Limits,
    actor: Actor,
}

impl Clarify {
    /// The default tenant of a store used without keys.
    pub const DEFAULT_TENANT: &'static str = "default";

    /// Opens the store at `url` (`sqlite://PATH`, `postgres://...`, `memory:`) with the system
    /// clock and random ids.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Ok(Self::new(Store::open(url, StoreOptions::default()).await?))
    }

    pub fn new(store: Store) -> Self {
        Self {
            store,
            tenant: Self::DEFAULT_TENANT.to_owned(),
            agent: None,
            limits: Limits::default(),
            actor: Actor::new("rust", "rust"),
        }
    }

    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// Names the agent on requests that do not name one.
    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Who answers through this handle (`answer`, `skip`, `cancel`).
    pub fn with_actor(mut self, actor: Actor) -> Self {
        self.actor = actor;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The tenant this handle asks in.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Asks: validates `raw` (any accepted shape), stores it, and returns a handle to await.
    pub async fn ask(&self, raw: &Value) -> Result<Asked, AskError> {
        let request = parse_request(raw, &self.limits)?;
        Ok(self.ask_request(request).await?)
    }

    /// Asks with an already-validated request.
    pub async fn ask_request(&self, mut request: NewRequest) -> Result<Asked, StoreError> {
        if request.agent.is_none() {
            request.agent = self.agent.clone();
        }
        let created = self.store.create(&self.tenant, request).await?;
        Ok(Asked {
            store: self.store.clone(),
            tenant: self.tenant.clone(),
            record: created.record,
            created: created.created,
        })
    }

    /// Asks without waiting: returns the request id at once, for engines that suspend a
    /// workflow and resume it later with [`Clarify::outcome`].
    pub async fn submit(&self, raw: &Value) -> Result<String, AskError> {
        Ok(self.ask(raw).await?.record.id)
    }

    /// The outcome of request `id`, waiting up to `timeout`; `None` if it is still pending.
    pub async fn outcome(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Result<Option<Outcome>, ResolveError> {
        Ok(self.store.wait(&self.tenant, id, timeout).await?.outcome())
    }

    /// Answers request `id` with an answer body (see the contract's answer shapes).
    pub async fn answer(&self, id: &str, body: &Value) -> Result<Outcome, ResolveError> {
        let record = self
            .store
            .answer(&self.tenant, id, body, &self.actor)
            .await?;
        record.outcome().ok_or(ResolveError::NotFound)
    }

    pub async fn skip(&self, id: &str) -> Result<Outcome, ResolveError> {
        let record = self.store.skip(&self.tenant, id, &self.actor).await?;
        record.outcome().ok_or(ResolveError::NotFound)
    }

    pub async fn cancel(&self, id: &str) -> Result<Outcome, ResolveError> {
        let record = self.store.cancel(&self.tenant, id, &self.actor).await?;
        record.outcome().ok_or(ResolveError::NotFound)
    }

    pub async fn get(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        self.store.get(&self.tenant, id).await
    }

    pub async fn list(&self, query: &ListQuery) -> Result<Page, StoreError> {
        self.store.list(&self.tenant, query).await
    }
}

/// A request that was asked; await its outcome.
#[derive(Debug, Clone)]
pub struct Asked {
    store: Store,
    tenant: String,
    /// The request as stored (or the existing one an idempotency key or `dedupe` returned).
    pub record: RequestRecord,
    /// False when an existing request was returned instead of a new one.
    pub created: bool,
}

impl Asked {
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The outcome, waiting up to `timeout`; `None` if the request is still pending then.
    pub async fn outcome(&self, timeout: Duration) -> Result<Option<Outcome>, ResolveError> {
        Ok(self
            .store
            .wait(&self.tenant, &self.record.id, timeout)
            .await?
            .outcome())
    }

    /// The outcome, waiting as long as it takes (until the request's own deadline, if any).
    pub async fn resolved(&self) -> Result<Outcome, ResolveError> {
        loop {
            if let Some(outcome) = self.outcome(Duration::from_secs(3_600)).await? {
                return Ok(outcome);
            }
        }
    }
}
