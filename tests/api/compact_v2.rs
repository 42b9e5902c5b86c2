//! Version 2 of the compact form (`.ribbon2`, PROTOCOL.md section 12): any precision a
//! client names maps to one grade of the published set (`ribbon_grades`), one immutable
//! body within 1.05x of its floor named by one canonical URL, negotiated by suffix or by
//! `Accept: ...; v=2`; version 1 (`.ribbon`) keeps its bytes; a sealed hour's grades are
//! warmed in the background.

use crate::helpers::TestApp;
use bloomcast::bloom::{Grade, Key, Ribbon, Ribbon2};

const V2: &str = "application/vnd.bloomcast.ribbon; v=2";

async fn closed_hour_of(ids: &[String]) -> TestApp {
    let app = TestApp::spawn().await;
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    app.ingest(&refs).await;
    app.next_hour().await;
    app
}

fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("flickr:{i}")).collect()
}

#[tokio::test]
async fn any_precision_is_served_at_a_published_grade_near_its_floor_holding_every_id() {
    let ids = ids(3_000);
    let app = closed_hour_of(&ids).await;
    for fpp in [0.05, 0.0437, 0.01, 0.003, 0.001, 2.2e-5, (-20f64).exp2()] {
        let reply = app.get(&format!("/2008/09/03/13.ribbon2?fpp={fpp}")).await;
        assert_eq!(reply.status, 200, "{fpp}");
        assert_eq!(reply.header("content-type"), Some(V2));
        assert_eq!(reply.header("content-encoding"), None, "never gzipped");
        assert_eq!(
            reply.header("cache-control"),
            Some("max-age=31536000, immutable")
        );
        let f = Ribbon2::from_bytes(&reply.body).unwrap();
        // The next stricter member of the set: the target's grade or a whole bit.
        let target = Grade::for_fpp(0.01).unwrap();
        let member = if fpp >= target.fpp() && fpp < 0.015625 {
            target
        } else {
            let k = (1.0 / fpp).log2().ceil() as u32;
            Grade {
                k: k.max(4),
                split: 0,
            }
        };
        assert_eq!(f.grade(), member, "{fpp}");
        assert!(f.fpp() <= fpp);
        assert!(ids.iter().all(|id| f.contains_id(id)), "{fpp}");
        // Near the floor of the precision served.
        let floor = ids.len() as f64 * (1.0 / f.fpp()).log2() / 8.0;
        let ratio = reply.body.len() as f64 / floor;
        assert!(ratio <= 1.05, "{fpp}: {ratio:.4}x the floor");
        let said: f64 = reply.header("bloom-fpp").unwrap().parse().unwrap();
        assert!(
            (said - f.fpp()).abs() <= f.fpp() * 1e-6,
            "{said} vs {}",
            f.fpp()
        );
        assert_eq!(reply.header("bloom-count"), Some("3000"));
        let structure = reply.header("bloom-ribbon").unwrap();
        assert!(structure.starts_with("v=2; w=128; k="), "{structure}");
    }
}

#[tokio::test]
async fn one_precision_names_one_body_forever_and_revalidates() {
    let app = closed_hour_of(&ids(200)).await;
    let first = app.get("/2008/09/03/13.ribbon2?fpp=0.003").await;
    // Another value of the same grade: the same bytes and validator.
    let grade = Grade::for_fpp(0.003).unwrap();
    let same = app
        .get(&format!("/2008/09/03/13.ribbon2?fpp={}", grade.fpp()))
        .await;
    assert_eq!(same.body, first.body);
    assert_eq!(same.header("etag"), first.header("etag"));
    let etag = first.header("etag").unwrap().to_owned();
    let again = app
        .get_with(
            "/2008/09/03/13.ribbon2?fpp=0.003",
            &[("if-none-match", &etag)],
        )
        .await;
    assert_eq!(again.status, 304);
    // A restart builds the same bytes.
    let app = app.restart().await;
    let rebuilt = app.get("/2008/09/03/13.ribbon2?fpp=0.003").await;
    assert_eq!(rebuilt.body, first.body);
    assert_eq!(rebuilt.header("etag"), first.header("etag"));
}

