//! Measures `GET /history` over a full retention window: 720 sealed hours of 3000 IDs
//! each (the default capacity and retention), answered in-process through the real
//! router (auth, handler, service, JSON), so the figure is server-side time only.
//!
//! Prints the first (cold: every hour rendered and decoded once) request's time, then the
//! median and worst of 50 warm requests for 1 ID and for 100 IDs.
//!
//! ```sh no-run
//! cargo run --release --example history_720
//! ```

use axum::body::Body;
use axum::http::Request;
use bloomcast::bloom::Key;
use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::hour_of;
use bloomcast::startup::Application;
use chrono::Duration;
use http_body_util::BodyExt;
use std::sync::Arc;
use std::time::Instant;
use tower::ServiceExt;

const HOURS: i64 = 720;
const PER_HOUR: usize = 3000;
const TOKEN: &str = "history-bench-token";

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_owned(),
        ingest_tokens: vec![TOKEN.into()],
        refresh_ms: 0,
        ..Settings::default()
    };
    let clock = ManualClock::at(hour_of(2008, 9, 3, 0).unwrap(), Duration::minutes(1));
    let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
        .await
        .expect("the server builds");
    let service = app.service();
    let router = app.router();
    let seeding = Instant::now();
    for h in 0..HOURS {
        let keys: Vec<Key> = (0..PER_HOUR)
            .map(|i| Key::of(&format!("user:{}", h as usize * PER_HOUR + i)))
            .collect();
        service.ingest().add(&keys).await.unwrap();
        clock.advance(Duration::hours(1));
        service.tick().await.unwrap();
    }
    eprintln!(
        "seeded {HOURS} hours of {PER_HOUR} IDs in {:.1} s",
        seeding.elapsed().as_secs_f64()
    );
    let one = "/history?id=user:1234567".to_owned();
    let hundred = format!(
        "/history?{}",
        (0..100)
            .map(|i| format!("id=user:{}", i * 20_011))
            .collect::<Vec<_>>()
            .join("&")
    );
    let ask = |path: String| {
        let router = router.clone();
        async move {
            let started = Instant::now();
            let reply = router
                .oneshot(
                    Request::get(&path)
                        .header("authorization", format!("Bearer {TOKEN}"))
                        .body(Body::empty())
                        .unwrap(),
                )
                .await
                .unwrap();
            assert_eq!(reply.status(), 200);
            let body = reply.into_body().collect().await.unwrap().to_bytes();
            let took = started.elapsed().as_secs_f64() * 1e3;
            let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
            (took, doc)
        }
    };
    let (cold, doc) = ask(one.clone()).await;
    let hours = doc["ids"][0]["hours"].as_array().unwrap().len();
    println!("cold, 1 ID over {HOURS} hours: {cold:.1} ms ({hours} hours hold it)");
    for (label, path) in [("1 ID", one), ("100 IDs", hundred)] {
        let mut times = Vec::new();
        for _ in 0..50 {
            times.push(ask(path.clone()).await.0);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "warm, {label} over {HOURS} hours: median {:.2} ms, worst {:.2} ms",
            times[times.len() / 2],
            times[times.len() - 1]
        );
    }
}
