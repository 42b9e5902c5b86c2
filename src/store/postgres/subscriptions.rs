//! The WebSub hub's rows (migration 12): `subscriptions`, one per callback and topic,
//! shared by every node, and `deliveries`, the sealed hours whose delivery a node
//! claimed (the first claim wins: one node delivers each hour).

use super::errors::pg_error;
use super::statements::Statements;
use super::PgStore;
use crate::hour::Hour;
use crate::store::{Result, Subscription};

/// Migration 12.
pub(super) const MIGRATION: &str = r#"
CREATE TABLE {s}.subscriptions (
    callback text NOT NULL,
    topic text NOT NULL,
    secret text,
    expires bigint NOT NULL,
    PRIMARY KEY (callback, topic)
);
CREATE TABLE {s}.deliveries (hour bigint PRIMARY KEY);
"#;

impl PgStore {
    pub(super) async fn subscription_rows(&self) -> Result<Vec<Subscription>> {
        let client = self.client().await?;
        let rows = client
            .rows(
                &self.sql("SELECT callback, topic, secret, expires FROM {s}.subscriptions ORDER BY callback, topic"),
                &[],
            )
            .await
            .map_err(pg_error)?;
        Ok(rows
            .iter()
            .map(|r| Subscription {
                callback: r.get(0),
                topic: r.get(1),
                secret: r.get(2),
                expires: r.get(3),
            })
            .collect())
    }

    pub(super) async fn put_subscription_row(&self, s: &Subscription) -> Result<()> {
        let client = self.client().await?;
        client
            .run(
                &self.sql(
                    "INSERT INTO {s}.subscriptions (callback, topic, secret, expires) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (callback, topic) DO UPDATE SET secret = EXCLUDED.secret, expires = EXCLUDED.expires",
                ),
                &[&s.callback, &s.topic, &s.secret, &s.expires],
            )
            .await
            .map_err(pg_error)?;
        Ok(())
    }

    pub(super) async fn remove_subscription_row(
        &self,
        callback: &str,
        topic: &str,
    ) -> Result<bool> {
        let client = self.client().await?;
        let n = client
            .run(
                &self.sql("DELETE FROM {s}.subscriptions WHERE callback = $1 AND topic = $2"),
                &[&callback, &topic],
            )
            .await
            .map_err(pg_error)?;
        Ok(n > 0)
    }

    pub(super) async fn claim_delivery_row(&self, hour: Hour) -> Result<bool> {
        let client = self.client().await?;
        let n = client
            .run(
                &self.sql(
                    "INSERT INTO {s}.deliveries (hour) VALUES ($1) ON CONFLICT (hour) DO NOTHING",
                ),
                &[&hour.index()],
            )
            .await
            .map_err(pg_error)?;
        Ok(n > 0)
    }
}
