//! The PostgreSQL backend: state shared by several clarify instances.
//!
//! Every instance talks to the same tables (all named `clarify_*`, so the database can be shared
//! with other software), so everything that must happen once happens inside PostgreSQL:
//! - a resolution is one conditional `UPDATE ... WHERE status = 'pending'`, so of concurrent
//!   resolutions from any number of instances exactly one changes the row;
//! - idempotency keys and `dedupe` are unique indexes, so two instances creating the same request
//!   at once still store it once;
//! - the reaper claims overdue rows with `FOR UPDATE SKIP LOCKED`, so instances expiring at the
//!   same moment neither block each other nor expire a request twice;
//! - a webhook delivery is inserted by the transaction that resolves its request, and workers claim
//!   due deliveries with `FOR UPDATE SKIP LOCKED`, so two instances never lease the same one;
//! - a login token is redeemed by one `DELETE ... RETURNING`, so it works once however many
//!   instances try it; an active key name and a server secret are settled by unique indexes.
//!
//! The event feed. A writing transaction takes no lock beyond its own rows and sends no
//! notification: it inserts its events, unnumbered, into `clarify_event_inbox`, and commits.
//! One *sequencer* per database numbers them: every instance runs a sequencer task, and the one
//! holding the session-level advisory lock [`SEQUENCER_LOCK`] on its own connection leads. In
//! rounds, it moves the committed inbox rows, oldest first, into `clarify_events` with the next
//! sequence numbers and their audit-chain hashes, in one transaction that also takes
//! [`EVENT_LOG_LOCK`] and sends one `NOTIFY` on [`WAKE_CHANNEL`] for the whole round. Readers
//! read only `clarify_events`, whose rows are written by nothing else, so numbers become
//! visible in order (ARCHITECTURE.md has the argument, and what a stalled sequencer costs).
//!
//! Waiters in other instances are woken by that notification (its payload names the round's
//! newest sequence and the requests it resolved): every instance runs one listener task that
//! turns it into local wake-ups. Notifications are only hints (a waiter re-reads the row), and
//! the store's event-log poller backs them up. A waiter in the resolving instance is woken at
//! once, without waiting for the sequencer.
//!
//! The schema is created and migrated at open by a small embedded runner: `clarify_schema` holds
//! the applied versions, and a database newer than this binary is refused.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use clarify_core::{Resolution, Status};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions, PgRow};
use sqlx::{ConnectOptions, Connection, Executor, Row};
use tokio::sync::{Notify, oneshot};

use crate::access::{AfterAttempt, ApiKey, Attempt, Delivery, KeyRow, Outbox, TokenKind};
use crate::audit;
use crate::backend::{Ballot, Cast, NewRow, Resolved, Tally, tally};
use crate::codec::{
    ATTEMPT_COLUMNS, AttemptParts, COLUMNS, DELIVERY_COLUMNS, DeliveryParts, EVENT_COLUMNS,
    EventParts, KEY_COLUMNS, KeyParts, RowParts, after_attempt, answers_json, attempt_values,
    millis, reaped_callback_url, reminder_period, spec_json, votes_json,
};
use crate::error::StoreError;
use crate::grant::{GRANT_COLUMNS, GrantFilter, GrantParts, StoredGrant};
use crate::record::{
    Actor, Created, Event, EventKind, ListQuery, Page, RequestRecord, StoredResolution,
    encode_cursor,
};
use crate::waiters::Waiters;

/// Connections per instance. Every operation is a few short statements, so a small pool serves
/// many concurrent agents, and several instances stay well under the server's connection limit.
const MAX_CONNECTIONS: u32 = 16;
/// How long to wait for a connection before reporting the database unavailable. Short, so a
/// readiness probe or a CLI command fails fast instead of hanging.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The channel each numbering round notifies: `<newest seq>` then the ids of the requests the
/// round resolved, space-separated, or `*` for "every request" when they do not fit.
const WAKE_CHANNEL: &str = "clarify_resolved";
/// Advisory lock serializing migrations of concurrently starting instances.
const MIGRATION_LOCK: i64 = 0x636c_6172_6966_7901;
/// Advisory lock (transaction-level) taken by each numbering round of the sequencer, and by the
/// migration that hashed the events stored before the audit chain. Writers never take it. It
/// makes numbering rounds strictly one after another even if two sequencers ever believed they
/// lead (leadership is a matter of efficiency; this lock is what correctness rests on), and it
/// is the lock older versions took to append, so a round never interleaves with them either.
const EVENT_LOG_LOCK: i64 = 0x636c_6172_6966_7902;
/// Advisory lock (session-level) held by the leading sequencer on its own connection, outside
/// every transaction. Ending that session, however it ends, hands the lead on.
const SEQUENCER_LOCK: i64 = 0x636c_6172_6966_7903;
/// How many inbox events one numbering round moves at most.
const SEQUENCE_BATCH: i64 = 1_000;
/// How often the leading sequencer looks for events written by other instances when nothing
/// pokes it (a write in its own instance pokes it at once). Each look is one cheap indexed
/// statement; this interval bounds the extra latency of a cross-instance wake-up.
const SEQUENCE_IDLE: Duration = Duration::from_millis(4);
/// How often a standing-by sequencer tries to take the lead.
const STANDBY_POLL: Duration = Duration::from_millis(250);
/// How long the oldest inbox event may stay unnumbered while another session holds the lead
/// before a standing-by sequencer ends that session (a leader that hangs with its connection
/// open, such as a stopped process, would otherwise hold the feed back for good).
const STALL_AFTER: Duration = Duration::from_secs(2);
/// The longest `NOTIFY` payload sent (PostgreSQL's limit is 8,000 bytes); a round resolving more
/// requests than fit wakes every waiter instead.
const NOTIFY_PAYLOAD_MAX: usize = 7_900;
/// How often `create` retries after losing a unique-index race whose winner then vanished from
/// view (resolved, so no longer a dedupe match); more means something else is wrong.
const CREATE_ATTEMPTS: usize = 5;
/// Listener reconnection backoff bounds.
const LISTEN_BACKOFF_MIN: Duration = Duration::from_millis(100);
const LISTEN_BACKOFF_MAX: Duration = Duration::from_secs(5);

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
/// number (see the module comment). No index but the key: the sequencer reads it in key order,
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

/// The PostgreSQL schema's version. SQLite's ([`crate::codec::SCHEMA_VERSION`]) counts its own
/// changes: the two share versions up to 9; PostgreSQL's 10 is the event inbox, SQLite's 10 a
/// leaner event table.
const PG_SCHEMA_VERSION: i64 = 10;

/// Migrations in order; entry `i` brings the schema to version `i + 1`. Applied ones never change.
const MIGRATIONS: &[&str] = &[
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7, SCHEMA_V8,
    SCHEMA_V9, SCHEMA_V10,
];
const _: () = assert!(MIGRATIONS.len() as i64 == PG_SCHEMA_VERSION);

/// The layout of `codec` (see there), plus indexes for every lookup the store makes.
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

/// API keys, login and session tokens, server secrets and webhook deliveries.
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

/// Grants get an id to be revoked by, and the request and person that gave them. Grants stored
/// before have neither; they get a random id.
const SCHEMA_V3: &str = "
ALTER TABLE clarify_grants ADD COLUMN id text, ADD COLUMN request_id text, ADD COLUMN granted_by text;
UPDATE clarify_grants SET id = replace(gen_random_uuid()::text, '-', '') WHERE id IS NULL;
ALTER TABLE clarify_grants ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX clarify_grants_id ON clarify_grants (id);
";

/// What retention (`--retain-resolved`) looks up: resolved requests by age, a request's events.
const SCHEMA_V4: &str = "
CREATE INDEX clarify_requests_resolved ON clarify_requests (resolved_at) WHERE status <> 'pending';
CREATE INDEX clarify_events_request ON clarify_events (request_id);
";

/// A quorum request's votes, reminders and escalation, and webhooks that announce an event of a
/// pending request (a reminder, an escalation).
const SCHEMA_V5: &str = "
ALTER TABLE clarify_requests ADD COLUMN votes text, ADD COLUMN remind_at bigint,
    ADD COLUMN escalate_at bigint, ADD COLUMN escalated_at bigint;
CREATE INDEX clarify_requests_remind ON clarify_requests (remind_at)
    WHERE status = 'pending' AND remind_at IS NOT NULL;
CREATE INDEX clarify_requests_escalate ON clarify_requests (escalate_at)
    WHERE status = 'pending' AND escalate_at IS NOT NULL;
