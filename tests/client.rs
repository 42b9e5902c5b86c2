//! The Rust SDK against the real server on a real socket (port 0), with a clock the
//! tests move by hand so that hours close without waiting.

mod common;

use bloomcast::client::{Client, ClientError, PublishOptions, Strategy};
use bloomcast::config::Settings;
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

const TOKEN: &str = "client-test-token";

type Server = common::inproc::InProcess;

fn start_hour() -> Hour {
    hour_of(2008, 9, 3, 5).unwrap()
}

async fn serve_on(listen: SocketAddr, tweak: impl FnOnce(&mut Settings)) -> Server {
    common::inproc::serve(listen, TOKEN, start_hour(), tweak).await
}

async fn serve() -> Server {
    serve_on("127.0.0.1:0".parse().unwrap(), |_| {}).await
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

/// A client for the test servers, whose hours are of 2008: far behind this machine's
/// clock (stale) and their open hour's versions made then, on purpose.
fn reader(base: &str) -> bloomcast::client::ClientBuilder {
    Client::builder(base)
        .accept_stale(true)
        .freshness(std::time::Duration::from_secs(600_000_000))
}

fn publisher(server: &Server) -> Client {
    reader(&server.base).token(TOKEN).build().unwrap()
}

/// Three hours of updates: 100 IDs in each, and the current hour open.
async fn three_hours(server: &Server) -> Vec<Vec<String>> {
    let client = publisher(server);
    let mut hours = Vec::new();
    for h in 0..3 {
        let batch = ids(&format!("h{h}"), 100);
        let receipt = client.ingest(&batch).await.unwrap();
        assert_eq!(receipt.accepted, 100);
        hours.push(batch);
        if h < 2 {
            server.clock.advance(Duration::hours(1));
        }
    }
    hours
}

#[tokio::test]
async fn changed_since_finds_every_updated_id_in_its_hour() {
    let server = serve().await;
    let updated = three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();
    let mut followed: Vec<String> = updated.concat();
    followed.extend(ids("quiet", 1000));

    let changes = client
        .changed_since_with(&followed, start_hour(), Strategy::Hourly)
        .await
        .unwrap();

    for (h, batch) in updated.iter().enumerate() {
        let hour = Hour::from_index(start_hour().index() + h as i64);
        let found = changes
            .iter()
            .find(|c| c.from == hour && c.to == hour)
            .unwrap_or_else(|| panic!("no result for {hour}"));
        let found: HashSet<&String> = found.ids.iter().collect();
        assert!(
            batch.iter().all(|id| found.contains(id)),
            "{hour} missed IDs"
        );
    }
    let flagged_quiet = changes
        .iter()
        .flat_map(|c| &c.ids)
        .filter(|id| id.starts_with("quiet"))
        .count();
    // 3 hours x 1000 quiet IDs at fpp <= 0.01: well under 100 expected.
    assert!(flagged_quiet < 100, "{flagged_quiet} false positives");
}

#[tokio::test]
async fn the_union_strategy_answers_in_one_request_for_the_whole_range() {
    let server = serve().await;
    let updated = three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();
    let followed = updated.concat();

    let changes = client
        .changed_since_with(&followed, start_hour(), Strategy::Union)
        .await
        .unwrap();

    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].from, start_hour());
    assert_eq!(changes[0].to, Hour::from_index(start_hour().index() + 2));
    assert_eq!(changes[0].ids, followed);
    // The index, then one union.
    assert_eq!(client.stats().requests, 2);
}

#[tokio::test]
async fn the_compact_strategy_reads_the_closed_hours_as_one_version_2_union_and_the_open_hour() {
    let server = serve().await;
    let updated = three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();
    let mut followed = updated.concat();
    followed.extend(ids("quiet", 1000));

    let changes = client
        .changed_since_with(&followed, start_hour(), Strategy::Compact)
        .await
        .unwrap();

    let last_closed = Hour::from_index(start_hour().index() + 1);
    let open = last_closed.next();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(
        (changes[0].from, changes[0].to),
        (start_hour(), last_closed)
    );
    assert_eq!((changes[1].from, changes[1].to), (open, open));
    let closed: HashSet<&String> = changes[0].ids.iter().collect();
    assert!(updated[0]
        .iter()
        .chain(&updated[1])
        .all(|id| closed.contains(id)));
    let in_open: HashSet<&String> = changes[1].ids.iter().collect();
    assert!(updated[2].iter().all(|id| in_open.contains(id)));
    // The index, the version 2 union, the open hour.
    assert_eq!(client.stats().requests, 3);
}

