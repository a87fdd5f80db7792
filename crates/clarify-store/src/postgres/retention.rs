//! Retention: purging resolved requests older than the retention period, in short batches that
//! instances purging at once skip each other's rows in.

use chrono::{DateTime, Utc};

use super::{PgBackend, db_err};
use crate::codec::millis;
use crate::error::StoreError;

impl PgBackend {
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
}
