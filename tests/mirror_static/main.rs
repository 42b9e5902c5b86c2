//! `bloomcast mirror`: a static copy of the sealed hours. A second pass writes nothing;
//! no file is ever seen half-written; a directory that cannot be written or holds
//! another service's mirror is refused and left as it was; `--follow` picks up a newly
//! sealed hour; and the mirror served by nginx alone (deploy/nginx-mirror.conf) passes
//! `bloomcast check --pubkey` and `bloomcast verify`, the Python client's check and
//! verify, and the JavaScript client's check (by its default strategy and hour by hour)
//! and example script; docs/DEPLOY.md's object-store script uploads every file of it with
//! the origin's content types.
//!
//! The nginx trials are reported ignored, with the reason, where nginx (or python3 with
//! cryptography, or node) is missing; in CI they fail instead (tests/common/needs.rs).

#[path = "../common/mod.rs"]
mod common;
mod nginx;
mod origin;
mod s3;

use common::needs::{self, Need};
use nginx::{
    nginx_serves_the_mirror_to_check_and_verify_with_the_right_types,
    the_js_client_checks_the_nginx_mirror, the_python_client_checks_and_verifies_the_nginx_mirror,
};
use origin::{bloomcast, hour, hour_files, is_root, mirror, mirror_args, snapshot, Origin};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn main() {
    let unwritable_needs: &[Need] = if is_root() { &[Need::Tmpfs] } else { &[] };
    needs::run(vec![
        needs::trial(
            "a_second_pass_writes_nothing_and_a_third_only_the_new_hour",
            &[],
            || needs::block_on(a_second_pass_writes_nothing_and_a_third_only_the_new_hour()),
        ),
        needs::trial("no_half_written_file_is_ever_visible", &[], || {
            needs::block_on(no_half_written_file_is_ever_visible())
        }),
        needs::trial(
            "another_services_mirror_is_refused_and_left_as_it_was",
            &[],
            || needs::block_on(another_services_mirror_is_refused_and_left_as_it_was()),
        ),
        needs::trial(
            "an_unwritable_directory_is_refused_and_left_as_it_was",
            unwritable_needs,
            || needs::block_on(an_unwritable_directory_is_refused_and_left_as_it_was()),
        ),
        needs::trial("follow_mirrors_an_hour_sealed_later", &[], || {
            needs::block_on(follow_mirrors_an_hour_sealed_later())
        }),
        needs::trial(
            "the_deploy_s3_script_uploads_every_form_with_the_origins_content_type",
            &[],
            || {
                needs::block_on(
                    s3::the_deploy_s3_script_uploads_every_form_with_the_origins_content_type(),
                )
            },
        ),
        needs::trial(
            "nginx_serves_the_mirror_to_check_and_verify_with_the_right_types",
            &[Need::Nginx],
            || needs::block_on(nginx_serves_the_mirror_to_check_and_verify_with_the_right_types()),
        ),
        needs::trial(
            "the_python_client_checks_and_verifies_the_nginx_mirror",
            &[Need::Nginx, Need::PythonCryptography],
            || needs::block_on(the_python_client_checks_and_verifies_the_nginx_mirror()),
        ),
        needs::trial(
            "the_js_client_checks_the_nginx_mirror",
            &[Need::Nginx, Need::Node],
            || needs::block_on(the_js_client_checks_the_nginx_mirror()),
        ),
    ]);
}

async fn a_second_pass_writes_nothing_and_a_third_only_the_new_hour() {
    let mut origin = Origin::start(3, 10).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");

    let first = mirror(&dir, &origin).await;
    assert!(first.starts_with("mirrored 3 new hours"), "{first}");
    for n in 0..3 {
        for file in hour_files(&dir, hour(n)) {
            assert!(file.is_file(), "{} missing after {first}", file.display());
        }
    }
    assert!(dir.join("index.json").is_file());
    // A chain page is the server's own answer for that hour with ?limit=1.
    let served = reqwest::get(format!("{}/chain{}?limit=1", origin.base(), hour(1).path()))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let page = std::fs::read(dir.join(format!("chain{}", hour(1).path()))).unwrap();
    assert_eq!(page, served.to_vec());
    assert!(dir.join(".well-known/bloomcast.json").is_file());
    let before = snapshot(&dir);

    let second = mirror(&dir, &origin).await;
    assert!(
        second.starts_with("mirrored 0 new hours")
            && second.contains("(0 files, 0 bytes); 3 already there"),
        "{second}"
    );
    assert_eq!(snapshot(&dir), before, "the second pass changed files");

    origin.seal_one_more().await;
    let third = mirror(&dir, &origin).await;
    assert!(
        third.starts_with("mirrored 1 new hours") && third.contains("3 already there"),
        "{third}"
    );
    let after = snapshot(&dir);
    for (path, was) in &before {
        if !path.ends_with("index.json") {
            assert_eq!(after.get(path), Some(was), "{} rewritten", path.display());
        }
    }
    for file in hour_files(&dir, hour(3)) {
        assert!(after.contains_key(&file), "{} missing", file.display());
    }
    let index: serde_json::Value =
        serde_json::from_slice(&after[&dir.join("index.json")].0).unwrap();
    assert_eq!(index["current"]["hour"], hour(3).rfc3339());
    assert_eq!(index["static"], true);
}

