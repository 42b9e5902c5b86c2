//! Process-level tests: the real binary, killed with SIGKILL or stopped with SIGTERM.

#![cfg(unix)]

mod common;

use common::{fetch, kill9, path_of, post_ids, start};
use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_id_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), &[]);
    let http = reqwest::Client::new();
    // hour -> acknowledged IDs
    let acked: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let deadline = Instant::now() + Duration::from_millis(1500);
    let mut writers = Vec::new();
    for w in 0..4 {
        let (http, base, acked) = (http.clone(), server.base.clone(), acked.clone());
        writers.push(tokio::spawn(async move {
            for batch in 0.. {
                let ids: Vec<String> = (0..100).map(|i| format!("w{w}-b{batch}-{i}")).collect();
                let Ok(hour) = post_ids(&http, &base, &ids).await else {
                    return;
                };
                acked.lock().unwrap().entry(hour).or_default().extend(ids);
            }
        }));
    }
    // Kill while the writers are mid-flight.
    tokio::time::sleep_until(deadline.into()).await;
    kill9(&mut server);
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let total: usize = acked.values().map(Vec::len).sum();
    assert!(
        total >= 1000,
        "the test should acknowledge plenty before the kill: {total}"
    );

    let server = start(dir.path(), &[]);
    for (hour, ids) in &acked {
        let (_, filter) = fetch(&http, &server.base, &path_of(hour)).await;
        let lost = ids.iter().filter(|id| !filter.contains(id)).count();
        assert_eq!(
            lost,
            0,
            "{lost} of {} acknowledged IDs lost in {hour}",
            ids.len()
        );
    }
}

#[tokio::test]
async fn sigterm_shuts_down_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), &[]);
    let health = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let started = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "did not stop after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server turns transparent huge pages off for itself (src/memory.rs): memory it
/// hands back inside a huge page's range would otherwise be refilled by khugepaged.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_server_runs_without_transparent_huge_pages() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    let health = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let thp = status
        .lines()
        .find_map(|line| line.strip_prefix("THP_enabled:"))
        .expect("/proc/PID/status has THP_enabled (Linux 5.0 and later)");
    assert_eq!(
        thp.trim(),
        "0",
        "transparent huge pages are off for the server"
    );
}

#[tokio::test]
async fn without_configured_tokens_a_private_token_is_generated() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .arg("serve")
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("BLOOMCAST_DATA_DIR", dir.path())
        .env_remove("BLOOMCAST_INGEST_TOKENS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let path = dir.path().join("ingest-token");
    let started = Instant::now();
    while !path.exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "no token file");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    let token = std::fs::read_to_string(&path).unwrap();
    assert!(token.trim().len() >= 32);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[tokio::test]
async fn clock_offset_shifts_the_servers_current_hour() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[("BLOOMCAST_CLOCK_OFFSET_SECONDS", "-86400")]);
    let index: serde_json::Value = reqwest::get(format!("{}/", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let current = index["current"]["hour"].as_str().unwrap();
    // A day behind the wall clock (either side of an hour boundary crossed meanwhile).
    let expected: Vec<String> = [-5, 0, 5]
        .iter()
        .map(|s| {
            let t = chrono::Utc::now() - chrono::Duration::days(1) + chrono::Duration::seconds(*s);
            bloomcast::hour::Hour::containing(t).rfc3339()
        })
        .collect();
    assert!(
        expected.iter().any(|h| h == current),
        "{current} not in {expected:?}"
    );
}

/// Starts a server `offset` seconds off the wall clock over `dir`, ingests a batch,
/// records it under its receipt's hour and kills the server with SIGKILL.
async fn ingest_at_offset(
    dir: &std::path::Path,
    offset: i64,
    tag: &str,
    acked: &mut HashMap<String, Vec<String>>,
) -> String {
    let http = reqwest::Client::new();
    let mut server = start(
        dir,
        &[("BLOOMCAST_CLOCK_OFFSET_SECONDS", &offset.to_string())],
    );
    let ids: Vec<String> = (0..200).map(|i| format!("{tag}-{i}")).collect();
    let hour = post_ids(&http, &server.base, &ids).await.unwrap();
    acked.entry(hour.clone()).or_default().extend(ids);
    kill9(&mut server);
    hour
}

/// Every receipt's hour is served by a server at `offset` and holds its IDs.
async fn assert_all_served(
    dir: &std::path::Path,
    offset: i64,
    acked: &HashMap<String, Vec<String>>,
) {
    let http = reqwest::Client::new();
    let server = start(
        dir,
        &[("BLOOMCAST_CLOCK_OFFSET_SECONDS", &offset.to_string())],
    );
    for (hour, ids) in acked {
        let (_, filter) = fetch(&http, &server.base, &path_of(hour)).await;
        let lost = ids.iter().filter(|id| !filter.contains(id)).count();
        assert_eq!(lost, 0, "{lost} of {} lost in {hour}", ids.len());
    }
}

#[tokio::test]
async fn restarts_with_the_clock_stepped_back_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut acked = HashMap::new();
    let first = ingest_at_offset(dir.path(), 0, "now", &mut acked).await;

    let behind = ingest_at_offset(dir.path(), -7200, "behind", &mut acked).await;

    assert_eq!(
        behind, first,
        "a clock 2 h behind keeps ingest in the newest hour"
    );
    assert_all_served(dir.path(), -7200, &acked).await;
    assert_all_served(dir.path(), 0, &acked).await;
}

