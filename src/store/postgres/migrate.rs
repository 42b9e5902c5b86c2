//! The schema, as versioned migrations applied once each, by whichever node starts
//! first (under an advisory lock), in the configured schema. Migration 3, the SQL
//! functions over the filters, lives in [`super::sqlfns`]: it needs pgcrypto, and is
//! tried again at every start until it could be applied.

use super::statements::Statements;
use super::{pg_error, pool_error, sqlfns};
use crate::store::Result;
use crate::store::StoreError;
use deadpool_postgres::{Pool, Transaction};

/// Migrations, applied in order once each; `{s}` is the quoted schema. Versions 3 and 8
/// are the SQL functions' (`sqlfns::VERSION`), installed only where pgcrypto is; 9 is
/// the universe's; 10 the records that find deleted rows (`integrity`); 12 the WebSub
/// hub's (`subscriptions`); 13 the append as a function (`batches`).
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        r#"
CREATE TABLE {s}.meta (name text PRIMARY KEY, value bigint NOT NULL);
-- Appended keys of hours not yet sealed: one row per ingest request, 8 bytes a key.
-- xid orders rows by transaction so readers can page without missing late commits.
CREATE TABLE {s}.batches (
    seq  bigserial PRIMARY KEY,
    hour bigint NOT NULL,
    keys bytea NOT NULL,
    xid  xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX batches_by_hour ON {s}.batches (hour, xid);
-- Sealed hours: the final filter (wire order) and the sorted distinct keys.
CREATE TABLE {s}.hours (
    hour      bigint PRIMARY KEY,
    starts_at timestamptz NOT NULL,
    count     bigint NOT NULL,
    m         integer NOT NULL,
    k         integer NOT NULL,
    hash      text NOT NULL,
    filter    bytea NOT NULL,
    keys      bytea NOT NULL,
    sealed_at timestamptz NOT NULL DEFAULT now()
);
-- The filters as bit strings, for bit_or unions of equal m in SQL.
CREATE VIEW {s}.hour_bits AS
    SELECT hour, starts_at, count, m, k, ('x' || encode(filter, 'hex'))::bit varying AS bits
    FROM {s}.hours;
"#,
    ),
    (
        2,
        r#"
-- Checksums (see crate::store::batch_checksum): written by every append and seal and
-- verified on every read. NULL marks a row written before this migration: it is
-- accepted unverified, as there is no trusted copy to compute its checksum from
-- (every such row is gone once its hour is sealed or pruned).
ALTER TABLE {s}.batches ADD COLUMN checksum bigint;
ALTER TABLE {s}.hours ADD COLUMN checksum bigint, ADD COLUMN keys_checksum bigint;
"#,
    ),
    // 3 is the SQL functions (sqlfns), applied apart.
    (4, super::chain::MIGRATION),
    (
        5,
        r#"
-- Each hour's batch record (see crate::store::HourRecord): every append adds one to
-- one of the hour's slots in the same statement as its batch (slots keep concurrent
-- appends from queueing on one row); the batches read back must number their sum.
-- Counted here from the batches there, trusted at this moment.
CREATE TABLE {s}.batch_counts (
    hour    bigint NOT NULL,
    slot    smallint NOT NULL,
    batches bigint NOT NULL,
    PRIMARY KEY (hour, slot)
);
INSERT INTO {s}.batch_counts (hour, slot, batches)
    SELECT hour, 0, count(*) FROM {s}.batches GROUP BY hour;
-- The prune mark: chain links before it are of pruned hours (set to the oldest sealed
-- hour here: older links are of hours pruned before the mark existed).
INSERT INTO {s}.meta (name, value)
    SELECT 'pruned_before', min(hour) FROM {s}.hours HAVING min(hour) IS NOT NULL
    ON CONFLICT (name) DO NOTHING;
"#,
    ),
    (6, super::signing::MIGRATION),
    (7, super::shape::MIGRATION),
    (9, super::universe::MIGRATION),
    (10, super::integrity::MIGRATION),
    (11, super::signing::MIGRATION_11),
    (12, super::subscriptions::MIGRATION),
    (13, super::batches::MIGRATION),
];

/// Creates the schema if needed and applies the migrations it lacks.
pub(super) async fn migrate(pool: &Pool, schema: &str) -> Result<()> {
    let mut client = pool.get().await.map_err(pool_error)?;
    let mut tx = client.transaction().await.map_err(pg_error)?;
    // One migrator at a time, whichever node starts first.
    tx.run(
        "SELECT pg_advisory_xact_lock(hashtext('bloomcast-migrate:' || $1))",
        &[&schema],
    )
    .await
    .map_err(pg_error)?;
    refuse_foreign(&tx, schema).await?;
    // A schema a DBA created for a role without CREATE on the database is used as it
    // is: `CREATE SCHEMA IF NOT EXISTS` would need that privilege even then.
    let exists = tx
        .row_opt(
            "SELECT 1 FROM pg_namespace WHERE nspname = $1",
            &[&schema.trim_matches('"')],
        )
        .await
        .map_err(pg_error)?
        .is_some();
    if !exists {
        tx.batch_execute(&format!("CREATE SCHEMA {schema}"))
            .await
            .map_err(pg_error)?;
    }
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
             version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());"
    ))
    .await
    .map_err(pg_error)?;
    let applied: Vec<i32> = tx
        .rows(
            &format!("SELECT version FROM {schema}.schema_migrations"),
            &[],
        )
        .await
        .map_err(pg_error)?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()
        .map_err(pg_error)?;
    for (version, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        tx.batch_execute(&sql.replace("{s}", schema))
            .await
            .map_err(pg_error)?;
        tx.run(
            &format!("INSERT INTO {schema}.schema_migrations (version) VALUES ($1)"),
            &[version],
        )
        .await
        .map_err(pg_error)?;
        tracing::info!(version, %schema, "applied migration");
    }
    if !applied.contains(&sqlfns::VERSION) && sqlfns::install(&mut tx, schema).await? {
        tx.run(
            &format!("INSERT INTO {schema}.schema_migrations (version) VALUES ($1)"),
            &[&sqlfns::VERSION],
        )
        .await
        .map_err(pg_error)?;
        tracing::info!(version = sqlfns::VERSION, %schema, "applied migration");
    }
    tx.commit().await.map_err(pg_error)
}

/// Refuses a schema that exists and holds tables but not bloomcast's migration table
/// (with its columns): it belongs to something else, and bloomcast adds no tables to it.
async fn refuse_foreign(tx: &Transaction<'_>, schema: &str) -> Result<()> {
    let name = schema.trim_matches('"');
    let row = tx
        .row(
            "SELECT
                 (SELECT string_agg(c.relname, ', ' ORDER BY c.relname)
                  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')),
                 (SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_name)
                  FROM information_schema.columns
                  WHERE table_schema = $1 AND table_name = 'schema_migrations')",
            &[&name],
        )
        .await
        .map_err(pg_error)?;
    let (tables, ours): (Option<String>, Option<String>) = (row.get(0), row.get(1));
    match (tables, ours.as_deref()) {
        (None, _) => Ok(()),
        (Some(_), Some("applied_at timestamp with time zone, version integer")) => Ok(()),
        (Some(tables), migrations) => Err(StoreError::bug(format!(
            "PostgreSQL schema {schema} is not bloomcast's: it holds {tables} but {}; \
             refusing to add tables to it (set database_schema to a schema of bloomcast's own)",
            match migrations {
                None => "no schema_migrations table".to_owned(),
                Some(columns) => format!("a schema_migrations table of another kind ({columns})"),
            }
        ))),
    }
}
