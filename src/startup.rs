//! Building and running the server: bind (port 0 works), open the store (in cluster
//! mode, answering 503 in standby until PostgreSQL can be reached), serve until told to
//! stop, then drain within a deadline.

mod shape;
mod signing;
mod standby;

use crate::chain::KeyId;
use crate::clock::{Clock, OffsetClock, SystemClock, TimeSource};
use crate::config::{ConfigError, Settings};
use crate::http::{router, AppState, Auth, EventSettings, Events, Hub, HubSettings, Metrics};
use crate::server::{self, ConnLimits};
use crate::service::{Service, ServiceError, Tuning};
use crate::store::{LinkError, PgLink, PgStore, SqliteStore, Store, StoreError};
use axum::Router;
use secrecy::{ExposeSecret, SecretString};
pub use shape::{set_cluster, ClusterShape};
pub use signing::{
    record_key, rotate as rotate_key, rotate_recorded as rotate_key_recorded, Rotated,
    KEY_FILE as SIGNING_KEY_FILE,
};
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use tokio::net::TcpListener;
use tokio::sync::watch;

#[derive(Debug, Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// Cluster mode: this node's signing key is not recorded in the cluster's registry
    /// while another key is the current one (a copy of the wrong key file, or a key made
    /// on this node alone). Never registered silently: the node would retire the key
    /// every other node signs with.
    #[error("this node's signing key {ours} is not the cluster's: the current key recorded in PostgreSQL is {cluster}. Install the cluster's key file (the one whose key id is {cluster}) as signing_key_file, or run `bloomcast rotate-key` to make a new key the cluster's current one")]
    ForeignKey { ours: KeyId, cluster: KeyId },
    /// Cluster mode: the cluster signs its hours (a current key is recorded) and this node
    /// has no key file configured; it would seal hours unsigned beside signed ones.
    #[error("the cluster signs its hours with key {cluster} (recorded in PostgreSQL) but this node has no signing key: it would publish unsigned hours. Copy the cluster's key file (the one whose key id is {cluster}, e.g. from another node) to this node and name it in signing_key_file (BLOOMCAST_SIGNING_KEY_FILE), as every node of the cluster does")]
    NoKey { cluster: KeyId },
    /// Cluster mode: this node has a key but the cluster records none and has sealed
    /// hours, unsigned: nodes without a key file serve it and would keep sealing
    /// unsigned hours beside this one's. Making a key the cluster's is done on purpose.
    #[error("the cluster records no signing key and has published unsigned hours (sealed through {sealed_through}): this node's key {ours} is not made the cluster's by a start, as nodes still running without a key file would go on sealing unsigned hours beside its signed ones. To sign the cluster, run `bloomcast rotate-key` with this node's configuration (it records the key in signing_key_file for the cluster), then restart every node with that key file")]
    UnsignedCluster {
        ours: KeyId,
        sealed_through: crate::hour::Hour,
    },
    /// Shown with its cause by [`crate::store::full_message`], as `bloomcast serve` does.
    #[error("{context}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

/// A bound, ready-to-run server.
pub struct Application {
    listener: TcpListener,
    state: AppState,
    limits: ConnLimits,
    shutdown_timeout: Duration,
}

impl Application {
    /// Builds the server from settings with the system clock (shifted by
    /// `clock_offset_seconds` when that is set). In cluster mode the service runs on
    /// PostgreSQL's clock, this machine's only checked against it.
    ///
    /// # Errors
    /// The store cannot be opened, the token file cannot be written, or the address
    /// cannot be bound. In cluster mode, PostgreSQL out of reach is no error: the port
    /// answers 503 meanwhile and this returns once it connects (`startup::standby`).
    pub async fn build(settings: Settings) -> Result<Application, StartError> {
        let clock: Arc<dyn Clock> = match settings.clock_offset_seconds {
            0 => Arc::new(SystemClock),
            offset => {
                tracing::warn!(
                    offset_seconds = offset,
                    "clock_offset_seconds is set: this server's clock is shifted (testing only)"
                );
                Arc::new(OffsetClock::new(offset))
            }
        };
        Application::build_on(settings, clock, TimeSource::Store).await
    }

