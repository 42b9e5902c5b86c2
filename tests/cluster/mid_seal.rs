//! A node killed with SIGKILL in the middle of sealing an hour: another node completes
//! the seal, and the sealed row and chain link are byte for byte what one node alone
//! seals from the same IDs.
//!
//! To be sure the kill lands mid-seal, the test holds a lock on the `hours` table that
//! lets reads through and makes inserts wait: node A (a process, on PostgreSQL's clock as
//! every node of a cluster is) starts in the hour after the one B ingested into, so it
//! closes that hour, reads its keys, builds the filter and then waits in its seal's
//! `INSERT`, which the test sees in `pg_stat_activity` before it kills A. Node B
//! (in-process, a clock the test moves) then seals the hour.

use super::{drop_schema, node, node_settings, unique_schema};
use crate::common::needs::Need;
use crate::common::nodes::connect;
use crate::common::{fetch, kill9, post_ids, spawn_server};
use bloomcast::clock::ManualClock;
use bloomcast::hour::Hour;
use chrono::{Duration, Utc};
use std::path::Path;

/// IDs in the hour being sealed.
const IDS: usize = 200_000;

pub async fn a_node_killed_mid_seal_leaves_the_seal_to_another_with_the_same_bytes_and_link() {
    let url = Need::Postgres.found();
    let (schema, reference) = (unique_schema(), unique_schema());
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("cluster-signing-key");
    std::fs::write(&key_file, format!("{}\n", "42".repeat(32))).unwrap();
    let settings = |schema: &str| {
        let mut s = node_settings(&url, schema, dir.path().to_owned());
        s.signing_key_file = key_file.clone();
        s
    };
    // The hour before the real one: A, on PostgreSQL's clock, finds it closed at start.
    let h = Hour::containing(Utc::now()).prev();
    let ids: Vec<String> = (0..IDS).map(|i| format!("mid-seal-{i}")).collect();
    let http = reqwest::Client::new();

    // What one node alone seals from these IDs, in a schema of its own.
    let alone_clock = ManualClock::at(h, Duration::minutes(10));
    let alone = node(settings(&reference), &alone_clock).await;
    ingest(&http, &alone.base, &ids, h).await;
    alone_clock.advance(Duration::hours(1));
    alone.service.tick().await.unwrap();
    let expected = sealed_row(&url, &reference, h).await.expect("sealed alone");

    let clock = ManualClock::at(h, Duration::minutes(10));
    let b = node(settings(&schema), &clock).await;
    ingest(&http, &b.base, &ids, h).await;

    let locker = connect(&url).await;
    // pg_stat_activity is read once per transaction: the locker's would never change.
    let poller = connect(&url).await;
    locker
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE \"{schema}\".hours IN EXCLUSIVE MODE"
        ))
        .await
        .unwrap();
    let mut a = start_node(dir.path(), &url, &schema, &key_file);
    let insert = format!("INSERT INTO \"{schema}\".hours");
    let (poller, insert) = (&poller, &insert);
    let a_backend: i32 =
        crate::common::wait::until("node A reaches its seal's insert", || async move {
            poller
                .query_opt(
                    "SELECT pid FROM pg_stat_activity
                 WHERE wait_event_type = 'Lock' AND position($1 in query) > 0",
                    &[insert],
                )
                .await
                .unwrap()
                .map(|row| row.get(0))
        })
        .await;
    let closed: i64 = poller
        .query_one(
            &format!("SELECT value FROM \"{schema}\".meta WHERE name = 'closed_through'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(closed, h.index(), "A closed the hour before sealing it");
    kill9(&mut a);
    locker.batch_execute("ROLLBACK").await.unwrap();
    // A's backend finds its client gone and rolls its seal back.
    crate::common::wait::until("A's backend is gone", || async move {
        poller
            .query_opt(
                "SELECT 1 FROM pg_stat_activity WHERE pid = $1",
                &[&a_backend],
            )
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        sealed_row(&url, &schema, h).await.is_none(),
        "A's seal did not land"
    );

    clock.advance(Duration::minutes(55));
    b.service.tick().await.expect("B seals the hour A left");
    let sealed = sealed_row(&url, &schema, h).await.expect("sealed by B");
    assert!(
        sealed == expected,
        "the seal B completed differs from one node's alone"
    );
    let (meta, filter) = fetch(&http, &b.base, &h.path()).await;
    assert!(meta.complete);
    assert!(ids.iter().all(|id| filter.contains(id)), "an ID lost");
    eprintln!(
        "FAULTS test=kill9_mid_seal hour={} acked={} found={} same_bytes_and_link=true",
        h.rfc3339(),
        ids.len(),
        ids.iter().filter(|id| filter.contains(id)).count()
    );
    drop((a, b, alone));
    drop_schema(&url, &schema).await;
    drop_schema(&url, &reference).await;
}

/// Posts `ids` in batches, each acknowledged in `hour`.
async fn ingest(http: &reqwest::Client, base: &str, ids: &[String], hour: Hour) {
    for batch in ids.chunks(10_000) {
        let got = post_ids(http, base, batch).await.unwrap();
        assert_eq!(got, hour.rfc3339());
    }
}

/// Node A, once it listens: it seals at start, before it is ready. The cluster's clock
/// record is B's, an hour behind the real time (B's clock is the test's): a tolerance of
/// two hours lets A's start follow PostgreSQL's clock rather than hold it as a jump from
/// the start.
fn start_node(dir: &Path, url: &str, schema: &str, key_file: &Path) -> crate::common::Server {
    let data = dir.join("node-a");
    std::fs::create_dir_all(&data).unwrap();
    let key_file = key_file.display().to_string();
    spawn_server(
        &data,
        &[
            ("BLOOMCAST_DATABASE_URL", url),
            ("BLOOMCAST_DATABASE_SCHEMA", schema),
            ("BLOOMCAST_REFRESH_MS", "0"),
            ("BLOOMCAST_SIGNING_KEY_FILE", &key_file),
            ("BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS", "7200"),
        ],
    )
}

/// The sealed hour's row (count, m, k, filter bytes, sorted keys) and its chain link
/// (digest, previous header, header), as stored.
#[derive(PartialEq, Eq)]
struct Sealed {
    count: i64,
    m: i32,
    k: i32,
    filter: Vec<u8>,
    keys: Vec<u8>,
    link: Vec<Vec<u8>>,
}

async fn sealed_row(url: &str, schema: &str, h: Hour) -> Option<Sealed> {
    let client = connect(url).await;
    let row = client
        .query_opt(
            &format!(
                "SELECT h.count, h.m, h.k, h.filter, h.keys, c.digest, c.prev, c.header
                 FROM \"{schema}\".hours h JOIN \"{schema}\".chain c USING (hour)
                 WHERE hour = $1"
            ),
            &[&h.index()],
        )
        .await
        .unwrap()?;
    Some(Sealed {
        count: row.get(0),
        m: row.get(1),
        k: row.get(2),
        filter: row.get(3),
        keys: row.get(4),
        link: (5..8).map(|i| row.get(i)).collect(),
    })
}