#[tokio::test]
async fn accept_with_v_2_negotiates_version_2_and_version_1_keeps_its_bytes() {
    let ids = ids(500);
    let app = closed_hour_of(&ids).await;
    assert_eq!(app.get("/2008/09/03/13").await.status, 200);
    let by_suffix = app.get("/2008/09/03/13.ribbon2").await;
    let by_accept = app.get_with("/2008/09/03/13", &[("accept", V2)]).await;
    assert_eq!(by_accept.status, 200);
    assert_eq!(by_accept.header("content-type"), Some(V2));
    assert_eq!(by_accept.body, by_suffix.body);
    let without_fpp = Ribbon2::from_bytes(&by_suffix.body).unwrap();
    assert_eq!(
        without_fpp.grade(),
        Grade::for_fpp(0.01).unwrap(),
        "the target"
    );
    // Version 1 is what it was: the v1 body of the same keys.
    let v1 = app
        .get_with(
            "/2008/09/03/13",
            &[("accept", "application/vnd.bloomcast.ribbon")],
        )
        .await;
    let mut keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
    keys.sort_unstable();
    assert_eq!(v1.body, Ribbon::build(&keys, 7).unwrap().to_bytes());
    let index = app.get("/").await.json();
    assert_eq!(index["ribbon_versions"], serde_json::json!([1, 2]));
}

#[tokio::test]
async fn bad_precisions_and_the_open_hour_get_clear_errors() {
    let app = closed_hour_of(&ids(10)).await;
    for bad in ["1e-9", "1", "0", "-0.1", "often", "NaN"] {
        app.get(&format!("/2008/09/03/13.ribbon2?fpp={bad}"))
            .await
            .assert_error(400, "bad_request");
    }
    // Coarser than 2^-4 is served as 2^-4.
    let coarse = app.get("/2008/09/03/13.ribbon2?fpp=0.3").await;
    let f = Ribbon2::from_bytes(&coarse.body).unwrap();
    assert_eq!(f.grade(), Grade { k: 4, split: 0 });
    app.ingest(&["open"]).await;
    app.get("/2008/09/03/14.ribbon2")
        .await
        .assert_error(406, "not_acceptable");
    app.get_with("/2008/09/03/14", &[("accept", V2)])
        .await
        .assert_error(406, "not_acceptable");
}

#[tokio::test]
async fn a_past_day_is_one_version_2_filter_of_its_distinct_ids() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    app.next_hour().await;
    app.ingest(&["b", "c"]).await;
    for _ in 0..11 {
        app.next_hour().await;
    }
    let day = app.get("/2008/09/03.ribbon2?fpp=0.001").await;
    assert_eq!(day.status, 200, "{}", String::from_utf8_lossy(&day.body));
    let f = Ribbon2::from_bytes(&day.body).unwrap();
    assert_eq!(f.n(), 3);
    assert!(["a", "b", "c"].iter().all(|id| f.contains_id(id)));
}

