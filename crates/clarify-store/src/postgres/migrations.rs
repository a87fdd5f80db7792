//! The PostgreSQL schema, version by version, and the migration that brings a database up to
//! date.
//!
//! `clarify_schema` records the applied versions; instances starting together migrate one after
//! another under [`MIGRATION_LOCK`], each in one transaction. An applied migration never
//! changes: a schema change is a new `SCHEMA_V<n>` appended to [`MIGRATIONS`]. Every table is
//! prefixed `clarify_`, so the database can be shared with other software. SQLite counts its
//! own versions (`sqlite/migrations.rs`); the two share them up to 9.

use sqlx::postgres::PgConnection;
use sqlx::{Connection, Executor};

use super::db_err;
use super::feed::event_parts;
use super::sequencer::EVENT_LOG_LOCK;
use crate::audit;
use crate::codec::EVENT_COLUMNS_BEFORE_PRINCIPAL;
use crate::error::StoreError;

/// Advisory lock serializing migrations of concurrently starting instances.
const MIGRATION_LOCK: i64 = 0x636c_6172_6966_7901;

/// The schema version this binary writes; a database with a newer one is refused at open.
pub(super) const SCHEMA_VERSION: i64 = 19;

/// Migrations in order; entry `i` brings the schema to version `i + 1`. Applied ones never change.
const MIGRATIONS: &[&str] = &[
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7, SCHEMA_V8,
    SCHEMA_V9, SCHEMA_V10, SCHEMA_V11, SCHEMA_V12, SCHEMA_V13, SCHEMA_V14, SCHEMA_V15, SCHEMA_V16,
    SCHEMA_V17, SCHEMA_V18, SCHEMA_V19,
];
const _: () = assert!(MIGRATIONS.len() as i64 == SCHEMA_VERSION);

