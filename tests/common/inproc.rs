//! A server run in the test's own process on a real socket, with a clock the test moves:
//! for client tests that need time to pass without sleeping.

use bloomcast::clock::ManualClock;
use bloomcast::config::{ListenAddr, Settings};
use bloomcast::hour::Hour;
use bloomcast::startup::Application;
use chrono::Duration;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;

/// The server; it stops when dropped.
pub struct InProcess {
    pub base: String,
    pub clock: ManualClock,
    _stop: oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

/// Serves on `listen` over a fresh data dir, accepting `token`, with the clock a minute
/// into `start`; `tweak` adjusts the settings first.
pub async fn serve(
    listen: SocketAddr,
    token: &str,
    start: Hour,
    tweak: impl FnOnce(&mut Settings),
) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings {
        listen: ListenAddr::from(listen),
        data_dir: dir.path().to_owned(),
        ingest_tokens: vec![token.into()],
        refresh_ms: 0,
        ..Settings::default()
    };
    tweak(&mut settings);
    let clock = ManualClock::at(start, Duration::minutes(1));
    let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
        .await
        .expect("the server builds");
    let base = format!("http://{}", app.local_addr());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    InProcess {
        base,
        clock,
        _stop: stop,
        _dir: dir,
    }
}

impl InProcess {
    /// Runs SQL on the server's SQLite file from outside the server, as damage would.
    pub fn tamper(&self, sql: &str) {
        let conn = rusqlite::Connection::open(self._dir.path().join("bloomcast.sqlite3")).unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        conn.execute_batch(sql).unwrap();
    }
}
