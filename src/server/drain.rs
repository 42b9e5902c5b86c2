//! Telling every connection to finish, without a shared write per request.
//!
//! A `tokio::sync::watch` receiver polled in every connection's `select!` takes the
//! channel's waiter lock each time the connection waits, that is once per request on
//! every core. Here a connection registers its waker in a slot of its own
//! ([`AtomicWaker`], on the connection's own cache line) and reads one flag that only
//! changes at shutdown; the shared registry is locked when a connection starts and
//! ends, and once to wake them all.

use atomic_waker::AtomicWaker;
use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::Notify;

/// The server's side: starts the drain and waits until every connection is gone.
#[derive(Default)]
pub struct Drain {
    draining: AtomicBool,
    next: AtomicU64,
    live: Mutex<HashMap<u64, Arc<AtomicWaker>>>,
    /// Notified when the last connection goes.
    empty: Notify,
}

/// A connection's side, held for as long as the connection lives.
pub struct Watch {
    drain: Arc<Drain>,
    id: u64,
    waker: Arc<AtomicWaker>,
}

impl Drain {
    pub fn new() -> Arc<Drain> {
        Arc::new(Drain::default())
    }

    /// Registers a new connection.
    pub fn watch(self: &Arc<Drain>) -> Watch {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let waker = Arc::new(AtomicWaker::new());
        self.lock().insert(id, waker.clone());
        Watch {
            drain: self.clone(),
            id,
            waker,
        }
    }

    /// Tells every connection, present and future, to finish.
    pub fn start(&self) {
        self.draining.store(true, Ordering::Release);
        for waker in self.lock().values() {
            waker.wake();
        }
    }

    /// Resolves once every connection is gone.
    pub async fn finished(&self) {
        loop {
            let empty = self.empty.notified();
            if self.lock().is_empty() {
                return;
            }
            empty.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<AtomicWaker>>> {
        crate::sync::lock(&self.live)
    }
}

impl Watch {
    /// Whether the server is draining.
    pub fn is_draining(&self) -> bool {
        self.drain.draining.load(Ordering::Acquire)
    }

    fn poll_draining(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.waker.register(cx.waker());
        if self.is_draining() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Resolves once the server is draining.
    pub async fn draining(&self) {
        poll_fn(|cx| self.poll_draining(cx)).await;
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut live = self.drain.lock();
        live.remove(&self.id);
        if live.is_empty() {
            self.drain.empty.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // On paused time: the sleeps and timeouts are tokio's, and pass at once.
    #[tokio::test(start_paused = true)]
    async fn a_watch_wakes_when_the_drain_starts_and_finished_waits_for_the_last() {
        let drain = Drain::new();
        let early = drain.watch();
        assert!(!early.is_draining());
        let waiter = tokio::spawn(async move {
            early.draining().await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(early);
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drain.start();
        // A connection accepted after the start sees it at once.
        let late = drain.watch();
        tokio::time::timeout(Duration::from_secs(1), late.draining())
            .await
            .expect("a late watch is draining at once");
        drop(late);
        tokio::time::timeout(Duration::from_secs(5), drain.finished())
            .await
            .expect("finished once both are gone");
        waiter.await.unwrap();
        assert!(drain.lock().is_empty());
    }
}
