//! A publisher whose signing key was rotated twice, on a real socket with a clock the
//! test moves: hours 0 and 1 (from 2008-09-03T05) under key 1, hour 2 under key 2, hour
//! 3 under key 3, hour 4 open; ID `id{n}` in hour n. Each key is the seed `[n; 32]`.

use bloomcast::chain::{self, Signer};
use bloomcast::client::Client;
use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::startup::Application;
use chrono::Duration;
use std::path::Path;
use std::sync::Arc;

pub const TOKEN: &str = "rotation-test-token";

/// Hour `n` after 2008-09-03T05, the first hour served.
pub fn hour(n: i64) -> Hour {
    Hour::from_index(hour_of(2008, 9, 3, 5).unwrap().index() + n)
}

pub fn signer(seed: u8) -> Signer {
    Signer::from_seed(&[seed; 32])
}

pub struct Publisher {
    pub base: String,
    data_dir: std::path::PathBuf,
    stop: tokio::sync::oneshot::Sender<()>,
    done: tokio::task::JoinHandle<()>,
}

impl Publisher {
    /// Serves `data` signing with the key of `seed` (written to the key file first).
    pub async fn start(data: &Path, seed: u8, clock: &ManualClock) -> Publisher {
        let key_file = data.join("key");
        std::fs::write(&key_file, chain::hex(&[seed; 32])).unwrap();
        let data_dir = data.join("data");
        let settings = Settings {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: data_dir.clone(),
            ingest_tokens: vec![TOKEN.into()],
            refresh_ms: 0,
            signing_key_file: key_file,
            ..Settings::default()
        };
        let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
            .await
            .expect("the publisher starts");
        let base = format!("http://{}", app.local_addr());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let done = tokio::spawn(app.run_until(async {
            let _ = stopped.await;
        }));
        Publisher {
            base,
            data_dir,
            stop,
            done,
        }
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.done.await.unwrap();
        // The next publisher opens the same store beside whatever of this one's SQLite
        // connections are still closing (WAL mode takes several at once).
    }

    /// Ingests one ID into the open hour, moves the clock to the next hour and reads
    /// the hour just closed (which seals it).
    pub async fn fill_and_seal(&self, clock: &ManualClock, n: i64) {
        let http = reqwest::Client::new();
        let reply = http
            .post(format!("{}/updates", self.base))
            .bearer_auth(TOKEN)
            .json(&serde_json::json!({ "ids": [format!("id{n}")] }))
            .send()
            .await
            .unwrap();
        assert!(reply.status().is_success());
        clock.advance(Duration::hours(1));
        let sealed = self.get(&format!("{}.bin", hour(n).path())).await;
        assert_eq!(sealed.headers()["bloom-complete"], "true");
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        reqwest::get(format!("{}{path}", self.base)).await.unwrap()
    }

    pub async fn well_known(&self) -> serde_json::Value {
        self.get("/.well-known/bloomcast.json")
            .await
            .json()
            .await
            .unwrap()
    }
}

/// Rotates the publisher in `data` from the key of `old` to the key of `new`, as
/// `bloomcast rotate-key` does (the store records the new key from the hour after the
/// newest sealed one, vouched for by the old key and acknowledging it), with seeds a
/// test knows.
pub async fn rotate(data: &Path, old: u8, new: u8, clock: &ManualClock) {
    let settings = Settings {
        data_dir: data.join("data"),
        ..Settings::default()
    };
    let store = bloomcast::startup::open_store(&settings, clock)
        .await
        .unwrap();
    let genesis = store.genesis().await.unwrap();
    bloomcast::service::register_key(
        store.as_ref(),
        genesis,
        &signer(new),
        Some(&signer(old)),
        true,
    )
    .await
    .unwrap();
    drop(store);
}

/// Hours 0 and 1 under key 1, hour 2 under key 2, hour 3 under key 3 (hour 4 open);
/// returns the running publisher, a client's pin directory filled before the first
/// rotation, and hour 0's `.bin` signature and ETag as first served.
pub async fn rotated_twice(data: &Path, pins: &Path) -> (Publisher, String, String) {
    let clock = ManualClock::at(hour(0), Duration::minutes(1));
    let publisher = Publisher::start(data, 1, &clock).await;
    publisher.fill_and_seal(&clock, 0).await;
    publisher.fill_and_seal(&clock, 1).await;
    let first = publisher.get(&format!("{}.bin", hour(0).path())).await;
    let signature = first.headers()["bloom-signature"]
        .to_str()
        .unwrap()
        .to_owned();
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    pinned(&publisher.base, pins).hour(hour(1)).await.unwrap();
    publisher.stop().await;
    rotate(data, 1, 2, &clock).await;
    let publisher = Publisher::start(data, 2, &clock).await;
    publisher.fill_and_seal(&clock, 2).await;
    publisher.stop().await;
    rotate(data, 2, 3, &clock).await;
    let publisher = Publisher::start(data, 3, &clock).await;
    publisher.fill_and_seal(&clock, 3).await;
    (publisher, signature, etag)
}

/// A client pinning the publisher's keys in `pins` on first use.
pub fn pinned(base: &str, pins: &Path) -> Client {
    Client::builder(base)
        .cache_dir(pins)
        .pin_on_first_use()
        .build()
        .unwrap()
}
