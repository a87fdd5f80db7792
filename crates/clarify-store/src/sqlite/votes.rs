//! Votes on quorum requests, counted in the writer's transaction, which serializes them.

use std::sync::Arc;

use clarify_core::Resolution;
use rusqlite::{Connection, params};

use super::SqliteBackend;
use super::decoded::Decoded;
use super::feed::append_event;
use super::outbox::follow_up;
use super::requests::{get, resolve};
use crate::backend::writes::{Ballot, Cast, Resolved, Tally, tally};
use crate::codec::{answers_json, millis, votes_json};
use crate::error::StoreError;
use crate::record::{Actor, EventKind, RequestRecord, StoredResolution};

impl SqliteBackend {
    pub(crate) async fn vote(&self, id: &str, ballot: Ballot) -> Result<Cast, StoreError> {
        let id = id.to_owned();
        let decoded = Arc::clone(&self.decoded);
        self.write(move |conn| vote(conn, &decoded, &id, ballot))
            .await
    }
}

/// Casts `ballot` on request `id`; runs in the writer's transaction, which serializes votes.
fn vote(
    conn: &Connection,
    decoded: &Decoded,
    id: &str,
    ballot: Ballot,
) -> Result<Cast, StoreError> {
    let Some(record) = get(conn, decoded, id)? else {
        return Ok(Cast::NotFound);
    };
    let Ballot {
        vote,
        channel,
        principal,
        grants,
    } = ballot;
    let (votes, decided) = match tally(&record, &vote) {
        Tally::Closed => return Ok(Cast::Lost(record)),
        Tally::AlreadyVoted => return Ok(Cast::AlreadyVoted(record)),
        Tally::Counted { votes, decided } => (votes, decided),
    };
    let at = millis(vote.at);
    conn.prepare_cached("UPDATE requests SET votes = ?2 WHERE id = ?1")?
        .execute(params![id, votes_json(&votes)?])?;
    let actor = Actor {
        name: Some(vote.by.clone()),
        channel,
        principal,
        ..Actor::default()
    };
    append_event(conn, &record.tenant, id, EventKind::Voted, Some(&actor), at)?;
    let record = RequestRecord { votes, ..record };
    let Some(answers) = decided else {
        // The announcements show the votes so far.
        follow_up(conn, id, EventKind::Voted, at)?;
        return Ok(Cast::Counted(record));
    };
    let made = grants(&record, &answers);
    let resolution = StoredResolution::new(Resolution::Answered(answers), actor, vote.at);
    let body = answers_json(&resolution.resolution)?;
    Ok(
        match resolve(conn, decoded, id, &resolution, body, &made, None)? {
            Resolved::Won(record) => Cast::Counted(record),
            Resolved::Lost(record) => Cast::Lost(record),
            Resolved::NotFound => Cast::NotFound,
        },
    )
}