#[tokio::test]
async fn a_client_back_after_many_hours_takes_the_version_2_union_on_its_own() {
    // 30 missed hours of 2,000 IDs, 20 IDs followed: one v1 union costs its 2.9 MB at
    // 1%, hour by hour 30 requests; the closed hours in version 2 at the precision that
    // suits 20 IDs, and the open hour, cost least.
    let server = serve_on("127.0.0.1:0".parse().unwrap(), |s| s.capacity = 2_000).await;
    let client = publisher(&server);
    let mut followed = Vec::new();
    for h in 0..30 {
        let batch = ids(&format!("m{h}"), 2_000);
        client.ingest(&batch).await.unwrap();
        followed.push(batch[7].clone());
        server.clock.advance(Duration::hours(1));
    }
    let reader = reader(&server.base).build().unwrap();

    let changes = reader.changed_since(&followed, start_hour()).await.unwrap();

    assert_eq!(
        reader.stats().requests,
        3,
        "the index, the union, the open hour"
    );
    let found: HashSet<&String> = changes.iter().flat_map(|c| &c.ids).collect();
    assert!(followed.iter().all(|id| found.contains(id)));
    assert_eq!(changes[0].to, Hour::from_index(start_hour().index() + 29));
}

#[tokio::test]
async fn complete_hours_come_from_the_cache_and_open_ones_revalidate() {
    let server = serve().await;
    three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();
    let closed = start_hour();
    let open = Hour::from_index(start_hour().index() + 2);

    let first = client.hour(closed).await.unwrap();
    let again = client.hour(closed).await.unwrap();
    client.hour(open).await.unwrap();
    let open_again = client.hour(open).await.unwrap();

    assert!(first.meta.complete && Arc::ptr_eq(&first, &again));
    assert!(!open_again.meta.complete);
    let stats = client.stats();
    assert_eq!(stats.requests, 3, "{stats:?}");
    assert_eq!(stats.cache_hits, 1, "{stats:?}");
    assert_eq!(stats.not_modified, 1, "{stats:?}");
}

#[tokio::test]
async fn an_open_hour_that_grew_is_fetched_again() {
    let server = serve().await;
    let client = publisher(&server);
    client.ingest(&["a"]).await.unwrap();
    let before = client.hour(start_hour()).await.unwrap();

    client.ingest(&["b"]).await.unwrap();
    let after = client.hour(start_hour()).await.unwrap();

    assert_eq!((before.meta.count, after.meta.count), (1, 2));
    assert!(after.filter.contains("b"));
    assert_eq!(client.stats().not_modified, 0);
}

#[tokio::test]
async fn day_and_since_unions_hold_every_hour() {
    let server = serve().await;
    let updated = three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();

    let day = client.day(start_hour().day()).await.unwrap();
    let since = client.since(start_hour().next()).await.unwrap();

    assert!(updated.concat().iter().all(|id| day.filter.contains(id)));
    assert!(updated[1..]
        .concat()
        .iter()
        .all(|id| since.filter.contains(id)));
    assert_eq!(day.meta.count, 300);
    assert_eq!(since.range().unwrap().0, start_hour().next());
}

#[tokio::test]
async fn http_errors_arrive_typed() {
    let server = serve().await;
    let client = reader(&server.base).build().unwrap();

    let future = client.hour(start_hour().next()).await.unwrap_err();
    let before = client.hour(start_hour().prev()).await.unwrap_err();
    let unauthorized = client.ingest(&["x"]).await.unwrap_err();
    let bad_id = publisher(&server).ingest(&[""]).await.unwrap_err();
    let since_future = client
        .changed_since(&["x"], start_hour().next())
        .await
        .unwrap_err();

    for (err, status, code) in [
        (&future, 404, "not_found"),
        (&before, 404, "not_found"),
        (&unauthorized, 401, "unauthorized"),
        (&bad_id, 400, "bad_request"),
    ] {
        match err {
            ClientError::Status {
                status: s, code: c, ..
            } => assert_eq!((*s, c.as_str()), (status, code), "{err}"),
            other => panic!("expected a status error, got {other}"),
        }
        assert!(!err.is_transient());
    }
    assert!(matches!(since_future, ClientError::Argument(_)));
}

