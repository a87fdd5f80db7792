//! The SQLite schema, version by version, and the migration that brings a database up to date.
//!
//! The version is SQLite's `PRAGMA user_version`; migrations run in one `BEGIN IMMEDIATE`
//! transaction when the writer opens, so another process sharing the file waits for them. An
//! applied migration never changes: a schema change is a new `SCHEMA_V<n>` appended to
//! [`MIGRATIONS`]. PostgreSQL counts its own versions (`postgres/migrations.rs`); the two
//! share them up to 9.

use rusqlite::{Connection, OptionalExtension, params};

use super::feed::{chain_head, event_parts, insert_linked};
use crate::audit;
use crate::codec::{EVENT_COLUMNS_BEFORE_PRINCIPAL, EventParts};

/// The schema version this binary writes; a database with a newer one is refused at open.
pub(super) const SCHEMA_VERSION: i64 = 20;

/// Schema version 1: requests, their tags, the event log and grants.
const SCHEMA_V1: &str = "
CREATE TABLE requests (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    status TEXT NOT NULL,
    session TEXT,
    agent TEXT,
    spec TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    resolved_at INTEGER,
    answered_by TEXT,
    channel TEXT,
    answers TEXT,
    idempotency_key TEXT,
    dedupe_key TEXT
);
CREATE UNIQUE INDEX requests_idempotency ON requests (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX requests_tenant ON requests (tenant, seq);
CREATE INDEX requests_status ON requests (tenant, status, seq);
CREATE INDEX requests_session ON requests (tenant, session, seq) WHERE session IS NOT NULL;
CREATE INDEX requests_agent ON requests (tenant, agent, seq) WHERE agent IS NOT NULL;
CREATE INDEX requests_due ON requests (expires_at)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
CREATE INDEX requests_dedupe ON requests (tenant, dedupe_key)
    WHERE status = 'pending' AND dedupe_key IS NOT NULL;
CREATE TABLE request_tags (
    tenant TEXT NOT NULL,
    tag TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (tenant, tag, seq)
) WITHOUT ROWID;
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT,
    channel TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX events_tenant ON events (tenant, seq);
CREATE TABLE grants (
    tenant TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    scope TEXT NOT NULL,
    session TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, tool, arguments, scope, session)
) WITHOUT ROWID;
";

/// Schema version 2: API keys, login and session tokens, server secrets, webhook deliveries.
const SCHEMA_V2: &str = "
CREATE TABLE keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    tenant TEXT NOT NULL,
    digest TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
-- An active name is unique; a revoked key keeps its name, which a new key may reuse.
CREATE UNIQUE INDEX keys_active_name ON keys (name) WHERE revoked_at IS NULL;
CREATE TABLE tokens (
    digest TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    key_id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tokens_key ON tokens (key_id);
CREATE INDEX tokens_expiry ON tokens (expires_at);
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
-- AUTOINCREMENT: a delivery id is never handed out twice, even after rows are deleted.
CREATE TABLE deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL,
    tenant TEXT NOT NULL,
    url TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    next_attempt_at INTEGER
);
CREATE INDEX deliveries_request ON deliveries (request_id, id);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE TABLE delivery_attempts (
    delivery_id INTEGER NOT NULL,
    number INTEGER NOT NULL,
    at INTEGER NOT NULL,
    status_code INTEGER,
    error TEXT,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, number)
) WITHOUT ROWID;
";

/// Schema version 3: grants get an id to be revoked by, and the request and person that gave
/// them. Grants stored before have neither; they get a random id.
const SCHEMA_V3: &str = "
ALTER TABLE grants ADD COLUMN id TEXT;
ALTER TABLE grants ADD COLUMN request_id TEXT;
ALTER TABLE grants ADD COLUMN granted_by TEXT;
UPDATE grants SET id = lower(hex(randomblob(16))) WHERE id IS NULL;
CREATE UNIQUE INDEX grants_id ON grants (id);
-- The order grants were given in (the table has no rowid; ids are random).
ALTER TABLE grants ADD COLUMN seq INTEGER;
CREATE INDEX grants_seq ON grants (seq);
";

