//! Votes on quorum requests: each in one transaction holding the request's row lock, so two
//! votes cast at once see each other and a request is decided once.

use clarify_core::Resolution;

use super::feed::append_events;
use super::outbox::follow_up;
use super::requests::{apply_resolution, parts};
use super::{PgBackend, db_err};
use crate::backend::writes::{Ballot, Cast, Tally, tally};
use crate::codec::{COLUMNS, millis, votes_json};
use crate::error::StoreError;
use crate::record::{Actor, EventKind, RequestRecord, StoredResolution};

impl PgBackend {
    pub(crate) async fn vote(&self, id: &str, ballot: Ballot) -> Result<Cast, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // The row lock makes a second vote cast at the same instant wait for this one, then
        // read the votes it wrote: the deciding vote is counted once.
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM clarify_requests WHERE id = $1 FOR UPDATE"
        ))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let Some(row) = row else {
            tx.rollback().await.map_err(db_err)?;
            return Ok(Cast::NotFound);
        };
        let record = parts(&row)?.decode()?;
        let Ballot {
            vote,
            channel,
            principal,
            grants,
        } = ballot;
        let (votes, decided) = match tally(&record, &vote) {
            Tally::Closed => {
                tx.rollback().await.map_err(db_err)?;
                return Ok(Cast::Lost(record));
            }
            Tally::AlreadyVoted => {
                tx.rollback().await.map_err(db_err)?;
                return Ok(Cast::AlreadyVoted(record));
            }
            Tally::Counted { votes, decided } => (votes, decided),
        };
        sqlx::query("UPDATE clarify_requests SET votes = $2 WHERE id = $1")
            .bind(id)
            .bind(votes_json(&votes)?)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let mut record = RequestRecord { votes, ..record };
        let target = [(record.tenant.clone(), record.id.clone())];
        let actor = Actor {
            name: Some(vote.by.clone()),
            channel,
            principal,
            ..Actor::default()
        };
        let at = millis(vote.at);
        let resolution = match decided {
            None => None,
            Some(answers) => {
                let made = grants(&record, &answers);
                let resolution =
                    StoredResolution::new(Resolution::Answered(answers), actor.clone(), vote.at);
                match apply_resolution(&mut tx, id, &resolution, &made).await? {
                    Some(resolved) => record = resolved,
                    None => {
                        tx.rollback().await.map_err(db_err)?;
                        return Ok(Cast::Lost(record));
                    }
                }
                Some(resolution)
            }
        };
        if resolution.is_none() {
            // The announcements show the votes so far.
            follow_up(&mut tx, &[id], EventKind::Voted, at).await?;
        }
        let (name, channel) = (actor.name.as_deref(), Some(actor.channel.as_str()));
        let principal = actor.principal.as_deref();
        append_events(
            &mut tx,
            EventKind::Voted,
            &target,
            name,
            channel,
            principal,
            at,
        )
        .await?;
        if resolution.is_some() {
            let kind = EventKind::Answered;
            append_events(&mut tx, kind, &target, name, channel, principal, at).await?;
        }
        self.commit_events(tx).await?;
        Ok(Cast::Counted(record))
    }
}