#[tokio::test]
async fn an_unreachable_server_is_a_transient_transport_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Client::new(&format!("http://127.0.0.1:{port}")).unwrap();

    let err = client.index().await.unwrap_err();

    assert!(matches!(err, ClientError::Transport(_)), "{err}");
    assert!(err.is_transient() && err.is_refused());
}

#[tokio::test]
async fn bad_base_urls_are_refused() {
    for base in ["", "ftp://x", "http://", "no such host:80"] {
        assert!(
            matches!(Client::new(base), Err(ClientError::Url(_))),
            "{base:?}"
        );
    }
}

#[tokio::test]
async fn a_base_without_a_scheme_is_plain_http() {
    let server = serve_on("127.0.0.1:0".parse().unwrap(), |_| {}).await;
    let host_port = server.base.trim_start_matches("http://");

    let index = Client::new(host_port).unwrap().index().await;

    assert!(index.is_ok(), "{index:?}");
}

#[tokio::test]
async fn publish_splits_a_batch_the_server_finds_too_large() {
    let server = serve_on("127.0.0.1:0".parse().unwrap(), |s| s.body_limit = 4096).await;
    let client = publisher(&server);
    let batch = ids("big", 2000);

    let summary = client
        .publish(&batch, &PublishOptions::default())
        .await
        .unwrap();

    assert_eq!(summary.ids, 2000);
    assert!(summary.requests > 1, "{summary:?}");
    let hour = client.hour(start_hour()).await.unwrap();
    assert_eq!(hour.meta.count, 2000);
    assert!(batch.iter().all(|id| hour.filter.contains(id)));
}

#[tokio::test]
async fn publish_retries_until_the_server_comes_up() {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let client = Client::builder(&format!("http://{addr}"))
        .token(TOKEN)
        .build()
        .unwrap();
    let batch = ids("late", 10);
    let options = PublishOptions {
        attempts: 20,
        first_backoff: std::time::Duration::from_millis(50),
        max_backoff: std::time::Duration::from_millis(200),
        retry_refused: true,
    };

    let publishing = tokio::spawn(async move { client.publish(&batch, &options).await });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let server = serve_on(addr, |_| {}).await;
    let summary = publishing.await.unwrap().unwrap();

    assert_eq!(summary.ids, 10);
    assert!(summary.retries >= 1, "{summary:?}");
    let hour = Client::new(&server.base)
        .unwrap()
        .hour(start_hour())
        .await
        .unwrap();
    assert_eq!(hour.meta.count, 10);
}

#[tokio::test]
async fn a_closed_hour_decodes_as_a_ribbon_at_the_precision_asked() {
    let server = serve().await;
    let updated = three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();

    let target = client.ribbon(start_hour(), None).await.unwrap();
    let precise = client.ribbon(start_hour(), Some(0.001)).await.unwrap();
    let open = client.ribbon(start_hour().next().next(), None).await;

    assert_eq!(target.r(), 7);
    assert_eq!(precise.r(), 10);
    for f in [&target, &precise] {
        assert!(updated[0].iter().all(|id| f.contains_id(id)));
    }
    match open.unwrap_err() {
        ClientError::Status { status, code, .. } => {
            assert_eq!((status, code.as_str()), (406, "not_acceptable"))
        }
        other => panic!("expected 406, got {other}"),
    }
}

