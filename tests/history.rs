//! `Client::history` and `bloomcast history` against the real server on a real socket,
//! with a clock moved by hand: every hour is answered, and complete hours are fetched
//! once across processes through the cache directory.

mod common;

use bloomcast::client::Client;
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use std::path::Path;
use std::process::Command;

const TOKEN: &str = "history-test-token";

type Server = common::inproc::InProcess;

fn start_hour() -> Hour {
    hour_of(2008, 9, 3, 5).unwrap()
}

async fn serve() -> Server {
    common::inproc::serve("127.0.0.1:0".parse().unwrap(), TOKEN, start_hour(), |_| {}).await
}

/// `a` changes in hours 0 and 2, `b` in hour 1; hour 2 is left open.
async fn three_hours(server: &Server) {
    let publisher = Client::builder(&server.base).token(TOKEN).build().unwrap();
    for batch in [&["a", "b0"][..], &["b", "b1"], &["a", "b2"]] {
        publisher.ingest(batch).await.unwrap();
        if batch[1] != "b2" {
            server.clock.advance(Duration::hours(1));
        }
    }
}

fn reader(server: &Server, cache: &Path) -> Client {
    Client::builder(&server.base)
        .cache_dir(cache)
        .build()
        .unwrap()
}

#[tokio::test]
async fn history_names_every_hour_and_a_new_client_fetches_only_hours_not_complete_on_disk() {
    let server = serve().await;
    three_hours(&server).await;
    let cache = tempfile::tempdir().unwrap();
    let (h0, h1, h2) = (
        start_hour(),
        start_hour().next(),
        start_hour().next().next(),
    );

    let first = reader(&server, cache.path());
    let history = first.history(&["a", "b"], h0).await.unwrap();
    assert_eq!(history[0].id, "a");
    assert_eq!(history[0].hours, [h0, h2]);
    assert_eq!(history[1].hours, [h1]);
    // The index, then three hours.
    assert_eq!(first.stats().requests, 4);

    // Another process: the two complete hours come from disk, the open one is fetched.
    let second = reader(&server, cache.path());
    let again = second.history(&["a", "b"], h0).await.unwrap();
    assert_eq!(again, history);
    assert_eq!((second.stats().requests, second.stats().cache_hits), (2, 2));

    // An hour later, hour 2 is complete and hour 3 open: both fetched, nothing else.
    server.clock.advance(Duration::hours(1));
    let third = reader(&server, cache.path());
    let later = third.history(&["a", "b"], h0).await.unwrap();
    assert_eq!(later[0].hours, [h0, h2]);
    assert_eq!((third.stats().requests, third.stats().cache_hits), (3, 2));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_history_verb_prints_each_id_with_its_hours_and_reuses_its_cache() {
    let server = serve().await;
    three_hours(&server).await;
    let cache = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_bloomcast"))
            .arg("history")
            .args(["--server", &server.base])
            .args(["--cache-dir", cache.path().to_str().unwrap()])
            .args(args)
            .env_remove("BLOOMCAST_SERVER")
            .output()
            .unwrap()
    };
    let (h0, h1, h2) = (
        start_hour(),
        start_hour().next(),
        start_hour().next().next(),
    );
    let out = tokio::task::block_in_place(|| run(&["a", "b", "never"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!(
            "a\t{} {}\nb\t{}\nnever\t\n",
            h0.rfc3339(),
            h2.rfc3339(),
            h1.rfc3339()
        )
    );
    let out = tokio::task::block_in_place(|| run(&["--json", "--since", "2008-09-03T06", "b"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["ids"][0]["hours"], serde_json::json!([h1.rfc3339()]));
    // Hour 1 came from the first run's cache: only the index and the open hour went out.
    assert_eq!(
        (doc["requests"].as_u64(), doc["cache_hits"].as_u64()),
        (Some(2), Some(1))
    );
}
