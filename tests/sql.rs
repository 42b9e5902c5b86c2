//! The SQL functions (`may_contain`, `changed_in`, `changed_since`) on a
//! real PostgreSQL, against the protocol's test vectors and the SDK's own answers.
//!
//! Needs PostgreSQL at `BLOOMCAST_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), as a superuser (one test creates a database
//! and a role), with the pgcrypto contrib module available (Debian's postgresql package has
//! it). Without a reachable PostgreSQL the tests are reported ignored with the reason,
//! unless `CI` is set, where they fail; without pgcrypto they fail. Each test works in its
//! own schema (or database).

#![cfg(unix)]

mod common;

use bloomcast::bloom::Filter;
use bloomcast::client::Client;
use bloomcast::clock::{Clock, ManualClock};
use bloomcast::hour::hour_of;
use chrono::Duration;
use common::needs::{self, Need};
use common::nodes::{drop_schema, unique_schema};
use common::post_ids;
use std::collections::BTreeSet;

fn main() {
    needs::run(vec![
        needs::trial(
            "may_contain_agrees_with_every_filter_test_vector",
            &[Need::Postgres],
            || needs::block_on(may_contain_agrees_with_every_filter_test_vector()),
        ),
        needs::trial(
            "changed_in_over_a_followed_table_returns_what_the_sdk_returns",
            &[Need::Postgres],
            || needs::block_on(changed_in_over_a_followed_table_returns_what_the_sdk_returns()),
        ),
        needs::trial(
            "cluster_md_sql_unions_hours_of_different_sizes_with_no_false_negative",
            &[Need::Postgres],
            || {
                needs::block_on(
                    cluster_md_sql_unions_hours_of_different_sizes_with_no_false_negative(),
                )
            },
        ),
        needs::trial(
            "a_role_that_may_not_create_pgcrypto_starts_without_the_functions_until_a_dba_does",
            &[Need::Postgres],
            || {
                needs::block_on(
                    a_role_that_may_not_create_pgcrypto_starts_without_the_functions_until_a_dba_does(),
                )
            },
        ),
    ]);
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("PostgreSQL reachable");
    tokio::spawn(conn);
    client
}

/// A node on its own schema (whose start runs the migrations), serving on a real socket.
async fn node(url: &str, schema: &str, clock: &ManualClock) -> common::nodes::Node {
    common::nodes::node_in_own_dir(url, schema, clock).await
}

