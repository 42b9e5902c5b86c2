//! The write (stall) timeout: a connection whose client takes none of its response bytes
//! for `write_timeout` fails its writes, so the connection ends and its slot is freed.
//!
//! Without it, a client that pipelines requests and never reads holds its connection, the
//! task serving it and one of `max_connections` slots for as long as it keeps the socket
//! open: the server waits for socket buffer space forever. Both writers (the connection's
//! own for polls, and hyper for everything else) write through [`Stall`], so one rule
//! covers every response.
//!
//! The timer is armed only when a write cannot proceed (the socket's send buffer is full)
//! and disarmed by any progress, so a client reading slowly but steadily is never cut off
//! and a write that goes through at once costs no timer.

use crate::http::Metrics;
use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// How a socket dropped by the timeout is closed.
pub(super) trait Abort {
    /// Makes closing the socket discard what it still holds to send: the client took
    /// none of it, and the kernel would otherwise keep it (up to the send buffer, a few
    /// MiB) while retrying a peer that never reads.
    fn abort(&self);
}

impl Abort for TcpStream {
    fn abort(&self) {
        // Closed with a reset (SO_LINGER 0, which never blocks).
        if let Err(e) = self.set_zero_linger() {
            tracing::debug!(error = %e, "cannot set SO_LINGER on a stalled connection");
        }
    }
}

/// `io` with the write timeout: reads pass through; a write that makes no progress for
/// `timeout` fails with [`io::ErrorKind::TimedOut`], as does every write after it.
pub(super) struct Stall<S> {
    io: S,
    timeout: Duration,
    /// Runs while a write is blocked; made on the first block, reset on later ones.
    timer: Option<Pin<Box<Sleep>>>,
    /// Whether `timer` counts the current block (cleared by any write progress).
    armed: bool,
    /// Set once the timeout has fired: the connection is being dropped.
    expired: bool,
    metrics: Arc<Metrics>,
}

impl<S: Abort> Stall<S> {
    pub(super) fn new(io: S, timeout: Duration, metrics: Arc<Metrics>) -> Stall<S> {
        Stall {
            io,
            timeout,
            timer: None,
            armed: false,
            expired: false,
            metrics,
        }
    }

    fn expired_error(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client took no response bytes for {:?} (write_timeout_seconds); closing",
                self.timeout
            ),
        )
    }

    /// `write`'s outcome, with the stall timer kept: progress (or an error) disarms
    /// it, a blocked write arms it if needed and fails once it has run out.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        write: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if write.is_ready() {
            self.armed = false;
            return write;
        }
        if !self.armed {
            let deadline = Instant::now() + self.timeout;
            match &mut self.timer {
                Some(timer) => timer.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.armed = true;
        }
        let timer = self.timer.as_mut().expect("armed above");
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.expired = true;
        self.io.abort();
        self.metrics.connection_dropped_write_timeout();
        tracing::debug!(timeout = ?self.timeout, "no write progress; dropping the connection");
        Poll::Ready(Err(self.expired_error()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Stall<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, out)
    }
}

impl<S: AsyncWrite + Abort + Unpin> AsyncWrite for Stall<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.expired {
            return Poll::Ready(Err(self.expired_error()));
        }
        let write = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, write)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.expired {
            return Poll::Ready(Err(self.expired_error()));
        }
        let write = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch(cx, write)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.expired {
            return Poll::Ready(Err(self.expired_error()));
        }
        let flush = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(cx, flush)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncWriteExt, DuplexStream};

    impl Abort for DuplexStream {
        fn abort(&self) {}
    }

    fn dropped(metrics: &Metrics) -> bool {
        metrics
            .render(0)
            .contains("bloomcast_connections_dropped_total{reason=\"write_timeout\"} 1")
    }

    // A peer that never reads stalls for certain, so the outcome does not depend on
    // timing; only the time it takes does.
    #[tokio::test]
    async fn a_peer_that_takes_nothing_fails_the_write_once_the_timeout_runs_out() {
        let metrics = Arc::new(Metrics::default());
        let (near, mut far) = tokio::io::duplex(16);
        let timeout = Duration::from_millis(200);
        let mut io = Stall::new(near, timeout, metrics.clone());
        let started = Instant::now();
        let err = io.write_all(&[7; 64]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= timeout);
        assert!(dropped(&metrics), "{}", metrics.render(0));
        // Every later write fails too, even with room to write, without counting the
        // connection again.
        let mut room = [0u8; 16];
        tokio::io::AsyncReadExt::read_exact(&mut far, &mut room)
            .await
            .unwrap();
        assert!(io.write_all(b"x").await.is_err());
        assert!(dropped(&metrics));
    }

    // On paused time: the pauses between writes outlast the timeout without waiting.
    #[tokio::test(start_paused = true)]
    async fn writes_that_go_through_never_arm_the_timer() {
        let metrics = Arc::new(Metrics::default());
        let (near, _far) = tokio::io::duplex(1024);
        let mut io = Stall::new(near, Duration::from_millis(1), metrics.clone());
        for _ in 0..8 {
            io.write_all(&[1; 64]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert!(io.timer.is_none());
        assert!(!io.expired);
    }
}
