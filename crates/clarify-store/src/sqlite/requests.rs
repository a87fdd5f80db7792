//! Requests: create (with their tags, announcements and creation event), read, list, and the
//! conditional update that resolves one, with what goes with it in the same transaction.

use std::sync::{Arc, LazyLock};

use clarify_core::{Resolution, Status};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteBackend;
use super::decoded::{Decoded, row_parts};
use super::feed::{append_after, append_event, chain_head};
use super::grants::insert_grants;
use super::outbox::{follow_up, queue_delivery};
use crate::backend::writes::{Decide, Decided, Decision, NewRow, Resolved};
use crate::codec::{COLUMNS, RowParts, answers_json, millis, on_call_json, qualified, spec_json};
use crate::error::{ResolveError, StoreError};
use crate::grants::StoredGrant;
use crate::record::{
    Created, EventKind, ListQuery, OnCallShift, Page, RequestRecord, StoredResolution,
    encode_cursor,
};

/// How many columns [`COLUMNS`] names: the index of a column selected after them.
const ROW_COLUMNS: usize = 16;

impl SqliteBackend {
    pub(crate) async fn create(&self, row: NewRow) -> Result<Created, StoreError> {
        let spec = spec_json(&row.request)?;
        let decoded = Arc::clone(&self.decoded);
        self.write(move |conn| create(conn, &decoded, row, spec))
            .await
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        self.read_point(|conn| get(conn, &self.decoded, id))
    }

    pub(crate) async fn set_on_call(
        &self,
        id: &str,
        shifts: &[OnCallShift],
    ) -> Result<bool, StoreError> {
        let id = id.to_owned();
        let json = on_call_json(shifts)?;
        self.write(move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE requests SET on_call = ?2 WHERE id = ?1 AND status = 'pending'",
                )?
                .execute(params![id, json])?;
            Ok(changed == 1)
        })
        .await
    }

    pub(crate) async fn list(
        &self,
        tenant: &str,
        q: &ListQuery,
        before: Option<u64>,
    ) -> Result<Page, StoreError> {
        let limit = q.effective_limit();
        let before = before.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX));
        let mut sql;
        let mut args: Vec<rusqlite::types::Value> = vec![tenant.to_owned().into()];
        if let Some(tag) = &q.tag {
            sql = format!(
                "SELECT {}, r.seq FROM request_tags t JOIN requests r ON r.seq = t.seq \
                 WHERE t.tenant = ?1 AND t.tag = ?2 AND t.seq < ?3",
                qualified(COLUMNS, "r")
            );
            args.push(tag.clone().into());
        } else {
            sql =
                format!("SELECT {COLUMNS}, seq FROM requests r WHERE r.tenant = ?1 AND r.seq < ?2");
        }
        args.push(before.into());
        let mut filter = |column: &str, value: &str| {
            args.push(value.to_owned().into());
            sql.push_str(&format!(" AND r.{column} = ?{}", args.len()));
        };
        if let Some(status) = q.status {
            filter("status", status.as_str());
        }
        if let Some(session) = &q.session {
            filter("session", session);
        }
        if let Some(agent) = &q.agent {
            filter("agent", agent);
        }
        sql.push_str(&format!(" ORDER BY r.seq DESC LIMIT {}", limit + 1));

        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), |row| {
                Ok((row_parts(row)?, row.get::<_, i64>(ROW_COLUMNS)?))
            })?;
            let mut records = Vec::with_capacity(limit);
            let mut next_cursor = None;
            for row in rows {
                let (parts, seq) = row?;
                if records.len() == limit {
                    next_cursor = records
                        .last()
                        .map(|(_, s): &(RequestRecord, i64)| encode_cursor(*s as u64));
                    break;
                }
                records.push((parts.decode()?, seq));
            }
            Ok(Page {
                records: records.into_iter().map(|(r, _)| r).collect(),
                next_cursor,
            })
        })
    }

    pub(crate) async fn resolve(
        &self,
        id: &str,
        res: StoredResolution,
        grants: &[StoredGrant],
    ) -> Result<Resolved, StoreError> {
        let id = id.to_owned();
        let answers = answers_json(&res.resolution)?;
        let grants = grants.to_vec();
        let decoded = Arc::clone(&self.decoded);
        self.write(move |conn| resolve(conn, &decoded, &id, &res, answers, &grants, None))
            .await
    }

    /// [`Backend::resolve_decided`](crate::backend::Backend::resolve_decided): the row read,
    /// the answer decided and the request resolved in one writer's transaction.
    pub(crate) async fn resolve_decided(
        &self,
        tenant: &str,
        id: &str,
        decide: Decide,
    ) -> Result<Decided, StoreError> {
        let (tenant, id) = (tenant.to_owned(), id.to_owned());
        let decoded = Arc::clone(&self.decoded);
        self.write(move |conn| {
            let parts = conn
                .prepare_cached(&GET_REQUEST)?
                .query_row(params![id], row_parts)
                .optional()?;
            let Some(parts) = parts.filter(|p| p.tenant == tenant) else {
                return Ok(Decided::Refused(ResolveError::NotFound));
            };
            let record = decoded.decode(parts.clone(), None)?;
            match decide(&record) {
                Err(e) => Ok(Decided::Refused(e)),
                Ok(Decision::Vote(answers)) => Ok(Decided::Vote(Box::new(record), answers)),
                Ok(Decision::Resolve(res, grants)) => {
                    let answers = answers_json(&res.resolution)?;
                    resolve(conn, &decoded, &id, &res, answers, &grants, Some(parts))
                        .map(|r| Decided::Resolved(Box::new(r)))
                }
            }
        })
        .await
    }
}