#[tokio::test]
async fn a_closed_hour_decodes_as_version_2_at_the_grade_of_any_precision_asked() {
    let server = serve().await;
    let updated = three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();

    let target = client.ribbon2(start_hour(), None).await.unwrap();
    let precise = client.ribbon2(start_hour(), Some(0.003)).await.unwrap();
    let held = client.ribbon2(start_hour(), Some(0.004)).await.unwrap();

    assert!(target.fpp() <= 0.01 && target.fpp() > 0.009);
    // The next stricter grade of the server's published set: 2^-9.
    assert_eq!(precise.fpp(), 2f64.powi(-9));
    assert!(Arc::ptr_eq(&held, &precise), "the held 0.003 answers 0.004");
    for f in [&target, &precise] {
        assert!(updated[0].iter().all(|id| f.contains_id(id)));
    }
    assert_eq!(client.stats().ribbons2, 2);
}

#[tokio::test]
async fn changed_since_reads_closed_hours_as_version_2_where_the_server_serves_it() {
    let server = serve().await;
    let updated = three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();
    let mut followed: Vec<String> = updated.concat();
    followed.extend(ids("quiet", 5_000));

    let changes = client
        .changed_since_with(&followed, start_hour(), Strategy::Hourly)
        .await
        .unwrap();

    let stats = client.stats();
    assert_eq!((stats.ribbons, stats.ribbons2), (2, 2), "{stats:?}");
    for (h, batch) in updated.iter().enumerate() {
        let found = reported(&changes, hour_n(h as i64));
        assert!(batch.iter().all(|id| found.contains(id)), "hour {h}");
    }
}

// --- Exact hours (docs/PROTOCOL.md section 14) -----------------------------------------

use bloomcast::client::Forms;
use common::exact::Lie;

/// The IDs `changes` reports for `hour`.
fn reported(changes: &[bloomcast::client::Changed], hour: Hour) -> HashSet<String> {
    changes
        .iter()
        .filter(|c| c.from == hour && c.to == hour)
        .flat_map(|c| c.ids.iter().cloned())
        .collect()
}

fn hour_n(n: i64) -> Hour {
    Hour::from_index(start_hour().index() + n)
}

#[tokio::test]
async fn following_the_universe_reads_exact_hours_and_wastes_no_fetch() {
    // 2,000 universe IDs followed, 20 of them changed in each of two sealed hours.
    let (server, changed) = common::exact::serve(TOKEN, start_hour(), 2_000, 2, 20).await;
    let universe = common::exact::universe(2_000);
    let client = reader(&server.base).registered(true).build().unwrap();
    let index = client.index().await.unwrap();
    assert_eq!(index.exact_since.as_deref(), Some("2008-09-03T05:00:00Z"));

    // Hour by hour: two hours of 20 would cost less still as one version 2 union at
    // 2^-24, which `Strategy::Auto` takes (it names no hour, and is exact only nearly).
    let changes = client
        .changed_since_with(&universe, start_hour(), Strategy::Hourly)
        .await
        .unwrap();

    assert_eq!(client.stats().exacts, 2, "{:?}", client.stats());
    for (h, batch) in changed.iter().enumerate() {
        let want: HashSet<String> = batch.iter().cloned().collect();
        // Every changed ID, and not one of the 1,980 that did not change.
        assert_eq!(reported(&changes, hour_n(h as i64)), want, "hour {h}");
    }
    assert!(
        reported(&changes, hour_n(2)).is_empty(),
        "the open hour is empty"
    );
    // The v1 filter of the same hour sends a poller to unchanged universe IDs.
    let bloom = client.hour(start_hour()).await.unwrap();
    let wasted = universe
        .iter()
        .filter(|id| bloom.filter.contains(id) && !changed[0].contains(id))
        .count();
    assert!(wasted > 0, "the Bloom filter has false positives to save");
    // Held once fetched: asking again costs no request.
    let requests = client.stats().requests;
    let exact = client.exact(start_hour()).await.unwrap().unwrap();
    assert_eq!(client.stats().requests, requests);
    assert_eq!((exact.universe(), exact.changed_count()), (2_000, 20));
    // The index lists a built body's size, what the choice weighs.
    let index = client.index().await.unwrap();
    let listed = index
        .hours
        .iter()
        .find(|h| h.hour == start_hour().rfc3339());
    assert_eq!(
        listed.and_then(|h| h.exact_bytes),
        Some(exact.byte_len() as u64)
    );
}

