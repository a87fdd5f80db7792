//! Votes: on a quorum request an answer is one responder's vote, counted in one transaction
//! that locks the request and resolves it when the votes settle it. Each backend keeps the same
//! concern in its `votes.rs`.

use std::sync::Arc;

use clarify_core::quorum::Vote;
use clarify_core::{Answers, Status};

use crate::Store;
use crate::backend::writes::{Ballot, Cast};
use crate::error::ResolveError;
use crate::grants::grant_rows;
use crate::record::{Actor, RequestRecord};

impl Store {
    /// Casts `actor`'s vote on the quorum request `record`.
    pub(super) async fn vote(
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
}
