//! One damaged hour never takes the index down: `GET /` lists it as corrupt, without a
//! count (a count would read as "nothing changed" to an older client), and every other
//! hour as ever, while the damaged hour itself answers `500 corrupt`.

use crate::corruption::{db_file, rot_first_batch};
use crate::helpers::{start_hour, TestApp};
use axum::http::StatusCode;
use rusqlite::Connection;
use serde_json::json;

/// Runs SQL on the store's file from outside the store, as damage would.
fn tamper(app: &TestApp, sql: &str) {
    let conn = Connection::open(db_file(&app.settings.data_dir)).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.execute_batch(sql).unwrap();
}

/// The index's line for `hour` (RFC 3339), asserting the index is served.
async fn index_line(app: &TestApp, hour: &str) -> serde_json::Value {
    let reply = app.get("/").await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let index = reply.json();
    index["hours"]
        .as_array()
        .unwrap()
        .iter()
        .find(|line| line["hour"] == hour)
        .unwrap_or_else(|| panic!("{hour} is not listed: {index}"))
        .clone()
}

#[tokio::test]
async fn an_open_hour_whose_batch_record_is_deleted_is_listed_corrupt_and_the_rest_served() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    app.next_hour().await;
    app.ingest(&["c"]).await;
    app.ingest(&["d"]).await;
    // Every batch is still there; only the record of how many there are is gone.
    tamper(&app, "DELETE FROM batch_counts");
    let app = app.restart().await;

    app.get("/2008/09/03/14").await.assert_error(500, "corrupt");
    assert_eq!(
        index_line(&app, "2008-09-03T14:00:00Z").await,
        json!({
            "hour": "2008-09-03T14:00:00Z",
            "url": "/2008/09/03/14",
            "complete": false,
            "corrupt": true,
        }),
        "no count: it would read as nothing changed"
    );
    let sealed = index_line(&app, "2008-09-03T13:00:00Z").await;
    assert_eq!(
        (sealed["count"].as_u64(), sealed["complete"].as_bool()),
        (Some(2), Some(true))
    );
    assert_eq!(sealed.get("corrupt"), None, "{sealed}");
    assert_eq!(
        app.get("/").await.json()["current"]["url"],
        "/2008/09/03/14"
    );
}

#[tokio::test]
async fn a_past_hour_with_damaged_keys_is_listed_corrupt_between_hours_served_as_ever() {
    let app = TestApp::spawn().await;
    app.ingest(&["sealed-1"]).await;
    app.next_hour().await;
    app.ingest(&["damaged-1", "damaged-2"]).await;
    rot_first_batch(
        &db_file(&app.settings.data_dir),
        start_hour().next().index(),
        3,
    );
    app.clock.advance(chrono::Duration::hours(1));
    assert!(app.service.tick().await.is_err(), "sealing finds the rot");
    app.ingest(&["open-1"]).await;

    app.get("/2008/09/03/14").await.assert_error(500, "corrupt");
    let index = app.get("/").await;
    assert_eq!(index.status, StatusCode::OK);
    let lines: Vec<_> = index.json()["hours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["hour"].clone(),
                l["count"].clone(),
                l["complete"].clone(),
                l["corrupt"].clone(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            (
                json!("2008-09-03T15:00:00Z"),
                json!(1),
                json!(false),
                json!(null)
            ),
            (
                json!("2008-09-03T14:00:00Z"),
                json!(null),
                json!(false),
                json!(true)
            ),
            (
                json!("2008-09-03T13:00:00Z"),
                json!(1),
                json!(true),
                json!(null)
            ),
        ]
    );
}
