//! The sequencer: one per database numbers the events writers left in the inbox, in rounds.
//!
//! Every instance runs one; the one whose own connection holds [`SEQUENCER_LOCK`] leads, the
//! others stand by and end a leader that stops making progress. A round moves committed inbox
//! events into `clarify_events` with the next numbers and their audit-chain hashes, and
//! notifies every instance, in one transaction holding [`EVENT_LOG_LOCK`]: that lock, not
//! leadership, is what keeps rounds one after another. ARCHITECTURE.md has the argument.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgConnection;
use sqlx::{Connection, Row};
use tokio::sync::{Notify, oneshot};

use super::hosts::Hosts;
use super::listener::{WAKE_CHANNEL, wake_payload};
use super::{LISTEN_BACKOFF_MAX, LISTEN_BACKOFF_MIN, corrupt_row, db_err};
use crate::audit;
use crate::codec::EventParts;
use crate::error::StoreError;
use crate::record::EventKind;

/// Advisory lock (transaction-level) taken by each numbering round of the sequencer, and by the
/// migration that hashed the events stored before the audit chain. Writers never take it. It
/// makes numbering rounds strictly one after another even if two sequencers ever believed they
/// lead (leadership is a matter of efficiency; this lock is what correctness rests on), and it
/// is the lock older versions took to append, so a round never interleaves with them either.
pub(super) const EVENT_LOG_LOCK: i64 = 0x636c_6172_6966_7902;

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

/// One instance's sequencer: stands by until it can take the lead, then numbers events until
/// the backend is dropped (see the module comment). A lost connection loses the lead with it;
/// the task reconnects and stands by again.
pub(super) async fn run_sequencer(
    hosts: Hosts,
    poke: Arc<Notify>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut backoff = LISTEN_BACKOFF_MIN;
    loop {
        let connected = tokio::select! {
            _ = &mut stop => return,
            connected = hosts.connect() => connected,
        };
        match connected {
            Ok((mut conn, _)) => {
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
        "SELECT id, tenant, request_id, kind, actor, channel, at, principal \
         FROM clarify_event_inbox \
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
            principal: row.try_get("principal").map_err(corrupt_row)?,
            at: row.try_get("at").map_err(corrupt_row)?,
            hash: None,
        };
        hash = audit::link(&hash, &audit::canonical(&event));
        hashes.push(hash.clone());
        numbered.push(event);
    }
    let resolutions: Vec<&EventParts> = numbered
        .iter()
        .filter(|e| EventKind::parse(&e.kind).is_some_and(EventKind::resolves))
        .collect();
    let resolved: Vec<String> = resolutions.iter().map(|e| e.request_id.clone()).collect();
    let resolved_seqs: Vec<i64> = resolutions.iter().map(|e| e.seq).collect();
    let resolved_principals: Vec<Option<String>> =
        resolutions.iter().map(|e| e.principal.clone()).collect();
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
             INSERT INTO clarify_events (seq, tenant, request_id, kind, actor, channel, at, hash, \
                 principal) \
             SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], \
                                  $6::text[], $7::text[], $8::bigint[], $9::text[], \
                                  $13::text[])) \
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
    .bind(&columns.principal)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    // The requests whose resolution this round numbers are counted into the insights now,
    // once: a failed round rolls this back with the numbering.
    super::insights::count(&mut tx, &resolved).await?;
    // Each request resolved in this round keeps its resolution's place, which its receipt
    // names, in the same transaction.
    if !resolved.is_empty() {
        sqlx::query(
            "UPDATE clarify_requests r SET resolved_seq = u.seq, resolved_principal = u.principal \
             FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(id, seq, principal) \
             WHERE r.id = u.id",
        )
        .bind(&resolved)
        .bind(&resolved_seqs)
        .bind(&resolved_principals)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    }
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
    principal: Vec<Option<String>>,
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
            principal: Vec::with_capacity(n),
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
        self.principal.push(e.principal);
    }
}
