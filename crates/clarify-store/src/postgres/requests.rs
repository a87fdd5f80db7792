//! Requests: created in one statement with their tags, announcements and creation event, read,
//! listed, and resolved by one conditional update with what goes with it.

use clarify_core::Status;
use sqlx::Row;
use sqlx::postgres::{PgConnection, PgRow};

use super::grants::insert_grants;
use super::outbox::{follow_up, queue_deliveries};
use super::{PgBackend, corrupt_row, db_err, to_u64};
use crate::backend::writes::{NewRow, Resolved};
use crate::codec::{COLUMNS, RowParts, answers_json, millis, on_call_json, spec_json};
use crate::error::StoreError;
use crate::grants::StoredGrant;
use crate::record::{
    Created, EventKind, ListQuery, OnCallShift, Page, RequestRecord, StoredResolution,
    encode_cursor,
};

/// How often `create` retries after losing a unique-index race whose winner then vanished from
/// view (resolved, so no longer a dedupe match); more means something else is wrong.
const CREATE_ATTEMPTS: usize = 5;

impl PgBackend {
    pub(crate) async fn create(&self, row: NewRow) -> Result<Created, StoreError> {
        let spec = spec_json(&row.request)?;
        let expires_at = row.expires_at.map(millis);
        let on_call = on_call_json(&row.on_call)?;
        for _ in 0..CREATE_ATTEMPTS {
            // One statement, so one round trip and its own transaction: the request, its tags,
            // its announcements and its event, all or nothing. A conflict on a unique index (the
            // idempotency key, or an identical pending request) inserts nothing; then the
            // request that won is read.
            let seq: Option<i64> = sqlx::query_scalar(
                "WITH req AS ( \
                     INSERT INTO clarify_requests (id, tenant, status, session, agent, spec, \
                         created_at, expires_at, idempotency_key, dedupe_key, remind_at, \
                         escalate_at, on_call, warn_before, warn_at) \
                     VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $14, \
                         $15, $16) \
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
            .bind(&on_call)
            .bind(row.warn_before.and_then(|s| i64::try_from(s).ok()))
            .bind(row.warn_at.map(millis))
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

    pub(crate) async fn set_on_call(
        &self,
        id: &str,
        shifts: &[OnCallShift],
    ) -> Result<bool, StoreError> {
        let changed = sqlx::query(
            "UPDATE clarify_requests SET on_call = $2 WHERE id = $1 AND status = 'pending'",
        )
        .bind(id)
        .bind(on_call_json(shifts)?)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(changed.rows_affected() == 1)
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
             FROM (SELECT id, tenant, spec::jsonb ->> 'callback_url' AS url FROM r \
                   /* A `resume` target's URL, as `Resume::url` builds it (the resume tests \
                      on PostgreSQL check the path it is POSTed to). */ \
                   UNION ALL SELECT id, tenant, \
                       (spec::jsonb #>> '{{resume,restate,ingress}}') || '/restate/awakeables/' || \
                       (spec::jsonb #>> '{{resume,restate,awakeable}}') || '/resolve' FROM r) AS h \
             WHERE url IS NOT NULL), \
         follow AS ( \
             INSERT INTO clarify_deliveries (request_id, tenant, url, status, created_at, \
                 next_attempt_at, event, channel) \
             SELECT d.request_id, d.tenant, '', 'pending', $3, $3, $8, d.channel \
             FROM clarify_deliveries d JOIN r ON d.request_id = r.id \
             WHERE d.event = 'created' AND d.channel IS NOT NULL ORDER BY d.id), \
         event AS ( \
             INSERT INTO clarify_event_inbox (tenant, request_id, kind, actor, channel, at, \
                 principal) \
             SELECT tenant, id, $8, $4, $5, $3, $9 FROM r) \
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
    .bind(&res.actor.principal)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db_err)?;
    let Some(row) = row else { return Ok(None) };
    let mut record = parts(&row)?.decode()?;
    // As in `apply_resolution`: the principal reaches the row when the event is numbered.
    if let Some(resolution) = record.resolution.as_mut() {
        resolution.actor.principal.clone_from(&res.actor.principal);
    }
    Ok(Some(record))
}

/// Applies a resolution to a pending request that is not past its deadline at `resolved_at` (an
/// expiry only once it is), with what goes with it in the same transaction: the webhook
/// delivery and the grants. Returns the new record, or `None` when the request did not qualify.
/// The caller appends the event.
pub(super) async fn apply_resolution(
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
    let mut record = parts(&row)?.decode()?;
    // Who was authenticated reaches the row when the sequencer numbers the event; the record
    // returned now says it already.
    if let Some(resolution) = record.resolution.as_mut() {
        resolution.actor.principal.clone_from(&res.actor.principal);
    }
    // Queued in the resolving transaction: both commit, or neither.
    let targets: Vec<(String, String, String)> = record
        .request
        .outcome_urls()
        .into_iter()
        .map(|url| (record.tenant.clone(), record.id.clone(), url))
        .collect();
    queue_deliveries(conn, &targets, at, None).await?;
    insert_grants(conn, &record.tenant, grants).await?;
    // Every announcement of it is edited to show the outcome.
    follow_up(conn, &[id], EventKind::for_status(status), at).await?;
    Ok(Some(record))
}

pub(super) fn parts(row: &PgRow) -> Result<RowParts, StoreError> {
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
        resolved_seq: row.try_get("resolved_seq").map_err(corrupt_row)?,
        resolved_principal: row.try_get("resolved_principal").map_err(corrupt_row)?,
        on_call: row.try_get("on_call").map_err(corrupt_row)?,
    })
}
