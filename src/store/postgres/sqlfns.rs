//! Migration 3: SQL functions that test IDs against the stored filters, so a query can
//! join a table of IDs with the hours (`WHERE changed_in(hour, id)`) without the keys
//! leaving PostgreSQL.
//!
//! They compute sha1-km32 exactly (docs/PROTOCOL.md sections 1 and 2) with pgcrypto's
//! `digest(.., 'sha1')`: PostgreSQL has no built-in SHA-1, and a pure-SQL SHA-1 is not
//! worth its cost. `get_bit(bytea, j)` reads byte `j / 8` under mask `1 << (j % 8)`,
//! which is exactly the wire bit layout. The migration creates the extension when the
//! role may (pgcrypto is a trusted extension from PostgreSQL 13 on: the database owner
//! or a role with CREATE on the database suffices). When it cannot, the node still
//! starts: the functions are not installed, a warning says what the DBA must run, and
//! the migration is tried again at the next start.

use super::pg_error;
use super::statements::Statements;
use crate::store::Result;
use deadpool_postgres::Transaction;

/// The version this step is recorded under in `schema_migrations`: 8 since `changed_in`
/// and `changed_since` answer NULL before the first seal (3 before that; a schema that
/// has 3 but not 8 gets the functions again, `CREATE OR REPLACE`). `MIGRATIONS` skips it;
/// 9 is taken by the universe, so a next version of these functions is 10 or later.
pub(super) const VERSION: i32 = 8;

/// The functions; `{s}` is the quoted schema, `{c}` the quoted schema of pgcrypto.
///
/// `may_contain` raises on a filter shorter than `m` bits rather than answering false:
/// a wrong answer there would be a false negative. `changed_in` answers NULL (unknown)
/// for an hour older than every sealed hour kept (pruned) or, before the first seal, than
/// genesis (`first_known_hour`). Open hours have
/// no filter yet, only key blobs in `batches` (8 bytes a key: h1 then h2, big-endian),
/// so for them the functions test exact key membership, at 8-byte-aligned offsets: never
/// a false positive, and never a false negative for a key already committed.
const FUNCTIONS: &str = r#"
CREATE OR REPLACE FUNCTION {s}.sha1_km32_key(id text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$$ SELECT substring({c}.digest(convert_to($1, 'UTF8'), 'sha1') FROM 1 FOR 8) $$;

CREATE OR REPLACE FUNCTION {s}.may_contain(filter bytea, m int, k int, id text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    d bytea;
    h1 bigint;
    h2 bigint;
BEGIN
    IF m <= 0 OR k < 0 OR length(filter)::bigint * 8 < m THEN
        RAISE EXCEPTION 'may_contain: a filter of % bytes cannot have m = % bits and k = %',
            length(filter), m, k;
    END IF;
    d := {c}.digest(convert_to(id, 'UTF8'), 'sha1');
    h1 := (get_byte(d, 0)::bigint << 24) | (get_byte(d, 1) << 16) | (get_byte(d, 2) << 8) | get_byte(d, 3);
    h2 := (get_byte(d, 4)::bigint << 24) | (get_byte(d, 5) << 16) | (get_byte(d, 6) << 8) | get_byte(d, 7);
    FOR i IN 0 .. k - 1 LOOP
        IF get_bit(filter, ((h1 + i * h2) % m)::int) = 0 THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END $$;

CREATE OR REPLACE FUNCTION {s}.open_hours_hold(first_hour bigint, last_hour bigint, id text)
RETURNS boolean LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT EXISTS (
        SELECT 1 FROM {s}.batches b
        WHERE b.hour BETWEEN $1 AND $2
          AND position({s}.sha1_km32_key($3) IN b.keys) > 0
          AND EXISTS (
              SELECT 1 FROM generate_series(0, length(b.keys) / 8 - 1) AS i
              WHERE substring(b.keys FROM i * 8 + 1 FOR 8) = {s}.sha1_km32_key($3)))
$$;

CREATE OR REPLACE FUNCTION {s}.first_known_hour() RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce((SELECT min(t.hour) FROM {s}.hours t),
                    (SELECT m.value FROM {s}.meta m WHERE m.name = 'genesis'))
$$;

CREATE OR REPLACE FUNCTION {s}.changed_in(hour timestamptz, id text) RETURNS boolean
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    h bigint := floor(extract(epoch FROM $1) / 3600);
    sealed record;
BEGIN
    SELECT t.filter, t.m, t.k INTO sealed FROM {s}.hours t WHERE t.hour = h;
    IF FOUND THEN
        RETURN {s}.may_contain(sealed.filter, sealed.m, sealed.k, $2);
    END IF;
    IF h < {s}.first_known_hour() THEN
        RETURN NULL;
    END IF;
    RETURN {s}.open_hours_hold(h, h, $2);
END $$;

CREATE OR REPLACE FUNCTION {s}.changed_since(hour timestamptz, id text) RETURNS boolean
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    h bigint := floor(extract(epoch FROM $1) / 3600);
BEGIN
    IF EXISTS (SELECT 1 FROM {s}.hours t
               WHERE t.hour >= h AND {s}.may_contain(t.filter, t.m, t.k, $2)) THEN
        RETURN true;
    END IF;
    IF {s}.open_hours_hold(h, 9223372036854775807, $2) THEN
        RETURN true;
    END IF;
    IF h < {s}.first_known_hour() THEN
        RETURN NULL;
    END IF;
    RETURN false;
END $$;
"#;

/// Installs the functions when pgcrypto is there or can be created; returns whether
/// they were installed (and their version may be recorded as applied).
///
/// # Errors
/// A failure of the statements themselves (not of creating the extension).
pub(super) async fn install(tx: &mut Transaction<'_>, schema: &str) -> Result<bool> {
    // In a savepoint: a refused CREATE EXTENSION must not abort the migration.
    let sp = tx.savepoint("bloomcast_pgcrypto").await.map_err(pg_error)?;
    match sp
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pgcrypto")
        .await
    {
        Ok(()) => sp.commit().await.map_err(pg_error)?,
        Err(e) => {
            let why = e
                .as_db_error()
                .map_or_else(|| e.to_string(), |db| db.message().to_owned());
            sp.rollback().await.map_err(pg_error)?;
            tracing::debug!(%why, "cannot create pgcrypto");
        }
    }
    let at: Option<String> = tx
        .row_opt(
            "SELECT n.nspname::text FROM pg_extension e
             JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pgcrypto'",
            &[],
        )
        .await
        .map_err(pg_error)?
        .map(|row| row.get(0));
    let Some(at) = at else {
        let database: String = tx
            .row("SELECT current_database()::text", &[])
            .await
            .map_err(pg_error)?
            .get(0);
        tracing::warn!(
            %schema,
            "the SQL functions may_contain, changed_in and changed_since are not installed: \
             the extension pgcrypto is missing and this role may not create it; have a DBA \
             run `CREATE EXTENSION pgcrypto;` in database {database} (pgcrypto is a \
             contrib module: in Debian's postgresql-NN package, elsewhere often \
             postgresql-contrib), then restart any node"
        );
        return Ok(false);
    };
    let quoted = format!("\"{}\"", at.replace('"', "\"\""));
    tx.batch_execute(&FUNCTIONS.replace("{s}", schema).replace("{c}", &quoted))
        .await
        .map_err(pg_error)?;
    Ok(true)
}