#[tokio::test]
async fn a_registered_client_back_after_a_gap_reads_its_closed_hours_as_one_exact_body() {
    // 20 sealed hours in each of which 200 of a universe of 20,000 changed, the whole
    // universe followed: hour by hour 20 exact bodies of about 250 bytes each with their
    // responses' headers; version 2 of the 4,000 pays 10 KB for few false positives among
    // 20,000 IDs; one exact body of the range costs least and wastes nothing.
    let (server, changed) = common::exact::serve(TOKEN, start_hour(), 20_000, 20, 200).await;
    let universe = common::exact::universe(20_000);
    let proxy = common::exact::proxy(&server.base).await;
    let client = reader(&proxy.base).registered(true).build().unwrap();

    let changes = client.changed_since(&universe, start_hour()).await.unwrap();

    let stats = client.stats();
    assert_eq!(
        stats.requests, 3,
        "the index, the exact body, the open hour: {stats:?}"
    );
    assert_eq!(stats.exacts, 1, "{stats:?}");
    assert_eq!(changes.len(), 1, "the open hour is empty: {changes:?}");
    assert_eq!((changes[0].from, changes[0].to), (start_hour(), hour_n(19)));
    let want: HashSet<&String> = changed.iter().flatten().collect();
    let got: HashSet<&String> = changes[0].ids.iter().collect();
    assert_eq!(got, want, "every changed ID and no other of the universe");

    // From a server without exact ranges (404), hour by hour, each hour exact.
    proxy.set(common::exact::Lie::HideExactRanges);
    let fresh = reader(&proxy.base).registered(true).build().unwrap();
    let changes = fresh.changed_since(&universe, start_hour()).await.unwrap();
    assert_eq!(fresh.stats().exacts, 20, "{:?}", fresh.stats());
    for (h, batch) in changed.iter().enumerate() {
        let want: HashSet<String> = batch.iter().cloned().collect();
        assert_eq!(reported(&changes, hour_n(h as i64)), want, "hour {h}");
    }
}

/// The (ID, hour) pairs `changes` flags.
fn flags(changes: &[bloomcast::client::Changed]) -> usize {
    changes.iter().map(|c| c.ids.len()).sum()
}

#[tokio::test]
async fn ids_not_declared_registered_are_flagged_at_most_at_the_target_with_exact_hours() {
    // The README's quick start, sealed: most of each hour's universe changed in it.
    let (server, _) = common::exact::serve_quick_start(TOKEN, start_hour(), 2, 3_000).await;
    let outsiders = common::exact::outsiders(1_000);
    let bound = common::exact::at_most_at_rate(2_000, 0.01);

    for strategy in [Strategy::Auto, Strategy::Hourly] {
        let client = reader(&server.base).build().unwrap();
        let changes = client
            .changed_since_with(&outsiders, start_hour(), strategy)
            .await;

        let changes = changes.unwrap();
        assert_eq!(
            client.stats().exacts,
            2,
            "{strategy:?}: refined by the exact bodies"
        );
        assert!(
            flags(&changes) <= bound,
            "{strategy:?}: {} > {bound}",
            flags(&changes)
        );
    }
    // Declared registered (falsely), the bodies alone answer them at about a coin toss.
    let client = reader(&server.base).registered(true).build().unwrap();
    let changes = client
        .changed_since(&outsiders, start_hour())
        .await
        .unwrap();
    assert!(flags(&changes) > 10 * bound, "{}", flags(&changes));
}

#[tokio::test]
async fn exact_bodies_held_are_not_read_alone_for_ids_not_declared_registered() {
    let (server, _) = common::exact::serve_quick_start(TOKEN, start_hour(), 2, 3_000).await;
    let client = reader(&server.base).build().unwrap();
    for h in 0..2 {
        assert!(client.exact(hour_n(h)).await.unwrap().is_some());
    }
    let outsiders = common::exact::outsiders(1_000);

    let changes = client
        .changed_since_with(&outsiders, start_hour(), Strategy::Hourly)
        .await
        .unwrap();

    let bound = common::exact::at_most_at_rate(2_000, 0.01);
    assert!(flags(&changes) <= bound, "{} > {bound}", flags(&changes));
    assert_eq!(
        client.stats().exacts,
        2,
        "the bodies held, not fetched again"
    );
}

