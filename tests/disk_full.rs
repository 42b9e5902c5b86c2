//! A full disk, for real: the embedded store on a small tmpfs that the test fills. Needs
//! root (to mount); elsewhere it is reported ignored with the reason, and with CI set it
//! fails (`tests/common/needs.rs`).

#![cfg(unix)]

mod common;
use common::wait;
#[allow(dead_code)]
#[path = "api/helpers.rs"]
mod helpers;

use axum::http::StatusCode;
use bloomcast::clock::ManualClock;
use chrono::Duration;
use common::needs::{self, Need};
use helpers::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the test's life.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(Tmpfs(at.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes a file until the file system is full; returns its path.
fn fill(dir: &Path) -> PathBuf {
    fill_named(dir, "filler")
}

fn fill_named(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let mut file = std::fs::File::create(&path).unwrap();
    let chunk = vec![0xA5u8; 16 * 1024];
    while file
        .write_all(&chunk)
        .and_then(|()| file.sync_data())
        .is_ok()
    {}
    path
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

async fn post(app: &TestApp, ids: &[String]) -> Reply {
    let body = ids.join("\n").into_bytes();
    app.post_raw(Some("text/plain"), Some(TOKEN), body).await
}

/// Lets the hold after the last failed write pass (on tokio's clock), then polls
/// `/healthz` until it says ok: a heartbeat begun `RECOVERY_HOLD` after the last failed
/// write has to succeed first, and each check writes one at most once a second.
async fn wait_healthy(app: &TestApp) {
    wait::pass(bloomcast::service::RECOVERY_HOLD).await;
    wait::until("/healthz says ok", || async move {
        wait::pass(std::time::Duration::from_secs(1)).await;
        let health = app.get("/healthz").await;
        if health.status != StatusCode::OK {
            assert_eq!(health.json()["status"], "unavailable");
        }
        (health.status == StatusCode::OK).then_some(())
    })
    .await;
}

fn main() {
    needs::run(vec![needs::trial(
        "a_full_disk_answers_503_reads_go_on_and_everything_acknowledged_survives",
        &[Need::Tmpfs],
        || {
            needs::block_on_one_thread(
                a_full_disk_answers_503_reads_go_on_and_everything_acknowledged_survives(),
            )
        },
    )]);
}

async fn a_full_disk_answers_503_reads_go_on_and_everything_acknowledged_survives() {
    let root = tempfile::tempdir().unwrap();
    let mnt = root.path().join("mnt");
    let tmpfs = Tmpfs::mount(&mnt, "4m").unwrap_or_else(|why| panic!("mount a tmpfs: {why}"));
    let data = mnt.join("data");
    let clock = ManualClock::at(start_hour(), Duration::minutes(10));
    let app = TestApp::build(settings(data.clone()), clock.clone(), None).await;
    app.service.wait_loaded().await;
    let before = ids("before", 200);
    assert_eq!(post(&app, &before).await.status, StatusCode::OK);

    let slack = mnt.join("slack");
    std::fs::write(&slack, vec![0x5Au8; 64 * 1024]).unwrap();
    let filler = fill(&mnt);
    let refused = post(&app, &ids("while-full", 20_000)).await;

    refused.assert_error(503, "store_unavailable");
    assert!(refused.header("retry-after").is_some());
    let health = app.get("/healthz").await;
    assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(health.json()["status"], "unavailable");
    // Nearly full: 64 KiB free, room for the heartbeat (one small row) but not for a
    // batch of 20,000 IDs. While ingest keeps failing, no check says ok, though the
    // heartbeats succeed.
    std::fs::remove_file(&slack).unwrap();
    for i in 0..20 {
        post(&app, &ids(&format!("still-full-{i}"), 20_000))
            .await
            .assert_error(503, "store_unavailable");
        if i % 5 == 4 {
            // Past the heartbeat's once a second: this check writes one.
            wait::pass(std::time::Duration::from_millis(1050)).await;
        }
        let health = app.get("/healthz").await;
        assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE, "probe {i}");
        assert_eq!(health.json()["status"], "unavailable", "probe {i}");
    }
    let refill = fill_named(&mnt, "refill");
    // The hour closes while the disk is full: it cannot be sealed, but it is served
    // from its keys, with every acknowledged ID.
    clock.advance(Duration::hours(1));
    let _ = app.service.tick().await;
    let (_, filter) = app.filter("/2008/09/03/13").await;
    assert!(before.iter().all(|id| filter.contains(id)));

    std::fs::remove_file(filler).unwrap();
    std::fs::remove_file(refill).unwrap();
    wait_healthy(&app).await;
    let after = ids("after", 200);
    assert_eq!(post(&app, &after).await.status, StatusCode::OK);
    wait::pass(std::time::Duration::from_millis(1100)).await; // seal backoff
    app.service.tick().await.unwrap();
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert!(meta.complete && before.iter().all(|id| filter.contains(id)));

    // A restart on a full disk: it starts, reads of the hour that closed meanwhile are
    // served from its keys (its seal waits for space), and ingest says 503.
    let filler = fill(&mnt);
    clock.advance(Duration::hours(1)); // 15:10: hour 14 closed while down
    let app = app.restart().await;
    app.service.wait_loaded().await;
    let (_, filter14) = app.filter("/2008/09/03/14").await;
    assert!(after.iter().all(|id| filter14.contains(id)));
    post(&app, &ids("full-again", 20_000))
        .await
        .assert_error(503, "store_unavailable");
    std::fs::remove_file(filler).unwrap();

    // Every 200 is durable: a new process over the same files finds them all.
    let app = app.restart().await;
    let (_, filter13) = app.filter("/2008/09/03/13").await;
    let (_, filter14) = app.filter("/2008/09/03/14").await;
    assert!(before.iter().all(|id| filter13.contains(id)));
    assert!(after.iter().all(|id| filter14.contains(id)));
    drop(app);
    drop(tmpfs);
}