ALTER TABLE clarify_deliveries ADD COLUMN event text;
";

/// Channel notifications: deliveries to a channel (by its configured name) instead of a URL,
/// with the reference of the message they posted.
const SCHEMA_V6: &str = "
ALTER TABLE clarify_deliveries ADD COLUMN channel text, ADD COLUMN message_ref text;
";

#[derive(Debug)]
pub(crate) struct PgBackend {
    pool: PgPool,
    /// Tells this instance's sequencer that events were just committed.
    poke: Arc<Notify>,
    /// Dropping the backend drops these senders, which stop the listener and sequencer tasks.
    _stop_listener: oneshot::Sender<()>,
    _stop_sequencer: oneshot::Sender<()>,
}

impl PgBackend {
    pub(crate) async fn open(url: &str, waiters: Arc<Waiters>) -> Result<Self, StoreError> {
        let mut options = PgConnectOptions::from_str(url).map_err(|e| StoreError::InvalidUrl {
            url: redact(url),
            reason: e.to_string(),
        })?;
        // Named, so an operator can tell clarify's connections apart; a URL's own name wins.
        if options.get_application_name().is_none() {
            options = options.application_name("clarify");
        }
        let target = describe(&options);

        // One direct connection first: the pool retries a refused connection until its timeout
        // and then reports only "timed out", while this says what is wrong, at once.
        let mut conn = tokio::time::timeout(CONNECT_TIMEOUT, options.connect())
            .await
            .map_err(|_| {
                StoreError::Unavailable(format!(
                    "PostgreSQL at {target} did not answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| {
                StoreError::Unavailable(format!(
                    "PostgreSQL at {target}: {e}; check that the server runs and the URL is right"
                ))
            })?;
        let migrated = migrate(&mut conn).await;
        // Closing is a courtesy to the server; the connection is finished either way.
        let _ = conn.close().await;
        migrated?;

        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_lazy_with(options.clone());

        // Listening before `open` returns means no resolution made after it is missed.
        let listener = listen(&options).await.map_err(|e| {
            StoreError::Unavailable(format!("PostgreSQL at {target}: cannot LISTEN: {e}"))
        })?;
        let (stop_listener, stopped) = oneshot::channel();
        tokio::spawn(run_listener(
            options.clone(),
            listener,
            Arc::downgrade(&waiters),
            stopped,
        ));
        let poke = Arc::new(Notify::new());
        let (stop_sequencer, stopped) = oneshot::channel();
        tokio::spawn(run_sequencer(options, Arc::clone(&poke), stopped));
        Ok(Self {
            pool,
            poke,
            _stop_listener: stop_listener,
            _stop_sequencer: stop_sequencer,
        })
    }

    /// Commits a transaction that appended events, and tells this instance's sequencer.
    async fn commit_events(
        &self,
        tx: sqlx::Transaction<'_, sqlx::Postgres>,
    ) -> Result<(), StoreError> {
        tx.commit().await.map_err(db_err)?;
        self.poke.notify_one();
        Ok(())
    }

    pub(crate) async fn create(&self, row: NewRow) -> Result<Created, StoreError> {
        let spec = spec_json(&row.request)?;
        let expires_at = row.expires_at.map(millis);
        for _ in 0..CREATE_ATTEMPTS {
            // One statement, so one round trip and its own transaction: the request, its tags,
            // its announcements and its event, all or nothing. A conflict on a unique index (the
            // idempotency key, or an identical pending request) inserts nothing; then the
            // request that won is read.
            let seq: Option<i64> = sqlx::query_scalar(
                "WITH req AS ( \
                     INSERT INTO clarify_requests (id, tenant, status, session, agent, spec, \
                         created_at, expires_at, idempotency_key, dedupe_key, remind_at, \
                         escalate_at) \
                     VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                     ON CONFLICT DO NOTHING RETURNING seq), \
                 tags AS ( \
                     INSERT INTO clarify_request_tags (tenant, tag, seq) \
                     SELECT $2, tag, req.seq FROM req, unnest($12::text[]) AS tag \
                     ON CONFLICT DO NOTHING), \
                 announced AS ( \
                     INSERT INTO clarify_deliveries (request_id, tenant, url, status, \
                         created_at, next_attempt_at, event, channel) \
                     SELECT $1, $2, '', 'pending', $6, $6, 'created', c \
                     FROM req, unnest($13::text[]) WITH ORDINALITY AS u(c, n) ORDER BY n), \
                 event AS ( \
                     INSERT INTO clarify_event_inbox (tenant, request_id, kind, actor, channel, \
                         at) \
                     SELECT $2, $1, 'created', NULL, NULL, $6 FROM req) \
                 SELECT seq FROM req",
            )
            .bind(&row.id)
            .bind(&row.tenant)
            .bind(&row.request.session)
            .bind(&row.request.agent)
            .bind(&spec)
            .bind(millis(row.created_at))
            .bind(expires_at)
            .bind(&row.request.idempotency_key)
            .bind(&row.dedupe_key)
            .bind(row.remind_at.map(millis))
            .bind(row.escalate_at.map(millis))
            .bind(&row.request.tags)
            .bind(&row.announce)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
            if seq.is_some() {
                self.poke.notify_one();
                return Ok(Created {
                    record: row.into_record(),
                    created: true,
                });
            }
            let mut conn = self.pool.acquire().await.map_err(db_err)?;
            if let Some(record) = existing(&mut conn, &row).await? {
                return Ok(Created {
                    record,
                    created: false,
                });
            }
            // The winner is no longer a match (resolved meanwhile): try again.
        }
        Err(StoreError::Backend(format!(
            "could not store request {}: it kept conflicting with concurrent writes",
            row.id
        )))
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM clarify_requests WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?
        .map(|r| parts(&r)?.decode())
        .transpose()
    }

    pub(crate) async fn list(
        &self,
        tenant: &str,
        q: &ListQuery,
        before: Option<u64>,
    ) -> Result<Page, StoreError> {
        let limit = q.effective_limit();
        // Only the filters in use appear in the statement, so each shape gets a plan that uses
        // its index rather than one generic plan full of `$n IS NULL OR ...`.
        let mut sql = format!("SELECT seq, {COLUMNS} FROM clarify_requests r WHERE tenant = $1");
        let mut n = 1;
        let mut param = || {
            n += 1;
            n
        };
        if q.status.is_some() {
            sql += &format!(" AND status = ${}", param());
        }
        if q.session.is_some() {
            sql += &format!(" AND session = ${}", param());
        }
        if q.agent.is_some() {
            sql += &format!(" AND agent = ${}", param());
        }
        if q.tag.is_some() {
            sql += &format!(
                " AND EXISTS (SELECT 1 FROM clarify_request_tags t \
                 WHERE t.tenant = $1 AND t.tag = ${} AND t.seq = r.seq)",
                param()
            );
        }
        if before.is_some() {
            sql += &format!(" AND seq < ${}", param());
        }
        sql += &format!(" ORDER BY seq DESC LIMIT ${}", param());

        let mut query = sqlx::query(&sql).bind(tenant);
        if let Some(status) = q.status {
            query = query.bind(status.as_str());
        }
        if let Some(session) = &q.session {
            query = query.bind(session);
        }
        if let Some(agent) = &q.agent {
            query = query.bind(agent);
        }
        if let Some(tag) = &q.tag {
            query = query.bind(tag);
        }
        if let Some(before) = before {
            query = query.bind(i64::try_from(before).unwrap_or(i64::MAX));
        }
        // One more than a page tells whether another page follows.
        let rows = query
            .bind(i64::try_from(limit + 1).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        let more = rows.len() > limit;
        let mut records = Vec::with_capacity(limit.min(rows.len()));
        let mut last_seq = None;
        for row in rows.iter().take(limit) {
            let seq: i64 = row.try_get("seq").map_err(corrupt_row)?;
            last_seq = Some(seq);
            records.push(parts(row)?.decode()?);
        }
        let next_cursor = match last_seq {
            Some(seq) if more => Some(encode_cursor(to_u64(seq)?)),
            _ => None,
        };
        Ok(Page {
            records,
            next_cursor,
        })
    }

    pub(crate) async fn resolve(
        &self,
        id: &str,
        res: StoredResolution,
        grants: &[StoredGrant],
    ) -> Result<Resolved, StoreError> {
        let resolved = if grants.is_empty() {
            // The common case is one statement in its own transaction.
            let mut conn = self.pool.acquire().await.map_err(db_err)?;
            resolve_in_one(&mut conn, id, &res).await?
        } else {
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            let resolved = resolve_in_one(&mut tx, id, &res).await?;
            match &resolved {
                Some(record) => {
                    insert_grants(&mut tx, &record.tenant, grants).await?;
                    tx.commit().await.map_err(db_err)?;
                }
                None => tx.rollback().await.map_err(db_err)?,
            }
            resolved
        };
        let Some(record) = resolved else {
            return Ok(match self.get(id).await? {
                Some(record) => Resolved::Lost(record),
                None => Resolved::NotFound,
            });
        };
        self.poke.notify_one();
        Ok(Resolved::Won(record))
    }

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
        };
        let at = millis(vote.at);
        let resolution = match decided {
            None => None,
            Some(answers) => {
                let made = grants(&record, &answers);
                let resolution = StoredResolution {
                    resolution: Resolution::Answered(answers),
                    actor: actor.clone(),
                    resolved_at: vote.at,
                };
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
        append_events(&mut tx, EventKind::Voted, &target, name, channel, at).await?;
        if resolution.is_some() {
            append_events(&mut tx, EventKind::Answered, &target, name, channel, at).await?;
        }
        self.commit_events(tx).await?;
        Ok(Cast::Counted(record))
    }

    pub(crate) async fn remind_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.fall_due(EventKind::Reminded, millis(now), limit).await
    }

    pub(crate) async fn escalate_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.fall_due(EventKind::Escalated, millis(now), limit)
            .await
    }

    /// Reminds (`kind` `Reminded`: the next reminder a period from `at`) or escalates
    /// (`Escalated`) up to `limit` pending requests due by `at`, and announces each, in one
    /// transaction holding their rows; returns their ids.
    async fn fall_due(
        &self,
        kind: EventKind,
        at: i64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let reminding = kind == EventKind::Reminded;
        let column = if reminding {
            "remind_at"
        } else {
            "escalate_at"
        };
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let due = due(&mut tx, column, at, limit).await?;
        if due.is_empty() {
            tx.rollback().await.map_err(db_err)?;
            return Ok(Vec::new());
        }
        let (ids, next): (Vec<&str>, Vec<Option<i64>>) = due
            .iter()
            .map(|(_, id, spec)| {
                let period = reminder_period(id, spec);
                (id.as_str(), period.map(|p| at.saturating_add(p)))
            })
            .unzip();
        let update = if reminding {
            sqlx::query(
                "UPDATE clarify_requests r SET remind_at = u.next \
                 FROM unnest($1::text[], $2::bigint[]) AS u(id, next) WHERE r.id = u.id",
            )
            .bind(&ids)
            .bind(&next)
        } else {
            sqlx::query(
                "UPDATE clarify_requests SET escalate_at = NULL, escalated_at = $2 \
                 WHERE id = ANY($1)",
            )
            .bind(&ids)
            .bind(at)
        };
        update.execute(&mut *tx).await.map_err(db_err)?;
        let ids = announce(&mut tx, &due, kind, at).await?;
        self.commit_events(tx).await?;
        Ok(ids)
    }

    pub(crate) async fn purge_resolved(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        // One statement, one short transaction. Rows another instance is purging are skipped,
        // not waited for; tags and delivery attempts go by their foreign keys' cascade. Events
        // stay as tombstones (seq and hash), so the audit chain still verifies; a request with
        // an event not numbered yet waits for the sequencer.
        let ids: Vec<String> = sqlx::query_scalar(
            "WITH victims AS ( \
                 SELECT seq, id FROM clarify_requests r \
                 WHERE status <> 'pending' AND resolved_at < $1 AND NOT EXISTS ( \
                     SELECT 1 FROM clarify_deliveries d \
                     WHERE d.request_id = r.id AND d.status = 'pending') \
                 AND NOT EXISTS ( \
                     SELECT 1 FROM clarify_event_inbox i WHERE i.request_id = r.id) \
                 ORDER BY resolved_at LIMIT $2 \
                 FOR UPDATE SKIP LOCKED), \
             events AS ( \
                 UPDATE clarify_events e SET tenant = '', request_id = '', kind = 'purged', \
                     actor = NULL, channel = NULL \
                 FROM victims v WHERE e.request_id = v.id), \
             deliveries AS ( \
                 DELETE FROM clarify_deliveries d USING victims v WHERE d.request_id = v.id) \
             DELETE FROM clarify_requests r USING victims v WHERE r.seq = v.seq RETURNING r.id",
        )
        .bind(millis(before))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(ids)
    }

    pub(crate) async fn expire_due(
        &self,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let at = millis(now);
        let system = Actor::system();
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Rows another instance is resolving or expiring right now are skipped, not waited for:
        // that instance settles them, and a later pass picks up whatever is still due.
        let rows = sqlx::query(
            "WITH due AS ( \
                 SELECT seq FROM clarify_requests \
                 WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1 \
                 ORDER BY expires_at, seq LIMIT $2 \
                 FOR UPDATE SKIP LOCKED) \
             UPDATE clarify_requests r \
             SET status = 'expired', resolved_at = $1, answered_by = $3, channel = $4, \
                 answers = NULL, remind_at = NULL, escalate_at = NULL \
             FROM due WHERE r.seq = due.seq AND r.status = 'pending' \
             RETURNING r.id, r.tenant, r.expires_at, r.seq, r.spec",
        )
        .bind(at)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(&system.name)
        .bind(&system.channel)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        if rows.is_empty() {
            tx.rollback().await.map_err(db_err)?;
            return Ok(Vec::new());
        }
        let mut due = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get("id").map_err(corrupt_row)?;
            let tenant: String = row.try_get("tenant").map_err(corrupt_row)?;
            let deadline: Option<i64> = row.try_get("expires_at").map_err(corrupt_row)?;
            let seq: i64 = row.try_get("seq").map_err(corrupt_row)?;
            let spec: String = row.try_get("spec").map_err(corrupt_row)?;
            let url = reaped_callback_url(&id, &spec);
            due.push((deadline, seq, tenant, id, url));
        }
        // Oldest deadline first, as the memory backend expires them.
        due.sort_unstable();
        let hooks: Vec<(String, String, String)> = due
            .iter()
            .filter_map(|(_, _, t, id, url)| Some((t.clone(), id.clone(), url.clone()?)))
            .collect();
        queue_deliveries(&mut tx, &hooks, at, None).await?;
        let targets: Vec<(String, String)> =
            due.into_iter().map(|(_, _, t, id, _)| (t, id)).collect();
        let ids: Vec<String> = targets.iter().map(|(_, id)| id.clone()).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        follow_up(&mut tx, &refs, EventKind::Expired, at).await?;
        append_events(
            &mut tx,
            EventKind::Expired,
            &targets,
            system.name.as_deref(),
            Some(&system.channel),
            at,
        )
        .await?;
        self.commit_events(tx).await?;
        Ok(ids)
    }

