//! Starting in cluster mode while PostgreSQL cannot be reached (not up yet, restarting,
//! the network not there): the node listens at once, answers every request 503 (ingest
//! and filters `store_unavailable` with `Retry-After`, `/healthz` `unavailable` with the
//! reason) but `/metrics` (`bloomcast_store_up 0`), and tries to connect again with
//! backoff until it can; then it starts as usual on the same socket. A refusal that waiting cannot cure (a certificate, a
//! password, a `pg_hba.conf` rule, a schema that is not bloomcast's) still stops the
//! start, naming its cause.

use super::{open_store, StartError};
use crate::clock::Clock;
use crate::config::Settings;
use crate::server::ConnLimits;
use crate::store::{full_message, PgStore, Store, StoreError};
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
/// connected, after the standby's connections have finished their requests (the service
/// then serves the socket). The standby is the same application stack as the service's
/// ([`crate::http::standby_app`]) served by the same loop, so it has the same CORS,
/// timeouts and connection limits. Fails when a later attempt fails for a reason
/// waiting cannot cure.
///
/// # Errors
/// As [`open_store`], for an error that is not worth waiting out.
pub(super) async fn wait_for_store(
    settings: &Settings,
    clock: &dyn Clock,
    listener: &TcpListener,
    limits: ConnLimits,
    first: StoreError,
) -> Result<Arc<dyn Store>, StartError> {
    let reason = Arc::new(Mutex::new(full_message(&first)));
    tracing::warn!(
        addr = %listener.local_addr().map_or_else(|e| e.to_string(), |a| a.to_string()),
        error = %full_message(&first),
        "bloomcast listening in standby: PostgreSQL cannot be reached; answering 503 and \
         connecting again with backoff"
    );
    let app = crate::http::standby_app(
        Arc::new(crate::http::Metrics::default()),
        settings.access_log,
        Duration::from_secs(settings.request_timeout_seconds),
        {
            let reason = reason.clone();
            move || crate::sync::lock(&reason).clone()
        },
    );
    let (connected_tx, connected_rx) = tokio::sync::oneshot::channel::<()>();
    let answering = crate::server::serve(listener, app, limits, async {
        let _ = connected_rx.await;
    });
    tokio::pin!(answering);
    let connecting = connect_with_backoff(settings, clock, reason);
    tokio::pin!(connecting);
    let store = tokio::select! {
        () = &mut answering => unreachable!("the standby answers until told to stop"),
        store = &mut connecting => store?,
    };
    let _ = connected_tx.send(());
    answering.await;
    Ok(store)
}

/// Opens the store, trying again with backoff while it is worth waiting for; `reason`
/// says why it cannot yet.
async fn connect_with_backoff(
    settings: &Settings,
    clock: &dyn Clock,
    reason: Arc<Mutex<String>>,
) -> Result<Arc<dyn Store>, StartError> {
    let mut delay = FIRST_BACKOFF;
    let mut attempts = 1u64;
    loop {
        tokio::time::sleep(delay).await;
        attempts += 1;
        match open_store(settings, clock).await {
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