async fn no_half_written_file_is_ever_visible() {
    let origin = Origin::start(24, 500).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Reads every visible file, over and over, while the mirror writes.
    let watcher = {
        let (dir, stop) = (dir.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut seen: BTreeMap<PathBuf, Vec<Vec<u8>>> = BTreeMap::new();
            let mut rounds = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for (path, (bytes, _)) in snapshot(&dir) {
                    if path.components().any(|c| c.as_os_str() == ".partial") {
                        continue;
                    }
                    let versions = seen.entry(path).or_default();
                    if !versions.contains(&bytes) {
                        versions.push(bytes);
                    }
                }
                rounds += 1;
            }
            (seen, rounds)
        })
    };

    let summary = mirror(&dir, &origin).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (seen, rounds) = watcher.join().unwrap();

    assert!(summary.starts_with("mirrored 24 new hours"), "{summary}");
    let last = snapshot(&dir);
    assert!(rounds > 1 && !seen.is_empty(), "the watcher saw nothing");
    for (path, versions) in &seen {
        let final_bytes = &last[path].0;
        assert!(
            versions.iter().all(|v| v == final_bytes),
            "{} was seen with other content than it ended with ({} versions)",
            path.display(),
            versions.len()
        );
    }
    let partial = std::fs::read_dir(dir.join(".partial")).unwrap().count();
    assert_eq!(partial, 0, "temporary files left in .partial");
    // Every gzip sibling is its file, compressed.
    for (path, (bytes, _)) in &last {
        if let Some(plain) = path.to_str().unwrap().strip_suffix(".gz") {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
                .unwrap();
            assert_eq!(&out, &last[Path::new(plain)].0, "{}", path.display());
        }
    }
}

pub fn assert_refused(out: &Output, says: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("bloomcast: ") && stderr.contains(says),
        "{stderr}"
    );
}

async fn another_services_mirror_is_refused_and_left_as_it_was() {
    let ours = Origin::start(2, 10).await;
    // Another service: the same first hour, its own signing key.
    let theirs = Origin::start(3, 10).await;
    assert_ne!(ours.pubkey, theirs.pubkey);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    mirror(&dir, &ours).await;
    let before = snapshot(&dir);

    let out = bloomcast(mirror_args(&dir, &theirs)).await;

    assert_refused(&out, "holds a mirror of another service");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&theirs.pubkey),
        "the message names no key"
    );
    assert_eq!(snapshot(&dir), before, "a refused pass changed files");
    assert!(!dir.join(hour(2).path().trim_start_matches('/')).exists());
}

/// Unmounts a tmpfs when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

async fn an_unwritable_directory_is_refused_and_left_as_it_was() {
    let mut origin = Origin::start(2, 10).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    std::fs::create_dir(&dir).unwrap();
    // Root writes through permissions: a read-only mount stops it too.
    let _mount = is_root().then(|| {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(ok.success());
        Mount(dir.clone())
    });
    mirror(&dir, &origin).await;
    let before = snapshot(&dir);
    if is_root() {
        let ok = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(ok.success());
    } else {
        use std::os::unix::fs::PermissionsExt;
        for path in [dir.clone(), dir.join(".partial")] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
    }
    origin.seal_one_more().await;

    let out = bloomcast(mirror_args(&dir, &origin)).await;

    assert_refused(&out, "cannot write to the mirror directory");
    assert_eq!(snapshot(&dir), before, "a refused pass changed files");
    // A directory that cannot be created is refused the same way.
    let nowhere = dir.join("new");
    let out = bloomcast(mirror_args(&nowhere, &origin)).await;
    assert_refused(&out, "cannot write to the mirror directory");
}

async fn follow_mirrors_an_hour_sealed_later() {
    let mut origin = Origin::start(1, 10).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    let mut args = mirror_args(&dir, &origin);
    args.extend(["--follow".into(), "--interval".into(), "1".into()]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let chain_page = |n: i64| dir.join(format!("chain{}", hour(n).path()));
    let wait_for = |path: PathBuf| async move {
        let path = &path;
        common::wait::tried(|| async move { path.is_file().then_some(()) })
            .await
            .is_some()
    };

    assert!(
        wait_for(chain_page(0)).await,
        "the first pass wrote nothing"
    );
    origin.seal_one_more().await;
    let followed = wait_for(chain_page(1)).await;
    let _ = child.kill();
    let _ = child.wait();

    assert!(followed, "--follow did not mirror the hour sealed later");
    for file in hour_files(&dir, hour(1)) {
        assert!(file.is_file(), "{} missing", file.display());
    }
}
