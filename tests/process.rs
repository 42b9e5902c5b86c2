//! Process-level tests: the real binary, killed with SIGKILL or stopped with SIGTERM.

#![cfg(unix)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "process-test-token";

struct Server {
    child: Child,
    base: String,
}

/// Starts `bloomcast serve` on a free port over `data_dir` and waits until it listens.
fn start(data_dir: &std::path::Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .arg("serve")
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("BLOOMCAST_DATA_DIR", data_dir)
        .env("BLOOMCAST_INGEST_TOKENS", TOKEN)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("server: {line}");
            if let Some(addr) = line.split("addr=").nth(1) {
                let _ = tx.send(addr.split_whitespace().next().unwrap_or("").to_owned());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(20)).expect("server reports its address");
    Server { child, base: format!("http://{addr}") }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kill9(server: &mut Server) {
    let pid = server.child.id().to_string();
    let status = Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(status.success());
    server.child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_id_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path());
    let http = reqwest::Client::new();
    // hour -> acknowledged IDs
    let acked: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let deadline = Instant::now() + Duration::from_millis(1500);
    let mut writers = Vec::new();
    for w in 0..4 {
        let (http, base, acked) = (http.clone(), server.base.clone(), acked.clone());
        writers.push(tokio::spawn(async move {
            let mut batch = 0;
            loop {
                let ids: Vec<String> = (0..100).map(|i| format!("w{w}-b{batch}-{i}")).collect();
                batch += 1;
                let sent = http
                    .post(format!("{base}/updates"))
                    .bearer_auth(TOKEN)
                    .json(&serde_json::json!({ "ids": ids }))
                    .send()
                    .await;
                let Ok(reply) = sent else { return };
                if !reply.status().is_success() {
                    return;
                }
                let Ok(body) = reply.json::<serde_json::Value>().await else { return };
                let hour = body["hour"].as_str().unwrap().to_owned();
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
    assert!(total >= 1000, "the test should acknowledge plenty before the kill: {total}");

    let mut server = start(dir.path());
    for (hour, ids) in &acked {
        let t = chrono::DateTime::parse_from_rfc3339(hour).unwrap();
        let path = t.format("/%Y/%m/%d/%H").to_string();
        let doc = http.get(format!("{}{path}", server.base)).send().await.unwrap().bytes().await.unwrap();
        let (_, filter) = bloomcast::wire::Document::parse(&doc).unwrap();
        let lost: Vec<&String> = ids.iter().filter(|id| !filter.contains(id)).collect();
        assert!(lost.is_empty(), "{} of {} acknowledged IDs lost in {hour}", lost.len(), ids.len());
    }
    kill9(&mut server);
}

#[tokio::test]
async fn sigterm_shuts_down_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path());
    let health = reqwest::get(format!("{}/healthz", server.base)).await.unwrap();
    assert_eq!(health.status(), 200);
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let started = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "did not stop after SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn without_configured_tokens_a_private_token_is_generated() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .arg("serve")
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("BLOOMCAST_DATA_DIR", dir.path())
        .env_remove("BLOOMCAST_INGEST_TOKENS")
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
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
}