/// The hours a server on the right clock may call current now (either side of a
/// boundary crossed meanwhile).
fn real_hours() -> Vec<String> {
    [-5, 0, 5]
        .iter()
        .map(|s| {
            let t = chrono::Utc::now() + chrono::Duration::seconds(*s);
            bloomcast::hour::Hour::containing(t).rfc3339()
        })
        .collect()
}

#[tokio::test]
async fn restarts_with_the_clock_forward_then_back_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut acked = HashMap::new();
    ingest_at_offset(dir.path(), 0, "now", &mut acked).await;
    let ahead = ingest_at_offset(dir.path(), 7200, "ahead", &mut acked).await;

    let back = ingest_at_offset(dir.path(), 0, "back", &mut acked).await;

    // A start 2 h past the last heartbeat is a jump from the start: held, so ingest
    // stays in the real hour rather than opening one 2 h ahead.
    assert!(real_hours().contains(&ahead), "{ahead} not held");
    assert!(real_hours().contains(&back), "{back}");
    assert_all_served(dir.path(), 0, &acked).await;
}

/// Issue 51, item 1: 1,000 IDs acknowledged, a restart a year ahead, then a restart on
/// the right clock: before, every one answered 410 (pruned past retention) and the
/// server stayed a year ahead.
#[tokio::test]
async fn a_restart_a_year_ahead_then_on_the_right_clock_serves_all_1000_ids() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let mut acked: HashMap<String, Vec<String>> = HashMap::new();
    let mut server = start(dir.path(), &[]);
    for batch in 0..5 {
        let ids: Vec<String> = (0..200).map(|i| format!("b{batch}-{i}")).collect();
        let hour = post_ids(&http, &server.base, &ids).await.unwrap();
        acked.entry(hour).or_default().extend(ids);
    }
    kill9(&mut server);

    let year = (365 * 86_400).to_string();
    let mut ahead = start(dir.path(), &[("BLOOMCAST_CLOCK_OFFSET_SECONDS", &year)]);
    let health: serde_json::Value = http
        .get(format!("{}/healthz", ahead.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "degraded", "{health}");
    let figure = health["clock_ahead_seconds"].as_i64().unwrap();
    assert!((figure - 365 * 86_400).abs() < 120, "{health}");
    let ids: Vec<String> = (0..200).map(|i| format!("held-{i}")).collect();
    let hour = post_ids(&http, &ahead.base, &ids).await.unwrap();
    assert!(real_hours().contains(&hour), "{hour}: not a year ahead");
    acked.entry(hour).or_default().extend(ids);
    let log = ahead.log.lock().unwrap().join("\n");
    assert!(!log.contains("pruned hours past retention"), "{log}");
    kill9(&mut ahead);

    let server = start(dir.path(), &[]);
    let health: serde_json::Value = http
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "ok", "{health}");
    assert!(real_hours().contains(&health["current_hour"].as_str().unwrap().to_owned()));
    let total: usize = acked.values().map(Vec::len).sum();
    assert_eq!(total, 1200);
    for (hour, ids) in &acked {
        let (_, filter) = fetch(&http, &server.base, &path_of(hour)).await;
        let lost = ids.iter().filter(|id| !filter.contains(id)).count();
        assert_eq!(lost, 0, "{lost} of {} lost in {hour}", ids.len());
    }
}

