//! A raw-TCP HTTP/1.1 client: writes whatever bytes a test wants and reads back
//! responses, keeping bytes read past one response for the next (pipelining).

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
/// the connection without answering. Panics after [`HANG`](crate::wait::HANG): the
/// server must never hang.
pub async fn read_reply(conn: &mut Conn) -> Option<Reply> {
    tokio::time::timeout(crate::wait::HANG, read_reply_inner(conn))
        .await
        .expect("the server answers or closes")
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

/// Waits, reading nothing, until the server closes the idle `conn`: not before about the
/// 1 s header timeout.
pub async fn assert_closed_by_header_timeout(conn: &mut Conn) {
    let started = Instant::now();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(crate::wait::HANG, conn.read(&mut buf))
        .await
        .expect("closed by the server");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
}
