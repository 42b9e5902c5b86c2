//! Shared test harness: the real router over a real embedded store in a temporary
//! directory, with a clock the tests move by hand.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::service::Service;
use bloomcast::startup::Application;
use chrono::Duration;
use http_body_util::BodyExt;
use std::path::PathBuf;
use std::sync::Arc;
use tempfile::TempDir;
use tower::ServiceExt;

pub const TOKEN: &str = "test-token-0123456789";

/// The hour tests start in: the seed's example.
pub fn start_hour() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

pub struct TestApp {
    pub router: axum::Router,
    pub clock: ManualClock,
    pub service: Arc<Service>,
    pub settings: Settings,
    /// Kept alive for the app's life; `None` when the directory belongs to the caller.
    _dir: Option<Arc<TempDir>>,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts `Repr-Digest` is the digest of the body as sent (the gzip bytes when gzip
    /// was sent).
    pub fn assert_digest_of_body(&self, context: &str) {
        assert_eq!(
            self.header("repr-digest"),
            Some(bloomcast::chain::repr_digest(&self.body).as_str()),
            "{context}"
        );
    }

    /// Asserts the status, showing the body when it is another.
    pub fn assert_status(&self, status: u16) {
        assert_eq!(
            self.status.as_u16(),
            status,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
    }

    /// Asserts a JSON error body with this `error` code and a non-empty message.
    pub fn assert_error(&self, status: u16, code: &str) {
        self.assert_status(status);
        let json = self.json();
        assert_eq!(json["error"], code, "{json}");
        assert!(
            json["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{json}"
        );
    }
}

pub fn settings(data_dir: PathBuf) -> Settings {
    Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir,
        ingest_tokens: vec![TOKEN.into()],
        refresh_ms: 0,
        ..Settings::default()
    }
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        TestApp::spawn_with(|_| {}).await
    }

    pub async fn spawn_with(tweak: impl FnOnce(&mut Settings)) -> TestApp {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let clock = ManualClock::at(start_hour(), Duration::minutes(10));
        let mut s = settings(dir.path().to_owned());
        tweak(&mut s);
        TestApp::build(s, clock, Some(dir)).await
    }

    pub async fn build(
        settings: Settings,
        clock: ManualClock,
        dir: Option<Arc<TempDir>>,
    ) -> TestApp {
        let app = Application::build_with_clock(settings.clone(), Arc::new(clock.clone()))
            .await
            .expect("app builds");
        // As a load balancer would: traffic once /healthz says the open hour is loaded.
        app.service().wait_loaded().await;
        TestApp::of(app, settings, clock, dir)
    }

    /// An app over a given store (wrapped for fault injection), with its clock; it may
    /// still be loading the open hour when this returns.
    pub async fn build_with_store(
        settings: Settings,
        clock: ManualClock,
        store: Arc<dyn bloomcast::store::Store>,
        dir: Option<Arc<TempDir>>,
    ) -> TestApp {
        let app = Application::build_with(settings.clone(), Arc::new(clock.clone()), store)
            .await
            .expect("app builds");
        TestApp::of(app, settings, clock, dir)
    }

    fn of(
        app: Application,
        settings: Settings,
        clock: ManualClock,
        dir: Option<Arc<TempDir>>,
    ) -> TestApp {
        TestApp {
            router: app.router(),
            service: app.service(),
            clock,
            settings,
            _dir: dir,
        }
    }

    /// A new app over the same data directory and clock, as after a restart.
    pub async fn restart(self) -> TestApp {
        let TestApp {
            settings,
            clock,
            _dir,
            router,
            service,
            ..
        } = self;
        drop(router);
        drop(service);
        // The old store may still be closing (its writer thread sees its channel close
        // in its own time): SQLite lets the new one open the file meanwhile.
        TestApp::build(settings, clock, _dir).await
    }

    pub async fn request(&self, req: Request<Body>) -> Reply {
        let response = self.router.clone().oneshot(req).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.get_with(path, &[]).await
    }

    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut req = Request::get(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.request(req.body(Body::empty()).unwrap()).await
    }

    pub async fn post_raw(
        &self,
        content_type: Option<&str>,
        token: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let mut req = Request::post("/updates");
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        self.request(req.body(Body::from(body)).unwrap()).await
    }

    /// Ingests IDs as JSON with the valid token, asserting success.
    pub async fn ingest(&self, ids: &[&str]) -> serde_json::Value {
        let body = serde_json::to_vec(&serde_json::json!({ "ids": ids })).unwrap();
        let reply = self
            .post_raw(Some("application/json"), Some(TOKEN), body)
            .await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        reply.json()
    }

    /// Moves the clock into the next hour and runs housekeeping as the timer would.
    pub async fn next_hour(&self) {
        self.clock.advance(Duration::hours(1));
        self.service.tick().await.unwrap();
    }

    /// Ingests `ids` in batches of 500, asserting each succeeds.
    pub async fn ingest_all(&self, ids: &[String]) {
        for chunk in ids.chunks(500) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            self.ingest(&refs).await;
        }
    }

    /// Registers `ids` as (part of) the publisher's universe, asserting success.
    pub async fn post_universe(&self, ids: &[String]) {
        let body = serde_json::to_vec(&serde_json::json!({ "ids": ids })).unwrap();
        let req = Request::post("/universe")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Body::from(body))
            .unwrap();
        let reply = self.request(req).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
    }

    /// The value of the unlabelled series `name` in `/metrics`.
    pub async fn metric(&self, name: &str) -> i64 {
        let text = String::from_utf8(self.get("/metrics").await.body).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
            .parse()
            .unwrap()
    }

    /// A connection to the store's file from outside the store, as damage would come.
    pub fn db(&self) -> rusqlite::Connection {
        let path = self.settings.data_dir.join("bloomcast.sqlite3");
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        conn
    }

    /// Runs SQL on the store's file from outside the store.
    pub fn tamper(&self, sql: &str) {
        self.db().execute_batch(sql).unwrap();
    }

    /// The parsed filter at `path` (JSON).
    pub async fn filter(&self, path: &str) -> (bloomcast::wire::Meta, bloomcast::bloom::Filter) {
        let reply = self.get(path).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{path}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        bloomcast::wire::Document::parse(&reply.body).unwrap()
    }
}

/// `n` IDs named `prefix:0`, `prefix:1`, ...
pub fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

pub fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}
