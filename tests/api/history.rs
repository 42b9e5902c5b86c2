//! `GET /history`: the hours an ID may have changed in, for token holders only.

use crate::helpers::{start_hour, TestApp, TOKEN};
use axum::http::StatusCode;

fn hours_of(body: &serde_json::Value, i: usize) -> Vec<String> {
    body["ids"][i]["hours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn history_lists_every_hour_an_id_was_published_in_open_hour_included() {
    let app = TestApp::spawn().await;
    let h0 = start_hour();
    app.ingest(&["user:1", "user:2"]).await;
    app.next_hour().await;
    app.ingest(&["user:2"]).await;
    app.next_hour().await;
    app.ingest(&["user:1"]).await;
    let auth = format!("Bearer {TOKEN}");
    // Twice: the second answer comes from the kept filters and must not differ.
    for _ in 0..2 {
        let reply = app
            .get_with(
                "/history?id=user%3A1&id=user:2",
                &[("authorization", &auth)],
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.header("cache-control"), Some("private, no-store"));
        let body = reply.json();
        assert_eq!(body["from"], h0.rfc3339());
        assert_eq!(body["to"], h0.next().next().rfc3339());
        assert_eq!(body["ids"][0]["id"], "user:1");
        let one = hours_of(&body, 0);
        let two = hours_of(&body, 1);
        // No false negatives; a false positive in these near-empty filters is ~1e-14.
        assert_eq!(one, [h0.rfc3339(), h0.next().next().rfc3339()]);
        assert_eq!(two, [h0.rfc3339(), h0.next().rfc3339()]);
    }
    let reply = app
        .get_with(
            &format!("/history?id=user:2&since={}", h0.next().rfc3339()),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(hours_of(&reply.json(), 0), [h0.next().rfc3339()]);
}

#[tokio::test]
async fn history_is_never_public() {
    let app = TestApp::spawn().await;
    app.ingest(&["user:1"]).await;
    app.get("/history?id=user:1")
        .await
        .assert_error(401, "unauthorized");
    app.get_with("/history?id=user:1", &[("authorization", "Bearer wrong")])
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn history_without_ids_is_a_bad_request() {
    let app = TestApp::spawn().await;
    let auth = format!("Bearer {TOKEN}");
    app.get_with("/history", &[("authorization", &auth)])
        .await
        .assert_error(400, "bad_request");
}
