//! The accept loop: HTTP/1.1 connections served by hyper with a header read timeout,
//! which `axum::serve` does not expose. A client that trickles its headers (slow loris)
//! is disconnected when the timeout runs out; the whole-request timeout (408) lives in
//! the router. On shutdown the loop stops accepting, asks every connection to finish its
//! in-flight request and close, and returns once all have.

use crate::http::App;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Headers a request may carry: plenty for any real client; more is answered 431.
const MAX_HEADERS: usize = 100;
/// Bytes of a request head (request line and headers); more is answered 431. Checked on
/// the parsed head, so the answer does not depend on how the bytes arrived.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How the connections are served.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Time a client has to send a request's headers, counted from when the server
    /// starts waiting for them (so it also bounds an idle keep-alive connection).
    pub header_read_timeout: Duration,
    /// Connections served at once: past it the loop stops accepting, so new connections
    /// wait in the kernel's listen backlog instead of each costing memory and a task.
    pub max_connections: usize,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains: no new
/// connections, in-flight requests finish, idle connections close. Resolves once every
/// connection is gone (the caller bounds that with its shutdown timeout).
pub async fn serve(
    listener: TcpListener,
    app: App,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send,
) {
    // Every connection task holds a receiver: `closed()` resolves when the last is gone.
    let (drain_tx, drain_rx) = watch::channel(false);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(MAX_HEADERS)
        .max_header_size(MAX_HEAD_BYTES);
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
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
        let _ = stream.set_nodelay(true);
        // The peer's address, for the access log.
        let service = TowerToHyperService::new(app.for_peer(peer));
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let mut drain = drain_rx.clone();
        tokio::spawn(async move {
            tokio::pin!(conn);
            let result = tokio::select! {
                r = conn.as_mut() => r,
                _ = drain.changed() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                // Timeouts, resets and malformed requests: the client's problem, not ours.
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(drain);
            drop(slot);
        });
    }
    drop(listener);
    let _ = drain_tx.send(true);
    drop(drain_rx);
    drain_tx.closed().await;
}