    /// As [`Application::build`] with a given clock (tests move time by hand): the one
    /// clock the service runs on, in cluster mode too (it stands for PostgreSQL's).
    ///
    /// # Errors
    /// As [`Application::build`].
    pub async fn build_with_clock(
        settings: Settings,
        clock: Arc<dyn Clock>,
    ) -> Result<Application, StartError> {
        Application::build_on(settings, clock, TimeSource::Clock).await
    }

    async fn build_on(
        settings: Settings,
        clock: Arc<dyn Clock>,
        source: TimeSource,
    ) -> Result<Application, StartError> {
        cluster_tokens(&settings)?;
        let listener = bind(&settings).await?;
        let store = match open_store(&settings, clock.as_ref()).await {
            Ok(store) => store,
            Err(StartError::Store(first)) if standby::worth_waiting(&settings, &first) => {
                let limits = conn_limits(&settings);
                standby::wait_for_store(&settings, clock.as_ref(), &listener, limits, first).await?
            }
            Err(e) => return Err(e),
        };
        Application::assemble(settings, clock, source, store, listener).await
    }

    /// As [`Application::build_with_clock`] with a given store.
    ///
    /// # Errors
    /// As [`Application::build`].
    pub async fn build_with(
        settings: Settings,
        clock: Arc<dyn Clock>,
        store: Arc<dyn Store>,
    ) -> Result<Application, StartError> {
        let listener = bind(&settings).await?;
        Application::assemble(settings, clock, TimeSource::Clock, store, listener).await
    }

