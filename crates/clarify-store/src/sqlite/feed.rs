//! The event feed: appending events, each hashed onto the audit chain by the writer, and
//! reading them back in `seq` order.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteBackend;
use crate::audit::{self, AdminEvent, FEED_KINDS};
use crate::codec::{EVENT_COLUMNS, EventParts, Log};
use crate::error::StoreError;
use crate::record::{Actor, Event, EventKind};

impl SqliteBackend {
    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let events = self.read(|conn| Ok(read_log(conn, Log::Feed, tenant, after, limit)?))?;
        events.into_iter().map(EventParts::decode).collect()
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
        self.read(|conn| Ok(read_log(conn, Log::Chain, tenant, after, limit)?))
    }

    pub(crate) async fn record_admin(
        &self,
        event: AdminEvent,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.write(move |conn| append_admin(conn, &event, at)).await
    }

    pub(crate) async fn spend_receipt(
        &self,
        jti: &str,
        request_id: &str,
        event: AdminEvent,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let (jti, request_id) = (jti.to_owned(), request_id.to_owned());
        self.write(move |conn| {
            let spent = conn
                .prepare_cached(
                    "INSERT INTO receipts_spent (jti, tenant, request_id, spent_at, spent_by) \
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (jti) DO NOTHING",
                )?
                .execute(params![
                    jti,
                    event.tenant,
                    request_id,
                    crate::codec::millis(at),
                    event.by.principal.as_ref().or(event.by.name.as_ref())
                ])?;
            if spent == 1 {
                append_admin(conn, &event, at)?;
            }
            Ok(spent == 1)
        })
        .await
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            let seq: i64 = conn
                .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM events")?
                .query_row([], |r| r.get(0))?;
            Ok(u64::try_from(seq).unwrap_or(0))
        })
    }

    pub(crate) async fn tally_after(&self, after: u64) -> Result<crate::Tally, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.read(|conn| {
            let (created, resolved, last): (i64, i64, i64) = conn
                .prepare_cached(&TALLY)?
                .query_row(params![after], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(crate::Tally {
                created: u64::try_from(created).unwrap_or(0),
                resolved: u64::try_from(resolved).unwrap_or(0),
                last: u64::try_from(last).unwrap_or(0),
            })
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

/// Appends an event of request `request_id` by `by` (`None`: nobody, as for a creation),
/// hashed onto the chain, in the writer's transaction, and returns its `seq`. A resolving
/// event's `seq` and principal are kept on its request too, for the request's receipt.
pub(super) fn append_event(
    conn: &Connection,
    tenant: &str,
    request_id: &str,
    kind: EventKind,
    by: Option<&Actor>,
    at: i64,
) -> Result<u64, StoreError> {
    // The writer's transaction holds the database, so the head read here is the chain's.
    let seq = append_after(conn, chain_head(conn)?, tenant, request_id, kind, by, at)?;
    if kind.resolves() {
        conn.prepare_cached(
            "UPDATE requests SET resolved_seq = ?2, resolved_principal = ?3 WHERE id = ?1",
        )?
        .execute(params![
            request_id,
            seq,
            by.and_then(|a| a.principal.as_deref())
        ])?;
    }
    Ok(u64::try_from(seq).unwrap_or(0))
}

/// Appends an event as [`append_event`] does, after `head` ([`chain_head`], read in this
/// transaction), keeping nothing on its request: for a resolution that kept its place in the
/// statement that resolved it. Returns its `seq`.
pub(super) fn append_after(
    conn: &Connection,
    (last, previous): (i64, Option<String>),
    tenant: &str,
    request_id: &str,
    kind: EventKind,
    by: Option<&Actor>,
    at: i64,
) -> Result<i64, StoreError> {
    let event = EventParts {
        seq: last + 1,
        tenant: tenant.to_owned(),
        request_id: request_id.to_owned(),
        kind: kind.as_str().to_owned(),
        actor: by.and_then(|a| a.name.clone()),
        channel: by.map(|a| a.channel.clone()),
        principal: by.and_then(|a| a.principal.clone()),
        at,
        hash: None,
    };
    let seq = event.seq;
    insert_linked(conn, event, previous.as_deref())?;
    Ok(seq)
}

/// Appends an admin event, hashed onto the chain, in the writer's transaction.
pub(super) fn append_admin(
    conn: &Connection,
    event: &AdminEvent,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let (last, previous) = chain_head(conn)?;
    let mut parts = event.parts(crate::codec::millis(at));
    parts.seq = last + 1;
    Ok(insert_linked(conn, parts, previous.as_deref())?)
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
    // An event without a principal names no `principal` column: the migrations before
    // schema 13 write tombstones with this too, before the column exists.
    let Some(principal) = &event.principal else {
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
        return Ok(());
    };
    conn.prepare_cached(
        "INSERT INTO events (seq, tenant, request_id, kind, actor, channel, at, hash, principal) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        event.seq,
        event.tenant,
        event.request_id,
        event.kind,
        event.actor,
        event.channel,
        event.at,
        event.hash,
        principal
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
        principal: r.get(8)?,
    })
}

/// What [`SqliteBackend::tally_after`] asks: a count of the events after `?1` that create a
/// request and of those that resolve one, and the newest event's sequence. The resolving kinds
/// are a `CASE` rather than `IN (...)`: SQLite builds a temporary index for an `IN` list of
/// more than two constants at each run and looks every event's kind up in it.
static TALLY: LazyLock<String> = LazyLock::new(|| {
    let resolving: String = crate::codec::resolving_kind_names()
        .map(|kind| format!(" WHEN '{kind}' THEN 1"))
        .collect();
    format!(
        "SELECT COUNT(*) FILTER (WHERE kind = 'created'), \
         COUNT(CASE kind{resolving} END), COALESCE(MAX(seq), ?1) FROM events WHERE seq > ?1"
    )
});

/// The statement reading `log` after `?1` (every tenant's), or after `?2` (tenant `?1`'s only).
/// A tenant's reading goes through `events_tenant` (schema 11), so it reads that tenant's events
/// only; every tenant's goes by the primary key from the cursor.
fn statement(log: Log, one_tenant: bool) -> &'static str {
    static FEED: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE seq > ?1 AND {FEED_KINDS} \
                 ORDER BY seq LIMIT ?2"
        )
    });
    static TENANT_FEED: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE tenant = ?1 AND seq > ?2 \
                 AND {FEED_KINDS} ORDER BY seq LIMIT ?3"
        )
    });
    static CHAIN: LazyLock<String> = LazyLock::new(|| {
        format!("SELECT {EVENT_COLUMNS} FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2")
    });
    static TENANT_CHAIN: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE tenant = ?1 AND seq > ?2 \
                 ORDER BY seq LIMIT ?3"
        )
    });
    match (log, one_tenant) {
        (Log::Feed, false) => &FEED,
        (Log::Feed, true) => &TENANT_FEED,
        (Log::Chain, false) => &CHAIN,
        (Log::Chain, true) => &TENANT_CHAIN,
    }
}

