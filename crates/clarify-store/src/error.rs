//! Store errors.

use clarify_core::AnswerError;

use crate::record::RequestRecord;

/// The store could not do what was asked. Nothing was half-written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("invalid store URL {url:?}: {reason}; use sqlite://PATH, postgres://... or memory:")]
    InvalidUrl { url: String, reason: String },
    #[error("{path} is not a clarify database: {detail}")]
    NotADatabase { path: String, detail: String },
    #[error(
        "the database schema is version {found}, newer than this clarify supports ({supported}); upgrade clarify"
    )]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("cannot reach the database: {0}")]
    Unavailable(String),
    #[error("the database failed: {0}")]
    Backend(String),
    /// The database's disk (or its quota) has no room for the write; nothing was written, and
    /// the same write succeeds once space is freed.
    #[error("the database's disk is full: {0}")]
    DiskFull(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("invalid cursor; pass the next_cursor of the previous page")]
    InvalidCursor,
    /// A reading asked for something the store cannot give (an insights range that ends
    /// before it starts, or is too long); the message names it.
    #[error("{0}")]
    InvalidQuery(String),
    /// The request validates alone but not against what is stored (a `revises` naming no
    /// resolved request of the tenant); nothing was stored.
    #[error(transparent)]
    Rejected(#[from] clarify_core::ValidationError),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        // SQLite's own error for a page or a WAL frame that finds no room, and for a write the
        // operating system refused for space (its Unix VFS turns ENOSPC into SQLITE_FULL).
        let no_room = matches!(
            &e,
            rusqlite::Error::SqliteFailure(failure, _)
                if failure.code == rusqlite::ErrorCode::DiskFull
        );
        if no_room {
            Self::DiskFull(e.to_string())
        } else {
            Self::Backend(e.to_string())
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_) => Self::Unavailable(e.to_string()),
            // SQLSTATE 53100: the server's disk has no room for the write.
            sqlx::Error::Database(ref db) if db.code().as_deref() == Some("53100") => {
                Self::DiskFull(e.to_string())
            }
            other => Self::Backend(other.to_string()),
        }
    }
}

/// Why a request could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no such request")]
    NotFound,
    /// The first resolution won; this one changed nothing.
    #[error("the request is already {}", .0.status)]
    AlreadyResolved(Box<RequestRecord>),
    #[error("{responder:?} is not among the responders allowed to answer this request")]
    NotAllowed { responder: String },
    /// Four eyes: the request acts for this person (`on_behalf_of`), who may not answer or
    /// vote on it; nothing changed.
    #[error(
        "{responder:?} is the person this request acts for, and this server does not let anyone approve their own request; another responder must answer"
    )]
    SelfApproval { responder: String },
    /// Four eyes: the request acts for someone, so an answer must say who gives it, which an
    /// anonymous answer link does not.
    #[error(
        "this request acts for {person:?}, and this server does not let anyone approve their own request, so it needs an answer from a named responder, not the anonymous link"
    )]
    SelfApprovalNeedsIdentity { person: String },
    /// Step-up (`[decisions] step_up`): this high-risk request needs a passkey confirmation made
    /// for this answer within the last 5 minutes; nothing changed.
    #[error(
        "this request is high-risk and this server needs a passkey confirmation to answer it; open it in clarify (the inbox or its link page) and confirm with your passkey"
    )]
    StepUpRequired,
    /// This responder already voted on the quorum request; the vote stands and nothing changed.
    #[error("{responder:?} already voted on this request; each responder votes once")]
    AlreadyVoted {
        responder: String,
        record: Box<RequestRecord>,
    },
    /// A quorum request counts votes by responder, so an answer without a name (through an
    /// anonymous answer link) cannot be one.
    #[error(
        "this request needs {required} approvals from named responders; answer it in the inbox, the terminal or over the API with your own key, not through the anonymous link"
    )]
    QuorumNeedsIdentity { required: u32 },
    /// The answer does not fit the request, which stays pending.
    #[error(transparent)]
    Invalid(#[from] AnswerError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a request's deadline was not moved ([`crate::Store::extend`]); nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum ExtendError {
    /// Not found, already resolved, or not for this person to extend: the rules of answering.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The request has no deadline (`timeout_seconds` 0).
    #[error("the request never expires, so there is no deadline to extend")]
    NoDeadline,
    /// An extension of nothing.
    #[error("an extension must be at least one second")]
    Empty,
    /// The new deadline would be past the furthest the server allows.
    #[error(
        "extending by {by} would move the deadline past {latest}, the furthest this server allows ({max} past the request's first deadline); extend by at most {left}"
    )]
    TooFar {
        by: String,
        latest: String,
        max: String,
        left: String,
    },
}

/// Why a request could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The request does not validate; nothing was stored.
    #[error(transparent)]
    Invalid(#[from] clarify_core::ValidationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
