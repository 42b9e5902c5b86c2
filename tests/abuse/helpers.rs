//! A real server on port 0 (with a clock the test holds), request builders and the
//! check that the server is still whole.

use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::startup::Application;
use chrono::Duration as Minutes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

pub use crate::raw::*;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub const TOKEN: &str = "abuse-test-token-0123456789";
/// The server's current (open) hour.
pub const HOUR: &str = "/2008/09/03/13";

pub fn start_hour() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

/// A server running on a real socket; stopped when dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub clock: ManualClock,
    /// For housekeeping as its timer would run it (sealing a closed hour).
    pub service: Arc<bloomcast::service::Service>,
    stop: Option<oneshot::Sender<()>>,
    running: Option<JoinHandle<()>>,
    _dir: TempDir,
}

impl Server {
    /// Signals shutdown and waits for the server to stop, at most `within`.
    pub async fn shut_down(mut self, within: Duration) {
        let _ = self.stop.take().unwrap().send(());
        let running = self.running.take().unwrap();
        tokio::time::timeout(within, running)
            .await
            .expect("the server stops in time")
            .unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Short timeouts, so that slow-client tests take about a second.
pub async fn spawn() -> Server {
    spawn_with(|_| {}).await
}

pub async fn spawn_with(tweak: impl FnOnce(&mut Settings)) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_owned(),
        ingest_tokens: vec![TOKEN.into()],
        refresh_ms: 0,
        body_limit: 64 * 1024,
        request_timeout_seconds: 1,
        header_read_timeout_seconds: 1,
        shutdown_timeout: 2,
        ..Settings::default()
    };
    tweak(&mut settings);
    let clock = ManualClock::at(start_hour(), Minutes::minutes(10));
    let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
        .await
        .expect("app builds");
    let addr = app.local_addr();
    let service = app.service();
    service.wait_loaded().await;
    let (stop, stopped) = oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    Server {
        addr,
        clock,
        service,
        stop: Some(stop),
        running: Some(running),
        _dir: dir,
    }
}

/// A GET with the usual headers.
pub fn get_request(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n{extra}Connection: close\r\n\r\n").into_bytes()
}

pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    exchange(addr, &get_request(path, ""))
        .await
        .unwrap_or_else(|| panic!("no reply to GET {path}"))
}

/// A POST /updates request with the given content type, auth header line and body.
pub fn post_request(content_type: &str, auth: &str, body: &[u8]) -> Vec<u8> {
    let mut raw = format!(
        "POST /updates HTTP/1.1\r\nHost: test\r\nContent-Type: {content_type}\r\n{auth}\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    raw
}

pub fn bearer() -> String {
    format!("Authorization: Bearer {TOKEN}\r\n")
}

/// Ingests IDs (JSON) and asserts they were acknowledged.
pub async fn ingest(addr: SocketAddr, ids: &[String]) {
    let body = serde_json::to_vec(&serde_json::json!({ "ids": ids })).unwrap();
    let reply = exchange(addr, &post_request("application/json", &bearer(), &body))
        .await
        .expect("an ingest reply");
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["accepted"], ids.len());
}

/// The open hour's filter, decoded.
pub async fn filter(addr: SocketAddr) -> (bloomcast::wire::Meta, bloomcast::bloom::Filter) {
    let reply = get(addr, HOUR).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    bloomcast::wire::Document::parse(&reply.body).expect("a valid document")
}

/// The server still answers a normal GET of the open hour correctly, and every ID
/// acknowledged so far is in it.
pub async fn assert_healthy(addr: SocketAddr, acknowledged: &[String]) {
    let (meta, filter) = filter(addr).await;
    assert_eq!(meta.count, acknowledged.len() as u64, "{meta:?}");
    for id in acknowledged {
        assert!(filter.contains(id), "acknowledged {id} is missing");
    }
}

/// IDs `prefix-0` .. `prefix-(n-1)`.
pub fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}
