//! Damage to the cluster's store, checksums recomputed where a row has one, as in
//! tests/api/damage.rs: every case answers 500 `corrupt` on a node that meets it (never a
//! body the chain does not vouch for), the scrub finds it with no reader, and migration
//! 10 computes its records for a schema written before it.

use super::{drop_schema, node, node_settings, unique_schema};
use crate::common::needs::Need;
use crate::common::{post_ids, TOKEN};
use bloomcast::bloom::Key;
use bloomcast::clock::ManualClock;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::store::{blob_to_keys, keys_to_blob, sealed_keys_checksum};
use chrono::Duration;

fn h(hour: u32) -> Hour {
    hour_of(2008, 9, 3, hour).unwrap()
}

async fn client(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

async fn status(http: &reqwest::Client, base: &str, path: &str) -> (u16, serde_json::Value) {
    let reply = http.get(format!("{base}{path}")).send().await.unwrap();
    let status = reply.status().as_u16();
    let body = reply.bytes().await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or_default())
}

async fn assert_corrupt(http: &reqwest::Client, base: &str, path: &str, hour: &str) {
    let (status, json) = status(http, base, path).await;
    assert_eq!(status, 500, "{path}: {json}");
    assert_eq!(json["error"], "corrupt", "{path}");
    assert!(
        json["message"].as_str().unwrap().contains(hour),
        "{path}: {json}"
    );
}

/// A schema with a universe of 500 IDs and hours 13 (100 of them) and 14 (another 100)
/// sealed through a node that then stops; 15 open.
async fn sealed_schema(url: &str, schema: &str, dir: &std::path::Path, clock: &ManualClock) {
    let a = node(node_settings(url, schema, dir.to_owned()), clock).await;
    let http = reqwest::Client::new();
    let universe: Vec<String> = (0..500).map(|i| format!("user:{i}")).collect();
    let reply = http
        .post(format!("{}/universe", a.base))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({ "ids": universe }))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    for hour in 0..2 {
        post_ids(&http, &a.base, &universe[hour * 100..hour * 100 + 100])
            .await
            .unwrap();
        clock.advance(Duration::hours(1));
        a.service.tick().await.unwrap();
    }
    for path in [
        "/2008/09/03/13.exact",
        "/2008/09/03/14.exact",
        "/2008/09/03/13.ribbon2",
    ] {
        assert_eq!(status(&http, &a.base, path).await.0, 200, "{path}");
    }
}

pub async fn damage_in_postgres_is_corrupt_on_every_node_that_meets_it() {
    let url = Need::Postgres.found();
    let s = |schema: &str| format!("\"{schema}\"");
    let http = reqwest::Client::new();
    type Damage = Box<dyn Fn(String) -> String>;
    let cases: [(&str, Damage, &[&str], &str); 5] = [
        (
            "a link deleted while the next hour is linked",
            Box::new(|s| format!("DELETE FROM {s}.chain WHERE hour = {};", h(13).index())),
            &["/2008/09/03/13.json", "/2008/09/03/13.ribbon"],
            "2008-09-03T13:00:00Z",
        ),
        (
            "the row and link of the newest sealed hour deleted",
            Box::new(|s| {
                let h14 = h(14).index();
                format!(
                    "DELETE FROM {s}.hours WHERE hour = {h14}; DELETE FROM {s}.chain WHERE hour = {h14};
                     DELETE FROM {s}.exact_hours WHERE hour = {h14};"
                )
            }),
            &[
                "/2008/09/03/14",
                "/2008/09/03/14.ribbon2",
                "/2008/09/03/14.exact",
                "/since/2008/09/03/14",
            ],
            "2008-09-03T14:00:00Z",
        ),
        (
            "universe rows deleted",
            Box::new(|s| {
                format!(
                    "DELETE FROM {s}.exact_hours;
                     DELETE FROM {s}.universe WHERE key IN (SELECT key FROM {s}.universe LIMIT 7);"
                )
            }),
            &["/2008/09/03/13.exact"],
            "2008-09-03T13:00:00Z",
        ),
        (
            "what was first served recorded otherwise",
            Box::new(|s| format!("UPDATE {s}.forms SET digest = decode(repeat('00', 32), 'hex');")),
            &["/2008/09/03/13.ribbon2"],
            "2008-09-03T13:00:00Z",
        ),
        (
            "the universe's first hour lost",
            Box::new(|s| {
                format!("DELETE FROM {s}.exact_hours; UPDATE {s}.universe_state SET since = NULL;")
            }),
            &["/2008/09/03/13.exact"],
            "2008-09-03T13:00:00Z",
        ),
    ];
    for (name, damage, paths, hour) in cases {
        let schema = unique_schema();
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::at(h(13), Duration::minutes(10));
        sealed_schema(&url, &schema, dir.path(), &clock).await;
        client(&url)
            .await
            .batch_execute(&damage(s(&schema)))
            .await
            .unwrap();
        // A node with nothing kept meets it.
        let b = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
        for path in paths {
            assert_corrupt(&http, &b.base, path, hour).await;
        }
        let (_, health) = status(&http, &b.base, "/healthz").await;
        assert_eq!(health["status"], "degraded", "{name}: {health}");
        // What the damage does not touch is served.
        let untouched = if paths[0].contains("/13") {
            "/2008/09/03/14.bin"
        } else {
            "/2008/09/03/13.bin"
        };
        assert_eq!(status(&http, &b.base, untouched).await.0, 200, "{name}");
        drop_schema(&url, &schema).await;
    }
}

