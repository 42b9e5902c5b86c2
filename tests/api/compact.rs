//! The compact (ribbon) representation of closed hours: suffix and `Accept`, `?fpp=`,
//! validators, and the open hour's 406.

use crate::helpers::TestApp;
use bloomcast::bloom::Ribbon;

const RIBBON: &str = "application/vnd.bloomcast.ribbon";

async fn closed_hour_of(ids: &[&str]) -> TestApp {
    let app = TestApp::spawn().await;
    app.ingest(ids).await;
    app.next_hour().await;
    app
}

#[tokio::test]
async fn a_closed_hour_is_served_as_a_ribbon_holding_every_id() {
    let ids: Vec<String> = (0..500).map(|i| format!("id:{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let app = closed_hour_of(&refs).await;
    let reply = app.get("/2008/09/03/13.ribbon").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some(RIBBON));
    assert_eq!(reply.header("bloom-count"), Some("500"));
    assert_eq!(reply.header("bloom-complete"), Some("true"));
    assert_eq!(
        reply.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    let f = Ribbon::from_bytes(&reply.body).unwrap();
    assert_eq!((f.n(), f.r()), (500, 7), "the target fpp 0.01 needs r = 7");
    assert!(ids.iter().all(|id| f.contains_id(id)));
    // Smaller than the Bloom filter's bytes.
    let bin = app.get("/2008/09/03/13.bin").await;
    assert!(reply.body.len() < bin.body.len());
}

#[tokio::test]
async fn accept_negotiates_the_same_bytes_and_revalidates() {
    let app = closed_hour_of(&["a", "b", "c"]).await;
    // Read as v1 JSON first, so the fast lane has the hour ready: it must step aside.
    assert_eq!(app.get("/2008/09/03/13").await.status, 200);
    let by_suffix = app.get("/2008/09/03/13.ribbon").await;
    let by_accept = app.get_with("/2008/09/03/13", &[("accept", RIBBON)]).await;
    assert_eq!(by_accept.status, 200);
    assert_eq!(by_accept.header("content-type"), Some(RIBBON));
    assert_eq!(by_accept.body, by_suffix.body);
    let etag = by_accept.header("etag").unwrap().to_owned();
    let again = app
        .get_with("/2008/09/03/13.ribbon", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    // A v1 suffix wins over Accept.
    let bin = app
        .get_with("/2008/09/03/13.bin", &[("accept", RIBBON)])
        .await;
    assert_eq!(bin.header("content-type"), Some("application/octet-stream"));
}

#[tokio::test]
async fn fpp_on_request_sets_the_fingerprint_bits() {
    let app = closed_hour_of(&["a", "b", "c"]).await;
    for (query, r) in [("0.001", 10), ("0.0000001", 24), ("0.5", 4), ("0.0625", 4)] {
        let reply = app.get(&format!("/2008/09/03/13.ribbon?fpp={query}")).await;
        assert_eq!(reply.status, 200, "{query}");
        let f = Ribbon::from_bytes(&reply.body).unwrap();
        assert_eq!(f.r(), r, "{query}");
        assert!(["a", "b", "c"].iter().all(|id| f.contains_id(id)));
    }
    app.get("/2008/09/03/13.ribbon?fpp=1e-9")
        .await
        .assert_error(400, "bad_request");
    app.get("/2008/09/03/13.ribbon?fpp=often")
        .await
        .assert_error(400, "bad_request");
}

#[tokio::test]
async fn the_open_hour_has_no_compact_form() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    assert_eq!(app.get("/2008/09/03/13").await.status, 200);
    app.get("/2008/09/03/13.ribbon")
        .await
        .assert_error(406, "not_acceptable");
    app.get_with("/2008/09/03/13", &[("accept", RIBBON)])
        .await
        .assert_error(406, "not_acceptable");
    // The v1 forms are unchanged.
    assert_eq!(app.get("/2008/09/03/13.bin").await.status, 200);
}
