//! Insights: the memory backend keeps no rollup; each reading folds the tenant's resolved
//! records through the same functions the SQL backends count with, so the figures agree.

use std::collections::HashMap;

use super::MemoryBackend;
use crate::error::StoreError;
use crate::insights::{Cell, Grain, InsightsQuery, Key, fold, rows_of};
use crate::record::RequestRecord;

impl MemoryBackend {
    pub(crate) async fn insight_rows(
        &self,
        tenant: &str,
        query: &InsightsQuery,
        grain: Grain,
        from: i64,
        to: i64,
    ) -> Result<Vec<(Key, Cell)>, StoreError> {
        let s = self.state();
        let mut rollup = HashMap::new();
        for row in s.rows.values() {
            if row.record.tenant != tenant {
                continue;
            }
            if let Some(rows) = rows_of(&row.record) {
                fold(&mut rollup, rows);
            }
        }
        if grain != Grain::Day {
            rollup = grain.of(&rollup);
        }
        let tag = query.tag_key();
        Ok(rollup
            .into_iter()
            .filter(|(k, _)| k.tag == tag && query.keeps(k, from, to))
            .collect())
    }

    /// The memory store folds its records at each reading and keeps no coarser rollups: every
    /// reading is read day by day.
    pub(crate) async fn insights_compacted_through(
        &self,
        _tenant: &str,
    ) -> Result<Option<i64>, StoreError> {
        Ok(None)
    }

    pub(crate) async fn compact_insights(
        &self,
        _tenant: &str,
        through: i64,
    ) -> Result<i64, StoreError> {
        Ok(through)
    }

    pub(crate) async fn pending_of(
        &self,
        tenant: &str,
        agent: Option<&str>,
    ) -> Result<Vec<RequestRecord>, StoreError> {
        let s = self.state();
        Ok(s.order
            .values()
            .filter_map(|id| s.rows.get(id))
            .map(|row| &row.record)
            .filter(|r| {
                r.tenant == tenant
                    && r.status == clarify_core::Status::Pending
                    && agent.is_none_or(|a| r.request.agent.as_deref() == Some(a))
            })
            .cloned()
            .collect())
    }
}
