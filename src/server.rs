//! The accept loop: every connection framed by hyper (HTTP/1.1), every request served by
//! the one application ([`App`]), graceful shutdown by hyper-util's [`GracefulShutdown`].
//!
//! Three limits are the connection's, not a request's, so they live here:
//! - a client has `header_read_timeout` to send each request head (hyper's own timer),
//!   counted from when hyper starts waiting for it, so it also bounds an idle keep-alive
//!   connection and disconnects a slow loris;
//! - a client that takes none of its response bytes for `write_timeout` is dropped and
//!   counted (`tokio-io-timeout`'s write timeout: hyper has none);
//! - at most `max_connections` connections are served at once; past it the loop stops
//!   accepting, so new connections wait in the kernel's listen backlog instead of each
//!   costing memory and a task.
//!
//! The whole-request timeout (408 or 503) and the body limits are the application's
//! layers. On shutdown the loop stops accepting, asks every connection to finish its
//! in-flight request and close, and returns once all have.

use crate::http::App;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::borrow::Borrow;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_io_timeout::TimeoutStream;

/// Headers a request may carry: plenty for any real client; more is answered 431.
const MAX_HEADERS: usize = 100;
/// Bytes of a request head (request line and headers); more is answered 431.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How the connections are served.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Time a client has to send a request's headers, counted from when the server
    /// starts waiting for them (so it also bounds an idle keep-alive connection).
    pub header_read_timeout: Duration,
    /// Time a connection may have response bytes to send without the client taking
    /// any; then the connection is closed and counted.
    pub write_timeout: Duration,
    /// Connections served at once: past it the loop stops accepting.
    pub max_connections: usize,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains: no new
/// connections, in-flight requests finish, idle connections close. Resolves once every
/// connection is gone (the caller bounds that with its shutdown timeout).
///
/// An owned `listener` is closed as soon as the drain starts (new connections are
/// refused); a borrowed one stays open for its owner to serve next (the standby hands
/// its socket to the service).
pub async fn serve(
    listener: impl Borrow<TcpListener>,
    app: App,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(MAX_HEADERS)
        .max_header_size(MAX_HEAD_BYTES);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.borrow().accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: back off rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let connection = builder.serve_connection(
            TokioIo::new(with_write_timeout(stream, limits.write_timeout)),
            TowerToHyperService::new(app.for_peer(ConnectInfo(peer))),
        );
        let connection = graceful.watch(connection);
        let metrics = app.metrics().clone();
        let open = metrics.connection_opened();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                if timed_out_writing(&e) {
                    metrics.connection_dropped_write_timeout();
                }
                // Timeouts, resets and malformed requests: the client's problem.
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(open);
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// What an idle keep-alive connection holds, counted in `/stats` (`connections`): its
/// read and write buffers, its task and its socket's registration: 12.3–13 KiB with
/// 1,000 and 2,000 idle connections to an empty server, each after one `GET /healthz`
/// (`benches/harness/connections.sh`; docs/BENCHMARKS.md, "One memory budget").
/// A connection whose request grew its read buffer (a long `/history` query) holds more.
pub const CONNECTION_BYTES: u64 = 13 * 1024;

/// `stream` whose writes fail once they make no progress for `timeout`.
fn with_write_timeout(
    stream: TcpStream,
    timeout: Duration,
) -> std::pin::Pin<Box<TimeoutStream<TcpStream>>> {
    let _ = stream.set_nodelay(true);
    let mut stream = TimeoutStream::new(stream);
    stream.set_write_timeout(Some(timeout));
    Box::pin(stream)
}

/// Whether a connection ended because the client took no response bytes in time.
fn timed_out_writing(error: &hyper::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return io.kind() == io::ErrorKind::TimedOut;
        }
        source = e.source();
    }
    false
}