#[tokio::test]
async fn a_fresh_store_restarted_behind_its_first_hour_acknowledges_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut acked = HashMap::new();
    let genesis = ingest_at_offset(dir.path(), 3 * 3600, "first", &mut acked).await;

    let behind = ingest_at_offset(dir.path(), 0, "behind", &mut acked).await;

    assert_eq!(behind, genesis);
    assert_all_served(dir.path(), 0, &acked).await;
}

#[tokio::test]
async fn the_current_hour_gauge_is_right_from_the_first_scrape_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let ids: Vec<String> = (0..50).map(|i| format!("gauge-{i}")).collect();
    let mut server = start(dir.path(), &[]);
    let hour = post_ids(&http, &server.base, &ids).await.unwrap();
    kill9(&mut server);

    let server = start(dir.path(), &[]);
    let metrics = common::metrics_text(&http, &server.base).await;

    // Unless the hour turned meanwhile, when the new hour is rightly empty.
    let now = bloomcast::hour::Hour::containing(chrono::Utc::now()).rfc3339();
    let expected = if now == hour { 50 } else { 0 };
    assert!(
        metrics.contains(&format!("bloomcast_current_hour_ids {expected}\n")),
        "{metrics}"
    );
}

#[tokio::test]
async fn the_access_log_writes_one_line_per_request_when_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let quiet = start(dir.path().join("a").as_path(), &[]);
    let logged = start(
        dir.path().join("b").as_path(),
        &[("BLOOMCAST_ACCESS_LOG", "true")],
    );

    for server in [&quiet, &logged] {
        let reply = reqwest::get(format!("{}/stats?hours=1", server.base))
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let access = |server: &common::Server| -> Vec<String> {
        let log = server.log.lock().unwrap();
        log.iter()
            // Only this request (not start()'s own readiness probe of /healthz).
            .filter(|l| l.contains("bloomcast::access") && l.contains("hours=1"))
            .cloned()
            .collect()
    };
    assert!(access(&quiet).is_empty(), "{:?}", access(&quiet));
    let lines = access(&logged);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("INFO")
            && lines[0].contains("127.0.0.1:")
            && lines[0].contains("GET /stats?hours=1 HTTP/1.1")
            && lines[0].contains(" 200 "),
        "{}",
        lines[0]
    );
}

#[tokio::test]
async fn with_the_access_log_on_every_poll_is_logged_even_of_a_ready_hour() {
    let dir = tempfile::tempdir().unwrap();
    let logged = start(dir.path(), &[("BLOOMCAST_ACCESS_LOG", "true")]);
    let hour = poll_current_hour(&logged, 4).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let log = logged.log.lock().unwrap();
    let polls: Vec<_> = log
        .iter()
        .filter(|l| l.contains("bloomcast::access") && l.contains(&format!("GET {hour} HTTP/1.1")))
        .collect();
    assert_eq!(polls.len(), 4, "{polls:?}");
}