pub async fn swapped_keys_in_postgres_build_no_form_and_the_scrub_finds_them_first() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(h(13), Duration::minutes(10));
    sealed_schema(&url, &schema, dir.path(), &clock).await;
    let db = client(&url).await;
    let table = format!("\"{schema}\".hours");
    let row = db
        .query_one(
            &format!("SELECT keys FROM {table} WHERE hour = $1"),
            &[&h(13).index()],
        )
        .await
        .unwrap();
    let mut keys = Vec::new();
    blob_to_keys(row.get(0), &mut keys).unwrap();
    for (i, key) in keys.iter_mut().take(10).enumerate() {
        *key = Key::of(&format!("forged:{i}"));
    }
    keys.sort_unstable();
    let blob = keys_to_blob(&keys);
    db.execute(
        &format!("UPDATE {table} SET keys = $2, keys_checksum = $3 WHERE hour = $1"),
        &[&h(13).index(), &blob, &sealed_keys_checksum(h(13), &blob)],
    )
    .await
    .unwrap();
    let b = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    let report = b.service.health().scrub_now().await;
    assert_eq!(report.damage_found, 1, "{report:?}");
    let http = reqwest::Client::new();
    let (_, health) = status(&http, &b.base, "/healthz").await;
    assert_eq!(
        health["corrupt_hours"][0], "2008-09-03T13:00:00Z",
        "{health}"
    );
    assert_corrupt(
        &http,
        &b.base,
        "/2008/09/03/13.ribbon",
        "2008-09-03T13:00:00Z",
    )
    .await;
    assert_corrupt(&http, &b.base, "/2008/09/03", "2008-09-03T13:00:00Z").await;
    assert_eq!(status(&http, &b.base, "/2008/09/03/13.bin").await.0, 200);
    drop_schema(&url, &schema).await;
}

pub async fn migration_10_records_what_a_schema_written_before_it_holds() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(h(13), Duration::minutes(10));
    sealed_schema(&url, &schema, dir.path(), &clock).await;
    let http = reqwest::Client::new();
    let before = {
        let a = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
        http.get(format!("{}/2008/09/03/13.exact", a.base))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    };
    // The schema as migration 9 left it: no records, no checksums on universe rows.
    let s = format!("\"{schema}\"");
    client(&url)
        .await
        .batch_execute(&format!(
            "DROP TABLE {s}.universe_hours, {s}.hour_universe, {s}.forms;
             ALTER TABLE {s}.universe DROP COLUMN checksum;
             DELETE FROM {s}.batch_counts WHERE batches = 0;
             DELETE FROM {s}.meta WHERE name = 'chain_since';
             DELETE FROM {s}.schema_migrations WHERE version = 10;
             DELETE FROM {s}.exact_hours;"
        ))
        .await
        .unwrap();
    let b = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    let after = http
        .get(format!("{}/2008/09/03/13.exact", b.base))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 200);
    assert_eq!(
        after.bytes().await.unwrap(),
        before,
        "the same body, rebuilt"
    );
    assert_eq!(b.service.health().scrub_now().await.damage_found, 0);
    // The records it computed find damage from now on.
    client(&url)
        .await
        .batch_execute(&format!(
            "DELETE FROM {s}.exact_hours;
             DELETE FROM {s}.universe WHERE key IN (SELECT key FROM {s}.universe LIMIT 3);"
        ))
        .await
        .unwrap();
    let c = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    assert_corrupt(
        &http,
        &c.base,
        "/2008/09/03/14.exact",
        "2008-09-03T14:00:00Z",
    )
    .await;
    drop_schema(&url, &schema).await;
}
