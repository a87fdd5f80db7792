//! The answer pipeline: answering, skipping and cancelling a request, and casting a vote on a
//! quorum request.
//!
//! Each answer is checked first by who may answer ([`who_may_answer`]), then against the live
//! request, then written as one conditional update (or, on a quorum request, one vote in a
//! transaction that locks the request) together with the grants it gives, so exactly one writer
//! resolves a request. A resolution past the request's deadline loses to its expiry.

mod who_may_answer;

use std::sync::Arc;

use clarify_core::quorum::Vote;
use clarify_core::{Answers, Resolution, Status, Submission, parse_submission};
use serde_json::Value;

use crate::Store;
use crate::backend::{Ballot, Cast, Resolved};
use crate::error::ResolveError;
use crate::grants::{StoredGrant, grant_rows};
use crate::record::{Actor, RequestRecord, StoredResolution};

impl Store {
    /// Answers (or skips) the request with a raw answer body, checked against the live request.
    ///
    /// On a quorum request (`approvals_required` above 1) an answer is the responder's vote: the
    /// returned record is still pending, with the vote in its `votes`, until enough responders
    /// approved or one denied. A responder votes once ([`ResolveError::AlreadyVoted`]); an
    /// anonymous actor cannot vote ([`ResolveError::QuorumNeedsIdentity`]).
    pub async fn answer(
        &self,
        tenant: &str,
        id: &str,
        body: &Value,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.pending(tenant, id, actor).await?;
        let submission = parse_submission(&record.request, body)?;
        self.resolve_answer(&record, submission, actor).await
    }

    /// Resolves the request with an already-checked submission.
    pub async fn submit(
        &self,
        tenant: &str,
        id: &str,
        submission: Submission,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.pending(tenant, id, actor).await?;
        self.resolve_answer(&record, submission, actor).await
    }

    /// Skips the request, when it allows skipping.
    pub async fn skip(
        &self,
        tenant: &str,
        id: &str,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.pending(tenant, id, actor).await?;
        if !record.request.allow_skip {
            return Err(ResolveError::Invalid(
                clarify_core::AnswerError::SkipNotAllowed,
            ));
        }
        self.resolve(id, Resolution::Skipped, actor).await
    }

    /// Cancels the request: nobody answers it any more.
    pub async fn cancel(
        &self,
        tenant: &str,
        id: &str,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        match self.get(tenant, id).await? {
            None => Err(ResolveError::NotFound),
            Some(r) if r.status.is_resolved() => Err(ResolveError::AlreadyResolved(Box::new(r))),
            Some(_) => self.resolve(id, Resolution::Cancelled, actor).await,
        }
    }

    /// Resolves the pending `record` with a checked submission (or, on a quorum request, casts
    /// it as a vote), with the grants the answer gives.
    async fn resolve_answer(
        &self,
        record: &RequestRecord,
        submission: Submission,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        if let (true, Submission::Answered(answers)) = (record.request.is_quorum(), &submission) {
            return self.vote(record, answers.clone(), actor).await;
        }
        let resolved_at = self.now();
        let grants = match &submission {
            Submission::Answered(answers) => self.grants_for(record, answers, actor, resolved_at),
            Submission::Skipped => Vec::new(),
        };
        let stored = StoredResolution::new(resolution_of(submission), actor.clone(), resolved_at);
        self.resolve_stored(&record.id, stored, &grants).await
    }

    /// Casts `actor`'s vote on the quorum request `record`.
    async fn vote(
        &self,
        record: &RequestRecord,
        answers: Answers,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let Some(name) = &actor.name else {
            return Err(ResolveError::QuorumNeedsIdentity {
                required: record.request.approvals_required,
            });
        };
        let at = self.now();
        let ids = Arc::clone(&self.inner.ids);
        let decider = actor.clone();
        let ballot = Ballot {
            vote: Vote::new(name.clone(), answers, at),
            channel: actor.channel.clone(),
            principal: actor.principal.clone(),
            grants: Box::new(move |record, answers| {
                grant_rows(&*ids, &record.request, &record.id, answers, &decider, at)
            }),
        };
        match self.inner.backend.vote(&record.id, ballot).await? {
            Cast::Counted(record) => {
                if record.status.is_resolved() {
                    self.inner.waiters.resolved(&record);
                    self.observed(|o| o.resolved(&record));
                }
                Ok(record)
            }
            Cast::AlreadyVoted(record) => Err(ResolveError::AlreadyVoted {
                responder: name.clone(),
                record: Box::new(record),
            }),
            Cast::Lost(record) if record.status == Status::Pending => {
                let record = self.expire_one(&record.id).await?.unwrap_or(record);
                Err(ResolveError::AlreadyResolved(Box::new(record)))
            }
            Cast::Lost(record) => Err(ResolveError::AlreadyResolved(Box::new(record))),
            Cast::NotFound => Err(ResolveError::NotFound),
        }
    }

    async fn resolve(
        &self,
        id: &str,
        resolution: Resolution,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let stored = StoredResolution::new(resolution, actor.clone(), self.now());
        self.resolve_stored(id, stored, &[]).await
    }

    pub(crate) async fn resolve_stored(
        &self,
        id: &str,
        stored: StoredResolution,
        grants: &[StoredGrant],
    ) -> Result<RequestRecord, ResolveError> {
        match self.inner.backend.resolve(id, stored, grants).await? {
            Resolved::Won(record) => {
                self.inner.waiters.resolved(&record);
                self.observed(|o| o.resolved(&record));
                Ok(record)
            }
            Resolved::Lost(record) if record.status == Status::Pending => {
                // Past its deadline: it expires rather than accept a late resolution.
                let record = self.expire_one(id).await?.unwrap_or(record);
                Err(ResolveError::AlreadyResolved(Box::new(record)))
            }
            Resolved::Lost(record) => Err(ResolveError::AlreadyResolved(Box::new(record))),
            Resolved::NotFound => Err(ResolveError::NotFound),
        }
    }
}

/// The resolution a checked answer or skip makes.
pub(crate) fn resolution_of(submission: Submission) -> Resolution {
    match submission {
        Submission::Answered(answers) => Resolution::Answered(answers),
        Submission::Skipped => Resolution::Skipped,
    }
}
