use crate::helpers::*;

#[tokio::test]
async fn json_ingest_replies_with_the_hour_and_count() {
    let app = TestApp::spawn().await;
    let reply = app.ingest(&["a", "b", "b"]).await;
    assert_eq!(reply["hour"], "2008-09-03T13:00:00Z");
    assert_eq!(reply["accepted"], 3);
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!(meta.count, 2, "count is distinct IDs");
    assert!(filter.contains("a") && filter.contains("b"));
}

#[tokio::test]
async fn text_ingest_takes_one_id_per_line() {
    let app = TestApp::spawn().await;
    let reply = app
        .post_raw(
            Some("text/plain; charset=utf-8"),
            Some(TOKEN),
            b"one\r\ntwo\n\nthree four\n".to_vec(),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["accepted"], 3);
    let (_, filter) = app.filter("/2008/09/03/13").await;
    assert!(["one", "two", "three four"]
        .iter()
        .all(|id| filter.contains(id)));
}

#[tokio::test]
async fn unicode_and_maximum_length_ids_are_found() {
    let app = TestApp::spawn().await;
    let long = "é".repeat(512); // 1024 bytes
    let ids = ["ünïcødé", "🦀 crab", long.as_str()];
    app.ingest(&ids).await;
    let (_, filter) = app.filter("/2008/09/03/13").await;
    assert!(ids.iter().all(|id| filter.contains(id)));
}

#[tokio::test]
async fn a_rejected_request_records_nothing() {
    let app = TestApp::spawn().await;
    let body = br#"{"ids": ["good-id", ""]}"#.to_vec();
    let reply = app
        .post_raw(Some("application/json"), Some(TOKEN), body)
        .await;
    reply.assert_error(400, "bad_request");
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!(meta.count, 0);
    assert!(!filter.contains("good-id"));
}

#[tokio::test]
async fn metrics_count_ingested_ids_and_requests() {
    let app = TestApp::spawn().await;
    app.ingest(&["x", "y"]).await;
    app.get("/2008/09/03/13").await;
    let text = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(text.contains("bloomcast_ids_ingested_total 2"), "{text}");
    assert!(text.contains("bloomcast_current_hour_ids 2"), "{text}");
    assert!(
        text.contains(r#"bloomcast_http_requests_total{route="/updates",status="200"} 1"#),
        "{text}"
    );
}
