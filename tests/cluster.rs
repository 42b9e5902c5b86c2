//! Cluster mode: several nodes on one real PostgreSQL.
//!
//! Needs PostgreSQL at `BLOOMCAST_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`). Without it the tests skip with a message,
//! unless `CI` is set, where a missing database fails the run. Each test works in its
//! own schema; the test that stops PostgreSQL starts a private cluster of its own.

#![cfg(unix)]

mod common;

use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::hour_of;
use bloomcast::startup::Application;
use chrono::Duration;
use common::{fetch, kill9, path_of, post_ids, start, TOKEN};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The test database URL, or `None` (with a message) when PostgreSQL is not there.
async fn database_url() -> Option<String> {
    let url = std::env::var("BLOOMCAST_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.into());
    match tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
        Ok((client, conn)) => {
            tokio::spawn(conn);
            drop(client);
            Some(url)
        }
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("CI needs PostgreSQL at {url} for the cluster tests: {e}")
        }
        Err(e) => {
            eprintln!(
                "SKIPPED: PostgreSQL is not reachable at {url} ({e}). Start PostgreSQL or set \
                 BLOOMCAST_TEST_DATABASE_URL=postgres://user@host:port/db to run the cluster tests."
            );
            None
        }
    }
}

fn unique_schema() -> String {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).unwrap();
    format!("bc_test_{}", bloomcast::bloom::to_hex(&bytes))
}

async fn drop_schema(url: &str, schema: &str) {
    if let Ok((client, conn)) = tokio_postgres::connect(url, tokio_postgres::NoTls).await {
        tokio::spawn(conn);
        let _ = client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await;
    }
}

fn node_settings(url: &str, schema: &str, dir: PathBuf) -> Settings {
    Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir,
        ingest_tokens: vec![TOKEN.into()],
        database_url: url.into(),
        database_schema: schema.into(),
        refresh_ms: 0,
        ..Settings::default()
    }
}