#[tokio::test]
async fn exact_hours_answer_none_without_a_universe_and_forcing_them_is_an_error() {
    let server = serve().await;
    three_hours(&server).await;
    let client = reader(&server.base).build().unwrap();

    assert!(client.exact(start_hour()).await.unwrap().is_none());
    let err = client
        .changed_since_in(&["h0:1"], start_hour(), Strategy::Auto, Forms::Exact)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Argument(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&server.base) && message.contains("POST /universe"),
        "{message}"
    );
    // Without forcing, nothing changes: v1 and ribbons as before.
    let changes = client
        .changed_since_with(&["h0:1"], start_hour(), Strategy::Hourly)
        .await
        .unwrap();
    assert!(reported(&changes, start_hour()).contains("h0:1"));
    assert_eq!(client.stats().exacts, 0);
}

#[tokio::test]
async fn forcing_exact_reads_sealed_hours_exactly_and_the_open_hour_as_v1() {
    let (server, changed) = common::exact::serve(TOKEN, start_hour(), 300, 2, 3).await;
    // Few IDs followed at no cost a wasted fetch: on its own the client would read
    // Bloom filters. Not declared registered, each exact body refines an approximate
    // filter: the universe's IDs are answered exactly all the same.
    let client = reader(&server.base).fetch_cost(0).build().unwrap();
    let followed = common::exact::universe(300);

    let changes = client
        .changed_since_in(&followed, start_hour(), Strategy::Union, Forms::Exact)
        .await
        .unwrap();

    assert_eq!(client.stats().exacts, 2);
    for (h, batch) in changed.iter().enumerate() {
        let want: HashSet<String> = batch.iter().cloned().collect();
        assert_eq!(reported(&changes, hour_n(h as i64)), want);
    }
    match client.exact(hour_n(2)).await.unwrap_err() {
        ClientError::Status { status, .. } => assert_eq!(status, 406),
        other => panic!("expected 406 for the open hour, got {other}"),
    }
}

#[tokio::test]
async fn an_exact_body_the_server_does_not_serve_falls_back_to_another_form() {
    let (server, changed) = common::exact::serve(TOKEN, start_hour(), 2_000, 1, 20).await;
    let proxy = common::exact::proxy(&server.base).await;
    proxy.set(Lie::HideExact);
    let client = reader(&proxy.base).build().unwrap();
    let universe = common::exact::universe(2_000);

    let changes = client
        .changed_since_with(&universe, start_hour(), Strategy::Hourly)
        .await
        .unwrap();

    let found = reported(&changes, start_hour());
    assert!(changed[0].iter().all(|id| found.contains(id)));
    let stats = client.stats();
    assert_eq!(stats.exacts, 0);
    assert_eq!(stats.ribbons, 1, "{stats:?}");
}

