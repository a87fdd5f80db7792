//! Votes on quorum requests, counted under the state's lock, which serializes them.

use clarify_core::Resolution;

use super::MemoryBackend;
use crate::backend::writes::{Ballot, Cast, Tally, tally};
use crate::error::StoreError;
use crate::record::{Actor, EventKind, StoredResolution};

impl MemoryBackend {
    pub(crate) async fn vote(&self, id: &str, ballot: Ballot) -> Result<Cast, StoreError> {
        let mut s = self.state();
        let Some(row) = s.rows.get_mut(id) else {
            return Ok(Cast::NotFound);
        };
        let Ballot {
            vote,
            channel,
            principal,
            grants,
        } = ballot;
        let (votes, decided) = match tally(&row.record, &vote) {
            Tally::Closed => return Ok(Cast::Lost(row.record.clone())),
            Tally::AlreadyVoted => return Ok(Cast::AlreadyVoted(row.record.clone())),
            Tally::Counted { votes, decided } => (votes, decided),
        };
        row.record.votes = votes;
        let record = row.record.clone();
        let actor = Actor {
            name: Some(vote.by.clone()),
            channel,
            principal,
            ..Actor::default()
        };
        s.push_event(
            &record,
            EventKind::Voted,
            actor.name.clone(),
            Some(actor.channel.clone()),
            actor.principal.clone(),
            vote.at,
        );
        let Some(answers) = decided else {
            // The announcements show the votes so far.
            s.follow_up(&record, EventKind::Voted, vote.at);
            return Ok(Cast::Counted(record));
        };
        let made = grants(&record, &answers);
        let resolution = StoredResolution::new(Resolution::Answered(answers), actor, vote.at);
        let Some(record) = s.resolve_row(id, resolution) else {
            return Ok(Cast::NotFound);
        };
        s.insert_grants(&record.tenant, &made);
        Ok(Cast::Counted(record))
    }
}
