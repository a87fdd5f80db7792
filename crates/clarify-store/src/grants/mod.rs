//! Stored grants: what a human's `session` or `always` approval lets through without asking.
//!
//! A grant is never made on its own: [`crate::Store`] derives the grants an answer gives
//! (core's [`clarify_core::policy::grants_of`]) and each backend records them in the transaction
//! that records the answer, so an answer and its grants commit together or not at all. They can
//! be listed, checked and revoked, through the [`Store`] methods here; [`suggest`] offers the
//! `always` grants people's repeated `once` approvals point to.
//!
//! Each backend keeps the same concern in its `grants.rs`.

pub(crate) mod suggest;

use chrono::{DateTime, TimeDelta, Utc};
use clarify_core::policy::Grant;
use clarify_core::{Action, Answers, NewRequest, Scope};

use crate::Store;
use crate::clock::IdGenerator;
use crate::codec::from_millis;
use crate::error::StoreError;
use crate::record::{Actor, RequestRecord};

/// A grant as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredGrant {
    /// Opaque, from the store's id generator.
    pub id: String,
    pub grant: Grant,
    /// The approval request whose answer gave it (unknown for grants stored before schema
    /// version 3).
    pub request_id: Option<String>,
    /// Who answered, when known.
    pub granted_by: Option<String>,
    pub created_at: DateTime<Utc>,
    /// When it stops matching (`grant_ttl_seconds` after it was given); `None` never.
    pub expires_at: Option<DateTime<Utc>>,
    /// How many calls it lets through (`grant_max_uses`); `None` any number.
    pub max_uses: Option<u32>,
    /// How many calls it let through so far.
    pub uses: u32,
}

impl StoredGrant {
    /// Whether it still matches at `now`: not past its time, not used up.
    pub fn live(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_none_or(|at| at > now) && self.max_uses.is_none_or(|m| self.uses < m)
    }
}

/// Which grants a listing returns.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GrantFilter<'a> {
    /// Only grants of this tool (lowercased, as grants store it).
    pub tool: Option<&'a str>,
    /// Only `session` grants of this session.
    pub session: Option<&'a str>,
}

impl GrantFilter<'_> {
    pub(crate) fn matches(&self, grant: &Grant) -> bool {
        self.tool.is_none_or(|t| grant.tool == t)
            && self
                .session
                .is_none_or(|s| grant.session.as_deref() == Some(s))
    }
}

/// The columns of a grant row, in [`GrantParts`] order.
pub(crate) const GRANT_COLUMNS: &str = "id, tool, arguments, scope, session, request_id, granted_by, created_at, expires_at, \
     max_uses, uses";

/// A grant row as the SQL backends read it.
#[derive(Debug)]
pub(crate) struct GrantParts {
    pub id: String,
    pub tool: String,
    pub arguments: String,
    pub scope: String,
    /// Empty for a grant without a session.
    pub session: String,
    pub request_id: Option<String>,
    pub granted_by: Option<String>,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub max_uses: Option<i64>,
    pub uses: i64,
}

impl GrantParts {
    pub(crate) fn decode(self) -> Result<StoredGrant, StoreError> {
        let scope = Scope::parse(&self.scope).ok_or_else(|| {
            StoreError::Corrupt(format!("grant scope {:?} is not a scope", self.scope))
        })?;
        let created_at = from_millis(self.created_at)
            .ok_or_else(|| StoreError::Corrupt(format!("grant time {}", self.created_at)))?;
        Ok(StoredGrant {
            id: self.id,
            grant: Grant {
                tool: self.tool,
                arguments: self.arguments,
                scope,
                session: (!self.session.is_empty()).then_some(self.session),
            },
            request_id: self.request_id,
            granted_by: self.granted_by,
            created_at,
            expires_at: self
                .expires_at
                .map(|t| {
                    from_millis(t).ok_or_else(|| StoreError::Corrupt(format!("grant expiry {t}")))
                })
                .transpose()?,
            max_uses: self.max_uses.and_then(|m| u32::try_from(m).ok()),
            uses: u32::try_from(self.uses).unwrap_or(u32::MAX),
        })
    }
}

