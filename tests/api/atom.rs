//! `GET /hours.atom`: the sealed hours as an Atom feed, newest first, with stable ids,
//! revalidated by its ETag. (tests/http_checkers.rs reads it with a real feed parser.)

use crate::helpers::*;
use chrono::Duration;

fn entries(xml: &str) -> Vec<&str> {
    xml.split("<entry>").skip(1).collect()
}

#[tokio::test]
async fn each_sealed_hour_is_an_entry_newest_first() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    app.clock.advance(Duration::hours(1));
    app.ingest(&["c"]).await;
    app.clock.advance(Duration::hours(1));
    app.service.tick().await.unwrap();
    let reply = app
        .get_with("/hours.atom", &[("host", "feeds.example")])
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/atom+xml"));
    assert_eq!(reply.header("cache-control"), Some("max-age=60"));
    let xml = String::from_utf8(reply.body.clone()).unwrap();
    assert!(
        xml.contains("<id>tag:feeds.example,2008-09-03:hours</id>"),
        "{xml}"
    );
    assert!(xml.contains(
        r#"<link rel="self" type="application/atom+xml" href="http://feeds.example/hours.atom"/>"#
    ));
    let listed = entries(&xml);
    assert_eq!(listed.len(), 2, "the open hour is no entry: {xml}");
    assert!(listed[0].contains("<id>tag:feeds.example,2008-09-03:hour/2008-09-03T14</id>"));
    assert!(listed[0].contains("<bc:count>1</bc:count>"));
    assert!(listed[1].contains("<id>tag:feeds.example,2008-09-03:hour/2008-09-03T13</id>"));
    assert!(listed[1].contains("<bc:count>2</bc:count>"));
    assert!(listed[1].contains("<updated>2008-09-03T14:00:00Z</updated>"));
    assert!(listed[1].contains(r#"href="http://feeds.example/2008/09/03/13.bin""#));
    let chain = app.get("/chain/2008/09/03/13").await.json();
    let digest = chain[0]["digest"].as_str().unwrap();
    assert!(listed[1].contains(&format!("<bc:digest>{digest}</bc:digest>")));

    // The same bytes until the next seal: revalidated with 304.
    let etag = reply.header("etag").unwrap().to_owned();
    let again = app
        .get_with(
            "/hours.atom",
            &[("host", "feeds.example"), ("if-none-match", &etag)],
        )
        .await;
    assert_eq!(again.status, 304);
    app.ingest(&["d"]).await;
    let same = app
        .get_with("/hours.atom", &[("host", "feeds.example")])
        .await;
    assert_eq!(
        same.header("etag"),
        Some(etag.as_str()),
        "ingest changes no entry"
    );
    app.clock.advance(Duration::hours(1));
    app.service.tick().await.unwrap();
    let sealed = app
        .get_with(
            "/hours.atom",
            &[("host", "feeds.example"), ("if-none-match", &etag)],
        )
        .await;
    assert_eq!(sealed.status, 200, "a seal adds an entry");
    assert_eq!(entries(std::str::from_utf8(&sealed.body).unwrap()).len(), 3);
}

#[tokio::test]
async fn links_follow_the_proxy_scheme_and_hosts_are_escaped() {
    let app = TestApp::spawn().await;
    let reply = app
        .get_with(
            "/hours.atom",
            &[("host", "a&b.example"), ("x-forwarded-proto", "https")],
        )
        .await;
    let xml = String::from_utf8(reply.body).unwrap();
    assert!(
        xml.contains(r#"href="https://a&amp;b.example/hours.atom""#),
        "{xml}"
    );
    assert!(xml.contains("<id>tag:a&amp;b.example,"));
    assert_eq!(entries(&xml).len(), 0, "nothing sealed yet");
}
