//! Starting in cluster mode while PostgreSQL cannot be reached (not up yet, restarting,
//! the network not there): the node listens at once, answers every request 503 (ingest
//! and filters `store_unavailable` with `Retry-After`, `/healthz` `unavailable` with the
//! reason) but `/metrics` (`bloomcast_store_up 0`), and tries to connect again with backoff until it can; then it starts as
//! usual on the same socket. A refusal that waiting cannot cure (a certificate, a
//! password, a `pg_hba.conf` rule, a schema that is not bloomcast's) still stops the
//! start, naming its cause.

use super::{open_store, StartError};
use crate::clock::Clock;
use crate::config::Settings;
use crate::store::{full_message, PgStore, Store, StoreError};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

/// The first wait before connecting again; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between two attempts to connect.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Whether a store that failed to open is one to wait for in standby: cluster mode, and
/// PostgreSQL unreachable for a reason that may pass by itself.
pub(super) fn worth_waiting(settings: &Settings, error: &StoreError) -> bool {
    use secrecy::ExposeSecret;
    !settings.database_url.expose_secret().is_empty() && PgStore::may_come_up(error)
}

/// Answers on `listener` while connecting again with backoff; returns the store once
/// connected. A connection the standby accepted gets its one answer and is closed, so
/// none is left to it once the service serves the socket. Fails when a later attempt
/// fails for a reason waiting cannot cure.
///
/// # Errors
/// As [`open_store`], for an error that is not worth waiting out.
pub(super) async fn wait_for_store(
    settings: &Settings,
    clock: &dyn Clock,
    listener: &TcpListener,
    first: StoreError,
) -> Result<Arc<dyn Store>, StartError> {
    let reason = Arc::new(Mutex::new(full_message(&first)));
    tracing::warn!(
        addr = %listener.local_addr().map_or_else(|e| e.to_string(), |a| a.to_string()),
        error = %full_message(&first),
        "bloomcast listening in standby: PostgreSQL cannot be reached; answering 503 and \
         connecting again with backoff"
    );
    let answering = answer_503(
        listener,
        reason.clone(),
        settings.header_read_timeout_seconds,
    );
    tokio::pin!(answering);
    let mut delay = FIRST_BACKOFF;
    let mut attempts = 1u64;
    loop {
        tokio::select! {
            () = &mut answering => unreachable!("the standby answers until dropped"),
            () = tokio::time::sleep(delay) => {}
        }
        attempts += 1;
        // Connecting runs beside the answers, so a slow attempt (a link that does not
        // answer, up to the connect timeout) never leaves a request unanswered.
        let opened = tokio::select! {
            () = &mut answering => unreachable!("the standby answers until dropped"),
            opened = open_store(settings, clock) => opened,
        };
        match opened {
            Ok(store) => {
                tracing::info!(attempts, "PostgreSQL reached: leaving standby");
                return Ok(store);
            }
            Err(StartError::Store(e)) if worth_waiting(settings, &e) => {
                let why = full_message(&e);
                delay = (delay * 2).min(MAX_BACKOFF);
                tracing::warn!(attempts, retry_in = ?delay, error = %why, "PostgreSQL still cannot be reached");
                *crate::sync::lock(&reason) = why;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Accepts connections on `listener` and answers one request on each: the `/healthz`
/// document says `unavailable` and why (503), `/metrics` says the store is down (200),
/// everything else is the `store_unavailable` error with `Retry-After`. Never resolves.
async fn answer_503(listener: &TcpListener, reason: Arc<Mutex<String>>, head_secs: u64) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(head_secs))
        .keep_alive(false);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let reason = reason.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let why = crate::sync::lock(&reason).clone();
            let response = answer(request.uri().path(), why);
            async move { Ok::<_, Infallible>(response) }
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}

fn answer(path: &str, why: String) -> Response {
    match path {
        "/healthz" => {}
        "/metrics" => return crate::http::standby_metrics(),
        _ => return crate::http::store_unavailable(),
    }
    let report = serde_json::json!({
        "status": "unavailable",
        "reason": format!("starting: cannot connect to PostgreSQL yet (retrying with backoff): {why}"),
    });
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CACHE_CONTROL, "no-store")],
        Json(report),
    )
        .into_response()
}
