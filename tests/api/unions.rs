//! Unions that end in the open hour are carried forward as the hour takes keys, not
//! rebuilt: after any sequence of ingests and hour closes they hold exactly the bits of a
//! fresh build of their keys at their size, and the exact distinct count.

use crate::helpers::TestApp;
use bloomcast::bloom::{Filter, Key};
use std::collections::BTreeSet;

/// Reads the union at `path` and checks it against the IDs it must hold. Returns its m.
async fn assert_union_holds(app: &TestApp, path: &str, ids: &BTreeSet<String>) -> u32 {
    let (meta, filter) = app.filter(path).await;
    assert_eq!(
        meta.count,
        ids.len() as u64,
        "{path}: the exact distinct count"
    );
    let keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
    assert_eq!(
        filter,
        Filter::from_keys(filter.params(), &keys),
        "{path}: bit for bit a fresh build at its size"
    );
    assert!(filter.fpp() <= 0.01, "{path}: fpp {}", filter.fpp());
    filter.m()
}

#[tokio::test]
async fn open_unions_carried_forward_equal_a_fresh_build_with_the_exact_count() {
    let app = TestApp::spawn().await;
    // A small deterministic generator, so a failure replays.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut fresh = 0;
    let mut since_start: BTreeSet<String> = BTreeSet::new();
    let mut kept_size_while_growing = 0;
    for hour in 0..4 {
        let mut this_hour: BTreeSet<String> = BTreeSet::new();
        let since_here = format!("/since/2008/09/03/{}", 13 + hour);
        let mut last: Option<(u32, usize)> = None;
        for _step in 0..12 {
            // New IDs, IDs of closed hours again, and IDs of this hour again.
            let mut batch: Vec<String> = Vec::new();
            for _ in 0..(1 + next(25)) {
                let id = match next(4) {
                    0 if !since_start.is_empty() => {
                        let i = next(since_start.len() as u64) as usize;
                        since_start.iter().nth(i).unwrap().clone()
                    }
                    1 if !this_hour.is_empty() => {
                        let i = next(this_hour.len() as u64) as usize;
                        this_hour.iter().nth(i).unwrap().clone()
                    }
                    _ => {
                        fresh += 1;
                        format!("id-{fresh}")
                    }
                };
                batch.push(id);
            }
            let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
            app.ingest(&refs).await;
            this_hour.extend(batch.iter().cloned());
            since_start.extend(batch);
            let m = assert_union_holds(&app, "/since/2008/09/03/13", &since_start).await;
            if last.is_some_and(|(m0, n0)| m0 == m && n0 < since_start.len()) {
                kept_size_while_growing += 1;
            }
            last = Some((m, since_start.len()));
            assert_union_holds(&app, &since_here, &this_hour).await;
            assert_union_holds(&app, "/2008/09/03", &since_start).await;
        }
        app.next_hour().await;
    }
    assert!(
        kept_size_while_growing >= 10,
        "the union took new keys at its size {kept_size_while_growing} times: carried forward, \
         not rebuilt at each ingest"
    );
}

/// Each version of an open union is rendered in the encoding asked for: a gzip poller's
/// versions never make (and hash) the identity body, and each encoding is right on its
/// own: its bytes, ETag, 304 and `Repr-Digest`.
#[tokio::test]
async fn an_open_union_is_rendered_in_the_encoding_asked_for_only() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    app.next_hour().await;
    app.ingest(&["c"]).await;
    let path = "/since/2008/09/03/13";
    let gzip = [("accept-encoding", "gzip")];
    let renders = |stats: serde_json::Value| stats["unions"]["renders"]["runs"].as_u64().unwrap();

    let gz = app.get_with(path, &gzip).await;
    assert_eq!(gz.status, 200);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    gz.assert_digest_of_body("gzip");
    let tag = gz.header("etag").unwrap().to_string();
    let again = app
        .get_with(
            path,
            &[("accept-encoding", "gzip"), ("if-none-match", &tag)],
        )
        .await;
    assert_eq!(again.status, 304);

    let plain = app.get(path).await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(crate::helpers::gunzip(&gz.body), plain.body, "one document");
    plain.assert_digest_of_body("identity");
    assert_ne!(plain.header("etag"), Some(tag.as_str()));
    let built = renders(app.get("/stats").await.json());

    // A new version: a gzip poller renders its gzip body, once, however often it asks.
    app.ingest(&["d"]).await;
    for _ in 0..3 {
        let next = app.get_with(path, &gzip).await;
        assert_eq!(next.status, 200);
        assert_ne!(next.header("etag"), Some(tag.as_str()));
        let doc: serde_json::Value =
            serde_json::from_slice(&crate::helpers::gunzip(&next.body)).unwrap();
        assert_eq!(doc["count"], 4);
    }
    assert_eq!(renders(app.get("/stats").await.json()), built + 1);
    // The identity body of that version is made when first asked for.
    let plain = app.get(path).await;
    assert_eq!(plain.json()["count"], 4);
    assert_eq!(renders(app.get("/stats").await.json()), built + 2);
}

#[tokio::test]
async fn each_gzip_version_of_a_large_open_union_holds_every_id_it_was_coded_from_the_one_before() {
    let app = TestApp::spawn().await;
    // Enough IDs that the union's hex is coded in many chunks, and few enough per
    // version that most chunks are unchanged from one version to the next.
    let mut ids: BTreeSet<String> = (0..30_000).map(|i| format!("closed-{i}")).collect();
    let all: Vec<&str> = ids.iter().map(String::as_str).collect();
    for batch in all.chunks(5_000) {
        app.ingest(batch).await;
    }
    app.next_hour().await;
    let path = "/since/2008/09/03/13";
    let gzip = [("accept-encoding", "gzip")];
    let mut tags = BTreeSet::new();
    for step in 0..6 {
        let batch: Vec<String> = (0..3).map(|i| format!("open-{step}-{i}")).collect();
        app.ingest(&batch.iter().map(String::as_str).collect::<Vec<_>>())
            .await;
        ids.extend(batch);

        let reply = app.get_with(path, &gzip).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-encoding"), Some("gzip"));
        reply.assert_digest_of_body(&format!("step {step}"));
        assert!(tags.insert(reply.header("etag").unwrap().to_string()));
        let text = crate::helpers::gunzip(&reply.body);
        // Parsing checks the filter against the document's digest.
        let (meta, filter) = bloomcast::wire::Document::parse(&text).unwrap();
        assert_eq!(meta.count, ids.len() as u64, "step {step}: the exact count");
        let keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
        assert_eq!(
            filter,
            Filter::from_keys(filter.params(), &keys),
            "step {step}: bit for bit a fresh build: no ID missing"
        );
        // The same document a client without gzip gets.
        assert_eq!(app.get(path).await.body, text, "step {step}");
    }
}