/// An in-process node serving on a real socket.
struct Node {
    base: String,
    service: Arc<bloomcast::service::Service>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn node(settings: Settings, clock: &ManualClock) -> Node {
    let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
        .await
        .expect("node starts");
    let base = format!("http://{}", app.local_addr());
    let service = app.service();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    Node {
        base,
        service,
        _stop: stop,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_lose_nothing_across_an_hour_boundary() {
    let Some(url) = database_url().await else {
        return;
    };
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(59));
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await);
    }
    let http = reqwest::Client::new();
    let acked: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let advanced = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..6 {
        let (http, base, acked, advanced) = (
            http.clone(),
            nodes[w % 3].base.clone(),
            acked.clone(),
            advanced.clone(),
        );
        writers.push(tokio::spawn(async move {
            // Keep writing until this writer has had batches acknowledged after the
            // clock moved, so ingest straddles the boundary however fast the machine is.
            let mut after = 0;
            let mut batch = 0;
            while after < 8 {
                let late = advanced.load(Ordering::SeqCst);
                let ids: Vec<String> = (0..50).map(|i| format!("w{w}-b{batch}-{i}")).collect();
                let hour = post_ids(&http, &base, &ids).await.expect("ingest succeeds");
                acked.lock().unwrap().entry(hour).or_default().extend(ids);
                batch += 1;
                if late {
                    after += 1;
                }
            }
        }));
    }
    // Cross the boundary once every writer is under way, and let every node's
    // housekeeping race to seal while ingest continues.
    let started = Instant::now();
    while acked.lock().unwrap().values().map(Vec::len).sum::<usize>() < 6 * 5 * 50 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "ingest made no progress"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    clock.advance(Duration::minutes(1));
    advanced.store(true, Ordering::SeqCst);
    let ticks: Vec<_> = nodes
        .iter()
        .map(|n| {
            let s = n.service.clone();
            tokio::spawn(async move { s.tick().await })
        })
        .collect();
    for t in ticks {
        t.await.unwrap().unwrap();
    }
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.contains_key("2008-09-03T13:00:00Z") && acked.contains_key("2008-09-03T14:00:00Z"),
        "ingest should straddle the boundary: {:?}",
        acked.keys().collect::<Vec<_>>()
    );
    let mut closed_tags = Vec::new();
    for node in &nodes {
        for (hour, ids) in &acked {
            let (meta, filter) = fetch(&http, &node.base, &path_of(hour)).await;
            let lost = ids.iter().filter(|id| !filter.contains(id)).count();
            assert_eq!(
                lost, 0,
                "{lost} acknowledged IDs missing from {hour} on {}",
                node.base
            );
            assert_eq!(meta.count, ids.len() as u64, "{hour} on {}", node.base);
        }
        let closed = http
            .get(format!("{}/2008/09/03/13", node.base))
            .send()
            .await
            .unwrap();
        closed_tags.push(closed.headers()["etag"].to_str().unwrap().to_owned());
        let body = closed.bytes().await.unwrap();
        assert!(bloomcast::wire::Document::parse(&body).unwrap().0.complete);
    }
    assert!(
        closed_tags.windows(2).all(|w| w[0] == w[1]),
        "closed hour differs across nodes: {closed_tags:?}"
    );
    drop(nodes);
    drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_ingest_loses_nothing_and_the_others_carry_on() {
    let Some(url) = database_url().await else {
        return;
    };
    let schema = unique_schema();
    let env = [
        ("BLOOMCAST_DATABASE_URL", url.as_str()),
        ("BLOOMCAST_DATABASE_SCHEMA", schema.as_str()),
        ("BLOOMCAST_REFRESH_MS", "0"),
    ];
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = start(dir_a.path(), &env);
    let b = start(dir_b.path(), &env);
    let http = reqwest::Client::new();
    let acked: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let deadline = Instant::now() + std::time::Duration::from_millis(1200);
    let mut writers = Vec::new();
    for (w, base) in [a.base.clone(), a.base.clone(), b.base.clone()]
        .into_iter()
        .enumerate()
    {
        let (http, acked) = (http.clone(), acked.clone());
        writers.push(tokio::spawn(async move {
            for batch in 0..400 {
                let ids: Vec<String> = (0..100).map(|i| format!("w{w}-b{batch}-{i}")).collect();
                match post_ids(&http, &base, &ids).await {
                    Ok(hour) => acked.lock().unwrap().entry(hour).or_default().extend(ids),
                    Err(_) if w < 2 => return, // node A was killed
                    Err(status) => panic!("the surviving node failed with {status}"),
                }
                if w == 2 && Instant::now() > deadline + std::time::Duration::from_millis(500) {
                    return;
                }
            }
        }));
    }
    tokio::time::sleep_until(deadline.into()).await;
    kill9(&mut a);
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    for (hour, ids) in &acked {
        let (_, filter) = fetch(&http, &b.base, &path_of(hour)).await;
        let lost = ids.iter().filter(|id| !filter.contains(id)).count();
        assert_eq!(
            lost,
            0,
            "{lost} of {} acknowledged IDs lost in {hour}",
            ids.len()
        );
    }
    drop(b);
    drop_schema(&url, &schema).await;
}

/// A private PostgreSQL cluster in a temporary directory, on its own port.
struct PrivateCluster {
    dir: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
}