/// Schema version 4: what retention (`--retain-resolved`) looks up, resolved requests by age and
/// a request's events.
const SCHEMA_V4: &str = "
CREATE INDEX requests_resolved ON requests (resolved_at) WHERE status <> 'pending';
CREATE INDEX events_request ON events (request_id);
";

/// Schema version 5: a quorum request's votes, reminders and escalation, and webhooks that
/// announce an event of a pending request (a reminder, an escalation).
const SCHEMA_V5: &str = "
ALTER TABLE requests ADD COLUMN votes TEXT;
ALTER TABLE requests ADD COLUMN remind_at INTEGER;
ALTER TABLE requests ADD COLUMN escalate_at INTEGER;
ALTER TABLE requests ADD COLUMN escalated_at INTEGER;
CREATE INDEX requests_remind ON requests (remind_at)
    WHERE status = 'pending' AND remind_at IS NOT NULL;
CREATE INDEX requests_escalate ON requests (escalate_at)
    WHERE status = 'pending' AND escalate_at IS NOT NULL;
ALTER TABLE deliveries ADD COLUMN event TEXT;
";

/// Schema version 6: channel notifications are deliveries to a channel (by its configured
/// name) instead of a URL, with the reference of the message they posted.
const SCHEMA_V6: &str = "
ALTER TABLE deliveries ADD COLUMN channel TEXT;
ALTER TABLE deliveries ADD COLUMN message_ref TEXT;
";

/// Schema version 7: an announcement found by the platform's reference to its message (a reply
/// typed in a chat thread names the message it replies to).
const SCHEMA_V7: &str = "
CREATE INDEX deliveries_message_ref ON deliveries (message_ref) WHERE message_ref IS NOT NULL;
";