/// Up to `limit` events of `log` after `after`, oldest first: `tenant`'s, or every tenant's.
pub(super) fn read_log(
    conn: &Connection,
    log: Log,
    tenant: Option<&str>,
    after: i64,
    limit: usize,
) -> rusqlite::Result<Vec<EventParts>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(statement(log, tenant.is_some()))?;
    let rows = match tenant {
        Some(tenant) => stmt.query_map(params![tenant, after, limit], event_parts)?,
        None => stmt.query_map(params![after, limit], event_parts)?,
    };
    rows.collect()
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::*;
    use crate::Durability;
    use crate::sqlite::Scratch;

    /// One tenant's reading of the log, from far back, reads that tenant's events and no
    /// other's. The quiet tenant's 10 events come first, then 20,000 of two busy tenants; a
    /// statement walking the log from the cursor (the one shared form before schema 11) takes
    /// about 80,000 VM steps to find those 10, or to find nothing after them. Every row a
    /// statement reads costs it a few steps, so a bound of a few hundred leaves no room for
    /// reading the others' rows.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tenant_reads_its_own_events_however_many_others_have() {
        let scratch = Scratch::new("tenant-feed");
        let backend = SqliteBackend::open(&scratch.0, Durability::Normal)
            .await
            .expect("open");
        backend
            .write(|conn| {
                for i in 0..10 {
                    let id = format!("q{i}");
                    append_event(conn, "quiet", &id, EventKind::Created, None, 0)?;
                }
                for i in 0..20_000 {
                    let tenant = if i % 2 == 0 { "busy" } else { "loud" };
                    let id = format!("r{i}");
                    append_event(conn, tenant, &id, EventKind::Created, None, 0)?;
                }
                Ok(())
            })
            .await
            .expect("fill the log");
        let conn = Connection::open(&scratch.0).expect("open a reader");
        for log in [Log::Feed, Log::Chain] {
            let sql = statement(log, true);
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .and_then(|mut s| {
                    s.query_map(params!["quiet", 0, 1_000], |r| r.get(3))?
                        .collect()
                })
                .expect("plan");
            assert!(
                plan.iter()
                    .any(|step| step.contains("USING INDEX events_tenant")),
                "{log:?} reads through the tenant index: {plan:?}"
            );
            for (after, expected) in [(0, 10), (10, 0)] {
                conn.prepare_cached(sql)
                    .expect("statement")
                    .reset_status(StatementStatus::VmStep);
                let events = read_log(&conn, log, Some("quiet"), after, 1_000).expect("read");
                let steps = conn
                    .prepare_cached(sql)
                    .expect("statement")
                    .get_status(StatementStatus::VmStep);
                assert_eq!(events.len(), expected, "{log:?} after {after}");
                assert!(
                    events.iter().all(|e| e.tenant == "quiet"),
                    "only its own events"
                );
                assert!(
                    steps < 500,
                    "{log:?} after {after} took {steps} VM steps for {expected} events"
                );
            }
        }
        // Every tenant's reading still goes by the primary key, from the cursor.
        let all = read_log(&conn, Log::Feed, None, 20_000, 1_000).expect("read all");
        assert_eq!(
            all.iter().map(|e| e.seq).collect::<Vec<_>>(),
            (20_001..=20_010).collect::<Vec<_>>()
        );
    }
}
