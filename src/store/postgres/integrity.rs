//! Migration 10: the records that find deleted rows (see [`crate::store::HourRecord`],
//! [`crate::store::Tally`], [`crate::store::FormRecord`]), and the derived bodies'
//! records.
//!
//! Universe rows written before it keep a NULL checksum (accepted unverified, as
//! migration 2 did for batches: there is no trusted copy to compute one from in SQL);
//! the tallies, which find deleted rows, are computed here from the rows there.

use super::statements::Statements;
use super::{pg_error, PgStore};
use crate::chain::Hash;
use crate::store::{FormRecord, Result, StoreError};

/// Migration 10.
pub(super) const MIGRATION: &str = r#"
CREATE FUNCTION pg_temp.wrap64(x numeric) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT (CASE WHEN m >= 9223372036854775808 THEN m - 18446744073709551616 ELSE m END)::bigint
    FROM (SELECT mod(mod(x, 18446744073709551616) + 18446744073709551616,
                     18446744073709551616) AS m) AS w
$$;
-- Universe rows: a checksum over the key and the hour it joined (NULL: written before).
ALTER TABLE {s}.universe ADD COLUMN checksum bigint;
-- The tally of the keys that joined in each hour: their count and the wrapping sum
-- of their values, kept with every insert into the universe.
CREATE TABLE {s}.universe_hours (
    added bigint PRIMARY KEY,
    count bigint NOT NULL,
    sum   bigint NOT NULL
);
INSERT INTO {s}.universe_hours (added, count, sum)
    SELECT added, count(*), pg_temp.wrap64(sum(key::numeric)) FROM {s}.universe GROUP BY added;
-- The universe's tally as it stood at each seal, written in the seal's transaction.
CREATE TABLE {s}.hour_universe (
    hour  bigint PRIMARY KEY,
    count bigint NOT NULL,
    sum   bigint NOT NULL
);
INSERT INTO {s}.hour_universe (hour, count, sum)
    SELECT h.hour, coalesce(sum(u.count), 0)::bigint,
           pg_temp.wrap64(coalesce(sum(u.sum::numeric), 0))
    FROM {s}.hours h
    JOIN {s}.universe_state st ON st.since IS NOT NULL AND h.hour >= st.since
    LEFT JOIN {s}.universe_hours u ON u.added <= h.hour
    GROUP BY h.hour;
-- What each derived body of a closed range was when first served.
CREATE TABLE {s}.forms (
    from_hour bigint NOT NULL,
    to_hour   bigint NOT NULL,
    form      text NOT NULL,
    digest    bytea NOT NULL,
    PRIMARY KEY (from_hour, to_hour, form)
);
-- A zero-batch record for every closed hour in the served range with neither a sealed
-- row nor a record (from now on closing an hour writes it).
INSERT INTO {s}.batch_counts (hour, slot, batches)
    SELECT h, 0, 0
    FROM generate_series(
             GREATEST((SELECT value FROM {s}.meta WHERE name = 'genesis'),
                      coalesce((SELECT value FROM {s}.meta WHERE name = 'pruned_before'),
                               (SELECT value FROM {s}.meta WHERE name = 'genesis'))),
             (SELECT value FROM {s}.meta WHERE name = 'closed_through')) AS h
    WHERE NOT EXISTS (SELECT 1 FROM {s}.hours WHERE hour = h)
      AND NOT EXISTS (SELECT 1 FROM {s}.batch_counts WHERE hour = h);
-- The chain's first hour: hours sealed before it have no link by design.
INSERT INTO {s}.meta (name, value)
    SELECT 'chain_since', min(hour) FROM {s}.chain HAVING min(hour) IS NOT NULL
    ON CONFLICT (name) DO NOTHING;
"#;

impl PgStore {
    /// Inserts the record unless the range and form have one; the digest stored.
    pub(super) async fn record_form_row(&self, record: &FormRecord) -> Result<Hash> {
        let client = self.client().await?;
        client
            .run(
                &self.sql(
                    "INSERT INTO {s}.forms (from_hour, to_hour, form, digest)
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                ),
                &[
                    &record.from.index(),
                    &record.to.index(),
                    &record.form.to_string(),
                    &&record.digest[..],
                ],
            )
            .await
            .map_err(pg_error)?;
        let recorded = self.form_digest(&client, record).await?;
        recorded.ok_or_else(|| StoreError::bug("a form's record is not there after writing it"))
    }

    /// The digest recorded for `record`'s form, if one is.
    pub(super) async fn form_digest(
        &self,
        client: &deadpool_postgres::Object,
        record: &FormRecord,
    ) -> Result<Option<Hash>> {
        let row = client
            .row_opt(
                &self.sql(
                    "SELECT digest FROM {s}.forms
                     WHERE from_hour = $1 AND to_hour = $2 AND form = $3",
                ),
                &[
                    &record.from.index(),
                    &record.to.index(),
                    &record.form.to_string(),
                ],
            )
            .await
            .map_err(pg_error)?;
        row.map(|row| record.digest_of_row(row.get(0))).transpose()
    }
}