    async fn assemble(
        settings: Settings,
        clock: Arc<dyn Clock>,
        source: TimeSource,
        store: Arc<dyn Store>,
        listener: TcpListener,
    ) -> Result<Application, StartError> {
        let tokens = ingest_tokens(&settings)?;
        let signer = signing::signer(&settings)?;
        if !settings.database_url.expose_secret().is_empty() {
            signing::refuse_foreign_key(store.as_ref(), signer.as_ref()).await?;
        }
        let shape = shape::follow_cluster(&settings, store.as_ref(), clock.current_hour()).await?;
        let tuning = Tuning {
            capacity: shape.capacity,
            target_fpp: shape.target_fpp,
            retention_hours: settings.retention_hours,
            cache_bytes: settings.cache_bytes,
            refresh: Duration::from_millis(settings.refresh_ms),
            max_hour_ids: settings.max_hour_ids,
            max_universe_ids: settings.max_universe_ids,
            union_builds: settings.union_builds,
            clock_jump_tolerance: Duration::from_secs(settings.clock_jump_tolerance_seconds),
            clock_jump_confirm: Duration::from_secs(settings.clock_jump_confirm_seconds),
            signer,
            delta_bytes: settings.delta_bytes,
            delta_every: Duration::from_secs(settings.open_max_age),
            delta_ids: settings.delta_ids,
            dictionary_max_age: Duration::from_secs(settings.dictionary_max_age),
            scrub_pass: Duration::from_secs(settings.scrub_pass_seconds),
            followers: settings.events_max_subscribers as u64,
        };
        let hub = Arc::new(Hub::new(
            HubSettings {
                max_subscriptions: settings.websub_max_subscriptions,
                max_lease: Duration::from_secs(settings.websub_max_lease_seconds),
                deliveries: settings.websub_deliveries,
                callback_networks: settings.websub_callback_networks.clone(),
                ..HubSettings::default()
            },
            store.clone(),
            clock.clone(),
        ));
        let service = Arc::new(Service::new(store, clock, source, tuning).await?);
        // Seal whatever closed while the server was down and load the open hour, in the
        // background: the port opens at once and `/healthz` says `loading` meanwhile.
        tokio::spawn({
            let service = service.clone();
            async move { service.load().await }
        });
        let followers = service.split().followers_admitted() as usize;
        let state = AppState {
            service,
            auth: Arc::new(Auth::new(&tokens)),
            metrics: Arc::new(Metrics::default()),
            body_limit: settings.body_limit,
            open_max_age: settings.open_max_age,
            request_timeout: Duration::from_secs(settings.request_timeout_seconds),
            ingest_permits: Arc::new(tokio::sync::Semaphore::new(settings.ingest_concurrency)),
            access_log: settings.access_log,
            events: Arc::new(Events::new(EventSettings {
                // As many as the budget's followers' part holds.
                max_subscribers: followers,
                heartbeat: Duration::from_secs(settings.events_heartbeat_seconds),
                resume_hours: settings.events_resume_hours.min(settings.retention_hours),
                ..EventSettings::default()
            })),
            hub,
        };
        Ok(Application {
            listener,
            state,
            limits: conn_limits(&settings),
            shutdown_timeout: Duration::from_secs(settings.shutdown_timeout),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    pub fn port(&self) -> u16 {
        self.local_addr().port()
    }

    pub fn service(&self) -> Arc<Service> {
        self.state.service.clone()
    }

    /// The router, for in-process tests (`tower::ServiceExt::oneshot`).
    pub fn router(&self) -> Router {
        router(self.state.clone())
    }

    /// Serves until `shutdown` resolves, then stops accepting, lets in-flight requests
    /// finish (at most the configured shutdown timeout) and stops housekeeping and the
    /// heartbeat.
    /// Accept errors (out of file descriptors and the like) are logged and retried,
    /// so serving itself cannot fail.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let stopped = move |mut rx: watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        let housekeeping = tokio::spawn(
            self.state
                .service
                .clone()
                .run_housekeeping(stopped(stop_rx.clone())),
        );
        tokio::spawn(
            self.state
                .service
                .clone()
                .run_scrub(stopped(stop_rx.clone())),
        );
        // Every grade of the newest sealed hour, built in the background.
        tokio::spawn(
            self.state
                .service
                .clone()
                .run_warming(stopped(stop_rx.clone())),
        );
        // The heartbeat: /healthz turns ok by itself once writes succeed again, and the
        // clock record a restart checks against stays fresh, with nobody asking.
        tokio::spawn(
            self.state
                .service
                .clone()
                .run_heartbeats(stopped(stop_rx.clone())),
        );
        // Other nodes' writes, told to this node's event streams as they commit.
        tokio::spawn(
            self.state
                .service
                .clone()
                .run_change_feed(stopped(stop_rx.clone())),
        );
        // The WebSub hub: each sealed hour delivered to its subscribers, leases kept.
        tokio::spawn(
            self.state
                .hub
                .clone()
                .run(self.state.service.clone(), stopped(stop_rx.clone())),
        );
        // Rates for /stats and the dashboard: sample the counters off the request path.
        tokio::spawn(crate::http::run_sampler(
            self.state.metrics.clone(),
            stopped(stop_rx.clone()),
        ));
        let events = self.state.events.clone();
        tokio::spawn(async move {
            shutdown.await;
            tracing::info!("shutting down: draining in-flight requests");
            // Event streams never end by themselves: they end now, so the drain does.
            events.close();
            let _ = stop_tx.send(true);
        });
        tracing::info!(addr = %self.local_addr(), "bloomcast listening");
        if !self.state.access_log {
            tracing::info!("no line per request: set access_log = true (BLOOMCAST_ACCESS_LOG=true) for an access log");
        }
        let app = crate::http::app(self.state.clone());
        let server = server::serve(self.listener, app, self.limits, stopped(stop_rx.clone()));
        let deadline = {
            let timeout = self.shutdown_timeout;
            let rx = stop_rx.clone();
            async move {
                stopped(rx).await;
                tokio::time::sleep(timeout).await;
            }
        };
        tokio::select! {
            () = server => {}
            () = deadline => {
                tracing::warn!("shutdown timeout reached; closing remaining connections");
            }
        }
        let _ = housekeeping.await;
        tracing::info!("stopped");
    }
}

/// How the configured server serves its connections.
fn conn_limits(settings: &Settings) -> ConnLimits {
    ConnLimits {
        header_read_timeout: Duration::from_secs(settings.header_read_timeout_seconds),
        write_timeout: Duration::from_secs(settings.write_timeout_seconds),
        max_connections: settings.max_connections,
    }
}

/// Binds the configured address; a host name is resolved and the first of its addresses
/// that can be bound is used.
async fn bind(settings: &Settings) -> Result<TcpListener, StartError> {
    TcpListener::bind(settings.listen.as_str())
        .await
        .map_err(|source| StartError::Io {
            context: format!("cannot listen on {}", settings.listen),
            source,
        })
}

/// Opens the configured store: PostgreSQL when a database URL is set, else the embedded one.
///
/// # Errors
/// The store cannot be opened.
pub async fn open_store(
    settings: &Settings,
    clock: &dyn Clock,
) -> Result<Arc<dyn Store>, StartError> {
    let now = clock.current_hour();
    let database_url = settings.database_url.expose_secret();
    if !database_url.is_empty() {
        let ca = &settings.database_ca_file;
        let link = PgLink::new(database_url, ca)?;
        let other = |setting, url: &SecretString| {
            let url = url.expose_secret();
            (!url.is_empty())
                .then(|| PgLink::of_setting(setting, url, ca))
                .transpose()
        };
        let (listen, read) = (
            other("database_listen_url", &settings.database_listen_url)?,
            other("database_read_url", &settings.database_read_url)?,
        );
        let (mode, ca_file) = (link.mode(), link.ca_file().map(|p| p.display().to_string()));
        let mut store = PgStore::connect(link, &settings.database_schema, now)
            .await?
            .with_call_timeout(Duration::from_millis(settings.database_timeout_ms));
        if let Some(link) = listen {
            store = store.listening_over(link);
        }
        if let Some(link) = read {
            store = store.reading_from(link)?;
        }
        tracing::info!(
            schema = %settings.database_schema,
            sslmode = ?mode,
            ca_file = ca_file.as_deref().unwrap_or("none"),
            read_replicas = !settings.database_read_url.expose_secret().is_empty(),
            "PostgreSQL store connected"
        );
        return Ok(Arc::new(store));
    }
    let dir = settings.data_dir.clone();
    let queue = settings.write_queue_depth;
    let store = tokio::task::spawn_blocking(move || SqliteStore::open_with(&dir, now, queue))
        .await
        .map_err(|e| StoreError::failed("opening the store panicked", e))??;
    tracing::info!(dir = %settings.data_dir.display(), "embedded store opened");
    Ok(Arc::new(store))
}

/// The configured tokens, or the one kept in the data dir (generated on first start),
/// so that ingest is never open to everyone. Cluster mode needs them configured: only a
/// server does, so the cluster commands (`cluster-settings`, `rotate-key`) run with the
/// database settings alone.
fn ingest_tokens(settings: &Settings) -> Result<Vec<String>, StartError> {
    if !settings.ingest_tokens.is_empty() {
        return Ok(settings
            .ingest_tokens
            .iter()
            .map(|t| t.expose_secret().to_owned())
            .collect());
    }
    cluster_tokens(settings)?;
    let path = settings.data_dir.join("ingest-token");
    let io = |context: String| move |source| StartError::Io { context, source };
    match std::fs::read_to_string(&path) {
        Ok(token) if !token.trim().is_empty() => {
            tracing::info!(file = %path.display(), "using the ingest token kept in the data dir");
            return Ok(vec![token.trim().to_owned()]);
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(format!("cannot read {}", path.display()))(e)),
    }
    let token = generate_token();
    std::fs::create_dir_all(&settings.data_dir)
        .map_err(io(format!("cannot create {}", settings.data_dir.display())))?;
    write_private(&path, &token).map_err(io(format!("cannot write {}", path.display())))?;
    tracing::warn!(
        file = %path.display(),
        "no ingest token configured (BLOOMCAST_INGEST_TOKENS): generated one and saved it in this file"
    );
    Ok(vec![token])
}

/// Refuses cluster mode without configured ingest tokens: a token generated per node
/// would make ingest depend on which node answers. Checked before anything else a
/// server does, so a node does not wait for PostgreSQL only to refuse.
fn cluster_tokens(settings: &Settings) -> Result<(), StartError> {
    if settings.ingest_tokens.is_empty() && !settings.database_url.expose_secret().is_empty() {
        return Err(StartError::Config(ConfigError::Invalid {
            name: "ingest_tokens",
            message: "cluster mode (database_url set) needs the same ingest tokens on every \
                      node: set BLOOMCAST_INGEST_TOKENS"
                .into(),
        }));
    }
    Ok(())
}

fn generate_token() -> String {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).expect("the OS provides randomness");
    crate::bloom::to_hex(&bytes)
}

fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_server_needs_configured_tokens_and_a_single_node_does_not() {
        let cluster = Settings {
            database_url: "postgres://db/bloom".into(),
            ..Settings::default()
        };
        let err = cluster_tokens(&cluster).unwrap_err().to_string();
        assert!(err.contains("BLOOMCAST_INGEST_TOKENS"), "{err}");
        let tokens = Settings {
            ingest_tokens: vec!["12345678".into()],
            ..cluster
        };
        assert!(cluster_tokens(&tokens).is_ok());
        assert!(cluster_tokens(&Settings::default()).is_ok());
    }
}
