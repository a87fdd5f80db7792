//! The three storage backends behind one set of operations.
//!
//! Each backend implements the same inherent methods; [`Backend`] dispatches to them without
//! boxing. Backends only persist and read: they know nothing of answer validation, waiting or
//! clocks, which live in [`crate::Store`]. Every resolution is one conditional update
//! (`... WHERE status = 'pending'`), so exactly one writer wins.

use chrono::{DateTime, Utc};
use clarify_core::NewRequest;
use clarify_core::policy::Grant;

use crate::error::StoreError;
use crate::memory::MemoryBackend;
use crate::postgres::PgBackend;
use crate::record::{Created, Event, ListQuery, Page, RequestRecord, StoredResolution};
use crate::sqlite::SqliteBackend;

/// A request about to be inserted.
#[derive(Debug, Clone)]
pub(crate) struct NewRow {
    pub id: String,
    pub tenant: String,
    pub request: NewRequest,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    /// Set when the request asked for `dedupe`: a digest of what makes two requests identical.
    pub dedupe_key: Option<String>,
}

impl NewRow {
    pub(crate) fn into_record(self) -> RequestRecord {
        RequestRecord {
            id: self.id,
            tenant: self.tenant,
            request: std::sync::Arc::new(self.request),
            status: clarify_core::Status::Pending,
            created_at: self.created_at,
            expires_at: self.expires_at,
            resolution: None,
        }
    }
}

/// The result of a conditional resolution.
#[derive(Debug)]
pub(crate) enum Resolved {
    /// This call resolved the request.
    Won(RequestRecord),
    /// The request was already resolved, or is past its deadline (then it is still pending and
    /// the caller expires it).
    Lost(RequestRecord),
    NotFound,
}

#[derive(Debug)]
pub(crate) enum Backend {
    Memory(MemoryBackend),
    Sqlite(SqliteBackend),
    Postgres(PgBackend),
}

macro_rules! dispatch {
    ($self:expr, $b:ident => $call:expr) => {
        match $self {
            Backend::Memory($b) => $call,
            Backend::Sqlite($b) => $call,
            Backend::Postgres($b) => $call,
        }
    };
}

impl Backend {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Memory(_) => "memory",
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// Inserts the request, or returns the existing one with the same idempotency key or, when
    /// `dedupe_key` is set, an identical pending one of the same tenant and session.
    pub(crate) async fn create(&self, row: NewRow) -> Result<Created, StoreError> {
        dispatch!(self, b => b.create(row).await)
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        dispatch!(self, b => b.get(id).await)
    }

    pub(crate) async fn list(
        &self,
        tenant: &str,
        query: &ListQuery,
        before: Option<u64>,
    ) -> Result<Page, StoreError> {
        dispatch!(self, b => b.list(tenant, query, before).await)
    }

    /// Resolves a pending request that is not past its deadline at `now` (expiry itself is
    /// allowed only once the deadline has passed).
    pub(crate) async fn resolve(
        &self,
        id: &str,
        resolution: StoredResolution,
    ) -> Result<Resolved, StoreError> {
        dispatch!(self, b => b.resolve(id, resolution).await)
    }

    /// Expires up to `limit` pending requests whose deadline is at or before `now`; returns
    /// their ids.
    pub(crate) async fn expire_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        dispatch!(self, b => b.expire_due(now, limit).await)
    }

    /// Events with a sequence above `after`, oldest first, of one tenant or of all.
    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        dispatch!(self, b => b.events_after(tenant, after, limit).await)
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        dispatch!(self, b => b.last_event_seq().await)
    }

    pub(crate) async fn add_grant(
        &self,
        tenant: &str,
        grant: &Grant,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.add_grant(tenant, grant, at).await)
    }

    pub(crate) async fn grants(&self, tenant: &str, tool: &str) -> Result<Vec<Grant>, StoreError> {
        dispatch!(self, b => b.grants(tenant, tool).await)
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        dispatch!(self, b => b.ping().await)
    }
}
