//! What the background scrub costs: one pass over sealed hours on the embedded store, as
//! the server runs it (`Health::scrub_now`, the pass `run_scrub` spreads over
//! `scrub_pass_seconds`), timed in process CPU (user + system) against the bytes it read
//! back and verified.
//!
//! ```text
//! cargo bench --bench scrub            # HOURS=6 IDS=1000000 UNIVERSE=1000000 CHANGED=20000
//! ```
//!
//! Two stores, each with `HOURS` sealed hours: one of `IDS` IDs an hour (rows, chain links
//! and keys against the sealed filter), and one whose publisher registered a universe
//! of `UNIVERSE` IDs, `CHANGED` of them changing each hour (exact bodies checked against
//! the universe, whose rows are read and tallied for each hour too). It prints, per store,
//! the bytes verified, CPU seconds, CPU seconds per GB and per hour, and what that is at
//! the default pass (a day over the 720 hours of the default retention: one hour every
//! 120 s).

use bloomcast::bloom::Key;
use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::hour_of;
use bloomcast::startup::Application;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU time (user + system) this process has used.
fn cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes the whole struct for RUSAGE_SELF.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

struct Store {
    app: Application,
    clock: ManualClock,
    _dir: tempfile::TempDir,
}

async fn store(universe: usize) -> Store {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_owned(),
        ingest_tokens: vec!["bench-token-0123".into()],
        max_universe_ids: 10_000_000,
        cache_bytes: 2 << 30,
        ..Settings::default()
    };
    let start = hour_of(2008, 9, 3, 0).unwrap();
    let clock = ManualClock::at(start, chrono::Duration::minutes(10));
    let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
        .await
        .unwrap();
    app.service().wait_loaded().await;
    if universe > 0 {
        let keys: Vec<Key> = (0..universe)
            .map(|i| Key::of(&format!("user:{i}")))
            .collect();
        for chunk in keys.chunks(1 << 20) {
            app.service().ingest().add_to_universe(chunk).await.unwrap();
        }
    }
    Store {
        app,
        clock,
        _dir: dir,
    }
}

/// Seals `hours` hours of `ids(hour)` each.
async fn fill(store: &Store, hours: usize, ids: impl Fn(usize) -> Vec<Key>) {
    let service = store.app.service();
    for hour in 0..hours {
        for chunk in ids(hour).chunks(100_000) {
            service.ingest().add(chunk).await.unwrap();
        }
        store.clock.advance(chrono::Duration::hours(1));
        service.tick().await.unwrap();
    }
}

async fn measure(name: &str, store: &Store) {
    let service = store.app.service();
    let (cpu0, wall0) = (cpu(), Instant::now());
    let report = service.health().scrub_now().await;
    let (cpu, wall) = (cpu() - cpu0, wall0.elapsed());
    assert_eq!(report.damage_found, 0, "an intact store");
    let gb = report.bytes as f64 / 1e9;
    let per_hour = cpu.as_secs_f64() / report.hours as f64;
    println!(
        "{name}: {} hours, {:.1} MB verified in {:.2} s CPU ({:.2} s wall): {:.1} CPU-s per GB, \
         {:.0} ms CPU per hour; at the default pass (an hour every 120 s) {:.2}% of one core",
        report.hours,
        report.bytes as f64 / 1e6,
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        cpu.as_secs_f64() / gb,
        per_hour * 1000.0,
        per_hour / 120.0 * 100.0,
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken from the command line.
    let hours = env("HOURS", 6);
    let ids = env("IDS", 1_000_000);
    let universe = env("UNIVERSE", 1_000_000);
    let changed = env("CHANGED", 20_000);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let plain = store(0).await;
        fill(&plain, hours, |h| {
            (0..ids).map(|i| Key::of(&format!("h{h}:{i}"))).collect()
        })
        .await;
        measure(&format!("{ids} IDs an hour"), &plain).await;

        let exact = store(universe).await;
        fill(&exact, hours, |h| {
            (0..changed)
                .map(|i| Key::of(&format!("user:{}", (h * changed + i) % universe)))
                .collect()
        })
        .await;
        measure(
            &format!("{changed} of a universe of {universe} an hour, exact bodies"),
            &exact,
        )
        .await;
    });
}
