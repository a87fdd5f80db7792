//! What the store hands a backend to write and what the write returns: a new request's row, a
//! vote's ballot, the outcomes of resolving and of voting, and the rules every backend applies
//! alike (when the next reminder is due, how a vote tallies).
//!
//! Every backend imports these and the dispatch in [`crate::backend`] imports every backend, so
//! they live here, below both.

use chrono::{DateTime, TimeDelta, Utc};
use clarify_core::quorum::{Vote, decide};
use clarify_core::{Answers, NewRequest};

use crate::grants::StoredGrant;
use crate::record::{RequestRecord, StoredResolution};

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
    /// When the first reminder is due, if the request asks for reminders.
    pub remind_at: Option<DateTime<Utc>>,
    /// When the request escalates, if it asks to.
    pub escalate_at: Option<DateTime<Utc>>,
    /// How long before its deadline its responders are warned, in seconds; `None` for no
    /// warning (kept so that an extension warns again before the new deadline).
    pub warn_before: Option<u64>,
    /// When they are warned: [`warning_at`] of the deadline.
    pub warn_at: Option<DateTime<Utc>>,
    /// The channels to announce it on, queued with it (only when it is created, not when an
    /// existing request is returned).
    pub announce: Vec<String>,
    /// Who its on-call schedules named when it was created.
    pub on_call: Vec<crate::record::OnCallShift>,
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
            votes: Vec::new(),
            remind_at: self.remind_at,
            escalated_at: None,
            on_call: self.on_call,
        }
    }
}

/// `at` plus `seconds`, when the request asks for it.
pub(crate) fn after_seconds(at: DateTime<Utc>, seconds: Option<u64>) -> Option<DateTime<Utc>> {
    let seconds = i64::try_from(seconds?).ok()?;
    at.checked_add_signed(TimeDelta::try_seconds(seconds)?)
}

/// When the responders of a request with `deadline` are warned, `warn_before` seconds ahead of
/// it: `None` without a deadline or a warning period, or when that moment is not after `now`
/// (a request whose whole life, or what is left of it, is shorter than the warning period gets
/// no warning: it is as new, or as freshly extended, as a warning would make it).
pub(crate) fn warning_at(
    deadline: Option<DateTime<Utc>>,
    warn_before: Option<u64>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let seconds = i64::try_from(warn_before.filter(|s| *s > 0)?).ok()?;
    let at = deadline?.checked_sub_signed(TimeDelta::try_seconds(seconds)?)?;
    (at > now).then_some(at)
}

/// When the reminder after one sent at `now` is due: a whole period later, however late this
/// one was (a store that was down does not send the reminders it missed in a burst).
pub(crate) fn next_reminder(request: &NewRequest, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    after_seconds(now, request.remind_every_seconds)
}

/// Makes the grants the combined answers of a deciding vote give.
pub(crate) type GrantMaker = Box<dyn FnOnce(&RequestRecord, &Answers) -> Vec<StoredGrant> + Send>;

/// A vote on its way into the store.
pub(crate) struct Ballot {
    pub vote: Vote,
    /// Through which channel it was cast.
    pub channel: String,
    /// Who was authenticated casting it.
    pub principal: Option<String>,
    /// Called only when this vote decides the request.
    pub grants: GrantMaker,
}

impl std::fmt::Debug for Ballot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ballot")
            .field("vote", &self.vote)
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

/// The result of casting a vote.
#[derive(Debug)]
pub(crate) enum Cast {
    /// The vote counts; the record is still pending, or answered when this vote decided it.
    Counted(RequestRecord),
    /// This responder had voted already; nothing changed.
    AlreadyVoted(RequestRecord),
    /// The request is resolved, or past its deadline (then it is still pending and the caller
    /// expires it).
    Lost(RequestRecord),
    NotFound,
}

/// What a vote does to a request, decided while the backend holds the request locked.
#[derive(Debug)]
pub(crate) enum Tally {
    Closed,
    AlreadyVoted,
    /// The votes with this one, and the answers that settle the request if they do.
    Counted {
        votes: Vec<Vote>,
        decided: Option<Answers>,
    },
}

pub(crate) fn tally(record: &RequestRecord, vote: &Vote) -> Tally {
    let overdue = record.expires_at.is_some_and(|at| at <= vote.at);
    if record.status.is_resolved() || overdue {
        return Tally::Closed;
    }
    if record.votes.iter().any(|v| v.by == vote.by) {
        return Tally::AlreadyVoted;
    }
    let mut votes = record.votes.clone();
    votes.push(vote.clone());
    let decided = decide(&record.request, &votes);
    Tally::Counted { votes, decided }
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

/// What an answer comes to on the request as the resolving transaction reads it (see
/// [`Store::answer`](crate::Store::answer)).
pub(crate) enum Decision {
    /// Resolve it so, with these grants.
    Resolve(StoredResolution, Vec<StoredGrant>),
    /// A vote on a quorum request, cast by the caller with these answers.
    Vote(Answers),
}

/// Decides an answer on the pending request as read in the transaction that resolves it; an
/// error refuses the answer and nothing is written.
pub(crate) type Decide =
    Box<dyn FnOnce(&RequestRecord) -> Result<Decision, crate::error::ResolveError> + Send>;

/// What [`Decide`] and the resolution it asked for came to.
pub(crate) enum Decided {
    Resolved(Box<Resolved>),
    Refused(crate::error::ResolveError),
    /// A vote for the caller to cast on the request as read.
    Vote(Box<RequestRecord>, Answers),
}
