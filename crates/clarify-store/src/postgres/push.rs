//! Web Push subscriptions: one row per browser endpoint, read by tenant when a request is
//! created.

use sqlx::Row;
use sqlx::postgres::PgRow;

use super::{PgBackend, corrupt_row, db_err};
use crate::codec::{from_millis, millis};
use crate::error::StoreError;
use crate::outbox::push::PushSubscription;

const COLUMNS: &str =
    "id, tenant, person, claimed_groups, principal, endpoint, p256dh, auth, created_at";

impl PgBackend {
    pub(crate) async fn push_save(&self, subscription: PushSubscription) -> Result<(), StoreError> {
        let groups = serde_json::to_string(&subscription.groups)
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        // One endpoint is one browser: its newer subscription replaces the older, id and all.
        sqlx::query(&format!(
            "INSERT INTO clarify_push_subscriptions ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT (endpoint) DO UPDATE SET id = excluded.id, tenant = excluded.tenant, \
             person = excluded.person, claimed_groups = excluded.claimed_groups, \
             principal = excluded.principal, p256dh = excluded.p256dh, auth = excluded.auth, \
             created_at = excluded.created_at"
        ))
        .bind(&subscription.id)
        .bind(&subscription.tenant)
        .bind(&subscription.person)
        .bind(groups)
        .bind(&subscription.principal)
        .bind(&subscription.endpoint)
        .bind(&subscription.p256dh)
        .bind(&subscription.auth)
        .bind(millis(subscription.created_at))
        .execute(&self.pool)
        .await
        .map_err(db_err)
        .map(drop)
    }

    pub(crate) async fn push_subscription(
        &self,
        id: &str,
    ) -> Result<Option<PushSubscription>, StoreError> {
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM clarify_push_subscriptions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?
        .map(|row| decode(&row))
        .transpose()
    }

    pub(crate) async fn push_subscriptions(
        &self,
        tenant: &str,
    ) -> Result<Vec<PushSubscription>, StoreError> {
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM clarify_push_subscriptions WHERE tenant = $1 \
             ORDER BY created_at, id"
        ))
        .bind(tenant)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?
        .iter()
        .map(decode)
        .collect()
    }

    pub(crate) async fn push_delete(&self, id: &str) -> Result<bool, StoreError> {
        let deleted = sqlx::query("DELETE FROM clarify_push_subscriptions WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(db_err)?
            .rows_affected();
        Ok(deleted == 1)
    }
}

fn decode(row: &PgRow) -> Result<PushSubscription, StoreError> {
    let id: String = row.try_get(0).map_err(corrupt_row)?;
    let groups: String = row.try_get(3).map_err(corrupt_row)?;
    let created_at: i64 = row.try_get(8).map_err(corrupt_row)?;
    Ok(PushSubscription {
        tenant: row.try_get(1).map_err(corrupt_row)?,
        person: row.try_get(2).map_err(corrupt_row)?,
        groups: serde_json::from_str(&groups)
            .map_err(|e| StoreError::Corrupt(format!("push subscription {id}: groups: {e}")))?,
        principal: row.try_get(4).map_err(corrupt_row)?,
        endpoint: row.try_get(5).map_err(corrupt_row)?,
        p256dh: row.try_get(6).map_err(corrupt_row)?,
        auth: row.try_get(7).map_err(corrupt_row)?,
        created_at: from_millis(created_at).ok_or_else(|| {
            StoreError::Corrupt(format!("push subscription {id}: created_at {created_at}"))
        })?,
        id,
    })
}