    pub(crate) async fn events_after(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let columns = EVENT_COLUMNS;
        let rows = match tenant {
            Some(tenant) => {
                sqlx::query(&format!(
                    "SELECT {columns} FROM clarify_events WHERE tenant = $1 AND seq > $2 \
                     AND kind <> 'purged' ORDER BY seq LIMIT $3"
                ))
                .bind(tenant)
                .bind(after)
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
            None => {
                sqlx::query(&format!(
                    "SELECT {columns} FROM clarify_events WHERE seq > $1 AND kind <> 'purged' \
                     ORDER BY seq LIMIT $2"
                ))
                .bind(after)
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
        }
        .map_err(db_err)?;
        rows.iter().map(event).collect()
    }

    /// Stored events after `after` in feed order, as the audit chain holds them (tombstones
    /// included): every tenant's with `None`.
    pub(crate) async fn audit_events(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventParts>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM clarify_events \
             WHERE seq > $1 AND ($2::text IS NULL OR tenant = $2) ORDER BY seq LIMIT $3"
        ))
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(tenant)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(event_parts).collect()
    }

    /// The hash the first stored event links to: none, since every event is kept (retention
    /// leaves tombstones).
    pub(crate) async fn audit_base(&self) -> Result<String, StoreError> {
        Ok(String::new())
    }

