//! The accept loop: HTTP/1.1 connections, each framed by our own writer while it sends
//! requests without a body and by hyper after (`server::conn`), every request served by the
//! one application ([`App`]). hyper gets a header read timeout, which `axum::serve`
//! does not expose. A client that trickles its headers (slow loris)
//! is disconnected when the timeout runs out; the whole-request timeout (408 or 503) lives in
//! the router. On shutdown the loop stops accepting, asks every connection to finish its
//! in-flight request and close, and returns once all have.

mod conn;
mod drain;
mod h1;
mod rewind;
mod stall;

use crate::http::App;
use drain::Drain;
use hyper::server::conn::http1;
use hyper_util::rt::TokioTimer;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

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
    /// Time a connection may have response bytes to send without the client taking
    /// any; then the connection is closed and counted.
    pub write_timeout: Duration,
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
    let drain = Drain::new();
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
        let connection = conn::serve(
            stream,
            peer,
            app.clone(),
            builder.clone(),
            limits,
            drain.watch(),
        );
        tokio::spawn(async move {
            connection.await;
            drop(slot);
        });
    }
    drop(listener);
    drain.start();
    drain.finished().await;
}
