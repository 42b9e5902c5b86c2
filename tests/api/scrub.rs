//! The scrub finds damage before a reader does: a pass reads every served closed hour
//! back with the checks serving makes, records what it finds as a reader would (listed
//! in `/healthz`, counted in `/metrics`) and says what it did.

use crate::helpers::{ids, TestApp};
use bloomcast::bloom::Key;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::store::{blob_to_keys, keys_to_blob, sealed_keys_checksum, ChainLink};
use rusqlite::{params, Connection};

fn h(hour: u32) -> Hour {
    hour_of(2008, 9, 3, hour).unwrap()
}

/// An app with a universe and hours 13, 14 and 15 sealed (100 IDs each), 16 open.
async fn three_sealed_hours() -> TestApp {
    three_sealed_hours_with(|_| {}).await
}

async fn three_sealed_hours_with(tweak: impl FnOnce(&mut bloomcast::config::Settings)) -> TestApp {
    let app = TestApp::spawn_with(tweak).await;
    let universe = ids("user", 300);
    app.post_universe(&universe).await;
    for hour in 0..3 {
        let ids: Vec<&str> = universe[hour * 100..hour * 100 + 100]
            .iter()
            .map(String::as_str)
            .collect();
        app.ingest(&ids).await;
        app.next_hour().await;
    }
    app
}

#[tokio::test]
async fn a_pass_over_an_intact_store_finds_nothing_and_says_so() {
    let app = three_sealed_hours().await.restart().await;
    let report = app.service.health().scrub_now().await;
    assert_eq!(report.damage_found, 0);
    assert!(report.hours >= 3, "{report:?}");
    assert!(report.bytes > 0);
    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["scrub"]["passes"], 1);
    assert_eq!(health["scrub"]["pass_seconds"], 86_400);
    assert!(health["scrub"]["last_pass"].as_i64().is_some(), "{health}");
    assert_eq!(app.metric("bloomcast_scrub_passes_total").await, 1);
    assert_eq!(app.metric("bloomcast_scrub_damage_found_total").await, 0);
    assert!(
        app.metric("bloomcast_scrub_last_pass_timestamp_seconds")
            .await
            > 0
    );
}

/// Damage done through a connection to the store's file.
type Damage = Box<dyn Fn(&Connection)>;

/// Damage no reader has met yet, each kind the scrub must find.
fn damages() -> Vec<(&'static str, Damage)> {
    vec![
        (
            "keys swapped, their checksum recomputed",
            Box::new(|conn: &Connection| {
                let blob: Vec<u8> = conn
                    .query_row(
                        "SELECT keys FROM hours WHERE hour = ?1",
                        [h(14).index()],
                        |r| r.get(0),
                    )
                    .unwrap();
                let mut keys = Vec::new();
                blob_to_keys(&blob, &mut keys).unwrap();
                keys[0] = Key::of("forged");
                let blob = keys_to_blob(&keys);
                conn.execute(
                    "UPDATE hours SET keys = ?2, keys_checksum = ?3 WHERE hour = ?1",
                    params![h(14).index(), blob, sealed_keys_checksum(h(14), &blob)],
                )
                .unwrap();
            }),
        ),
        (
            "the row and the link deleted",
            Box::new(|conn: &Connection| {
                let h14 = h(14).index();
                conn.execute_batch(&format!(
                    "DELETE FROM hours WHERE hour = {h14}; DELETE FROM chain WHERE hour = {h14};
                     DELETE FROM exact_hours WHERE hour = {h14};"
                ))
                .unwrap();
            }),
        ),
        (
            "a link that follows another past, made whole again",
            Box::new(|conn: &Connection| {
                let digest: Vec<u8> = conn
                    .query_row(
                        "SELECT digest FROM chain WHERE hour = ?1",
                        [h(14).index()],
                        |r| r.get(0),
                    )
                    .unwrap();
                let mut link = ChainLink::new(h(14), b"", [7; 32]);
                link.digest = digest.try_into().unwrap();
                link.header = bloomcast::chain::header(&link.digest, &link.prev);
                conn.execute(
                    "UPDATE chain SET prev = ?2, header = ?3, checksum = ?4 WHERE hour = ?1",
                    params![
                        h(14).index(),
                        &link.prev[..],
                        &link.header[..],
                        link.checksum()
                    ],
                )
                .unwrap();
            }),
        ),
        (
            "universe rows deleted",
            Box::new(|conn: &Connection| {
                conn.execute_batch(
                    "DELETE FROM universe WHERE key IN (SELECT key FROM universe LIMIT 5)",
                )
                .unwrap();
            }),
        ),
        (
            "the exact body of another hour",
            Box::new(|conn: &Connection| {
                let other: Vec<u8> = conn
                    .query_row(
                        "SELECT body FROM exact_hours WHERE hour = ?1",
                        [h(15).index()],
                        |r| r.get(0),
                    )
                    .unwrap();
                conn.execute(
                    "UPDATE exact_hours SET body = ?2, checksum = ?3 WHERE hour = ?1",
                    params![
                        h(14).index(),
                        other,
                        bloomcast::store::exact_checksum(h(14), &other)
                    ],
                )
                .unwrap();
            }),
        ),
    ]
}

#[tokio::test]
async fn a_pass_finds_each_kind_of_damage_before_any_reader() {
    for (name, damage) in damages() {
        let app = three_sealed_hours().await;
        damage(&app.db());
        let app = app.restart().await;
        let before = app.get("/healthz").await.json();
        assert_eq!(
            before["status"], "ok",
            "{name}: no reader has met it: {before}"
        );

        let report = app.service.health().scrub_now().await;
        assert!(report.damage_found >= 1, "{name}: {report:?}");
        let health = app.get("/healthz").await.json();
        assert_eq!(health["status"], "degraded", "{name}: {health}");
        let listed = health["corrupt_hours"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            listed.iter().any(|h| h == "2008-09-03T14:00:00Z"),
            "{name}: {health}"
        );
        assert!(app.metric("bloomcast_scrub_damage_found_total").await >= 1);
        assert!(app.metric("bloomcast_corrupt_found_total").await >= 1);
    }
}

#[tokio::test]
async fn the_background_scrub_finds_damage_with_no_request_at_all() {
    let app = three_sealed_hours_with(|s| s.scrub_pass_seconds = 1).await;
    damages().remove(0).1(&app.db());
    let app = app.restart().await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let scrub = tokio::spawn(app.service.clone().run_scrub(async {
        let _ = stopped.await;
    }));
    crate::wait::eventually("the scrub finds the damage", || {
        app.service.health().scrub_report().damage_found > 0
    })
    .await;
    let _ = stop.send(());
    scrub.await.unwrap();
    let health = app.get("/healthz").await.json();
    assert_eq!(
        health["corrupt_hours"][0], "2008-09-03T14:00:00Z",
        "{health}"
    );
}
