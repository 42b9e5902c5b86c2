//! Cluster-mode nodes for tests: in-process servers on a real socket over a PostgreSQL
//! schema of the test's own, with a clock the test moves.

use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::startup::Application;
use std::path::PathBuf;
use std::sync::Arc;

/// A schema name no other test uses.
pub fn unique_schema() -> String {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).unwrap();
    format!("bc_test_{}", bloomcast::bloom::to_hex(&bytes))
}

/// A plain client of the PostgreSQL at `url`, for a test's own statements.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"));
    tokio::spawn(conn);
    client
}

/// Drops a test's schema (best effort: a test that failed may have left it half made).
/// A node still running may take its locks in another order than the drop: a deadlock
/// the server breaks by failing one of the two, so the drop is tried again.
pub async fn drop_schema(url: &str, schema: &str) {
    if let Ok((client, conn)) = tokio_postgres::connect(url, tokio_postgres::NoTls).await {
        tokio::spawn(conn);
        for _ in 0..5 {
            let dropped = client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                .await;
            if dropped.is_ok() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

/// A node's settings: cluster mode on `url` and `schema`, the test token, any port.
pub fn node_settings(url: &str, schema: &str, dir: PathBuf) -> Settings {
    Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir,
        ingest_tokens: vec![super::TOKEN.into()],
        database_url: url.into(),
        database_schema: schema.into(),
        refresh_ms: 0,
        ..Settings::default()
    }
}

/// [`node_settings`] signing with the key of 32 bytes `seed`, in a key file of its own in
/// `dir`.
pub fn keyed_node_settings(url: &str, schema: &str, dir: &std::path::Path, seed: u8) -> Settings {
    let file = dir.join(format!("key-{seed}"));
    std::fs::write(&file, bloomcast::chain::hex(&[seed; 32])).unwrap();
    Settings {
        signing_key_file: file,
        ..node_settings(url, schema, dir.to_owned())
    }
}

/// An in-process node serving on a real socket; it stops when dropped.
pub struct Node {
    pub base: String,
    pub service: Arc<bloomcast::service::Service>,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: Option<tempfile::TempDir>,
}

/// Starts a node with `settings` (its start runs the migrations).
pub async fn node(settings: Settings, clock: &ManualClock) -> Node {
    try_node(settings, clock).await.expect("node starts")
}

/// As [`node`], or why it did not start (its port still taken, say).
pub async fn try_node(settings: Settings, clock: &ManualClock) -> Result<Node, String> {
    let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
        .await
        .map_err(|e| e.to_string())?;
    Ok(running(app))
}

/// A node as `bloomcast serve` builds it: on the system clock (shifted by the settings'
/// `clock_offset_seconds`) and running on PostgreSQL's, the cluster's time.
pub async fn node_on_real_time(settings: Settings) -> Node {
    running(Application::build(settings).await.expect("node starts"))
}

/// Serves `app` on its socket until the node is dropped.
fn running(app: Application) -> Node {
    let base = format!("http://{}", app.local_addr());
    let service = app.service();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    Node {
        base,
        service,
        _stop: stop,
        _dir: None,
    }
}

/// As [`node`], with the default node settings and a data dir of its own.
pub async fn node_in_own_dir(url: &str, schema: &str, clock: &ManualClock) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let mut node = node(node_settings(url, schema, dir.path().to_owned()), clock).await;
    node._dir = Some(dir);
    node
}