/// Schema version 1: requests, their tags, the event log and grants, in the layout of `codec`
/// (see there), with indexes for every lookup the store makes.
const SCHEMA_V1: &str = "
CREATE TABLE clarify_requests (
    seq bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    tenant text NOT NULL,
    status text NOT NULL,
    session text,
    agent text,
    spec text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint,
    resolved_at bigint,
    answered_by text,
    channel text,
    answers text,
    idempotency_key text,
    dedupe_key text
);
CREATE UNIQUE INDEX clarify_requests_idempotency ON clarify_requests (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- One pending request per (tenant, session, dedupe key); a NULL session is its own value,
-- distinct from every named session, including ''.
CREATE UNIQUE INDEX clarify_requests_dedupe
    ON clarify_requests (tenant, dedupe_key, (session IS NULL), (coalesce(session, '')))
    WHERE status = 'pending' AND dedupe_key IS NOT NULL;
CREATE INDEX clarify_requests_tenant ON clarify_requests (tenant, seq);
CREATE INDEX clarify_requests_status ON clarify_requests (tenant, status, seq);
CREATE INDEX clarify_requests_session ON clarify_requests (tenant, session, seq)
    WHERE session IS NOT NULL;
CREATE INDEX clarify_requests_agent ON clarify_requests (tenant, agent, seq)
    WHERE agent IS NOT NULL;
CREATE INDEX clarify_requests_due ON clarify_requests (expires_at)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
CREATE TABLE clarify_request_tags (
    tenant text NOT NULL,
    tag text NOT NULL,
    seq bigint NOT NULL REFERENCES clarify_requests (seq) ON DELETE CASCADE,
    PRIMARY KEY (tenant, tag, seq)
);
CREATE INDEX clarify_request_tags_seq ON clarify_request_tags (seq);
CREATE TABLE clarify_events (
    seq bigserial PRIMARY KEY,
    tenant text NOT NULL,
    request_id text NOT NULL,
    kind text NOT NULL,
    actor text,
    channel text,
    at bigint NOT NULL
);
CREATE INDEX clarify_events_tenant ON clarify_events (tenant, seq);
-- Arguments may be up to 64 KiB, too long for a btree key, so uniqueness uses their digest.
CREATE TABLE clarify_grants (
    seq bigserial PRIMARY KEY,
    tenant text NOT NULL,
    tool text NOT NULL,
    arguments text NOT NULL,
    arguments_sha256 text NOT NULL,
    scope text NOT NULL,
    session text NOT NULL DEFAULT '',
    created_at bigint NOT NULL,
    UNIQUE (tenant, tool, arguments_sha256, scope, session)
);
";

/// Schema version 2: API keys, login and session tokens, server secrets and webhook deliveries.
const SCHEMA_V2: &str = "
CREATE TABLE clarify_keys (
    id text PRIMARY KEY,
    name text NOT NULL,
    role text NOT NULL,
    tenant text NOT NULL,
    digest text NOT NULL,
    created_at bigint NOT NULL,
    revoked_at bigint
);
-- An active name is unique; a revoked key keeps its name, which a new key may reuse.
CREATE UNIQUE INDEX clarify_keys_active_name ON clarify_keys (name) WHERE revoked_at IS NULL;
CREATE TABLE clarify_tokens (
    digest text PRIMARY KEY,
    kind text NOT NULL,
    key_id text NOT NULL,
    expires_at bigint NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX clarify_tokens_key ON clarify_tokens (key_id);
CREATE INDEX clarify_tokens_expiry ON clarify_tokens (expires_at);
CREATE TABLE clarify_secrets (
    name text PRIMARY KEY,
    value bytea NOT NULL
);
CREATE TABLE clarify_deliveries (
    id bigserial PRIMARY KEY,
    request_id text NOT NULL,
    tenant text NOT NULL,
    url text NOT NULL,
    status text NOT NULL,
    created_at bigint NOT NULL,
    next_attempt_at bigint
);
CREATE INDEX clarify_deliveries_request ON clarify_deliveries (request_id, id);
CREATE INDEX clarify_deliveries_due ON clarify_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE TABLE clarify_delivery_attempts (
    delivery_id bigint NOT NULL REFERENCES clarify_deliveries (id) ON DELETE CASCADE,
    number bigint NOT NULL,
    at bigint NOT NULL,
    status_code integer,
    error text,
    duration_ms bigint NOT NULL,
    PRIMARY KEY (delivery_id, number)
);
";

/// Schema version 3: grants get an id to be revoked by, and the request and person that gave
/// them. Grants stored before have neither; they get a random id.
const SCHEMA_V3: &str = "
ALTER TABLE clarify_grants ADD COLUMN id text, ADD COLUMN request_id text, ADD COLUMN granted_by text;
UPDATE clarify_grants SET id = replace(gen_random_uuid()::text, '-', '') WHERE id IS NULL;
ALTER TABLE clarify_grants ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX clarify_grants_id ON clarify_grants (id);
";

/// Schema version 4: what retention (`--retain-resolved`) looks up, resolved requests by age and
/// a request's events.
const SCHEMA_V4: &str = "
CREATE INDEX clarify_requests_resolved ON clarify_requests (resolved_at) WHERE status <> 'pending';
CREATE INDEX clarify_events_request ON clarify_events (request_id);
";

/// Schema version 5: a quorum request's votes, reminders and escalation, and webhooks that
/// announce an event of a pending request (a reminder, an escalation).
const SCHEMA_V5: &str = "
ALTER TABLE clarify_requests ADD COLUMN votes text, ADD COLUMN remind_at bigint,
    ADD COLUMN escalate_at bigint, ADD COLUMN escalated_at bigint;
CREATE INDEX clarify_requests_remind ON clarify_requests (remind_at)
    WHERE status = 'pending' AND remind_at IS NOT NULL;
CREATE INDEX clarify_requests_escalate ON clarify_requests (escalate_at)
    WHERE status = 'pending' AND escalate_at IS NOT NULL;
ALTER TABLE clarify_deliveries ADD COLUMN event text;
";

/// Schema version 6: channel notifications are deliveries to a channel (by its configured name)
/// instead of a URL, with the reference of the message they posted.
const SCHEMA_V6: &str = "
ALTER TABLE clarify_deliveries ADD COLUMN channel text, ADD COLUMN message_ref text;
";

/// Schema version 7: an announcement found by the platform's reference to its message (a reply
/// typed in a chat thread names the message it replies to).
const SCHEMA_V7: &str = "
CREATE INDEX clarify_deliveries_message_ref ON clarify_deliveries (message_ref)
    WHERE message_ref IS NOT NULL;
";

/// Schema version 8: cursors, a channel's place in a platform's feed (Telegram's update offset),
/// advanced only once what came before it is committed.
const SCHEMA_V8: &str = "
CREATE TABLE clarify_cursors (
    name  TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
";

/// Schema version 9: the audit chain, a hash per event (see `audit`). Events stored before it
/// are hashed in order by the migration.
const SCHEMA_V9: &str = "
ALTER TABLE clarify_events ADD COLUMN hash TEXT;
";

/// Schema version 10: the event inbox, where writers leave their events for the sequencer to
/// number (see `sequencer`). No index but the key: the sequencer reads it in key order,
/// and it holds only what the last few milliseconds wrote. Vacuumed eagerly, as a queue.
const SCHEMA_V10: &str = "
CREATE TABLE clarify_event_inbox (
    id bigserial PRIMARY KEY,
    tenant text NOT NULL,
    request_id text NOT NULL,
    kind text NOT NULL,
    actor text,
    channel text,
    at bigint NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000);
";

/// Schema version 11: bounded grants: when a grant stops matching (`expires_at`, `NULL`
/// never), how many calls it lets through (`max_uses`, `NULL` any) and how many it did.
const SCHEMA_V11: &str = "
ALTER TABLE clarify_grants ADD COLUMN expires_at bigint, ADD COLUMN max_uses bigint,
    ADD COLUMN uses bigint NOT NULL DEFAULT 0;
";

/// Schema version 12: who was authenticated, in each event and in the inbox on its way there
/// (the audit chain hashes it when present, so older events keep their hashes).
const SCHEMA_V12: &str = "
ALTER TABLE clarify_event_inbox ADD COLUMN principal text;
ALTER TABLE clarify_events ADD COLUMN principal text;
";

/// Schema version 13: the insights rollup (see the store's `insights` module): per tenant, tag
/// (empty: every request), UTC day and combination of the filters, how many requests resolved
/// so and a histogram of the times people took (`times`, one count per bucket). Its key leads
/// with what every reading fixes (tenant, tag) and ranges over (day). The requests already
/// resolved are counted into it by the migration.
const SCHEMA_V13: &str = "
CREATE TABLE clarify_insights (
    tenant text NOT NULL,
    tag text NOT NULL,
    day bigint NOT NULL,
    agent text NOT NULL,
    tool text NOT NULL,
    surface text NOT NULL,
    responder text NOT NULL,
    ending text NOT NULL,
    n bigint NOT NULL,
    times bigint[] NOT NULL,
    PRIMARY KEY (tenant, tag, day, agent, tool, surface, responder, ending)
);
";

/// Schema version 14: AG-UI runs that ended waiting for people (the store's `agui` module):
/// what resuming each needs, its lease while an instance resumes it, and the resumed run's
/// events. Read by thread, and (the resume worker) the waiting ones in order.
const SCHEMA_V14: &str = "
CREATE TABLE clarify_agui_runs (
    seq bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    tenant text NOT NULL,
    agent text NOT NULL,
    thread_id text NOT NULL,
    data text NOT NULL,
    done boolean NOT NULL DEFAULT false,
    lease_until bigint,
    created_at bigint NOT NULL,
    events text
);
CREATE INDEX clarify_agui_runs_thread ON clarify_agui_runs (tenant, agent, thread_id, seq);
CREATE INDEX clarify_agui_runs_waiting ON clarify_agui_runs (seq) WHERE NOT done;
";

/// Schema version 15: the insights' coarser rollups (see the store's `insights` module), shaped
/// as `clarify_insights`: per calendar month (`day` is the month's first) and combination, and
/// per day and outcome with the combination left empty; and, per tenant, the last day they
/// hold, which readings move on by counting the day rows after it in (none yet: a tenant's
/// first reading counts them all).
const SCHEMA_V15: &str = "
CREATE TABLE clarify_insights_months (LIKE clarify_insights INCLUDING ALL);
CREATE TABLE clarify_insights_days (LIKE clarify_insights INCLUDING ALL);
CREATE TABLE clarify_insights_compacted (
    tenant text PRIMARY KEY,
    through_day bigint NOT NULL
);
";

/// Web Push subscriptions: one per browser endpoint, read by tenant when a request is created.
const SCHEMA_V16: &str = "
CREATE TABLE clarify_push_subscriptions (
    id text PRIMARY KEY,
    tenant text NOT NULL,
    person text NOT NULL,
    claimed_groups text NOT NULL,
    principal text,
    endpoint text NOT NULL UNIQUE,
    p256dh text NOT NULL,
    auth text NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX clarify_push_subscriptions_tenant ON clarify_push_subscriptions (tenant, created_at);
";

/// Hashes, in order, the events stored before the audit chain existed (schema 9), in the
/// migrating transaction, holding the event-log lock.
async fn hash_unhashed(conn: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(EVENT_LOG_LOCK)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    let rows = sqlx::query(&format!(
        "SELECT {EVENT_COLUMNS_BEFORE_PRINCIPAL} FROM clarify_events ORDER BY seq"
    ))
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    let events = rows
        .iter()
        .map(event_parts)
        .collect::<Result<Vec<_>, _>>()?;
    let (seqs, hashes): (Vec<i64>, Vec<String>) =
        audit::missing_hashes(&events).into_iter().unzip();
    sqlx::query(
        "UPDATE clarify_events e SET hash = u.h \
         FROM unnest($1::bigint[], $2::text[]) AS u(s, h) WHERE e.seq = u.s",
    )
    .bind(seqs)
    .bind(hashes)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Creates the schema, or brings it up to [`SCHEMA_VERSION`], in one transaction.
pub(super) async fn migrate(conn: &mut PgConnection) -> Result<(), StoreError> {
    let mut tx = conn.begin().await.map_err(db_err)?;
    // A transaction-level lock is released by commit or rollback, so a failed migration can
    // never leave it held on a connection.
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    // Checked before creating: `CREATE ... IF NOT EXISTS` needs the CREATE privilege even when
    // the table exists, and a role that only uses a migrated database may lack it.
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('clarify_schema') IS NOT NULL")
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
    if !exists {
        tx.execute(
            "CREATE TABLE clarify_schema (
                 version bigint PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(db_err)?;
    }
    let found: i64 = sqlx::query_scalar("SELECT coalesce(max(version), 0) FROM clarify_schema")
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (version, sql) in (1_i64..).zip(MIGRATIONS) {
        if version <= found {
            continue;
        }
        // A plain string runs through the simple query protocol, which takes many statements.
        tx.execute(*sql)
            .await
            .map_err(|e| StoreError::Backend(format!("migrating to schema {version}: {e}")))?;
        if version == 9 {
            hash_unhashed(&mut tx).await?;
        }
        if version == 13 {
            super::insights::backfill(&mut tx).await?;
        }
        sqlx::query("INSERT INTO clarify_schema (version) VALUES ($1)")
            .bind(version)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
    }
    tx.commit().await.map_err(db_err)?;
    Ok(())
}

/// Receipts: each resolved request keeps its resolution's place in the audit chain (which its
/// receipt names; the sequencer fills it in when it numbers the event, and it is found here for
/// the requests resolved before), and each spent receipt is a row, unique per `jti`, so a
/// receipt is spent once whatever the instances.
const SCHEMA_V17: &str = "
ALTER TABLE clarify_requests ADD COLUMN resolved_seq bigint;
ALTER TABLE clarify_requests ADD COLUMN resolved_principal text;
UPDATE clarify_requests r SET resolved_seq = (SELECT min(e.seq) FROM clarify_events e
    WHERE e.request_id = r.id AND e.kind IN ('answered', 'skipped', 'expired', 'cancelled'))
    WHERE r.status <> 'pending';
UPDATE clarify_requests r SET resolved_principal = (SELECT e.principal FROM clarify_events e
    WHERE e.seq = r.resolved_seq)
    WHERE r.resolved_seq IS NOT NULL;
CREATE TABLE clarify_receipts_spent (
    jti text PRIMARY KEY,
    tenant text NOT NULL,
    request_id text NOT NULL,
    spent_at bigint NOT NULL,
    spent_by text
);
";

/// On-call schedules as responders: each request keeps who its schedules named when it was
/// created and at its escalation (a JSON array), so the decision shows who was on call.
const SCHEMA_V18: &str = "
ALTER TABLE clarify_requests ADD COLUMN on_call text;
";

/// Warnings before expiry: when a pending request's responders are warned (`warn_at`) and how
/// long before its deadline (`warn_before`, seconds, kept so an extension warns again).
const SCHEMA_V19: &str = "
ALTER TABLE clarify_requests ADD COLUMN warn_at bigint, ADD COLUMN warn_before bigint;
CREATE INDEX clarify_requests_warn ON clarify_requests (warn_at)
    WHERE status = 'pending' AND warn_at IS NOT NULL;
";

#[cfg(test)]
mod tests {
    /// Migrations only add; see `migration_rule`.
    #[test]
    fn the_migrations_only_add_or_make_a_listed_contraction() {
        if let Err(problems) = crate::migration_rule::check("postgres", super::MIGRATIONS) {
            panic!("{problems}");
        }
    }
}