async fn may_contain_agrees_with_every_filter_test_vector() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let clock = ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(5));
    let _node = node(&url, &schema, &clock).await;
    let db = connect(&url).await;
    let vectors: serde_json::Value =
        serde_json::from_str(include_str!("../docs/test-vectors.json")).unwrap();
    let key_ids: Vec<String> = vectors["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect();
    let mut checked = 0;
    for v in vectors["filters"].as_array().unwrap() {
        let (m, k, hex) = (
            v["m"].as_u64().unwrap(),
            v["k"].as_u64().unwrap(),
            v["hex"].as_str().unwrap(),
        );
        let filter = Filter::decode_hex(m, k, "sha1-km32", hex).unwrap();
        let members: Vec<String> = v["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        // Members, the key vectors' awkward IDs and plain probes: SQL must answer as the
        // library does, present or not.
        let probes = members
            .iter()
            .cloned()
            .chain(key_ids.iter().cloned())
            .chain((0..200).map(|i| format!("probe:{i}")));
        let bytes = bloomcast::bloom::from_hex(hex).unwrap();
        // PostgreSQL text cannot hold U+0000, so that one vector cannot reach SQL.
        for id in probes.filter(|id| !id.contains('\0')) {
            let row = db
                .query_one(
                    &format!("SELECT \"{schema}\".may_contain($1, $2, $3, $4)"),
                    &[&bytes, &(m as i32), &(k as i32), &id],
                )
                .await
                .unwrap();
            let in_sql: bool = row.get(0);
            assert_eq!(in_sql, filter.contains(&id), "{id:?} in m={m} k={k} {hex}");
            if members.contains(&id) {
                assert!(in_sql, "member {id:?} missing (m={m} k={k})");
            }
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} checks");
    // A filter too short for its m is an error, never a silent false.
    let short = db
        .query_one(
            &format!("SELECT \"{schema}\".may_contain('\\x00'::bytea, 100, 7, 'abc')"),
            &[],
        )
        .await;
    assert!(short.is_err(), "a 1-byte filter of 100 bits was accepted");
    drop_schema(&url, &schema).await;
}

async fn changed_in_over_a_followed_table_returns_what_the_sdk_returns() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let sealed = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(sealed, Duration::minutes(5));
    let node = node(&url, &schema, &clock).await;
    let http = reqwest::Client::new();
    let followed: Vec<String> = (0..10_000).map(|i| format!("user:{i}")).collect();
    // A third of the followed IDs change in the sealed hour, among as many others.
    let mut in_sealed: Vec<String> = followed.iter().step_by(3).cloned().collect();
    in_sealed.extend((0..3_000).map(|i| format!("other:{i}")));
    for batch in in_sealed.chunks(1000) {
        post_ids(&http, &node.base, batch).await.unwrap();
    }
    let db = connect(&url).await;
    // Before any hour is sealed, an hour before the first one is unknown, not "unchanged".
    for function in ["changed_in", "changed_since"] {
        let before = db
            .query_one(
                &format!("SELECT \"{schema}\".{function}($1::text::timestamptz, 'absent:0')"),
                &[&sealed.prev().rfc3339()],
            )
            .await
            .unwrap();
        assert_eq!(
            before.get::<_, Option<bool>>(0),
            None,
            "{function} before the first seal"
        );
    }
    clock.advance(Duration::hours(1));
    node.service.tick().await.unwrap();
    // A few change in the open hour that follows.
    let in_open: Vec<String> = followed.iter().skip(1).step_by(1000).cloned().collect();
    post_ids(&http, &node.base, &in_open).await.unwrap();

    db.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".followed (id text PRIMARY KEY)"
    ))
    .await
    .unwrap();
    let insert = format!("INSERT INTO \"{schema}\".followed SELECT unnest($1::text[])");
    db.execute(&insert, &[&followed]).await.unwrap();

    let sealed_at = sealed.rfc3339();
    let rows = db
        .query(
            &format!(
                "SELECT id FROM \"{schema}\".followed WHERE \"{schema}\".changed_in($1::text::timestamptz, id)"
            ),
            &[&sealed_at],
        )
        .await
        .unwrap();
    let from_sql: BTreeSet<String> = rows.iter().map(|r| r.get(0)).collect();

    let client = Client::new(&node.base).unwrap();
    let fetched = client.hour(sealed).await.unwrap();
    let from_sdk: BTreeSet<String> = fetched
        .filter
        .maybe_present(followed.iter().map(String::as_str))
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(from_sql, from_sdk, "SQL and the SDK disagree");
    let changed: BTreeSet<String> = followed.iter().step_by(3).cloned().collect();
    assert!(changed.is_subset(&from_sql), "a false negative in SQL");
    assert!(
        from_sql.len() < changed.len() + 200,
        "{} flagged",
        from_sql.len()
    );

    // The open hour has no filter yet: changed_since tests its keys exactly.
    let open_at = sealed.next().rfc3339();
    let rows = db
        .query(
            &format!(
                "SELECT id FROM \"{schema}\".followed WHERE \"{schema}\".changed_since($1::text::timestamptz, id)"
            ),
            &[&open_at],
        )
        .await
        .unwrap();
    let since_open: BTreeSet<String> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(since_open, in_open.iter().cloned().collect::<BTreeSet<_>>());
    // Since the sealed hour: both hours' IDs.
    let rows = db
        .query(
            &format!(
                "SELECT count(*) FROM \"{schema}\".followed WHERE \"{schema}\".changed_since($1::text::timestamptz, id)"
            ),
            &[&sealed_at],
        )
        .await
        .unwrap();
    let since_sealed: i64 = rows[0].get(0);
    let expected = from_sql.union(&since_open).count() as i64;
    assert_eq!(since_sealed, expected);
    // An hour before anything was stored is unknown, not "unchanged".
    let before = db
        .query_one(
            &format!("SELECT \"{schema}\".changed_in($1::text::timestamptz, 'user:0')"),
            &[&sealed.prev().rfc3339()],
        )
        .await
        .unwrap();
    assert_eq!(before.get::<_, Option<bool>>(0), None);
    drop_schema(&url, &schema).await;
}