    pub(crate) async fn sync_feed(&self, within: Duration) -> Result<(), StoreError> {
        // Every event committed before now is in this snapshot: numbered already, or in the
        // inbox with an id up to this one.
        let newest: Option<i64> = sqlx::query_scalar("SELECT max(id) FROM clarify_event_inbox")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        let Some(newest) = newest else {
            return Ok(());
        };
        self.poke.notify_one();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let waiting: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM clarify_event_inbox WHERE id <= $1)",
            )
            .bind(newest)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
            if !waiting {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(StoreError::Unavailable(format!(
                    "events committed {} s ago are still not numbered: no clarify instance's \
                     event sequencer is making progress on this database",
                    within.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    pub(crate) async fn last_event_seq(&self) -> Result<u64, StoreError> {
        let seq: i64 = sqlx::query_scalar("SELECT coalesce(max(seq), 0) FROM clarify_events")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        to_u64(seq)
    }

    pub(crate) async fn grants(
        &self,
        tenant: &str,
        filter: GrantFilter<'_>,
    ) -> Result<Vec<StoredGrant>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {GRANT_COLUMNS} FROM clarify_grants WHERE tenant = $1 \
             AND ($2::text IS NULL OR tool = $2) AND ($3::text IS NULL OR session = $3) \
             ORDER BY seq"
        ))
        .bind(tenant)
        .bind(filter.tool)
        .bind(filter.session)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(|row| grant_parts(row)?.decode()).collect()
    }

    pub(crate) async fn announced_as(
        &self,
        channel: &str,
        message_ref: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT tenant, request_id FROM clarify_deliveries WHERE message_ref = $2 \
             AND channel = $1 AND event = 'created' ORDER BY id LIMIT 1",
        )
        .bind(channel)
        .bind(message_ref)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        row.map(|r| {
            Ok((
                r.try_get("tenant").map_err(corrupt_row)?,
                r.try_get("request_id").map_err(corrupt_row)?,
            ))
        })
        .transpose()
    }

    pub(crate) async fn revoke_grant(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let row = sqlx::query(&format!(
            "DELETE FROM clarify_grants WHERE tenant = $1 AND id = $2 RETURNING {GRANT_COLUMNS}"
        ))
        .bind(tenant)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        row.map(|row| grant_parts(&row)?.decode()).transpose()
    }

    pub(crate) async fn insert_key(&self, row: KeyRow) -> Result<bool, StoreError> {
        // Only the active-name index may refuse quietly; any other conflict is an error.
        let inserted = sqlx::query(&format!(
            "INSERT INTO clarify_keys ({KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING"
        ))
        .bind(&row.key.id)
        .bind(&row.key.name)
        .bind(row.key.role.as_str())
        .bind(&row.key.tenant)
        .bind(&row.digest)
        .bind(millis(row.key.created_at))
        .bind(row.key.revoked_at.map(millis))
        .execute(&self.pool)
        .await
        .map_err(db_err)?
        .rows_affected();
        Ok(inserted == 1)
    }

    pub(crate) async fn key(&self, id: &str) -> Result<Option<KeyRow>, StoreError> {
        sqlx::query(&format!(
            "SELECT {KEY_COLUMNS} FROM clarify_keys WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?
        .map(|row| key_parts(&row)?.decode())
        .transpose()
    }

    pub(crate) async fn keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        sqlx::query(&format!(
            "SELECT {KEY_COLUMNS} FROM clarify_keys ORDER BY created_at, id"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?
        .iter()
        .map(|row| Ok(key_parts(row)?.decode()?.key))
        .collect()
    }

    pub(crate) async fn revoke_key(
        &self,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<ApiKey>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Of concurrent revocations, the first locks the row; the others then find it revoked.
        let row = sqlx::query(&format!(
            "UPDATE clarify_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL \
             RETURNING {KEY_COLUMNS}"
        ))
        .bind(name)
        .bind(millis(at))
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let Some(row) = row else {
            tx.rollback().await.map_err(db_err)?;
            return Ok(None);
        };
        let key = key_parts(&row)?.decode()?.key;
        // Its sessions and login links end with it, in the same transaction.
        sqlx::query("DELETE FROM clarify_tokens WHERE key_id = $1")
            .bind(&key.id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(Some(key))
    }

    pub(crate) async fn key_count(&self) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM clarify_keys")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    pub(crate) async fn insert_token(
        &self,
        kind: TokenKind,
        digest: &str,
        key_id: &str,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        // Expired tokens can never be redeemed; issuing is rare enough to sweep them here. The
        // sweep and the insert are one statement, so no transaction is needed.
        sqlx::query(
            "WITH swept AS (DELETE FROM clarify_tokens WHERE expires_at <= $5) \
             INSERT INTO clarify_tokens (digest, kind, key_id, expires_at, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(digest)
        .bind(kind.as_str())
        .bind(key_id)
        .bind(millis(expires_at))
        .bind(millis(now))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn redeem_token(
        &self,
        kind: TokenKind,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        // A login token is used up by the statement that finds it: of concurrent redemptions
        // the first deletes the row, and the others, waiting on its lock, then find it gone.
        let sql = match kind {
            TokenKind::Login | TokenKind::Once => {
                "DELETE FROM clarify_tokens WHERE digest = $1 AND kind = $2 AND expires_at > $3 \
                 RETURNING key_id"
            }
            TokenKind::Session => {
                "SELECT key_id FROM clarify_tokens WHERE digest = $1 AND kind = $2 \
                 AND expires_at > $3"
            }
        };
        sqlx::query_scalar(sql)
            .bind(digest)
            .bind(kind.as_str())
            .bind(millis(now))
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)
    }

    pub(crate) async fn delete_token(&self, digest: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM clarify_tokens WHERE digest = $1")
            .bind(digest)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn secret(
        &self,
        name: &str,
        candidate: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        let select = "SELECT value FROM clarify_secrets WHERE name = $1";
        // Nearly always there already.
        let stored: Option<Vec<u8>> = sqlx::query_scalar(select)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        if let Some(value) = stored {
            return Ok(value);
        }
        let inserted: Option<Vec<u8>> = sqlx::query_scalar(
            "INSERT INTO clarify_secrets (name, value) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING RETURNING value",
        )
        .bind(name)
        .bind(&candidate)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        if let Some(value) = inserted {
            return Ok(value);
        }
        // Another instance inserted first. Its row may be newer than the snapshot the insert
        // ran in, so it is read by a statement of its own, which sees every committed row.
        sqlx::query_scalar(select)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or_else(|| StoreError::Backend(format!("secret {name:?} vanished")))
    }

    pub(crate) async fn cursor(&self, name: &str) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar("SELECT value FROM clarify_cursors WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)
    }

    pub(crate) async fn set_cursor(&self, name: &str, value: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO clarify_cursors (name, value) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        )
        .bind(name)
        .bind(value)
        .execute(&self.pool)
        .await
        .map_err(db_err)
        .map(drop)
    }

    pub(crate) async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
        outbox: Outbox,
    ) -> Result<Vec<Delivery>, StoreError> {
        // Choosing and leasing are one statement. Rows another instance is claiming right now
        // are skipped, not waited for; once that claim commits, the re-checked condition
        // (`next_attempt_at <= now`) excludes them, so no delivery is claimed twice.
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let rows = sqlx::query(&format!(
            "WITH due AS ( \
                 SELECT id FROM clarify_deliveries \
                 WHERE status = 'pending' AND next_attempt_at <= $1 \
                 AND (channel IS NOT NULL) = $4 \
                 ORDER BY id LIMIT $3 \
                 FOR UPDATE SKIP LOCKED) \
             UPDATE clarify_deliveries d SET next_attempt_at = $2 \
             FROM due WHERE d.id = due.id \
             RETURNING {}",
            prefixed_delivery_columns("d")
        ))
        .bind(millis(now))
        .bind(millis(lease_until))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(outbox == Outbox::Channels)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let mut claimed = rows
            .iter()
            .map(delivery_parts)
            .collect::<Result<Vec<_>, _>>()?;
        // RETURNING follows no ORDER BY.
        claimed.sort_unstable_by_key(|d| d.id);
        let claimed = with_attempts(&mut tx, claimed).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(claimed)
    }

    pub(crate) async fn finish_attempt(
        &self,
        id: u64,
        attempt: Attempt,
        after: AfterAttempt,
        message_ref: Option<String>,
    ) -> Result<(), StoreError> {
        // An id no row can have names no delivery: nothing to record, as for a deleted one.
        let Ok(id) = i64::try_from(id) else {
            return Ok(());
        };
        let (status, next) = after_attempt(after);
        let (number, at, status_code, error, duration_ms) = attempt_values(&attempt);
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let updated = sqlx::query(
            "UPDATE clarify_deliveries SET status = $2, next_attempt_at = $3, \
             message_ref = COALESCE($4, message_ref) WHERE id = $1",
        )
        .bind(id)
        .bind(status)
        .bind(next)
        .bind(message_ref)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected();
        if updated == 0 {
            tx.rollback().await.map_err(db_err)?;
            return Ok(());
        }
        sqlx::query(&format!(
            "INSERT INTO clarify_delivery_attempts ({ATTEMPT_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6)"
        ))
        .bind(id)
        .bind(number)
        .bind(at)
        .bind(status_code)
        .bind(error)
        .bind(duration_ms)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn deliveries(&self, request_id: &str) -> Result<Vec<Delivery>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // One snapshot for deliveries and attempts: an attempt finishing meanwhile is seen with
        // the status it set, or not at all.
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let rows = sqlx::query(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM clarify_deliveries WHERE request_id = $1 ORDER BY id"
        ))
        .bind(request_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let found = rows
            .iter()
            .map(delivery_parts)
            .collect::<Result<Vec<_>, _>>()?;
        let found = with_attempts(&mut tx, found).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(found)
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        // One snapshot for all: an event is committed with the change it records, in the inbox
        // or, once numbered, in the log.
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // Committed events the sequencer has not numbered yet are in the inbox, in the same
        // snapshot: their effect is taken out, so the count is the one as of the newest number.
        let n: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM clarify_requests WHERE status = 'pending') \
                 - (SELECT count(*) FROM clarify_event_inbox WHERE kind = 'created') \
                 + (SELECT count(*) FROM clarify_event_inbox \
                    WHERE kind IN ('answered', 'skipped', 'expired', 'cancelled'))",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        let seq: i64 = sqlx::query_scalar("SELECT coalesce(max(seq), 0) FROM clarify_events")
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok((
            u64::try_from(n).unwrap_or(0),
            u64::try_from(seq).unwrap_or(0),
        ))
    }
}

/// The request `row` must not be stored beside: the one with its idempotency key (whatever its
/// status), else an identical pending one of the same tenant and session.
async fn existing(
    conn: &mut PgConnection,
    row: &NewRow,
) -> Result<Option<RequestRecord>, StoreError> {
    if let Some(key) = &row.request.idempotency_key {
        let found = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM clarify_requests WHERE tenant = $1 AND idempotency_key = $2"
        ))
        .bind(&row.tenant)
        .bind(key)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        if let Some(found) = found {
            return parts(&found)?.decode().map(Some);
        }
    }
    if let Some(key) = &row.dedupe_key {
        // Spelled as the unique index `clarify_requests_dedupe` is, so it is a single probe.
        let found = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM clarify_requests \
             WHERE tenant = $1 AND dedupe_key = $2 AND status = 'pending' \
             AND (session IS NULL) = ($3::text IS NULL) \
             AND coalesce(session, '') = coalesce($3::text, '')"
        ))
        .bind(&row.tenant)
        .bind(key)
        .bind(&row.request.session)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        if let Some(found) = found {
            return parts(&found)?.decode().map(Some);
        }
    }
    Ok(None)
}