#[tokio::test]
async fn a_verifying_client_reads_signed_exact_hours_and_refuses_a_tampered_one() {
    let (server, changed) = common::exact::serve(TOKEN, start_hour(), 2_000, 2, 20).await;
    let proxy = common::exact::proxy(&server.base).await;
    let key = common::public_key(&server.base).await;
    let verifying = || reader(&proxy.base).pubkey(key).build().unwrap();
    let universe = common::exact::universe(2_000);

    // Honest: exact bodies (forced: the approximate forms they refine are signed and
    // verified too) verified under their chain entries' headers.
    let client = verifying();
    let changes = client
        .changed_since_in(&universe, start_hour(), Strategy::Auto, Forms::Exact)
        .await
        .unwrap();
    assert_eq!(client.stats().exacts, 2);
    for (h, batch) in changed.iter().enumerate() {
        let want: HashSet<String> = batch.iter().cloned().collect();
        assert_eq!(reported(&changes, hour_n(h as i64)), want);
    }
    // And under the header of the v1 hour verified before, without asking the chain.
    let client = verifying();
    client.hour(start_hour()).await.unwrap();
    let requests = client.stats().requests;
    assert!(client.exact(start_hour()).await.unwrap().is_some());
    assert_eq!(client.stats().requests, requests + 1);

    // One bit of each exact body flipped, its Repr-Digest fixed up: the signature tells.
    proxy.set(Lie::FlipExact);
    for result in [
        verifying().exact(start_hour()).await.map(|_| ()),
        verifying()
            .changed_since_in(&universe, start_hour(), Strategy::Auto, Forms::Exact)
            .await
            .map(|_| ()),
    ] {
        match result {
            Err(e @ ClientError::Unverified(_)) => {
                assert!(e.to_string().contains(&start_hour().rfc3339()), "{e}")
            }
            other => panic!("expected a refusal naming the hour, got {other:?}"),
        }
    }
    // A client that does not verify takes the body (it decodes, its digest matches).
    assert!(Client::new(&proxy.base)
        .unwrap()
        .exact(start_hour())
        .await
        .unwrap()
        .is_some());

    // Served without its signature: not used. Asked for, it is refused as unsigned;
    // where it is the cheapest form (IDs declared registered), the hour's v1 filter or
    // ribbon answers instead, every changed ID still found.
    proxy.set(Lie::None);
    let registered = || {
        reader(&proxy.base)
            .pubkey(key)
            .registered(true)
            .build()
            .unwrap()
    };
    let signed = registered();
    signed.changed_since(&universe, start_hour()).await.unwrap();
    assert_eq!(
        signed.stats().exacts,
        2,
        "signed, they are the cheapest form"
    );
    proxy.set(Lie::StripExact);
    let err = verifying().exact(start_hour()).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Unsigned { hour, .. } if hour == start_hour()),
        "{err}"
    );
    let client = reader(&proxy.base)
        .pubkey(key)
        .registered(true)
        .build()
        .unwrap();
    let changes = client.changed_since(&universe, start_hour()).await.unwrap();
    assert_eq!(client.stats().exacts, 0, "{:?}", client.stats());
    for (h, batch) in changed.iter().enumerate() {
        let found = reported(&changes, hour_n(h as i64));
        assert!(batch.iter().all(|id| found.contains(id)), "hour {h}");
    }
}

/// The server's hours 5, 6 (damaged: `500 corrupt`) and 7 (open).
fn damaged_hours() -> [Hour; 3] {
    [start_hour(), hour_n(1), hour_n(2)]
}

fn assert_corrupt(err: &ClientError, hours: &[Hour]) {
    match err {
        ClientError::Corrupt { hours: named } => assert_eq!(named, hours, "{err}"),
        other => panic!("expected Corrupt naming {hours:?}, got {other:?}"),
    }
    for hour in hours {
        assert!(err.to_string().contains(&hour.rfc3339()), "{err}");
    }
    assert!(err.is_transient(), "retried later, never skipped");
}

#[tokio::test]
async fn a_damaged_hour_is_read_as_unknown_never_as_no_change_and_the_rest_served() {
    let (server, ids) = common::damaged::serve(TOKEN, start_hour()).await;
    let [before, damaged, open] = damaged_hours();
    let client = reader(&server.base).build().unwrap();
    let followed = ids.concat();

    let index = client.index().await.unwrap();
    let line = index
        .hours
        .iter()
        .find(|h| h.hour == damaged.rfc3339())
        .unwrap();
    assert!(line.corrupt && line.count.is_none(), "{line:?}");
    assert_eq!(index.corrupt_hours(before, open).unwrap(), [damaged]);
    assert_eq!(index.window(3).unwrap().since, before);
    for strategy in [Strategy::Auto, Strategy::Hourly, Strategy::Union] {
        let err = client
            .changed_since_with(&followed, before, strategy)
            .await
            .unwrap_err();
        assert_corrupt(&err, &[damaged]);
    }
    assert_corrupt(
        &client.history(&followed, before).await.unwrap_err(),
        &[damaged],
    );
    // The hour itself answers 500 corrupt; read for the hour, the error names it.
    let direct = client.hour(damaged).await.unwrap_err();
    assert_eq!(direct.status(), Some(500));
    assert_corrupt(&direct.of_hour(damaged), &[damaged]);

    // A range without it is answered as ever.
    let after = reported(&client.changed_since(&followed, open).await.unwrap(), open);
    assert!(ids[2].iter().all(|id| after.contains(id)));
    let sealed = client.hour(before).await.unwrap();
    assert!(sealed.meta.complete && ids[0].iter().all(|id| sealed.filter.contains(id)));
}

