//! Retention: purging resolved requests older than the retention period, in short batches.

use chrono::{DateTime, Utc};
use rusqlite::params;

use super::SqliteBackend;
use crate::codec::millis;
use crate::error::StoreError;

impl SqliteBackend {
    pub(crate) async fn purge_resolved(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.write(move |conn| {
            let victims: Vec<(i64, String, String, String)> = {
                let mut stmt = conn.prepare_cached(
                    "SELECT seq, id, tenant, spec FROM requests r \
                     WHERE status <> 'pending' AND resolved_at < ?1 AND NOT EXISTS ( \
                         SELECT 1 FROM deliveries d WHERE d.request_id = r.id AND d.status = 'pending') \
                     ORDER BY resolved_at LIMIT ?2",
                )?;
                let rows = stmt.query_map(params![millis(before), limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            for (seq, id, tenant, spec) in &victims {
                // The tags are in the stored request, so their rows are found by primary key.
                conn.prepare_cached(
                    "DELETE FROM request_tags WHERE tenant = ?1 AND seq = ?2 \
                     AND tag IN (SELECT value FROM json_each(?3, '$.tags'))",
                )?
                .execute(params![tenant, seq, spec])?;
                // Events stay as tombstones (seq and hash), so the audit chain still verifies.
                conn.prepare_cached(
                    "UPDATE events SET tenant = '', request_id = '', kind = 'purged', \
                     actor = NULL, channel = NULL WHERE request_id = ?1",
                )?
                .execute([id])?;
                conn.prepare_cached(
                    "DELETE FROM delivery_attempts WHERE delivery_id IN \
                     (SELECT id FROM deliveries WHERE request_id = ?1)",
                )?
                .execute([id])?;
                conn.prepare_cached("DELETE FROM deliveries WHERE request_id = ?1")?
                    .execute([id])?;
                conn.prepare_cached("DELETE FROM requests WHERE seq = ?1")?
                    .execute([seq])?;
            }
            Ok(victims.into_iter().map(|(_, id, _, _)| id).collect())
        })
        .await
    }
}