/// Schema version 8: cursors, a channel's place in a platform's feed (Telegram's update offset),
/// advanced only once what came before it is committed.
const SCHEMA_V8: &str = "
CREATE TABLE cursors (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
";

/// Schema version 9: the audit chain, a hash per event (see `audit`). Events stored before it
/// are hashed in order by the migration.
const SCHEMA_V9: &str = "
ALTER TABLE events ADD COLUMN hash TEXT;
";

/// Schema version 10: fewer pages written per event. The event log loses `AUTOINCREMENT`, whose
/// counter row in `sqlite_sequence` every append rewrote (events are never deleted, retention
/// leaves tombstones, so the newest `seq` is the high-water mark; see [`migrate`] for a log whose
/// newest events an older version deleted), and its `(tenant, seq)` index, which no query used:
/// a tenant's feed was read in `seq` order through the primary key (version 11 brings it back).
const SCHEMA_V10: &str = "
CREATE TABLE events_v10 (
    seq INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT,
    channel TEXT,
    at INTEGER NOT NULL,
    hash TEXT
);
INSERT INTO events_v10 (seq, tenant, request_id, kind, actor, channel, at, hash)
    SELECT seq, tenant, request_id, kind, actor, channel, at, hash FROM events ORDER BY seq;
DROP TABLE events;
ALTER TABLE events_v10 RENAME TO events;
CREATE INDEX events_request ON events (request_id);
";

/// Schema version 11: the `(tenant, seq)` index again, so reading one tenant's feed or audit
/// chain reads that tenant's events only, however many other tenants have (each form of the
/// reading has a statement of its own; see `feed`). Version 10 dropped the same index of version
/// 1, which the one statement then serving both forms could not use. It costs each event written
/// one more index page.
const SCHEMA_V11: &str = "
CREATE INDEX events_tenant ON events (tenant, seq);
";

/// Schema version 12: bounded grants: when a grant stops matching (`expires_at`, `NULL`
/// never), how many calls it lets through (`max_uses`, `NULL` any) and how many it did.
const SCHEMA_V12: &str = "
ALTER TABLE grants ADD COLUMN expires_at INTEGER;
ALTER TABLE grants ADD COLUMN max_uses INTEGER;
ALTER TABLE grants ADD COLUMN uses INTEGER NOT NULL DEFAULT 0;
";

/// Schema version 13: who was authenticated, in each event (the audit chain hashes it when
/// present, so older events keep their hashes).
const SCHEMA_V13: &str = "
ALTER TABLE events ADD COLUMN principal TEXT;
";

/// Schema version 14: the insights rollup (see the store's `insights` module): per tenant, tag
/// (empty: every request), UTC day and combination of the filters, how many requests resolved
/// so and a histogram of the times people took. Its key leads with what every reading fixes
/// (tenant, tag) and ranges over (day). The requests already resolved are counted into it by
/// the migration.
const SCHEMA_V14: &str = "
CREATE TABLE insights (
    tenant TEXT NOT NULL,
    tag TEXT NOT NULL,
    day INTEGER NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    surface TEXT NOT NULL,
    responder TEXT NOT NULL,
    ending TEXT NOT NULL,
    n INTEGER NOT NULL,
    times TEXT NOT NULL,
    PRIMARY KEY (tenant, tag, day, agent, tool, surface, responder, ending)
) WITHOUT ROWID;
";

/// Schema version 15: AG-UI runs that ended waiting for people (the store's `agui` module):
/// what resuming each needs, its lease while an instance resumes it, and the resumed run's
/// events. Read by thread, and (the resume worker) the waiting ones in order.
const SCHEMA_V15: &str = "
CREATE TABLE agui_runs (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    data TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    lease_until INTEGER,
    created_at INTEGER NOT NULL,
    events TEXT
);
CREATE INDEX agui_runs_thread ON agui_runs (tenant, agent, thread_id, seq);
CREATE INDEX agui_runs_waiting ON agui_runs (seq) WHERE done = 0;
";

/// Schema version 16: the insights' coarser rollups (see the store's `insights` module), shaped
/// as `insights`: per calendar month (`day` is the month's first) and combination, and per day
/// and outcome with the combination left empty; and, per tenant, the last day they hold, which
/// readings move on by counting the day rows after it in (none yet: a tenant's first reading
/// counts them all).
const SCHEMA_V16: &str = "
CREATE TABLE insights_months (
    tenant TEXT NOT NULL,
    tag TEXT NOT NULL,
    day INTEGER NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    surface TEXT NOT NULL,
    responder TEXT NOT NULL,
    ending TEXT NOT NULL,
    n INTEGER NOT NULL,
    times TEXT NOT NULL,
    PRIMARY KEY (tenant, tag, day, agent, tool, surface, responder, ending)
) WITHOUT ROWID;
CREATE TABLE insights_days (
    tenant TEXT NOT NULL,
    tag TEXT NOT NULL,
    day INTEGER NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    surface TEXT NOT NULL,
    responder TEXT NOT NULL,
    ending TEXT NOT NULL,
    n INTEGER NOT NULL,
    times TEXT NOT NULL,
    PRIMARY KEY (tenant, tag, day, agent, tool, surface, responder, ending)
) WITHOUT ROWID;
CREATE TABLE insights_compacted (
    tenant TEXT PRIMARY KEY,
    through_day INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Web Push subscriptions: one per browser endpoint, read by tenant when a request is created.
const SCHEMA_V17: &str = "
CREATE TABLE push_subscriptions (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    person TEXT NOT NULL,
    claimed_groups TEXT NOT NULL,
    principal TEXT,
    endpoint TEXT NOT NULL UNIQUE,
    p256dh TEXT NOT NULL,
    auth TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX push_subscriptions_tenant ON push_subscriptions (tenant, created_at);
";

/// Receipts: each resolved request keeps its resolution's place in the audit chain and who was
/// authenticated (which its receipt names; found for the requests resolved before), and each
/// spent receipt is a row, unique per `jti`, so a receipt is spent once whatever the instances.
const SCHEMA_V18: &str = "
ALTER TABLE requests ADD COLUMN resolved_seq INTEGER;
ALTER TABLE requests ADD COLUMN resolved_principal TEXT;
UPDATE requests SET resolved_seq = (SELECT min(e.seq) FROM events e WHERE e.request_id = requests.id
    AND e.kind IN ('answered', 'skipped', 'expired', 'cancelled'))
    WHERE status <> 'pending';
UPDATE requests SET resolved_principal = (SELECT e.principal FROM events e
    WHERE e.seq = requests.resolved_seq)
    WHERE resolved_seq IS NOT NULL;
CREATE TABLE receipts_spent (
    jti TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    request_id TEXT NOT NULL,
    spent_at INTEGER NOT NULL,
    spent_by TEXT
) WITHOUT ROWID;
";

/// On-call schedules as responders: each request keeps who its schedules named when it was
/// created and at its escalation (a JSON array), so the decision shows who was on call.
const SCHEMA_V19: &str = "
ALTER TABLE requests ADD COLUMN on_call TEXT;
";

/// Warnings before expiry: when a pending request's responders are warned (`warn_at`) and how
/// long before its deadline (`warn_before`, seconds, kept so an extension warns again).
const SCHEMA_V20: &str = "
ALTER TABLE requests ADD COLUMN warn_at INTEGER;
ALTER TABLE requests ADD COLUMN warn_before INTEGER;
CREATE INDEX requests_warn ON requests (warn_at)
    WHERE status = 'pending' AND warn_at IS NOT NULL;
";

/// Migrations in order; entry `i` brings the schema to version `i + 1`. Applied ones never change.
const MIGRATIONS: &[&str] = &[
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7, SCHEMA_V8,
    SCHEMA_V9, SCHEMA_V10, SCHEMA_V11, SCHEMA_V12, SCHEMA_V13, SCHEMA_V14, SCHEMA_V15, SCHEMA_V16,
    SCHEMA_V17, SCHEMA_V18, SCHEMA_V19, SCHEMA_V20,
];
const _: () = assert!(MIGRATIONS.len() as i64 == SCHEMA_VERSION);

/// Keeps `seq` numbers from being handed out twice once `AUTOINCREMENT` is gone (schema 10): an
/// older version deleted purged events, so the newest ones may be gone, and a follower may hold
/// a cursor up to `high_water`. A tombstone at `high_water` makes it the newest `seq` again.
fn keep_high_water(conn: &Connection, high_water: i64) -> rusqlite::Result<()> {
    let (newest, previous) = chain_head(conn)?;
    if newest >= high_water {
        return Ok(());
    }
    let tombstone = EventParts {
        seq: high_water,
        tenant: String::new(),
        request_id: String::new(),
        kind: audit::PURGED.to_owned(),
        actor: None,
        channel: None,
        principal: None,
        at: 0,
        hash: None,
    };
    insert_linked(conn, tombstone, previous.as_deref())
}

/// Hashes, in order, the events stored before the audit chain existed (schema 9).
fn hash_unhashed(conn: &Connection) -> rusqlite::Result<()> {
    let events: Vec<EventParts> = {
        let mut stmt = conn.prepare(&format!(
            "SELECT {EVENT_COLUMNS_BEFORE_PRINCIPAL} FROM events ORDER BY seq"
        ))?;
        stmt.query_map([], event_parts)?.collect::<Result<_, _>>()?
    };
    let mut update = conn.prepare("UPDATE events SET hash = ?1 WHERE seq = ?2")?;
    for (seq, hash) in audit::missing_hashes(&events) {
        update.execute(params![hash, seq])?;
    }
    Ok(())
}

/// Brings the schema up to [`SCHEMA_VERSION`] in one transaction.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    // Another process may have migrated while we waited for the lock.
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let result = (|| {
        for (version, sql) in (1_i64..).zip(MIGRATIONS) {
            if version <= current {
                continue;
            }
            // Read before version 10 drops it: the highest event `seq` ever handed out.
            let high_water = if version == 10 {
                conn.query_row(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .optional()?
            } else {
                None
            };
            conn.execute_batch(sql)?;
            if version == 9 {
                hash_unhashed(conn)?;
            }
            if version == 14 {
                super::insights::backfill(conn)?;
            }
            if let Some(high_water) = high_water {
                keep_high_water(conn, high_water)?;
            }
        }
        // Never lowered: a newer binary may have migrated further meanwhile.
        if current < SCHEMA_VERSION {
            conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    /// Migrations only add; see `migration_rule`.
    #[test]
    fn the_migrations_only_add_or_make_a_listed_contraction() {
        if let Err(problems) = crate::migration_rule::check("sqlite", super::MIGRATIONS) {
            panic!("{problems}");
        }
    }
}