#[tokio::test]
async fn a_client_holding_a_damaged_hours_complete_filter_answers_from_it() {
    let server = serve().await;
    let updated = three_hours(&server).await;
    let followed = updated.concat();
    let holder = reader(&server.base).build().unwrap();
    let before = holder
        .changed_since_with(&followed, start_hour(), Strategy::Hourly)
        .await
        .unwrap();
    // Hour 5's sealed row no longer matches its checksum: the server cannot vouch for it.
    server.tamper(&format!(
        "UPDATE hours SET count = count + 1 WHERE hour = {}",
        start_hour().index()
    ));
    let index = holder.index().await.unwrap();
    assert_eq!(
        index.corrupt_hours(start_hour(), hour_n(2)).unwrap(),
        [start_hour()]
    );

    for strategy in [Strategy::Auto, Strategy::Hourly] {
        let again = holder
            .changed_since_with(&followed, start_hour(), strategy)
            .await
            .unwrap();
        assert_eq!(
            reported(&again, start_hour()),
            reported(&before, start_hour())
        );
    }
    let fresh = reader(&server.base).build().unwrap();
    assert_corrupt(
        &fresh
            .changed_since(&followed, start_hour())
            .await
            .unwrap_err(),
        &[start_hour()],
    );
}

/// A stub in front of the index: `busy` answers of 503 `busy` with `Retry-After:
/// retry_after` (POST /updates always), then the real server's index; counts what it was
/// asked.
async fn busy_stub(
    index: serde_json::Value,
    busy: usize,
    retry_after: &'static str,
) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = Arc::new(AtomicUsize::new(0));
    let refusal = move || {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, retry_after)],
            axum::Json(serde_json::json!({"error": "busy", "message": "builds are busy"})),
        )
            .into_response()
    };
    let seen = hits.clone();
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(move || {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                let index = index.clone();
                async move {
                    if n < busy {
                        refusal()
                    } else {
                        axum::Json(index).into_response()
                    }
                }
            }),
        )
        .route(
            "/updates",
            axum::routing::post({
                let seen = hits.clone();
                move || {
                    seen.fetch_add(1, Ordering::SeqCst);
                    async move { refusal() }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, hits)
}

#[tokio::test]
async fn a_read_answered_busy_is_tried_again_after_its_retry_after() {
    use std::sync::atomic::Ordering;
    let server = serve().await;
    let index: serde_json::Value = reqwest::get(&server.base)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();

    // Busy twice, then served: the third try answers (Retry-After 0: no wall-clock wait).
    let (base, hits) = busy_stub(index.clone(), 2, "0").await;
    let client = reader(&base).build().unwrap();
    let got = client.index().await.unwrap();
    assert_eq!(got.current_hour().unwrap(), start_hour());
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    assert_eq!(client.stats().requests, 3);

    // Busy three times: the third refusal is the answer.
    let (base, hits) = busy_stub(index.clone(), 3, "0").await;
    let err = reader(&base).build().unwrap().index().await.unwrap_err();
    assert_eq!(err.status(), Some(503), "{err}");
    assert_eq!(hits.load(Ordering::SeqCst), 3);

    // One try asked for: the first refusal is the answer.
    let (base, hits) = busy_stub(index.clone(), 1, "1").await;
    let err = reader(&base).read_tries(1).build().unwrap().index().await;
    assert_eq!(err.unwrap_err().status(), Some(503));
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // A longer wait than a poller should sit through, or a write: answered at once.
    let (base, hits) = busy_stub(index, 1, "60").await;
    let client = reader(&base).token(TOKEN).build().unwrap();
    let err = client.index().await.unwrap_err();
    assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(60)));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let err = client.ingest(&["x"]).await.unwrap_err();
    assert_eq!(err.status(), Some(503), "{err}");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}
