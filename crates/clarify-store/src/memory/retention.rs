//! Retention: forgetting resolved requests older than the retention period, their events
//! becoming tombstones in the audit chain as in the SQL backends.

use chrono::{DateTime, Utc};

use super::{MemoryBackend, State};
use crate::audit;
use crate::error::StoreError;
use crate::outbox::DeliveryStatus;

impl MemoryBackend {
    pub(crate) async fn purge_resolved(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut s = self.state();
        let delivering: std::collections::HashSet<&str> = s
            .deliveries
            .values()
            .filter(|d| d.status == DeliveryStatus::Pending)
            .map(|d| d.request_id.as_str())
            .collect();
        // Resolution order is age order: stop at the first one too young.
        let ids: Vec<String> = s
            .resolved_order
            .iter()
            .map_while(|id| {
                let at = s.rows.get(id).and_then(|r| r.record.resolved_at());
                at.is_none_or(|at| at < before).then_some(id)
            })
            .filter(|id| !delivering.contains(id.as_str()))
            .take(limit)
            .cloned()
            .collect();
        if ids.is_empty() {
            return Ok(ids);
        }
        let gone: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        let State {
            rows,
            order,
            idempotency,
            resolved_order,
            events,
            chain,
            deliveries,
            ..
        } = &mut *s;
        for id in &ids {
            if let Some(row) = rows.remove(id) {
                order.remove(&row.seq);
                if let Some(key) = &row.record.request.idempotency_key {
                    idempotency.remove(&(row.record.tenant.clone(), key.clone()));
                }
            }
        }
        resolved_order.retain(|id| !gone.contains(id.as_str()));
        events.retain(|e| !gone.contains(e.request_id.as_str()));
        // The audit chain keeps tombstones, as the other backends do.
        for e in chain
            .iter_mut()
            .filter(|e| gone.contains(e.request_id.as_str()))
        {
            e.tenant.clear();
            e.request_id.clear();
            e.kind = audit::PURGED.to_owned();
            e.actor = None;
            e.channel = None;
        }
        deliveries.retain(|_, d| !gone.contains(d.request_id.as_str()));
        Ok(ids)
    }
}