/// docs/CLUSTER.md's SQL block, as written but for the schema, the `followed` table's
/// place and `now()` (the test's clock), run against two sealed hours sized for different
/// counts: the hours come back with their different `m`, and the union asked per ID
/// flags every ID either hour holds, counting the hours that may hold it.
async fn cluster_md_sql_unions_hours_of_different_sizes_with_no_false_negative() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let first = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(first, Duration::minutes(5));
    let node = node(&url, &schema, &clock).await;
    let http = reqwest::Client::new();
    let small: Vec<String> = (0..100).map(|i| format!("a:{i}")).collect();
    let big: Vec<String> = (0..5_000).map(|i| format!("b:{i}")).collect();
    post_ids(&http, &node.base, &small).await.unwrap();
    clock.advance(Duration::hours(1));
    node.service.tick().await.unwrap();
    for batch in big.chunks(1000) {
        post_ids(&http, &node.base, batch).await.unwrap();
    }
    post_ids(&http, &node.base, &small[..10]).await.unwrap();
    clock.advance(Duration::hours(1));
    node.service.tick().await.unwrap();

    let db = connect(&url).await;
    db.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".followed (id text PRIMARY KEY)"
    ))
    .await
    .unwrap();
    let followed: Vec<String> = small
        .iter()
        .chain(big.iter().step_by(50))
        .cloned()
        .chain((0..1_000).map(|i| format!("absent:{i}")))
        .collect();
    let insert = format!("INSERT INTO \"{schema}\".followed SELECT unnest($1::text[])");
    db.execute(&insert, &[&followed]).await.unwrap();

    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/CLUSTER.md")).unwrap();
    let blocks: Vec<&str> = page.split("```sql\n").skip(1).collect();
    assert_eq!(blocks.len(), 1, "one SQL block in docs/CLUSTER.md");
    let now = format!("'{}'::timestamptz", clock.now().to_rfc3339());
    let sql = blocks[0]
        .split("```")
        .next()
        .unwrap()
        .replace("bloomcast.", &format!("\"{schema}\"."))
        .replace("FROM followed", &format!("FROM \"{schema}\".followed"))
        .replace("now()", &now);
    let statements: Vec<String> = sql
        .split(';')
        .map(|st| {
            st.lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|st| !st.trim().is_empty())
        .collect();
    assert_eq!(statements.len(), 2, "{statements:?}");

    let hours = db.query(&statements[0], &[]).await.unwrap();
    let sizes: BTreeSet<i32> = hours.iter().map(|r| r.get::<_, i32>("m")).collect();
    assert_eq!(hours.len(), 2, "two sealed hours");
    assert_eq!(
        sizes.len(),
        2,
        "hours of 100 and 5,000 IDs have one m: {sizes:?}"
    );

    let rows = db.query(&statements[1], &[]).await.unwrap();
    let flagged: std::collections::BTreeMap<String, i64> = rows
        .iter()
        .map(|r| (r.get::<_, String>("id"), r.get::<_, i64>("hours")))
        .collect();
    for id in &small[..10] {
        assert_eq!(flagged.get(id), Some(&2), "{id} is in both hours");
    }
    for id in small.iter().chain(big.iter().step_by(50)) {
        assert!(flagged.contains_key(id), "{id} missed: a false negative");
    }
    let absent = flagged
        .keys()
        .filter(|id| id.starts_with("absent:"))
        .count();
    assert!(
        absent < 50,
        "{absent} of 1,000 absent IDs flagged at fpp 0.01 per hour"
    );
    drop_schema(&url, &schema).await;
}

/// `url` (`postgres://user[:password]@host:port/db[?params]`) for another database and,
/// optionally, another user.
fn url_for(url: &str, user: Option<&str>, db: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (auth, rest) = rest.rsplit_once('@').map_or(("", rest), |(a, r)| (a, r));
    let (host, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let params = tail
        .split_once('?')
        .map_or(String::new(), |(_, p)| format!("?{p}"));
    let auth = user.unwrap_or(auth);
    let at = if auth.is_empty() { "" } else { "@" };
    format!("{scheme}://{auth}{at}{host}/{db}{params}")
}

async fn migrations(db: &tokio_postgres::Client, schema: &str) -> Vec<i32> {
    db.query(
        &format!("SELECT version FROM {schema}.schema_migrations ORDER BY version"),
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

async fn a_role_that_may_not_create_pgcrypto_starts_without_the_functions_until_a_dba_does() {
    let url = Need::Postgres.found();
    // One name for a fresh database (without pgcrypto), a role and the schema.
    let name = unique_schema();
    let admin = connect(&url).await;
    for statement in [
        format!("CREATE DATABASE {name}"),
        format!("CREATE ROLE {name} LOGIN PASSWORD 'not-a-secret'"),
    ] {
        admin.batch_execute(&statement).await.unwrap();
    }
    let dba = connect(&url_for(&url, None, &name)).await;
    // As a DBA would: the role owns its schema but may not create in the database.
    dba.batch_execute(&format!(
        "REVOKE CREATE ON DATABASE {name} FROM PUBLIC;
         CREATE SCHEMA {name} AUTHORIZATION {name};"
    ))
    .await
    .unwrap();
    let role_url = url_for(&url, Some(&format!("{name}:not-a-secret")), &name);
    let clock = ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(5));

    let first = node(&role_url, &name, &clock).await;
    assert_eq!(
        migrations(&dba, &name).await,
        [1, 2, 4, 5, 6, 7, 9, 10, 11, 12, 13]
    );
    let installed = format!(
        "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = '{name}' AND p.proname IN ('may_contain', 'changed_in', 'changed_since')"
    );
    let count: i64 = dba.query_one(&installed, &[]).await.unwrap().get(0);
    assert_eq!(count, 0);
    drop(first);

    // The DBA installs pgcrypto; the next start installs the functions.
    dba.batch_execute("CREATE EXTENSION pgcrypto")
        .await
        .unwrap();
    let second = node(&role_url, &name, &clock).await;
    assert_eq!(
        migrations(&dba, &name).await,
        [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    );
    let count: i64 = dba.query_one(&installed, &[]).await.unwrap().get(0);
    assert_eq!(count, 3);
    let abc: bool = dba
        .query_one(
            &format!(
                "SELECT {name}.may_contain('\\x04001040400001000400100000'::bytea, 100, 7, 'abc')"
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(abc, "the PROTOCOL's worked example");
    drop(second);
    drop(dba);
    for statement in [
        format!("DROP DATABASE {name} WITH (FORCE)"),
        format!("DROP ROLE {name}"),
    ] {
        admin.batch_execute(&statement).await.unwrap();
    }
}