fn create(
    conn: &Connection,
    decoded: &Decoded,
    row: NewRow,
    spec: String,
) -> Result<Created, StoreError> {
    if let Some(key) = &row.request.idempotency_key {
        let existing = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM requests WHERE tenant = ?1 AND idempotency_key = ?2"
            ))?
            .query_row(params![row.tenant, key], row_parts)
            .optional()?;
        if let Some(parts) = existing {
            return Ok(Created {
                record: decoded.decode(parts, None)?,
                created: false,
            });
        }
    }
    if let Some(key) = &row.dedupe_key {
        let existing = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM requests WHERE tenant = ?1 AND dedupe_key = ?2 \
                 AND status = 'pending' AND session IS ?3 ORDER BY seq LIMIT 1"
            ))?
            .query_row(params![row.tenant, key, row.request.session], row_parts)
            .optional()?;
        if let Some(parts) = existing {
            return Ok(Created {
                record: decoded.decode(parts, None)?,
                created: false,
            });
        }
    }
    let created_ms = millis(row.created_at);
    conn.prepare_cached(
        "INSERT INTO requests (id, tenant, status, session, agent, spec, created_at, expires_at, \
         idempotency_key, dedupe_key, remind_at, escalate_at, on_call, warn_before, warn_at) \
         VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        row.id,
        row.tenant,
        row.request.session,
        row.request.agent,
        &spec,
        created_ms,
        row.expires_at.map(millis),
        row.request.idempotency_key,
        row.dedupe_key,
        row.remind_at.map(millis),
        row.escalate_at.map(millis),
        on_call_json(&row.on_call)?,
        row.warn_before.and_then(|s| i64::try_from(s).ok()),
        row.warn_at.map(millis),
    ])?;
    let seq = conn.last_insert_rowid();
    if !row.request.tags.is_empty() {
        let mut stmt =
            conn.prepare_cached("INSERT INTO request_tags (tenant, tag, seq) VALUES (?1, ?2, ?3)")?;
        for tag in &row.request.tags {
            stmt.execute(params![row.tenant, tag, seq])?;
        }
    }
    append_event(
        conn,
        &row.tenant,
        &row.id,
        EventKind::Created,
        None,
        created_ms,
    )?;
    for channel in &row.announce {
        conn.prepare_cached(
            "INSERT INTO deliveries (request_id, tenant, url, status, created_at, \
             next_attempt_at, event, channel) VALUES (?1, ?2, '', 'pending', ?3, ?3, 'created', ?4)",
        )?
        .execute(params![row.id, row.tenant, created_ms, channel])?;
    }
    let announced = !row.announce.is_empty();
    let record = row.into_record();
    // Kept even if the commit then fails: an entry is only used for a row with this spec.
    decoded.remember(
        &record.id,
        Some(spec),
        &record.request,
        None,
        Some(announced),
    );
    Ok(Created {
        record,
        created: true,
    })
}