#[tokio::test]
async fn with_debug_logging_every_request_has_a_span_and_a_response_event() {
    let dir = tempfile::tempdir().unwrap();
    let quiet = start(dir.path().join("a").as_path(), &[]);
    let traced = start(
        dir.path().join("b").as_path(),
        &[("RUST_LOG", "info,bloomcast::http::app=debug")],
    );
    let mut hours = Vec::new();
    for server in [&quiet, &traced] {
        hours.push(poll_current_hour(server, 3).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let events = |server: &common::Server, hour: &str| -> usize {
        let log = server.log.lock().unwrap();
        log.iter()
            .filter(|l| {
                l.contains("bloomcast::http::app")
                    && l.contains(&format!("uri={hour}"))
                    && l.contains("response")
                    && l.contains("status=200")
            })
            .count()
    };
    assert_eq!(events(&quiet, &hours[0]), 0);
    assert_eq!(events(&traced, &hours[1]), 3);
}

/// Reads the current hour `times` on one keep-alive connection, each a 200, and returns
/// its path: the first read renders it, the next find it ready.
async fn poll_current_hour(server: &common::Server, times: usize) -> String {
    let index: serde_json::Value = reqwest::get(format!("{}/", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let hour = index["current"]["url"].as_str().unwrap().to_owned();
    let client = reqwest::Client::new();
    for _ in 0..times {
        let reply = client
            .get(format!("{}{hour}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
    }
    hour
}

/// A restart alone does not change the open hour's bytes: its filter is sized from the
/// keys it holds, not from the batches they came in, so loading the hour back builds the
/// same filter and a poller's ETag still matches (a 304, not a download).
#[tokio::test]
async fn a_restart_keeps_the_open_hours_etag() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let mut server = start(dir.path(), &[]);
    // Past the default capacity (3000) in batches, so the filter has grown.
    let mut hour = String::new();
    for b in 0..20 {
        let ids: Vec<String> = (0..1000).map(|i| format!("restart-{b}-{i}")).collect();
        hour = post_ids(&http, &server.base, &ids).await.unwrap();
    }
    let tag = |base: String| {
        let http = http.clone();
        let path = path_of(&hour);
        async move {
            let reply = http
                .get(format!("{base}{path}.bin"))
                .header("accept-encoding", "gzip")
                .send()
                .await
                .unwrap();
            assert_eq!(reply.status(), 200);
            let etag = reply.headers()["etag"].to_str().unwrap().to_owned();
            let m = reply.headers()["bloom-m"].to_str().unwrap().to_owned();
            (etag, m)
        }
    };
    let before = tag(server.base.clone()).await;
    kill9(&mut server);
    let server = start(dir.path(), &[]);
    // Unless the hour turned meanwhile (the hour is then closed and sealed anew).
    if bloomcast::hour::Hour::containing(chrono::Utc::now()).rfc3339() != hour {
        return;
    }
    let after = tag(server.base.clone()).await;
    assert_eq!(after, before, "(ETag, m) before and after the restart");
}

/// `bloomcast watch` outlives its server going away for a while: a poll that fails for a
/// passing reason (refused, reset) is tried again at the next one, and once the server
/// is back the watch reports what arrives.
#[tokio::test]
async fn watch_carries_on_through_a_server_restart() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let mut server = start(dir.path(), &[]);
    let addr = server.base.trim_start_matches("http://").to_owned();
    let (mut watch, rx) = spawn_watch(&server.base, "1", "back:1");
    let first = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a first version");
    assert!(first.contains(r#""event":"version""#), "{first}");

    kill9(&mut server);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        watch.try_wait().unwrap().is_none(),
        "watch still runs while the server is away"
    );
    let server = start(dir.path(), &[("BLOOMCAST_LISTEN", addr.as_str())]);
    post_ids(&http, &server.base, &["back:1".to_owned()])
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut changed = false;
    while !changed && Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) {
            changed = line.contains(r#""event":"changed""#) && line.contains("back:1");
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(changed, "watch reports the ID ingested after the restart");
}

/// `bloomcast watch` follows the server's event stream: with polls an hour apart, an ID
/// ingested after it started is still reported, as the event about its version comes.
#[tokio::test]
async fn watch_follows_the_event_stream_between_polls() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let server = start(dir.path(), &[]);
    let (mut watch, rx) = spawn_watch(&server.base, "3600", "pushed:1");
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("a first version");
    assert!(first.contains(r#""event":"version""#), "{first}");
    // The stream is open once the server counts its subscriber.
    common::stats_reach(&http, &server.base, "/events/subscribers", 1.into()).await;
    post_ids(&http, &server.base, &["pushed:1".to_owned()])
        .await
        .unwrap();
    let changed = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the ID reported");
        if line.contains(r#""event":"changed""#) {
            break line;
        }
    };
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(changed.contains("pushed:1"), "{changed}");
}

/// `bloomcast watch --server BASE --every EVERY --json ID`, and its stdout's lines as
/// they come.
fn spawn_watch(
    base: &str,
    every: &str,
    id: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut watch = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args(["watch", "--server", base, "--every", every, "--json", id])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    (watch, rx)
}