#[tokio::test]
async fn a_since_range_in_version_2_is_its_closed_hours_beside_the_open_hour() {
    let app = TestApp::spawn().await; // 13:00
    app.ingest(&["a", "b"]).await;
    app.next_hour().await;
    app.ingest(&["b", "c"]).await;
    app.next_hour().await;
    app.ingest(&["d"]).await; // 15:00, open
    let since = "/since/2008/09/03/13.ribbon2";

    let reply = app.get(&format!("{since}?fpp=7.8125e-3")).await;

    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.header("content-type"), Some(V2));
    assert_eq!(reply.header("bloom-from"), Some("2008-09-03T13:00:00Z"));
    assert_eq!(reply.header("bloom-to"), Some("2008-09-03T14:00:00Z"));
    assert_eq!(reply.header("bloom-complete"), Some("true"));
    let cache = reply.header("cache-control").unwrap();
    assert!(
        cache.starts_with("max-age=") && !cache.contains("immutable"),
        "{cache}"
    );
    let f = Ribbon2::from_bytes(&reply.body).unwrap();
    assert_eq!(f.n(), 3, "the closed hours' distinct IDs");
    assert_eq!(f.grade(), Grade { k: 7, split: 0 });
    assert!(["a", "b", "c"].iter().all(|id| f.contains_id(id)));
    // The same bytes as the same hours' day-style union would have, revalidated by ETag.
    let etag = reply.header("etag").unwrap().to_owned();
    let again = app
        .get_with(
            &format!("{since}?fpp=7.8125e-3"),
            &[("if-none-match", etag.as_str())],
        )
        .await;
    assert_eq!(again.status, 304);
    // The open hour is the second request; once it closes, the range takes it in.
    app.next_hour().await;
    let later = app.get(&format!("{since}?fpp=7.8125e-3")).await;
    assert_eq!(later.header("bloom-to"), Some("2008-09-03T15:00:00Z"));
    assert_ne!(later.header("etag").unwrap(), etag);
    let f = Ribbon2::from_bytes(&later.body).unwrap();
    assert_eq!(f.n(), 4);
    assert!(f.contains_id("d"));
    // One closed hour: that hour's own body. None closed: no compact form.
    let one = app.get("/since/2008/09/03/15.ribbon2").await;
    assert_eq!(one.body, app.get("/2008/09/03/15.ribbon2").await.body);
    app.get("/since/2008/09/03/16.ribbon2")
        .await
        .assert_error(406, "not_acceptable");
    let v1 = app.get("/since/2008/09/03/13.ribbon").await;
    v1.assert_error(406, "not_acceptable");
    assert!(v1.json()["message"].as_str().unwrap().contains(".ribbon2"));
}

