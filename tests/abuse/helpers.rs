//! A real server on port 0 (with a clock the test holds) and a raw-TCP client that
//! writes whatever bytes a test wants and reads back one HTTP/1.1 response.

use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::startup::Application;
use chrono::Duration as Minutes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
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
    stop: Option<oneshot::Sender<()>>,
    running: Option<JoinHandle<std::io::Result<()>>>,
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
            .unwrap()
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
    let (stop, stopped) = oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    Server {
        addr,
        clock,
        stop: Some(stop),
        running: Some(running),
        _dir: dir,
    }
}

/// One parsed response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}\n{}",
                self.head,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The documented error shape: status, `{"error": code, "message": non-empty}`,
    /// `Cache-Control: no-store`.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(
            self.status,
            status,
            "{}\n{}",
            self.head,
            String::from_utf8_lossy(&self.body)
        );
        let json = self.json();
        assert_eq!(json["error"], code, "{json}");
        assert!(
            json["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{json}"
        );
        assert_eq!(
            self.header("cache-control"),
            Some("no-store"),
            "{}",
            self.head
        );
    }
}

/// A client connection that keeps bytes read past one response for the next one
/// (pipelined replies arrive together).
pub struct Conn {
    stream: TcpStream,
    pending: Vec<u8>,
}

impl std::ops::Deref for Conn {
    type Target = TcpStream;
    fn deref(&self) -> &TcpStream {
        &self.stream
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut TcpStream {
        &mut self.stream
    }
}

pub async fn connect(addr: SocketAddr) -> Conn {
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    Conn {
        stream,
        pending: Vec::new(),
    }
}

/// Reads one response (Content-Length or chunked body); `None` when the server closed
/// the connection without answering. Panics after 5 s: the server must never hang.
pub async fn read_reply(conn: &mut Conn) -> Option<Reply> {
    tokio::time::timeout(Duration::from_secs(5), read_reply_inner(conn))
        .await
        .expect("the server answers or closes within 5 s")
}

impl Conn {
    /// Reads more bytes into `pending`; `None` at end of stream or on error.
    async fn more(&mut self) -> Option<()> {
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk).await {
            Ok(0) | Err(_) => None,
            Ok(n) => {
                self.pending.extend_from_slice(&chunk[..n]);
                Some(())
            }
        }
    }

    /// Takes exactly `n` bytes.
    async fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.pending.len() < n {
            self.more().await?;
        }
        Some(self.pending.drain(..n).collect())
    }

    /// Takes a line ending in CRLF, without it.
    async fn line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = find(&self.pending, b"\r\n") {
                let line = self.pending.drain(..i + 2).take(i).collect();
                return Some(line);
            }
            self.more().await?;
        }
    }
}

async fn read_reply_inner(conn: &mut Conn) -> Option<Reply> {
    let head_end = loop {
        if let Some(i) = find(&conn.pending, b"\r\n\r\n") {
            break i;
        }
        conn.more().await?;
    };
    let head_bytes = conn.take(head_end + 4).await?;
    let head = String::from_utf8_lossy(&head_bytes[..head_end]).into_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let mut reply = Reply {
        status,
        head,
        body: Vec::new(),
    };
    let no_body = status == 304 || status / 100 == 1;
    if let Some(len) = reply.header("content-length").and_then(|v| v.parse().ok()) {
        reply.body = conn.take(len).await?;
    } else if reply
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"))
    {
        loop {
            let size_line = conn.line().await?;
            let size =
                usize::from_str_radix(std::str::from_utf8(&size_line).ok()?.trim(), 16).ok()?;
            let chunk = conn.take(size + 2).await?;
            reply.body.extend_from_slice(&chunk[..size]);
            if size == 0 {
                break;
            }
        }
    } else if !no_body {
        while conn.more().await.is_some() {}
        reply.body = std::mem::take(&mut conn.pending);
    }
    Some(reply)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Sends raw bytes on a fresh connection and reads one response.
pub async fn exchange(addr: SocketAddr, raw: &[u8]) -> Option<Reply> {
    let mut stream = connect(addr).await;
    // The server may answer (and close) before reading everything we send.
    let _ = stream.write_all(raw).await;
    read_reply(&mut stream).await
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
