//! The event feed: appending events, each hashed onto the audit chain by the writer, and
//! reading them back in `seq` order.

use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteBackend;
use crate::audit;
use crate::codec::{EVENT_COLUMNS, EventParts};
use crate::error::StoreError;
use crate::record::{Event, EventKind};

impl SqliteBackend {
    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events \
                 WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2) AND kind <> 'purged' \
                 ORDER BY seq LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![after, tenant, limit as i64], event_parts)?;
            rows.map(|row| row?.decode()).collect()
        })
    }

    /// Stored events after `after` in feed order, as the audit chain holds them (tombstones
    /// included): every tenant's with `None`.
    pub(crate) async fn audit_events(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventParts>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events \
                 WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2) ORDER BY seq LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![after, tenant, limit as i64], event_parts)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            let seq: i64 =
                conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
            Ok(u64::try_from(seq).unwrap_or(0))
        })
    }

    pub(crate) async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        self.read(|conn| {
            // One read transaction: one snapshot for both.
            let tx = conn.unchecked_transaction()?;
            let n: i64 = tx.query_row(
                "SELECT count(*) FROM requests WHERE status = 'pending'",
                [],
                |r| r.get(0),
            )?;
            let seq: i64 =
                tx.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
            tx.commit()?;
            Ok((
                u64::try_from(n).unwrap_or(0),
                u64::try_from(seq).unwrap_or(0),
            ))
        })
    }
}

pub(super) fn append_event(
    conn: &Connection,
    tenant: &str,
    request_id: &str,
    kind: EventKind,
    actor: Option<&str>,
    channel: Option<&str>,
    at: i64,
) -> Result<(), StoreError> {
    // The writer's transaction holds the database, so the head read here is the chain's.
    let (last, previous) = chain_head(conn)?;
    let event = EventParts {
        seq: last + 1,
        tenant: tenant.to_owned(),
        request_id: request_id.to_owned(),
        kind: kind.as_str().to_owned(),
        actor: actor.map(str::to_owned),
        channel: channel.map(str::to_owned),
        at,
        hash: None,
    };
    Ok(insert_linked(conn, event, previous.as_deref())?)
}

/// The newest event's `seq` (0 for none) and hash. Events are never deleted (see `SCHEMA_V10`),
/// so its `seq` is the highest ever handed out.
pub(super) fn chain_head(conn: &Connection) -> rusqlite::Result<(i64, Option<String>)> {
    Ok(conn
        .prepare_cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, None)))
}

/// Stores `event`, hashed onto the chain whose head hash is `previous`.
pub(super) fn insert_linked(
    conn: &Connection,
    mut event: EventParts,
    previous: Option<&str>,
) -> rusqlite::Result<()> {
    event.hash = Some(audit::link(
        previous.unwrap_or_default(),
        &audit::canonical(&event),
    ));
    conn.prepare_cached(
        "INSERT INTO events (seq, tenant, request_id, kind, actor, channel, at, hash) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        event.seq,
        event.tenant,
        event.request_id,
        event.kind,
        event.actor,
        event.channel,
        event.at,
        event.hash
    ])?;
    Ok(())
}

pub(super) fn event_parts(r: &rusqlite::Row<'_>) -> rusqlite::Result<EventParts> {
    Ok(EventParts {
        seq: r.get(0)?,
        tenant: r.get(1)?,
        request_id: r.get(2)?,
        kind: r.get(3)?,
        actor: r.get(4)?,
        channel: r.get(5)?,
        at: r.get(6)?,
        hash: r.get(7)?,
    })
}