impl PrivateCluster {
    fn create() -> Option<PrivateCluster> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path().join("bin"))
            .find(|p| p.join("initdb").exists())?;
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = PrivateCluster { dir, port, bin };
        // initdb refuses to run as root: run it as the postgres user then.
        if is_root() {
            Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(cluster.dir.path())
                .status()
                .ok()?;
        }
        let data = cluster.data().display().to_string();
        let ok = cluster.pg(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        (ok && cluster.start()).then_some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn pg(&self, tool: &str, args: &[&str]) -> bool {
        let exe = self.bin.join(tool).display().to_string();
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", &exe]);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        cmd.status().map(|s| s.success()).unwrap_or(false)
    }

    fn start(&self) -> bool {
        let data = self.data().display().to_string();
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {}",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.pg(
            "pg_ctl",
            &["-D", &data, "-o", &opts, "-l", &log, "-w", "start"],
        )
    }

    fn stop(&self) -> bool {
        let data = self.data().display().to_string();
        self.pg("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_going_away_gives_503_and_the_node_recovers() {
    if database_url().await.is_none() {
        return;
    }
    let Some(cluster) = PrivateCluster::create() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI could not start a private PostgreSQL cluster"
        );
        eprintln!(
            "SKIPPED: could not start a private PostgreSQL cluster (initdb/pg_ctl not found)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let node = node(
        node_settings(&cluster.url(), "bloomcast", dir.path().to_owned()),
        &clock,
    )
    .await;
    let http = reqwest::Client::new();
    let first: Vec<String> = (0..100).map(|i| format!("closed-{i}")).collect();
    post_ids(&http, &node.base, &first)
        .await
        .expect("ingest with PostgreSQL up");
    clock.advance(Duration::hours(1));
    node.service.tick().await.unwrap();
    let (meta, _) = fetch(&http, &node.base, "/2008/09/03/13").await; // now held in memory
    assert!(meta.complete);

    // Load throughout: every answer is 200 or 503, and every 200 is kept.
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let statuses: Arc<Mutex<HashMap<u16, usize>>> = Arc::default();
    let stop_load = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (http, base, acked, statuses, stop) = (
            http.clone(),
            node.base.clone(),
            acked.clone(),
            statuses.clone(),
            stop_load.clone(),
        );
        tokio::spawn(async move {
            for batch in 0.. {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                let ids: Vec<String> = (0..20).map(|i| format!("load-{batch}-{i}")).collect();
                let status = match post_ids(&http, &base, &ids).await {
                    Ok(_) => {
                        acked.lock().unwrap().extend(ids);
                        200
                    }
                    Err(s) => s,
                };
                *statuses.lock().unwrap().entry(status).or_default() += 1;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(cluster.stop(), "stop the private cluster");

    let refused = http
        .post(format!("{}/updates", node.base))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"ids": ["while-down"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "store_unavailable");
    assert_eq!(
        http.get(format!("{}/healthz", node.base))
            .send()
            .await
            .unwrap()
            .status(),
        503
    );
    let (meta, filter) = fetch(&http, &node.base, "/2008/09/03/13").await;
    assert!(
        meta.complete && first.iter().all(|id| filter.contains(id)),
        "closed hour still served"
    );

    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(cluster.start(), "restart the private cluster");
    let started = Instant::now();
    loop {
        let ok = post_ids(&http, &node.base, &["after-recovery".to_owned()])
            .await
            .is_ok();
        if ok {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "node did not recover"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stop_load.store(true, std::sync::atomic::Ordering::SeqCst);
    load.await.unwrap();

    let statuses = statuses.lock().unwrap().clone();
    assert!(
        statuses.keys().all(|s| *s == 200 || *s == 503),
        "only 200 or 503 under failure: {statuses:?}"
    );
    assert!(
        statuses.get(&503).copied().unwrap_or(0) > 0,
        "the outage was seen: {statuses:?}"
    );
    let (_, filter) = fetch(&http, &node.base, "/2008/09/03/14").await;
    let acked = acked.lock().unwrap().clone();
    let lost = acked.iter().filter(|id| !filter.contains(id)).count();
    assert_eq!(
        lost,
        0,
        "{lost} of {} acknowledged IDs lost across the outage",
        acked.len()
    );
    assert!(filter.contains("after-recovery"));
}

#[path = "cluster/checksums.rs"]
mod checksums;
