//! Stored grants: what a human's `session` or `always` approval lets through without asking.
//!
//! A grant is never made on its own: [`crate::Store`] derives the grants an answer gives
//! (core's [`clarify_core::policy::grants_of`]) and each backend records them in the transaction
//! that records the answer, so an answer and its grants commit together or not at all. They can
//! be listed, checked and revoked.

use chrono::{DateTime, Utc};
use clarify_core::Scope;
use clarify_core::policy::Grant;

use crate::codec::from_millis;
use crate::error::StoreError;

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
