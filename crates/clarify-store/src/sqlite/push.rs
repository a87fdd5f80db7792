//! Web Push subscriptions: one row per browser endpoint, read by tenant when a request is
//! created.

use rusqlite::{OptionalExtension, Row, params};

use super::SqliteBackend;
use crate::codec::{from_millis, millis};
use crate::error::StoreError;
use crate::outbox::push::PushSubscription;

const COLUMNS: &str =
    "id, tenant, person, claimed_groups, principal, endpoint, p256dh, auth, created_at";

impl SqliteBackend {
    pub(crate) async fn push_save(&self, subscription: PushSubscription) -> Result<(), StoreError> {
        let groups = serde_json::to_string(&subscription.groups)
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        self.write(move |conn| {
            // One endpoint is one browser: its newer subscription replaces the older, id and all.
            conn.prepare_cached("DELETE FROM push_subscriptions WHERE endpoint = ?1")?
                .execute(params![subscription.endpoint])?;
            conn.prepare_cached(&format!(
                "INSERT INTO push_subscriptions ({COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?
            .execute(params![
                subscription.id,
                subscription.tenant,
                subscription.person,
                groups,
                subscription.principal,
                subscription.endpoint,
                subscription.p256dh,
                subscription.auth,
                millis(subscription.created_at),
            ])?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn push_subscription(
        &self,
        id: &str,
    ) -> Result<Option<PushSubscription>, StoreError> {
        self.read(|conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions WHERE id = ?1"
            ))?
            .query_row(params![id], parts)
            .optional()?
            .map(Parts::decode)
            .transpose()
        })
    }

    pub(crate) async fn push_subscriptions(
        &self,
        tenant: &str,
    ) -> Result<Vec<PushSubscription>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions WHERE tenant = ?1 \
                 ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map(params![tenant], parts)?;
            rows.map(|row| row?.decode()).collect()
        })
    }

    pub(crate) async fn push_delete(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_owned();
        self.write(move |conn| {
            let deleted = conn
                .prepare_cached("DELETE FROM push_subscriptions WHERE id = ?1")?
                .execute(params![id])?;
            Ok(deleted == 1)
        })
        .await
    }
}

/// A row as stored, before its groups and time are decoded.
struct Parts {
    id: String,
    tenant: String,
    person: String,
    groups: String,
    principal: Option<String>,
    endpoint: String,
    p256dh: String,
    auth: String,
    created_at: i64,
}

fn parts(row: &Row<'_>) -> rusqlite::Result<Parts> {
    Ok(Parts {
        id: row.get(0)?,
        tenant: row.get(1)?,
        person: row.get(2)?,
        groups: row.get(3)?,
        principal: row.get(4)?,
        endpoint: row.get(5)?,
        p256dh: row.get(6)?,
        auth: row.get(7)?,
        created_at: row.get(8)?,
    })
}

impl Parts {
    fn decode(self) -> Result<PushSubscription, StoreError> {
        let groups = serde_json::from_str(&self.groups).map_err(|e| {
            StoreError::Corrupt(format!("push subscription {}: groups: {e}", self.id))
        })?;
        let created_at = from_millis(self.created_at).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "push subscription {}: created_at {}",
                self.id, self.created_at
            ))
        })?;
        Ok(PushSubscription {
            id: self.id,
            tenant: self.tenant,
            person: self.person,
            groups,
            principal: self.principal,
            endpoint: self.endpoint,
            p256dh: self.p256dh,
            auth: self.auth,
            created_at,
        })
    }
}