/// Appends one event per `(tenant, request id)` target, in order, to the inbox: unnumbered
/// and unhashed, without any lock, for the sequencer to number once the transaction commits
/// (see the module comment). Commit with [`PgBackend::commit_events`].
async fn append_events(
    conn: &mut PgConnection,
    kind: EventKind,
    targets: &[(String, String)],
    actor: Option<&str>,
    channel: Option<&str>,
    at: i64,
) -> Result<(), StoreError> {
    let (tenants, ids): (Vec<&str>, Vec<&str>) = targets
        .iter()
        .map(|(t, id)| (t.as_str(), id.as_str()))
        .unzip();
    sqlx::query(
        "INSERT INTO clarify_event_inbox (tenant, request_id, kind, actor, channel, at) \
         SELECT t, id, $3, $4, $5, $6 \
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(t, id, n) ORDER BY n",
    )
    .bind(tenants)
    .bind(ids)
    .bind(kind.as_str())
    .bind(actor)
    .bind(channel)
    .bind(at)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Hashes, in order, the events stored before the audit chain existed (schema 9), in the
/// migrating transaction, holding the event-log lock.
async fn hash_unhashed(conn: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(EVENT_LOG_LOCK)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    let rows = sqlx::query(&format!(
        "SELECT {EVENT_COLUMNS} FROM clarify_events ORDER BY seq"
    ))
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    let mut head = String::new();
    let (mut seqs, mut hashes) = (Vec::new(), Vec::new());
    for row in &rows {
        let e = event_parts(row)?;
        let hash = match e.hash.clone() {
            Some(h) => h,
            None => {
                let h = audit::link(&head, &audit::canonical(&e));
                seqs.push(e.seq);
                hashes.push(h.clone());
                h
            }
        };
        head = hash;
    }
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

/// Applies a resolution to a pending request that is not past its deadline at `resolved_at`
/// (an expiry only once it is) in one statement, with everything that goes with it: the webhook
/// delivery (when the stored request has a `callback_url`), a follow-up on every channel it was
/// announced on, and its event. Returns the new record, or `None` when the request did not
/// qualify (and nothing was written).
async fn resolve_in_one(
    conn: &mut PgConnection,
    id: &str,
    res: &StoredResolution,
) -> Result<Option<RequestRecord>, StoreError> {
    let status = res.resolution.status();
    let answers = answers_json(&res.resolution)?;
    // The deadline condition mirrors the memory backend (see `apply_resolution`). The
    // follow-ups read the announcements as they were before this statement, which are all of
    // them: a webhook delivery, the one row the statement adds there, is no announcement.
    let row = sqlx::query(&format!(
        "WITH r AS ( \
             UPDATE clarify_requests \
             SET status = $2, resolved_at = $3, answered_by = $4, channel = $5, answers = $6, \
                 remind_at = NULL, escalate_at = NULL \
             WHERE id = $1 AND status = 'pending' AND CASE WHEN $7::boolean \
                 THEN expires_at IS NOT NULL AND expires_at <= $3 \
                 ELSE expires_at IS NULL OR expires_at > $3 END \
             RETURNING {COLUMNS}), \
         hook AS ( \
             INSERT INTO clarify_deliveries (request_id, tenant, url, status, created_at, \
                 next_attempt_at, event) \
             SELECT id, tenant, url, 'pending', $3, $3, NULL \
             FROM (SELECT id, tenant, spec::jsonb ->> 'callback_url' AS url FROM r) AS h \
             WHERE url IS NOT NULL), \
         follow AS ( \
             INSERT INTO clarify_deliveries (request_id, tenant, url, status, created_at, \
                 next_attempt_at, event, channel) \
             SELECT d.request_id, d.tenant, '', 'pending', $3, $3, $8, d.channel \
             FROM clarify_deliveries d JOIN r ON d.request_id = r.id \
             WHERE d.event = 'created' AND d.channel IS NOT NULL ORDER BY d.id), \
         event AS ( \
             INSERT INTO clarify_event_inbox (tenant, request_id, kind, actor, channel, at) \
             SELECT tenant, id, $8, $4, $5, $3 FROM r) \
         SELECT {COLUMNS} FROM r"
    ))
    .bind(id)
    .bind(status.as_str())
    .bind(millis(res.resolved_at))
    .bind(&res.actor.name)
    .bind(&res.actor.channel)
    .bind(&answers)
    .bind(status == Status::Expired)
    .bind(EventKind::for_status(status).as_str())
    .fetch_optional(&mut *conn)
    .await
    .map_err(db_err)?;
    row.map(|row| parts(&row)?.decode()).transpose()
}

/// Applies a resolution to a pending request that is not past its deadline at `resolved_at` (an
/// expiry only once it is), with what goes with it in the same transaction: the webhook
/// delivery and the grants. Returns the new record, or `None` when the request did not qualify.
/// The caller appends the event.
async fn apply_resolution(
    conn: &mut PgConnection,
    id: &str,
    res: &StoredResolution,
    grants: &[StoredGrant],
) -> Result<Option<RequestRecord>, StoreError> {
    let status = res.resolution.status();
    let expiring = status == Status::Expired;
    let answers = answers_json(&res.resolution)?;
    let at = millis(res.resolved_at);
    // The deadline condition mirrors the memory backend: an answer, skip or cancellation only
    // while the request is not overdue at `resolved_at`, an expiry only once it is.
    let row = sqlx::query(&format!(
        "UPDATE clarify_requests \
         SET status = $2, resolved_at = $3, answered_by = $4, channel = $5, answers = $6, \
             remind_at = NULL, escalate_at = NULL \
         WHERE id = $1 AND status = 'pending' AND CASE WHEN $7::boolean \
             THEN expires_at IS NOT NULL AND expires_at <= $3 \
             ELSE expires_at IS NULL OR expires_at > $3 END \
         RETURNING {COLUMNS}"
    ))
    .bind(id)
    .bind(status.as_str())
    .bind(at)
    .bind(&res.actor.name)
    .bind(&res.actor.channel)
    .bind(&answers)
    .bind(expiring)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db_err)?;
    let Some(row) = row else { return Ok(None) };
    let record = parts(&row)?.decode()?;
    // Queued in the resolving transaction: both commit, or neither.
    if let Some(url) = &record.request.callback_url {
        let target = (record.tenant.clone(), record.id.clone(), url.clone());
        queue_deliveries(conn, std::slice::from_ref(&target), at, None).await?;
    }
    insert_grants(conn, &record.tenant, grants).await?;
    // Every announcement of it is edited to show the outcome.
    follow_up(conn, &[id], EventKind::for_status(status), at).await?;
    Ok(Some(record))
}

/// Locks up to `limit` pending requests whose `column` time is due at `at` and that no other
/// transaction holds, and returns their `(tenant, id, spec)`, oldest due first.
async fn due(
    conn: &mut PgConnection,
    column: &str,
    at: i64,
    limit: usize,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let rows = sqlx::query(&format!(
        "SELECT tenant, id, spec FROM clarify_requests \
         WHERE status = 'pending' AND {column} IS NOT NULL AND {column} <= $1 \
         ORDER BY {column}, seq LIMIT $2 FOR UPDATE SKIP LOCKED"
    ))
    .bind(at)
    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("tenant").map_err(corrupt_row)?,
                row.try_get("id").map_err(corrupt_row)?,
                row.try_get("spec").map_err(corrupt_row)?,
            ))
        })
        .collect()
}