pub(super) fn get(
    conn: &Connection,
    decoded: &Decoded,
    id: &str,
) -> Result<Option<RequestRecord>, StoreError> {
    conn.prepare_cached(&GET_REQUEST)?
        .query_row(params![id], row_parts)
        .optional()?
        .map(|parts| decoded.decode(parts, None))
        .transpose()
}

/// Resolves request `id` as `res` says, if it is still pending and its deadline allows. `before`
/// is its row as read earlier in this transaction, if it was: the row as resolved is then that
/// one with what the update set, not read again.
pub(super) fn resolve(
    conn: &Connection,
    decoded: &Decoded,
    id: &str,
    res: &StoredResolution,
    answers: Option<String>,
    grants: &[StoredGrant],
    before: Option<RowParts>,
) -> Result<Resolved, StoreError> {
    let status = res.resolution.status();
    let at = millis(res.resolved_at);
    let expiring = status == Status::Expired;
    // The writer's transaction holds the database and nothing below appends to the chain
    // before the resolution does, so its place is known now and kept by the same statement.
    let head = chain_head(conn)?;
    let won = conn.prepare_cached(RESOLVE_REQUEST)?.execute(params![
        id,
        status.as_str(),
        at,
        res.actor.name,
        res.actor.channel,
        answers.as_deref(),
        expiring,
        head.0 + 1,
        res.actor.principal,
    ])? == 1;
    // The row as resolved: the one read before in this transaction with the columns
    // RESOLVE_REQUEST sets, or else read back. (`RETURNING` would hand it back from the
    // statement itself, but SQLite gathers a `RETURNING` statement's rows in a temporary table
    // first, which cost more than reading one row by its key again.)
    let updated = match (won, before) {
        (false, _) => None,
        (true, Some(mut parts)) => {
            parts.status = status.as_str().to_owned();
            parts.resolved_at = Some(at);
            parts.answered_by.clone_from(&res.actor.name);
            parts.channel = Some(res.actor.channel.clone());
            parts.answers.clone_from(&answers);
            parts.remind_at = None;
            parts.resolved_seq = Some(head.0 + 1);
            parts.resolved_principal.clone_from(&res.actor.principal);
            Some(parts)
        }
        (true, None) => conn
            .prepare_cached(&GET_REQUEST)?
            .query_row(params![id], row_parts)
            .optional()?,
    };
    match updated {
        Some(parts) => {
            let announced = !decoded.unannounced(&parts.id, &parts.spec);
            // The answers just stored are these: their text is not parsed back.
            let known = match &res.resolution {
                Resolution::Answered(a) => answers.map(|text| (text, a.clone())),
                _ => None,
            };
            let record = decoded.decode(parts, known)?;
            // Queued in the resolving transaction: both happen, or neither.
            for url in record.request.outcome_urls() {
                queue_delivery(conn, &record.id, &record.tenant, &url, at, None)?;
            }
            insert_grants(conn, &record.tenant, grants)?;
            super::insights::count(conn, &record)?;
            // Every announcement of it is edited to show the outcome.
            if announced {
                follow_up(conn, id, EventKind::for_status(status), at)?;
            }
            // The update above already kept this event's place and principal on the request.
            append_after(
                conn,
                head,
                &record.tenant,
                id,
                EventKind::for_status(status),
                Some(&res.actor),
                at,
            )?;
            Ok(Resolved::Won(record))
        }
        None => Ok(match get(conn, decoded, id)? {
            Some(record) => Resolved::Lost(record),
            None => Resolved::NotFound,
        }),
    }
}

/// Reads a request by id (the hot path's statements are built once, not at every call).
static GET_REQUEST: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM requests WHERE id = ?1"));

/// Resolves a pending request, if its deadline allows (`?7`: expiring it), with its resolution's
/// place in the event log (`?8`) and principal (`?9`).
const RESOLVE_REQUEST: &str = "UPDATE requests SET status = ?2, resolved_at = ?3, \
     answered_by = ?4, channel = ?5, answers = ?6, remind_at = NULL, escalate_at = NULL, \
     resolved_seq = ?8, resolved_principal = ?9 WHERE id = ?1 AND status = 'pending' \
     AND CASE WHEN ?7 THEN expires_at IS NOT NULL AND expires_at <= ?3 \
     ELSE expires_at IS NULL OR expires_at > ?3 END";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_columns_counts_the_selected_columns() {
        assert_eq!(COLUMNS.split(", ").count(), ROW_COLUMNS);
    }
}