#[tokio::test]
async fn a_precision_between_grades_gets_the_canonical_grade_with_its_location() {
    let app = closed_hour_of(&ids(500)).await;
    let index = app.get("/").await;
    let index: serde_json::Value = serde_json::from_slice(&index.body).unwrap();
    let published: Vec<&str> = index["ribbon_grades"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(published.len(), 22, "{published:?}");
    assert_eq!(published[0], "6.25e-2");
    assert!(
        published.contains(&"9.979248046875e-3"),
        "the target's grade"
    );
    assert!(published.contains(&"5.960464477539063e-8"), "2^-24");

    // 0.003 lies between 2^-8 and 2^-9: served 2^-9's bytes, naming its canonical URL.
    let between = app.get("/2008/09/03/13.ribbon2?fpp=0.003").await;
    assert_eq!(between.status, 200);
    assert_eq!(
        between.header("content-location"),
        Some("/2008/09/03/13.ribbon2?fpp=1.953125e-3")
    );
    let canonical = app.get("/2008/09/03/13.ribbon2?fpp=1.953125e-3").await;
    assert_eq!(canonical.status, 200);
    assert_eq!(
        canonical.header("content-location"),
        None,
        "already canonical"
    );
    assert_eq!(canonical.body, between.body);
    assert_eq!(canonical.header("etag"), between.header("etag"));
    assert_eq!(
        Ribbon2::from_bytes(&canonical.body).unwrap().grade(),
        Grade { k: 9, split: 0 }
    );
    // Another spelling of the same member names it too, and revalidates with its ETag.
    let etag = canonical.header("etag").unwrap().to_owned();
    let spelled = app
        .get_with(
            "/2008/09/03/13.ribbon2?fpp=0.001953125",
            &[("if-none-match", &etag)],
        )
        .await;
    assert_eq!(spelled.status, 304);
    assert_eq!(
        spelled.header("content-location"),
        Some("/2008/09/03/13.ribbon2?fpp=1.953125e-3")
    );

    // Every published spelling is its own canonical URL: the grade it names, no
    // Content-Location.
    for spelled in &published {
        let reply = app
            .get(&format!("/2008/09/03/13.ribbon2?fpp={spelled}"))
            .await;
        assert_eq!(reply.status, 200, "{spelled}");
        assert_eq!(reply.header("content-location"), None, "{spelled}");
        let f = Ribbon2::from_bytes(&reply.body).unwrap();
        assert_eq!(f.fpp(), spelled.parse::<f64>().unwrap(), "{spelled}");
    }

    // Version 1 maps the same way onto its whole bits.
    let v1 = app.get("/2008/09/03/13.ribbon?fpp=0.003").await;
    assert_eq!(
        v1.header("content-location"),
        Some("/2008/09/03/13.ribbon?fpp=1.953125e-3")
    );
    // Scripts may read it.
    let cors = app
        .get_with(
            "/2008/09/03/13.ribbon2?fpp=0.003",
            &[("origin", "https://example.org")],
        )
        .await;
    let exposed = cors.header("access-control-expose-headers").unwrap();
    assert!(
        exposed.split(',').any(|h| h.trim() == "content-location"),
        "{exposed}"
    );
    let v1_canonical = app.get("/2008/09/03/13.ribbon?fpp=1.953125e-3").await;
    assert_eq!(v1_canonical.header("content-location"), None);
    assert_eq!(v1_canonical.header("etag"), v1.header("etag"));
}

#[tokio::test]
async fn a_sealed_hours_grades_are_warmed_after_seal_and_restart_and_answered_without_a_build() {
    let ids = ids(2_000);
    let app = closed_hour_of(&ids).await;
    let warming = tokio::spawn(app.service.clone().run_warming(std::future::pending()));
    let stats = &app;
    let warm = crate::wait::until("an hour is warmed", || async move {
        let warm = stats.get("/stats").await.json()["warm"].clone();
        (warm["hours"].as_u64() >= Some(1)).then_some(warm)
    })
    .await;
    assert_eq!(warm["hour"], "2008-09-03T13:00:00Z", "{warm}");
    assert_eq!(warm["grades_built"], 22, "{warm}");
    assert_eq!(
        (warm["pending"].clone(), warm["failures"].clone()),
        (0.into(), 0.into())
    );
    let stats = app.get("/stats").await.json();
    let built = stats["unions"]["hour_ribbons"]["runs"].as_u64().unwrap();
    assert!(built >= 22, "the warm builds ran: {stats}");
    let index: serde_json::Value = serde_json::from_slice(&app.get("/").await.body).unwrap();
    for grade in index["ribbon_grades"].as_array().unwrap() {
        let path = format!("/2008/09/03/13.ribbon2?fpp={}", grade.as_str().unwrap());
        let reply = app.get(&path).await;
        assert_eq!(reply.status, 200, "{path}");
        let f = Ribbon2::from_bytes(&reply.body).unwrap();
        assert!(ids.iter().take(50).all(|id| f.contains_id(id)));
    }
    // Without ?fpp=, the target's grade: warmed too.
    assert_eq!(app.get("/2008/09/03/13.ribbon2").await.status, 200);
    let after = app.get("/stats").await.json();
    assert_eq!(
        after["unions"]["hour_ribbons"]["runs"].as_u64(),
        Some(built),
        "every grade answered without a build"
    );
    assert_eq!(after["build_queue"]["queued"], 0);
    warming.abort();
    let _ = warming.await;

    // A restart warms the newest sealed hour again: its cache starts empty.
    let app = app.restart().await;
    let warming = tokio::spawn(app.service.clone().run_warming(std::future::pending()));
    let stats = &app;
    let warm = crate::wait::until("an hour is warmed", || async move {
        let warm = stats.get("/stats").await.json()["warm"].clone();
        (warm["hours"].as_u64() >= Some(1)).then_some(warm)
    })
    .await;
    assert_eq!(warm["hour"], "2008-09-03T13:00:00Z", "{warm}");
    assert_eq!(warm["grades_built"], 22, "{warm}");
    let stats = app.get("/stats").await.json();
    let built = stats["unions"]["hour_ribbons"]["runs"].as_u64().unwrap();
    assert!(built >= 22, "built again after the restart: {stats}");
    assert_eq!(
        app.get("/2008/09/03/13.ribbon2?fpp=1.1920928955078125e-7")
            .await
            .status,
        200
    );
    let after = app.get("/stats").await.json();
    assert_eq!(
        after["unions"]["hour_ribbons"]["runs"].as_u64(),
        Some(built)
    );
    warming.abort();
}