/// Writes a system event about each of the `due` pending requests and queues their webhooks and
/// a notification on each channel they were announced on; returns their ids.
async fn announce(
    conn: &mut PgConnection,
    due: &[(String, String, String)],
    kind: EventKind,
    at: i64,
) -> Result<Vec<String>, StoreError> {
    let hooks: Vec<(String, String, String)> = due
        .iter()
        .filter_map(|(t, id, spec)| Some((t.clone(), id.clone(), reaped_callback_url(id, spec)?)))
        .collect();
    queue_deliveries(conn, &hooks, at, Some(kind)).await?;
    // Every channel a request was announced on hears of it too.
    let ids: Vec<&str> = due.iter().map(|(_, id, _)| id.as_str()).collect();
    follow_up(conn, &ids, kind, at).await?;
    let targets: Vec<(String, String)> = due
        .iter()
        .map(|(t, id, _)| (t.clone(), id.clone()))
        .collect();
    let system = Actor::system();
    append_events(
        conn,
        kind,
        &targets,
        system.name.as_deref(),
        Some(&system.channel),
        at,
    )
    .await?;
    Ok(targets.into_iter().map(|(_, id)| id).collect())
}

/// Queues a notification of `kind` about each of the requests `ids` on every channel it was
/// announced on: a reminder or escalation, a vote, or its resolution (which edits the
/// announcement).
async fn follow_up(
    conn: &mut PgConnection,
    ids: &[&str],
    kind: EventKind,
    at: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO clarify_deliveries \
         (request_id, tenant, url, status, created_at, next_attempt_at, event, channel) \
         SELECT request_id, tenant, '', 'pending', $2, $2, $3, channel FROM clarify_deliveries \
         WHERE request_id = ANY($1) AND event = 'created' AND channel IS NOT NULL ORDER BY id",
    )
    .bind(ids)
    .bind(at)
    .bind(kind.as_str())
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Queues a webhook delivery, due at once, for every `(tenant, request id, url)`, in order: of
/// a request resolved at `at` (`event` is `None`), or announcing `event` of a pending one, inside
/// the writing transaction.
async fn queue_deliveries(
    conn: &mut PgConnection,
    targets: &[(String, String, String)],
    at: i64,
    event: Option<EventKind>,
) -> Result<(), StoreError> {
    if targets.is_empty() {
        return Ok(());
    }
    let mut tenants = Vec::with_capacity(targets.len());
    let mut ids = Vec::with_capacity(targets.len());
    let mut urls = Vec::with_capacity(targets.len());
    for (tenant, id, url) in targets {
        tenants.push(tenant.as_str());
        ids.push(id.as_str());
        urls.push(url.as_str());
    }
    sqlx::query(
        "INSERT INTO clarify_deliveries \
         (request_id, tenant, url, status, created_at, next_attempt_at, event) \
         SELECT id, t, url, 'pending', $4, $4, $5 \
         FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(t, id, url, n) \
         ORDER BY n",
    )
    .bind(tenants)
    .bind(ids)
    .bind(urls)
    .bind(at)
    .bind(event.map(EventKind::as_str))
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// The deliveries with their attempts, in the order given; one query for all the attempts.
async fn with_attempts(
    conn: &mut PgConnection,
    found: Vec<DeliveryParts>,
) -> Result<Vec<Delivery>, StoreError> {
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = found.iter().map(|d| d.id).collect();
    let rows = sqlx::query(&format!(
        "SELECT {ATTEMPT_COLUMNS} FROM clarify_delivery_attempts \
         WHERE delivery_id = ANY($1) ORDER BY delivery_id, number"
    ))
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    let mut attempts: HashMap<i64, Vec<Attempt>> = HashMap::new();
    for row in &rows {
        let parts = attempt_parts(row)?;
        let delivery = parts.delivery_id;
        attempts.entry(delivery).or_default().push(parts.decode()?);
    }
    found
        .into_iter()
        .map(|d| {
            let own = attempts.remove(&d.id).unwrap_or_default();
            d.decode(own)
        })
        .collect()
}

/// Creates the schema, or brings it up to [`PG_SCHEMA_VERSION`], in one transaction.
async fn migrate(conn: &mut PgConnection) -> Result<(), StoreError> {
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
    if found > PG_SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: PG_SCHEMA_VERSION,
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
        sqlx::query("INSERT INTO clarify_schema (version) VALUES ($1)")
            .bind(version)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
    }
    tx.commit().await.map_err(db_err)?;
    Ok(())
}

/// A listener connection subscribed to [`WAKE_CHANNEL`].
async fn listen(options: &PgConnectOptions) -> Result<PgListener, sqlx::Error> {
    // A pool of its own, one connection, never recycled: the listener is meant to stay. A fresh
    // pool per (re)connection means a dead old connection can never hold the only slot.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(CONNECT_TIMEOUT)
        .max_lifetime(None)
        .idle_timeout(None)
        .connect_lazy_with(options.clone());
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(WAKE_CHANNEL).await?;
    Ok(listener)
}