impl Store {
    /// The grants of `tenant` for `tool`.
    pub async fn grants(&self, tenant: &str, tool: &str) -> Result<Vec<Grant>, StoreError> {
        let tool = tool.trim().to_lowercase();
        let filter = GrantFilter {
            tool: Some(&tool),
            session: None,
        };
        let stored = self.inner.backend.grants(tenant, filter).await?;
        let now = self.now();
        Ok(stored
            .into_iter()
            .filter(|g| g.live(now))
            .map(|g| g.grant)
            .collect())
    }

    /// The grants of `tenant`, oldest first; with `session`, only that session's grants.
    pub async fn list_grants(
        &self,
        tenant: &str,
        session: Option<&str>,
    ) -> Result<Vec<StoredGrant>, StoreError> {
        let filter = GrantFilter {
            tool: None,
            session,
        };
        self.inner.backend.grants(tenant, filter).await
    }

    /// The grant that lets `action` run in `session` without asking, if any: an `always`
    /// grant before a `session` one. A grant past its `expires_at` or its `max_uses` no longer
    /// matches; finding one counts a use of it, atomically, so of several instances using the
    /// last use of a grant at once exactly one gets it (the others get the next grant that
    /// covers the call, or none).
    pub async fn check_grant(
        &self,
        tenant: &str,
        action: &Action,
        session: Option<&str>,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let tool = action.name.trim().to_lowercase();
        let filter = GrantFilter {
            tool: Some(&tool),
            session: None,
        };
        let mut covering: Vec<StoredGrant> = self
            .inner
            .backend
            .grants(tenant, filter)
            .await?
            .into_iter()
            .filter(|g| g.grant.covers(&action.name, &action.arguments, session))
            .collect();
        covering.sort_by_key(|g| std::cmp::Reverse(g.grant.scope));
        let now = self.now();
        for grant in covering.into_iter().filter(|g| g.live(now)) {
            if let Some(used) = self.inner.backend.use_grant(tenant, &grant.id, now).await? {
                return Ok(Some(used));
            }
        }
        Ok(None)
    }

    /// Revokes grant `id` of `tenant`, recording `grant.revoked` by `by` in the audit chain in
    /// the same transaction; returns it, or `None` when there is no such grant.
    pub async fn revoke_grant(
        &self,
        tenant: &str,
        id: &str,
        by: &Actor,
    ) -> Result<Option<StoredGrant>, StoreError> {
        self.inner
            .backend
            .revoke_grant(tenant, id, self.now(), by)
            .await
    }

    /// The grants `answers` to `record` give, made by `actor`: the one place grants are made.
    pub(crate) fn grants_for(
        &self,
        record: &RequestRecord,
        answers: &Answers,
        actor: &Actor,
        at: DateTime<Utc>,
    ) -> Vec<StoredGrant> {
        grant_rows(
            &*self.inner.ids,
            &record.request,
            &record.id,
            answers,
            actor,
            at,
        )
    }
}

/// The grants `answers` to a request give, each with a fresh id.
pub(crate) fn grant_rows(
    ids: &dyn IdGenerator,
    request: &NewRequest,
    request_id: &str,
    answers: &Answers,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Vec<StoredGrant> {
    clarify_core::policy::bounded_grants_of(request, answers)
        .into_iter()
        .map(|(grant, bounds)| StoredGrant {
            id: ids.grant_id(),
            grant,
            request_id: Some(request_id.to_owned()),
            granted_by: actor.name.clone(),
            created_at: at,
            expires_at: bounds
                .ttl_seconds
                .and_then(|s| i64::try_from(s).ok())
                .and_then(TimeDelta::try_seconds)
                .and_then(|ttl| at.checked_add_signed(ttl)),
            max_uses: bounds.max_uses,
            uses: 0,
        })
        .collect()
}
