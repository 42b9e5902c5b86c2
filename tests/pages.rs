//! An hour's paged form (`.pages`, PROTOCOL.md section 12, "Huge hours by the page")
//! against the real server on a real socket, with a clock the tests move by hand: its
//! `Range` answers, and the Rust SDK reading an hour by the page, verified.

mod common;

use bloomcast::bloom::pages::{signed_page, HEADER_LEN};
use bloomcast::bloom::{Key, Pages, PagesHeader};
use bloomcast::chain::BodyForm;
use bloomcast::client::{Client, ClientError, Strategy};
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use reqwest::header;

const TOKEN: &str = "pages-test-token";

fn start_hour() -> Hour {
    hour_of(2008, 9, 3, 5).unwrap()
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

fn reader(base: &str) -> bloomcast::client::ClientBuilder {
    Client::builder(base)
        .accept_stale(true)
        .freshness(std::time::Duration::from_secs(600_000_000))
}

/// A server whose first hour holds `n` IDs and is closed; the next one open.
async fn serve(n: usize) -> (common::inproc::InProcess, Vec<String>) {
    let server =
        common::inproc::serve("127.0.0.1:0".parse().unwrap(), TOKEN, start_hour(), |_| {}).await;
    let publisher = reader(&server.base).token(TOKEN).build().unwrap();
    let members = ids("member", n);
    for batch in members.chunks(5_000) {
        publisher.ingest(batch).await.unwrap();
    }
    server.clock.advance(Duration::hours(1));
    (server, members)
}

#[tokio::test]
async fn a_page_read_by_range_answers_as_the_whole_body_and_is_signed_alone() {
    let (server, members) = serve(20_000).await;
    let http = reqwest::Client::new();
    let url = format!("{}{}.pages", server.base, start_hour().path());
    let whole = http.get(&url).send().await.unwrap();
    assert_eq!(whole.status(), 200);
    let headers = whole.headers().clone();
    assert_eq!(headers[header::ACCEPT_RANGES], "bytes");
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/vnd.bloomcast.pages"
    );
    assert!(headers[header::CACHE_CONTROL]
        .to_str()
        .unwrap()
        .contains("immutable"));
    // Every range a cache cuts repeats these: nothing a page's reader does not need.
    assert!(headers.get(header::VARY).is_none());
    assert!(headers
        .keys()
        .all(|name| !name.as_str().starts_with("bloom-")));
    let body = whole.bytes().await.unwrap();
    let pages = Pages::from_bytes(&body).unwrap();
    assert_eq!(pages.header().n, 20_000);
    assert_eq!(pages.header().hour, start_hour().index());
    assert!(members.iter().all(|id| pages.contains(Key::of(id))));

    // The header, then one page, by Range: exactly those bytes.
    let head = http
        .get(&url)
        .header(header::RANGE, format!("bytes=0-{}", HEADER_LEN - 1))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 206);
    let range = format!("bytes 0-{}/{}", HEADER_LEN - 1, body.len());
    assert_eq!(head.headers()[header::CONTENT_RANGE], range.as_str());
    assert!(head.headers().get("repr-digest").is_none());
    let header = PagesHeader::parse(&head.bytes().await.unwrap()).unwrap();
    assert_eq!(&header, pages.header());
    let p = header.page_of(Key::of(&members[7]));
    let slot = header.slot_range(p);
    let got = http
        .get(&url)
        .header(
            header::RANGE,
            format!("bytes={}-{}", slot.start, slot.end - 1),
        )
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got, body[slot.start as usize..slot.end as usize]);

    // Each page verifies alone, under the key listed for the hour, and no other bytes do.
    let key = common::public_key(&server.base).await;
    assert!(header.signed());
    assert_eq!(header.key_id, key.id().0);
    let page = pages.page(p).unwrap();
    let bytes = header.to_bytes();
    let verify = |slot: &[u8]| {
        key.verify_body(
            BodyForm::Page,
            "h",
            start_hour().index(),
            &header.chain_header,
            &signed_page(&bytes, p, slot),
            &page.signature,
        )
    };
    assert!(verify(&got).is_ok());
    let mut altered = got.to_vec();
    altered[70] ^= 1;
    assert!(verify(&altered).is_err(), "a page altered verifies");
    let next = header.slot_range(p + 1);
    assert!(
        verify(&body[next.start as usize..next.end as usize]).is_err(),
        "another page verifies in this one's place"
    );
}

#[tokio::test]
async fn ranges_past_the_end_several_ranges_and_other_targets_get_their_answers() {
    let (server, _) = serve(3_000).await;
    let http = reqwest::Client::new();
    let url = format!("{}{}.pages", server.base, start_hour().path());
    let len = http
        .get(&url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .len();

    let past = http
        .get(&url)
        .header(header::RANGE, format!("bytes={len}-"))
        .send()
        .await
        .unwrap();
    assert_eq!(past.status(), 416);
    let unsatisfied = format!("bytes */{len}");
    assert_eq!(past.headers()[header::CONTENT_RANGE], unsatisfied.as_str());

    let several = http
        .get(&url)
        .header(header::RANGE, "bytes=0-3, 8-15")
        .send()
        .await
        .unwrap();
    assert_eq!(several.status(), 206);
    let kind = several.headers()[header::CONTENT_TYPE].to_str().unwrap();
    assert!(
        kind.starts_with("multipart/byteranges; boundary="),
        "{kind}"
    );
    let text = several.bytes().await.unwrap();
    assert!(text.windows(4).any(|w| w == b"BCP1"));

    // Days, ranges and the open hour have no paged form.
    for (path, status) in [
        (format!("{}.pages", start_hour().day().path()), 404),
        (format!("/since{}.pages", start_hour().path()), 404),
        (format!("{}.pages", start_hour().next().path()), 406),
    ] {
        let response = http
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{path}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(
            body["error"].is_string() && body["message"].is_string(),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_verifying_client_reads_a_large_hour_by_the_page_and_finds_every_id() {
    let (server, members) = serve(100_000).await;
    let key = common::public_key(&server.base).await;
    let client = reader(&server.base).pubkey(key).build().unwrap();
    let mut followed: Vec<String> = members.iter().step_by(33_334).cloned().collect();
    followed.extend(ids("absent", 3));

    let changes = client
        .changed_since_with(&followed, start_hour(), Strategy::Auto)
        .await
        .unwrap();

    let found: Vec<&String> = changes
        .iter()
        .filter(|c| c.from == start_hour())
        .flat_map(|c| &c.ids)
        .collect();
    assert!(members.iter().step_by(33_334).all(|id| found.contains(&id)));
    let stats = client.stats();
    // The pages its IDs fall in, not the hour: the choice made on its own.
    assert!(stats.pages > 0 && stats.pages <= 20, "{stats:?}");
    assert_eq!(stats.ribbons2, 0, "{stats:?}");
    let whole = Pages::predicted_bytes(100_000, bloomcast::bloom::Grade { k: 7, split: 0 });
    assert!(stats.body_bytes * 4 < whole, "{stats:?} against {whole}");

    // A key the server did not sign with: every page refused, the hour read whole.
    let other = bloomcast::chain::Signer::from_seed(&[9; 32]).public_key();
    let refusing = reader(&server.base).pubkey(other).build().unwrap();
    let refused = refusing
        .pages(start_hour(), None, &[Key::of(&members[0])])
        .await;
    assert!(
        matches!(refused, Err(ClientError::Unverified(_))),
        "{refused:?}"
    );
}
