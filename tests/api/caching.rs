//! gzip, ETag/304 and Cache-Control, open and closed.

use crate::helpers::*;
use chrono::Duration;

#[tokio::test]
async fn gzip_is_served_when_accepted_with_vary() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    let plain = app.get("/2008/09/03/13").await;
    assert_eq!(plain.header("content-encoding"), None);
    let gz = app
        .get_with("/2008/09/03/13", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert!(gz.header("vary").unwrap().contains("Accept-Encoding"));
    assert_eq!(gunzip(&gz.body), plain.body);
    assert!(
        gz.body.len() < plain.body.len() / 4,
        "{} vs {}",
        gz.body.len(),
        plain.body.len()
    );
    assert_ne!(
        gz.header("etag"),
        plain.header("etag"),
        "encodings have their own tags"
    );
}

#[tokio::test]
async fn the_open_hour_revalidates_and_its_etag_follows_content() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    let first = app.get("/2008/09/03/13").await;
    let etag = first.header("etag").unwrap().to_owned();
    let again = app
        .get_with("/2008/09/03/13", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));

    app.ingest(&["a"]).await; // nothing new: same content, same tag
    assert_eq!(
        app.get_with("/2008/09/03/13", &[("if-none-match", &etag)])
            .await
            .status,
        304
    );

    app.ingest(&["b"]).await;
    let changed = app
        .get_with("/2008/09/03/13", &[("if-none-match", &etag)])
        .await;
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
}

#[tokio::test]
async fn the_open_hour_max_age_is_short_and_never_runs_past_the_hour() {
    let app = TestApp::spawn_with(|s| s.open_max_age = 120).await;
    let cc = |r: &Reply| r.header("cache-control").unwrap().to_owned();
    assert_eq!(cc(&app.get("/2008/09/03/13").await), "max-age=120");
    app.clock
        .advance(Duration::minutes(49) + Duration::seconds(30)); // 13:59:30
    assert_eq!(cc(&app.get("/2008/09/03/13").await), "max-age=30");
    let doc = app.get("/2008/09/03/13").await.json();
    assert_eq!(doc["complete"], false);
}

#[tokio::test]
async fn a_closed_hour_is_immutable_with_a_strong_etag() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    app.next_hour().await;
    let reply = app
        .get_with("/2008/09/03/13", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(
        reply.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    let etag = reply.header("etag").unwrap().to_owned();
    assert!(
        etag.starts_with('"') && !etag.starts_with("W/"),
        "strong: {etag}"
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&gunzip(&reply.body)).unwrap()["complete"],
        true
    );
    let revalidated = app
        .get_with(
            "/2008/09/03/13",
            &[("accept-encoding", "gzip"), ("if-none-match", &etag)],
        )
        .await;
    assert_eq!(revalidated.status, 304);
    assert_eq!(
        revalidated.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
}

#[tokio::test]
async fn a_closed_hour_has_identical_bytes_across_restarts() {
    let app = TestApp::spawn().await;
    app.ingest(&["x", "y", "z"]).await;
    app.next_hour().await;
    let before = app
        .get_with("/2008/09/03/13.bin", &[("accept-encoding", "gzip")])
        .await;
    let json_before = app.get("/2008/09/03/13").await;
    let app = app.restart().await;
    let after = app
        .get_with("/2008/09/03/13.bin", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(after.body, before.body);
    assert_eq!(after.header("etag"), before.header("etag"));
    assert_eq!(app.get("/2008/09/03/13").await.body, json_before.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_racing_ingest_see_every_id_acknowledged_before_they_asked() {
    let app = std::sync::Arc::new(TestApp::spawn_with(|s| s.capacity = 500).await);
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (app, acked) = (app.clone(), acked.clone());
            tokio::spawn(async move {
                for b in 0..30 {
                    let ids: Vec<String> = (0..40).map(|i| format!("w{w}-{b}-{i}")).collect();
                    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                    app.ingest(&refs).await;
                    acked.lock().unwrap().extend(ids);
                }
            })
        })
        .collect();
    let readers: Vec<_> = ["/2008/09/03/13", "/since/2008/09/03/13", "/2008/09/03"]
        .into_iter()
        .flat_map(|path| [path; 2])
        .map(|path| {
            let (app, acked) = (app.clone(), acked.clone());
            tokio::spawn(async move {
                let mut reads = 0;
                while acked.lock().unwrap().len() < 3 * 30 * 40 {
                    let before = acked.lock().unwrap().clone();
                    let (meta, filter) = app.filter(path).await;
                    let missing = before.iter().filter(|id| !filter.contains(id)).count();
                    assert_eq!(missing, 0, "{path} lacks acknowledged IDs");
                    assert!(meta.count >= before.len() as u64, "{path}: {meta:?}");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    for r in readers {
        assert!(r.await.unwrap() > 0);
    }
}

#[tokio::test]
async fn a_web_page_origin_does_not_split_a_shared_cache() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    let plain = app.get("/2008/09/03/13").await;
    let page = app
        .get_with("/2008/09/03/13", &[("origin", "https://feeds.example")])
        .await;
    assert_eq!(page.header("access-control-allow-origin"), Some("*"));
    assert_eq!(page.body, plain.body);
    for reply in [&plain, &page] {
        // CORS answers are the same for every origin: `Vary` names only what the
        // representation depends on, so a cache keeps one object for every page.
        let vary: Vec<&str> = reply
            .headers
            .get_all("vary")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(vary, ["Accept, Accept-Encoding, Available-Dictionary"]);
    }
}
