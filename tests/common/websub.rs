//! A WebSub subscriber for tests: a small HTTP server on loopback that answers the hub's
//! verifications of intent (echoing the challenge while it confirms) and records each
//! verification and delivery.

#![allow(dead_code)]

use super::wait::HANG;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::Router;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// What the subscriber saw.
#[derive(Debug)]
pub enum Seen {
    /// A verification of intent: its query.
    Verify(HashMap<String, String>),
    /// A delivery: its headers and body.
    Delivery(HeaderMap, String),
}

/// The subscriber: echoes challenges when `confirm`, records everything.
pub struct Subscriber {
    pub url: String,
    /// Whether it echoes challenges now.
    pub confirm: Arc<std::sync::atomic::AtomicBool>,
    seen: mpsc::UnboundedReceiver<Seen>,
    _task: tokio::task::JoinHandle<()>,
}

impl Subscriber {
    pub async fn start(confirm: bool) -> Subscriber {
        let (tx, seen) = mpsc::unbounded_channel();
        let tx = Arc::new(Mutex::new(tx));
        let confirming = Arc::new(std::sync::atomic::AtomicBool::new(confirm));
        let confirm = confirming.clone();
        let app = Router::new()
            .route(
                "/cb",
                get(
                    move |State(tx): State<Arc<Mutex<mpsc::UnboundedSender<Seen>>>>,
                          Query(q): Query<HashMap<String, String>>| async move {
                        let challenge = q.get("hub.challenge").cloned().unwrap_or_default();
                        tx.lock().unwrap().send(Seen::Verify(q)).unwrap();
                        if confirm.load(std::sync::atomic::Ordering::SeqCst) {
                            (StatusCode::OK, challenge)
                        } else {
                            (StatusCode::NOT_FOUND, String::new())
                        }
                    },
                )
                .post(
                    |State(tx): State<Arc<Mutex<mpsc::UnboundedSender<Seen>>>>,
                     headers: HeaderMap,
                     body: String| async move {
                        tx.lock()
                            .unwrap()
                            .send(Seen::Delivery(headers, body))
                            .unwrap();
                        StatusCode::NO_CONTENT
                    },
                ),
            )
            .with_state(tx);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/cb", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Subscriber {
            url,
            confirm: confirming,
            seen,
            _task: task,
        }
    }

    pub async fn next(&mut self) -> Seen {
        tokio::time::timeout(HANG, self.seen.recv())
            .await
            .expect("the hub called back within a minute")
            .unwrap()
    }
}
