//! Every documented error, with its status and JSON body; the server keeps serving.

use crate::helpers::*;

#[tokio::test]
async fn ingest_without_a_valid_token_is_401() {
    let app = TestApp::spawn().await;
    let body = br#"{"ids": ["a"]}"#.to_vec();
    let missing = app
        .post_raw(Some("application/json"), None, body.clone())
        .await;
    missing.assert_error(401, "unauthorized");
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
    app.post_raw(Some("application/json"), Some("wrong-token-xyz"), body)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn malformed_bodies_are_400() {
    let app = TestApp::spawn().await;
    let long = format!(r#"{{"ids": ["{}"]}}"#, "x".repeat(1025));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("application/json", b"{not json".to_vec()),
        ("application/json", br#"{"ids": [1, 2]}"#.to_vec()),
        ("application/json", br#"{"ids": [null]}"#.to_vec()),
        ("application/json", br#"{"ids": "a"}"#.to_vec()),
        ("application/json", br#"{"other": []}"#.to_vec()),
        ("application/json", br#"{"ids": [""]}"#.to_vec()),
        ("application/json", long.into_bytes()),
        ("application/json", b"{\"ids\": [\"\xff\"]}".to_vec()),
        ("text/plain", b"ok\n\xc3\x28\n".to_vec()),
        ("text/plain", "y".repeat(1025).into_bytes()),
    ];
    for (ct, body) in cases {
        let shown = String::from_utf8_lossy(&body)
            .chars()
            .take(40)
            .collect::<String>();
        let reply = app.post_raw(Some(ct), Some(TOKEN), body).await;
        assert_eq!(reply.status, 400, "{ct} {shown:?}");
        reply.assert_error(400, "bad_request");
    }
    assert_eq!(app.get("/healthz").await.status, 200, "still serving");
}

#[tokio::test]
async fn other_content_types_are_415() {
    let app = TestApp::spawn().await;
    for ct in [
        None,
        Some("application/xml"),
        Some("application/x-www-form-urlencoded"),
        Some(""),
    ] {
        let reply = app.post_raw(ct, Some(TOKEN), b"a\n".to_vec()).await;
        reply.assert_error(415, "unsupported_media_type");
    }
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let app = TestApp::spawn_with(|s| s.body_limit = 1000).await;
    let ids: Vec<String> = (0..200).map(|i| format!("id-{i}")).collect();
    let body = serde_json::to_vec(&serde_json::json!({ "ids": ids })).unwrap();
    assert!(body.len() > 1000);
    app.post_raw(Some("application/json"), Some(TOKEN), body)
        .await
        .assert_error(413, "payload_too_large");
    // Just under the limit is fine.
    let small = app
        .post_raw(
            Some("text/plain"),
            Some(TOKEN),
            "a\n".repeat(400).into_bytes(),
        )
        .await;
    assert_eq!(small.status, 200);
}

#[tokio::test]
async fn impossible_dates_are_400() {
    let app = TestApp::spawn().await;
    for path in [
        "/2008/13/01/00",
        "/2008/02/30/00",
        "/2008/09/03/24",
        "/2008/9/3/1",
        "/abcd/09/03/13",
        "/2008/00/10/00",
    ] {
        app.get(path).await.assert_error(400, "invalid_hour");
    }
    app.get("/2008/02/30")
        .await
        .assert_error(400, "invalid_hour");
    app.get("/since/2008/02/30/00")
        .await
        .assert_error(400, "invalid_hour");
}

#[tokio::test]
async fn future_hours_and_hours_before_genesis_are_404() {
    let app = TestApp::spawn().await;
    app.get("/2008/09/03/14")
        .await
        .assert_error(404, "not_found");
    app.get("/2030/01/01/00")
        .await
        .assert_error(404, "not_found");
    app.get("/2008/09/03/12")
        .await
        .assert_error(404, "not_found");
    app.get("/2001/01/01/00")
        .await
        .assert_error(404, "not_found");
    app.get("/2008/09/04").await.assert_error(404, "not_found");
}

#[tokio::test]
async fn hours_past_retention_are_410() {
    let app = TestApp::spawn_with(|s| s.retention_hours = 2).await;
    app.ingest(&["old"]).await;
    app.next_hour().await;
    app.next_hour().await;
    // Now 15:00; retention 2 keeps 14:00 and 15:00.
    app.get("/2008/09/03/13").await.assert_error(410, "gone");
    assert_eq!(app.get("/2008/09/03/14").await.status, 200);
}

#[tokio::test]
async fn unknown_paths_suffixes_and_methods_get_json_errors() {
    let app = TestApp::spawn().await;
    app.get("/nothing/here")
        .await
        .assert_error(404, "not_found");
    app.get("/2008/09/03/13.xml")
        .await
        .assert_error(404, "not_found");
    let reply = app
        .request(
            axum::http::Request::delete("/2008/09/03/13")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    reply.assert_error(405, "method_not_allowed");
    assert_eq!(reply.header("cache-control"), Some("no-store"));
}

#[tokio::test]
async fn since_in_the_future_is_400() {
    let app = TestApp::spawn().await;
    app.get("/since/2008/09/03/14")
        .await
        .assert_error(400, "invalid_hour");
}

#[tokio::test]
async fn a_query_parameter_the_route_does_not_read_is_400_naming_it() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    app.next_hour().await;
    for (path, accepted) in [
        ("/?x=1", "no query parameters"),
        ("/2008/09/03/13?x=1", "only fpp"),
        ("/2008/09/03/13.bin?cb=123", "only fpp"),
        ("/2008/09/03/13.ribbon2?fpp=1e-3&x=1", "only fpp"),
        ("/2008/09/03/13.exact?y", "only fpp"),
        ("/2008/09/03?x=", "only fpp"),
        ("/since/2008/09/03/13?x=1", "only fpp"),
        ("/chain/2008/09/03/13?limit=2&x=1", "only limit"),
        ("/stats?hours=2&x=1", "only hours"),
        ("/checkpoint?x=1", "no query parameters"),
        ("/healthz?x=1", "no query parameters"),
    ] {
        let reply = app.get(path).await;
        reply.assert_error(400, "bad_request");
        let message = reply.json()["message"].as_str().unwrap().to_owned();
        let named = if path.contains("cb=") {
            "\"cb\""
        } else if path.contains("?y") {
            "\"y\""
        } else {
            "\"x\""
        };
        assert!(message.contains(named), "{path}: {message}");
        assert!(message.contains(accepted), "{path}: {message}");
    }
    // A parameter of the route's own, twice, names two resources: refused too.
    app.get("/2008/09/03/13.ribbon2?fpp=1e-3&fpp=1e-4")
        .await
        .assert_error(400, "bad_request");
    // The routes' own parameters still work.
    assert_eq!(app.get("/2008/09/03/13.ribbon2?fpp=1e-3").await.status, 200);
    assert_eq!(app.get("/chain/2008/09/03/13?limit=2").await.status, 200);
    assert_eq!(app.get("/stats?hours=2").await.status, 200);
}