/// Turns notifications into local wake-ups until the backend is dropped. While the connection is
/// down notifications are lost, so every (re)connection wakes every waiter to re-read its request.
async fn run_listener(
    options: PgConnectOptions,
    first: PgListener,
    waiters: Weak<Waiters>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut listener = Some(first);
    let mut backoff = LISTEN_BACKOFF_MIN;
    loop {
        let mut current = match listener.take() {
            Some(l) => l,
            None => {
                let connected = tokio::select! {
                    _ = &mut stop => return,
                    connected = listen(&options) => connected,
                };
                match connected {
                    Ok(l) => {
                        backoff = LISTEN_BACKOFF_MIN;
                        let Some(waiters) = waiters.upgrade() else {
                            return;
                        };
                        waiters.notify_all();
                        l
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot LISTEN for wake-ups; retrying");
                        tokio::select! {
                            _ = &mut stop => return,
                            () = tokio::time::sleep(backoff) => {}
                        }
                        backoff = (backoff * 2).min(LISTEN_BACKOFF_MAX);
                        continue;
                    }
                }
            }
        };
        loop {
            let received = tokio::select! {
                _ = &mut stop => return,
                received = current.try_recv() => received,
            };
            let Some(waiters) = waiters.upgrade() else {
                return;
            };
            match received {
                Ok(Some(notification)) => wake(&waiters, notification.payload()),
                // The connection dropped and sqlx has already reconnected and listens again.
                Ok(None) => waiters.notify_all(),
                Err(e) => {
                    tracing::warn!(error = %e, "lost the LISTEN connection; reconnecting");
                    waiters.notify_all();
                    break;
                }
            }
        }
        tokio::select! {
            _ = &mut stop => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(LISTEN_BACKOFF_MAX);
    }
}

/// Turns one numbering round's notification (see [`WAKE_CHANNEL`]) into local wake-ups. A
/// payload that does not start with a number is a request id, as versions before the sequencer
/// sent them.
fn wake(waiters: &Waiters, payload: &str) {
    let (first, rest) = payload.split_once(' ').unwrap_or((payload, ""));
    let Ok(seq) = first.parse::<u64>() else {
        waiters.notify(payload);
        return;
    };
    if rest == "*" {
        waiters.notify_all();
    } else {
        for id in rest.split(' ').filter(|id| !id.is_empty()) {
            waiters.notify(id);
        }
    }
    waiters.feed_reached(seq);
}

/// One instance's sequencer: stands by until it can take the lead, then numbers events until
/// the backend is dropped (see the module comment). A lost connection loses the lead with it;
/// the task reconnects and stands by again.
async fn run_sequencer(
    options: PgConnectOptions,
    poke: Arc<Notify>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut backoff = LISTEN_BACKOFF_MIN;
    loop {
        let connected = tokio::select! {
            _ = &mut stop => return,
            connected = options.connect() => connected,
        };
        match connected {
            Ok(mut conn) => {
                backoff = LISTEN_BACKOFF_MIN;
                match sequence(&mut conn, &poke, &mut stop).await {
                    Ok(()) => {
                        // Stopped: closing the session releases the lead at once.
                        let _ = conn.close().await;
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the event sequencer lost its connection; reconnecting");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "the event sequencer cannot connect; retrying"),
        }
        tokio::select! {
            _ = &mut stop => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(LISTEN_BACKOFF_MAX);
    }
}

/// Stands by on `conn` until it holds [`SEQUENCER_LOCK`], then numbers events in rounds: at
/// once after a poke or a full round, else every [`SEQUENCE_IDLE`]. Returns `Ok` when stopped,
/// an error when the connection fails.
async fn sequence(
    conn: &mut PgConnection,
    poke: &Notify,
    stop: &mut oneshot::Receiver<()>,
) -> Result<(), StoreError> {
    let mut watch = StallWatch::default();
    loop {
        let leading: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(SEQUENCER_LOCK)
            .fetch_one(&mut *conn)
            .await
            .map_err(db_err)?;
        if leading {
            break;
        }
        watch.check(conn).await?;
        tokio::select! {
            _ = &mut *stop => return Ok(()),
            () = tokio::time::sleep(STANDBY_POLL) => {}
        }
    }
    tracing::debug!("this instance numbers the event feed");
    loop {
        let moved = number_round(conn).await?;
        if moved >= SEQUENCE_BATCH as usize {
            continue;
        }
        tokio::select! {
            _ = &mut *stop => return Ok(()),
            () = poke.notified() => {}
            () = tokio::time::sleep(SEQUENCE_IDLE) => {}
        }
    }
}

/// What a standing-by sequencer sees of the leader's progress: the oldest unnumbered event, and
/// since when it has been the oldest.
#[derive(Debug, Default)]
struct StallWatch {
    oldest: Option<(i64, tokio::time::Instant)>,
}

impl StallWatch {
    /// Ends the leader's session when the same event has waited in the inbox for
    /// [`STALL_AFTER`]: the leader is hung (its process stopped, say) with its session open.
    /// Its open round, if any, rolls back, and the lead is free for whoever asks next.
    async fn check(&mut self, conn: &mut PgConnection) -> Result<(), StoreError> {
        let oldest: Option<i64> = sqlx::query_scalar("SELECT min(id) FROM clarify_event_inbox")
            .fetch_one(&mut *conn)
            .await
            .map_err(db_err)?;
        let now = tokio::time::Instant::now();
        match (oldest, self.oldest) {
            (None, _) => self.oldest = None,
            (Some(id), Some((seen, since))) if id == seen => {
                if now.duration_since(since) >= STALL_AFTER {
                    let ended: Vec<bool> = sqlx::query_scalar(
                        "SELECT pg_terminate_backend(pid) FROM pg_locks \
                         WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
                         AND classid::bigint = $1 AND objid::bigint = $2 \
                         AND pid <> pg_backend_pid()",
                    )
                    .bind(SEQUENCER_LOCK >> 32)
                    .bind(SEQUENCER_LOCK & 0xffff_ffff)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(db_err)?;
                    tracing::warn!(
                        ended = ended.iter().filter(|e| **e).count(),
                        "the event sequencer that leads made no progress for {} s; ended its session",
                        STALL_AFTER.as_secs()
                    );
                    self.oldest = None;
                }
            }
            (Some(id), _) => self.oldest = Some((id, now)),
        }
        Ok(())
    }
}

/// One numbering round: moves up to [`SEQUENCE_BATCH`] committed inbox events, oldest first,
/// into the log with the next sequence numbers and their chain hashes, and notifies
/// [`WAKE_CHANNEL`] once, all in one transaction holding [`EVENT_LOG_LOCK`]. Returns how many
/// it moved.
async fn number_round(conn: &mut PgConnection) -> Result<usize, StoreError> {
    // The common idle case costs one statement and no transaction.
    let waiting: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM clarify_event_inbox)")
        .fetch_one(&mut *conn)
        .await
        .map_err(db_err)?;
    if !waiting {
        return Ok(0);
    }
    let mut tx = conn.begin().await.map_err(db_err)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(EVENT_LOG_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    // Read under the lock, so the head is the chain's whoever numbered last.
    let head: Option<(i64, Option<String>)> =
        sqlx::query_as("SELECT seq, hash FROM clarify_events ORDER BY seq DESC LIMIT 1")
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
    let rows = sqlx::query(
        "SELECT id, tenant, request_id, kind, actor, channel, at FROM clarify_event_inbox \
         ORDER BY id LIMIT $1",
    )
    .bind(SEQUENCE_BATCH)
    .fetch_all(&mut *tx)
    .await
    .map_err(db_err)?;
    if rows.is_empty() {
        tx.rollback().await.map_err(db_err)?;
        return Ok(0);
    }
    let (mut seq, mut hash) = match head {
        Some((seq, hash)) => (seq, hash.unwrap_or_default()),
        None => (0, String::new()),
    };
    let n = rows.len();
    let mut moved = Vec::with_capacity(n);
    let mut numbered: Vec<EventParts> = Vec::with_capacity(n);
    let mut hashes = Vec::with_capacity(n);
    for row in &rows {
        moved.push(row.try_get::<i64, _>("id").map_err(corrupt_row)?);
        seq += 1;
        let event = EventParts {
            seq,
            tenant: row.try_get("tenant").map_err(corrupt_row)?,
            request_id: row.try_get("request_id").map_err(corrupt_row)?,
            kind: row.try_get("kind").map_err(corrupt_row)?,
            actor: row.try_get("actor").map_err(corrupt_row)?,
            channel: row.try_get("channel").map_err(corrupt_row)?,
            at: row.try_get("at").map_err(corrupt_row)?,
            hash: None,
        };
        hash = audit::link(&hash, &audit::canonical(&event));
        hashes.push(hash.clone());
        numbered.push(event);
    }
    let payload = wake_payload(seq, &numbered);
    let mut columns = EventColumns::with_capacity(n);
    for e in numbered {
        columns.push(e);
    }
    // The sequence behind `seq` is moved past the numbers used, so nothing that still draws
    // from it (an older version's writer) can take one of them.
    sqlx::query(
        "WITH moved AS (DELETE FROM clarify_event_inbox WHERE id = ANY($1)), \
         numbered AS ( \
             INSERT INTO clarify_events (seq, tenant, request_id, kind, actor, channel, at, hash) \
             SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], \
                                  $6::text[], $7::text[], $8::bigint[], $9::text[])) \
         SELECT setval(pg_get_serial_sequence('clarify_events', 'seq'), $10), \
                pg_notify($11, $12)",
    )
    .bind(&moved)
    .bind(&columns.seq)
    .bind(&columns.tenant)
    .bind(&columns.request_id)
    .bind(&columns.kind)
    .bind(&columns.actor)
    .bind(&columns.channel)
    .bind(&columns.at)
    .bind(&hashes)
    .bind(seq)
    .bind(WAKE_CHANNEL)
    .bind(&payload)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    tx.commit().await.map_err(db_err)?;
    Ok(n)
}

/// Events as one array per column, for `unnest`.
#[derive(Debug, Default)]
struct EventColumns {
    seq: Vec<i64>,
    tenant: Vec<String>,
    request_id: Vec<String>,
    kind: Vec<String>,
    actor: Vec<Option<String>>,
    channel: Vec<Option<String>>,
    at: Vec<i64>,
}

impl EventColumns {
    fn with_capacity(n: usize) -> Self {
        Self {
            seq: Vec::with_capacity(n),
            tenant: Vec::with_capacity(n),
            request_id: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            actor: Vec::with_capacity(n),
            channel: Vec::with_capacity(n),
            at: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, e: EventParts) {
        self.seq.push(e.seq);
        self.tenant.push(e.tenant);
        self.request_id.push(e.request_id);
        self.kind.push(e.kind);
        self.actor.push(e.actor);
        self.channel.push(e.channel);
        self.at.push(e.at);
    }
}

/// The notification of a round whose newest event is `seq` (see [`WAKE_CHANNEL`]).
fn wake_payload(seq: i64, events: &[EventParts]) -> String {
    let mut payload = seq.to_string();
    for e in events {
        if EventKind::parse(&e.kind).is_some_and(EventKind::resolves) {
            if payload.len() + 1 + e.request_id.len() > NOTIFY_PAYLOAD_MAX {
                return format!("{seq} *");
            }
            payload.push(' ');
            payload.push_str(&e.request_id);
        }
    }
    payload
}

/// Connection-level failures (the server went away, is starting or shutting down, refuses more
/// connections) are "unavailable"; everything else is a failure of the statement.
fn db_err(e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &e {
        let unavailable = db.code().is_some_and(|code| {
            code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03" | "53300")
        });
        if unavailable {
            return StoreError::Unavailable(e.to_string());
        }
    }
    StoreError::from(e)
}

fn corrupt_row(e: sqlx::Error) -> StoreError {
    StoreError::Corrupt(format!("unexpected column: {e}"))
}

fn to_u64(seq: i64) -> Result<u64, StoreError> {
    u64::try_from(seq).map_err(|_| StoreError::Corrupt(format!("negative sequence {seq}")))
}

fn parts(row: &PgRow) -> Result<RowParts, StoreError> {
    Ok(RowParts {
        id: row.try_get("id").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        status: row.try_get("status").map_err(corrupt_row)?,
        spec: row.try_get("spec").map_err(corrupt_row)?,
        created_at: row.try_get("created_at").map_err(corrupt_row)?,
        expires_at: row.try_get("expires_at").map_err(corrupt_row)?,
        resolved_at: row.try_get("resolved_at").map_err(corrupt_row)?,
        answered_by: row.try_get("answered_by").map_err(corrupt_row)?,
        channel: row.try_get("channel").map_err(corrupt_row)?,
        answers: row.try_get("answers").map_err(corrupt_row)?,
        votes: row.try_get("votes").map_err(corrupt_row)?,
        remind_at: row.try_get("remind_at").map_err(corrupt_row)?,
        escalated_at: row.try_get("escalated_at").map_err(corrupt_row)?,
    })
}

/// Records the grants an answer gave, in its transaction; an equal grant already stored is kept.
async fn insert_grants(
    conn: &mut PgConnection,
    tenant: &str,
    grants: &[StoredGrant],
) -> Result<(), StoreError> {
    for g in grants {
        let digest = crate::codec::sha256_hex(&g.grant.arguments);
        sqlx::query(
            "INSERT INTO clarify_grants (tenant, tool, arguments, arguments_sha256, scope, \
             session, created_at, id, request_id, granted_by) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
        )
        .bind(tenant)
        .bind(&g.grant.tool)
        .bind(&g.grant.arguments)
        .bind(digest)
        .bind(g.grant.scope.as_str())
        .bind(g.grant.session.as_deref().unwrap_or(""))
        .bind(millis(g.created_at))
        .bind(&g.id)
        .bind(&g.request_id)
        .bind(&g.granted_by)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    }
    Ok(())
}

fn grant_parts(row: &PgRow) -> Result<GrantParts, StoreError> {
    Ok(GrantParts {
        id: row.try_get("id").map_err(corrupt_row)?,
        tool: row.try_get("tool").map_err(corrupt_row)?,
        arguments: row.try_get("arguments").map_err(corrupt_row)?,
        scope: row.try_get("scope").map_err(corrupt_row)?,
        session: row.try_get("session").map_err(corrupt_row)?,
        request_id: row.try_get("request_id").map_err(corrupt_row)?,
        granted_by: row.try_get("granted_by").map_err(corrupt_row)?,
        created_at: row.try_get("created_at").map_err(corrupt_row)?,
    })
}

fn key_parts(row: &PgRow) -> Result<KeyParts, StoreError> {
    Ok(KeyParts {
        id: row.try_get("id").map_err(corrupt_row)?,
        name: row.try_get("name").map_err(corrupt_row)?,
        role: row.try_get("role").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        digest: row.try_get("digest").map_err(corrupt_row)?,
        created_at: row.try_get("created_at").map_err(corrupt_row)?,
        revoked_at: row.try_get("revoked_at").map_err(corrupt_row)?,
    })
}

fn delivery_parts(row: &PgRow) -> Result<DeliveryParts, StoreError> {
    Ok(DeliveryParts {
        id: row.try_get("id").map_err(corrupt_row)?,
        request_id: row.try_get("request_id").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        url: row.try_get("url").map_err(corrupt_row)?,
        status: row.try_get("status").map_err(corrupt_row)?,
        created_at: row.try_get("created_at").map_err(corrupt_row)?,
        next_attempt_at: row.try_get("next_attempt_at").map_err(corrupt_row)?,
        event: row.try_get("event").map_err(corrupt_row)?,
        channel: row.try_get("channel").map_err(corrupt_row)?,
        message_ref: row.try_get("message_ref").map_err(corrupt_row)?,
    })
}

fn attempt_parts(row: &PgRow) -> Result<AttemptParts, StoreError> {
    let status_code: Option<i32> = row.try_get("status_code").map_err(corrupt_row)?;
    Ok(AttemptParts {
        delivery_id: row.try_get("delivery_id").map_err(corrupt_row)?,
        number: row.try_get("number").map_err(corrupt_row)?,
        at: row.try_get("at").map_err(corrupt_row)?,
        status_code: status_code.map(i64::from),
        error: row.try_get("error").map_err(corrupt_row)?,
        duration_ms: row.try_get("duration_ms").map_err(corrupt_row)?,
    })
}

/// [`DELIVERY_COLUMNS`] qualified by a table alias.
fn prefixed_delivery_columns(alias: &str) -> String {
    DELIVERY_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn event(row: &PgRow) -> Result<Event, StoreError> {
    event_parts(row)?.decode()
}

fn event_parts(row: &PgRow) -> Result<EventParts, StoreError> {
    Ok(EventParts {
        seq: row.try_get("seq").map_err(corrupt_row)?,
        tenant: row.try_get("tenant").map_err(corrupt_row)?,
        request_id: row.try_get("request_id").map_err(corrupt_row)?,
        kind: row.try_get("kind").map_err(corrupt_row)?,
        actor: row.try_get("actor").map_err(corrupt_row)?,
        channel: row.try_get("channel").map_err(corrupt_row)?,
        at: row.try_get("at").map_err(corrupt_row)?,
        hash: row.try_get("hash").map_err(corrupt_row)?,
    })
}

/// `host:port/database` for messages; never the password.
fn describe(options: &PgConnectOptions) -> String {
    let host = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    match options.get_database() {
        Some(db) => format!("{host}/{db}"),
        None => host,
    }
}

/// The URL with any password replaced, for error messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_send<T: Send>(_: T) {}

    /// Servers open stores inside spawned tasks, so opening must be `Send`.
    #[allow(dead_code)]
    fn open_is_send(waiters: Arc<Waiters>) {
        is_send(PgBackend::open("postgres://localhost/x", waiters));
    }

    #[test]
    fn redact_hides_passwords() {
        assert_eq!(
            redact("postgres://u:secret@host:5432/db?x=1"),
            "postgres://u:***@host:5432/db?x=1"
        );
        assert_eq!(redact("postgres://u@host/db"), "postgres://u@host/db");
    }
}
