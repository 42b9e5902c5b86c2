//! `bloomcast mirror`: a static copy of the sealed hours. A second pass writes nothing;
//! no file is ever seen half-written; a directory that cannot be written or holds
//! another service's mirror is refused and left as it was; `--follow` picks up a newly
//! sealed hour; and the mirror served by nginx alone (deploy/nginx-mirror.conf) passes
//! `bloomcast check --pubkey` and `bloomcast verify`, the Python client's check and
//! verify, and the JavaScript client's check.
//!
//! The nginx trials are reported ignored, with the reason, where nginx (or python3 with
//! cryptography, or node) is missing; in CI they fail instead (tests/common/needs.rs).

mod common;

use bloomcast::hour::{hour_of, Hour};
use common::inproc::{self, InProcess};
use common::needs::{self, Need};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

const TOKEN: &str = "mirror-static-token";

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

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn first_hour() -> Hour {
    hour_of(2008, 9, 3, 5).unwrap()
}

fn hour(n: i64) -> Hour {
    Hour::from_index(first_hour().index() + n)
}

/// The IDs ingested into hour `n`.
fn ids(n: i64, per_hour: usize) -> Vec<String> {
    (0..per_hour).map(|i| format!("h{n}:{i}")).collect()
}

/// A publisher whose clock the test moves, with `sealed` hours sealed.
struct Origin {
    server: InProcess,
    http: reqwest::Client,
    pubkey: String,
    sealed: i64,
    per_hour: usize,
}

impl Origin {
    async fn start(sealed: i64, per_hour: usize) -> Origin {
        let server =
            inproc::serve("127.0.0.1:0".parse().unwrap(), TOKEN, first_hour(), |_| {}).await;
        let http = reqwest::Client::new();
        let well_known: serde_json::Value = http
            .get(format!("{}/.well-known/bloomcast.json", server.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut origin = Origin {
            server,
            http,
            pubkey: well_known["public_key"].as_str().unwrap().to_owned(),
            sealed: 0,
            per_hour,
        };
        for _ in 0..sealed {
            origin.seal_one_more().await;
        }
        origin
    }

    /// Ingests into the open hour, moves the clock past it and has it sealed.
    async fn seal_one_more(&mut self) {
        let n = self.sealed;
        for batch in ids(n, self.per_hour).chunks(1000) {
            let reply = self
                .http
                .post(format!("{}/updates", self.server.base))
                .bearer_auth(TOKEN)
                .json(&serde_json::json!({ "ids": batch }))
                .send()
                .await
                .unwrap();
            assert!(reply.status().is_success());
        }
        self.server.clock.advance(chrono::Duration::hours(1));
        // Sealing happens in order, on first read of a closed hour.
        let sealed = self
            .http
            .get(format!("{}{}.bin", self.server.base, hour(n).path()))
            .send()
            .await
            .unwrap();
        assert_eq!(sealed.headers()["bloom-complete"], "true");
        self.sealed += 1;
    }

    fn base(&self) -> String {
        self.server.base.clone()
    }
}

/// Runs `bloomcast ARGS` off the runtime (the origin runs on it).
async fn bloomcast(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_bloomcast"))
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn mirror_args(dir: &Path, origin: &Origin) -> Vec<String> {
    vec![
        "mirror".into(),
        dir.display().to_string(),
        "--url".into(),
        origin.base(),
        "--pubkey".into(),
        origin.pubkey.clone(),
    ]
}

/// Runs a mirror pass, asserting success; returns its summary line.
async fn mirror(dir: &Path, origin: &Origin) -> String {
    let out = bloomcast(mirror_args(dir, origin)).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Every file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if let (Ok(bytes), Ok(meta)) = (std::fs::read(&path), entry.metadata()) {
                // (A temporary file may be renamed away between listing and reading.)
                out.insert(path, (bytes, meta.modified().unwrap()));
            }
        }
    }
    out
}

/// The files of one mirrored hour (every form, its gzip siblings, its chain page).
fn hour_files(dir: &Path, h: Hour) -> Vec<PathBuf> {
    let stem = h.path();
    let mut names: Vec<String> = ["", ".json", ".hex", ".bin", ".ribbon.json"]
        .iter()
        .flat_map(|s| [format!("{stem}{s}"), format!("{stem}{s}.gz")])
        .collect();
    names.push(format!("{stem}.ribbon"));
    names.push(format!("/chain{stem}"));
    names
        .iter()
        .map(|n| dir.join(n.trim_start_matches('/')))
        .collect()
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

fn assert_refused(out: &Output, says: &str) {
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
        for _ in 0..300 {
            if path.is_file() {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        false
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

/// nginx serving `dir` with deploy/nginx-mirror.conf on a free port; stopped when dropped.
struct Nginx {
    child: std::process::Child,
    base: String,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn nginx(dir: &Path, work: &Path) -> Nginx {
    use std::os::unix::fs::PermissionsExt;
    // nginx's workers (user nobody when started as root) walk down to the files.
    let mut up = dir.to_owned();
    while let Some(parent) = up.parent().map(Path::to_owned) {
        if parent == Path::new("/") || parent == std::env::temp_dir() {
            break;
        }
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).unwrap();
        up = parent;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let server = std::fs::read_to_string(root.join("deploy/nginx-mirror.conf"))
        .unwrap()
        .replace("listen 8080;", &format!("listen 127.0.0.1:{port};"))
        .replace(
            "root /srv/bloomcast-mirror;",
            &format!("root {};", dir.display()),
        );
    assert!(
        server.contains(&format!("127.0.0.1:{port}")) && server.contains(&*dir.to_string_lossy())
    );
    let w = work.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\npid {w}/nginx.pid;\nerror_log {w}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n access_log off;\n client_body_temp_path {w}/body;\n proxy_temp_path {w}/proxy;\n\
         fastcgi_temp_path {w}/fastcgi;\n uwsgi_temp_path {w}/uwsgi;\n scgi_temp_path {w}/scgi;\n\
         {server}\n}}\n"
    );
    let file = work.join("nginx.conf");
    std::fs::write(&file, conf).unwrap();
    let nginx = Nginx {
        child: Command::new(Need::Nginx.found())
            .arg("-c")
            .arg(&file)
            .arg("-e")
            .arg(work.join("error.log"))
            .spawn()
            .unwrap(),
        base: format!("http://127.0.0.1:{port}"),
    };
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return nginx;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "nginx did not start: {}",
        std::fs::read_to_string(work.join("error.log")).unwrap_or_default()
    );
}

/// An origin of 3 sealed hours, mirrored, served by nginx.
struct Served {
    origin: Origin,
    nginx: Nginx,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

async fn served() -> Served {
    let origin = Origin::start(3, 10).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    let work = tmp.path().join("nginx");
    std::fs::create_dir(&work).unwrap();
    mirror(&dir, &origin).await;
    let nginx = nginx(&dir, &work).await;
    Served {
        origin,
        nginx,
        dir,
        _tmp: tmp,
    }
}

/// The IDs to check: some of every hour and some never ingested.
fn probe_ids() -> Vec<String> {
    let mut out: Vec<String> = (0..3).map(|n| format!("h{n}:7")).collect();
    out.extend((0..5).map(|i| format!("never:{i}")));
    out
}

fn lines(out: &Output) -> Vec<String> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Flips a bit of hour `n`'s filter in its JSON documents and drops their gzip
/// siblings, so nginx serves the tampered bytes.
fn tamper(dir: &Path, n: i64) {
    let stem = dir.join(hour(n).path().trim_start_matches('/'));
    for file in [stem.clone(), stem.with_extension("json")] {
        let mut doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let hex = doc["filter"].as_str().unwrap().to_owned();
        let first = u8::from_str_radix(&hex[..1], 16).unwrap() ^ 1;
        doc["filter"] = format!("{first:x}{}", &hex[1..]).into();
        doc.as_object_mut().unwrap().remove("digest");
        std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
        std::fs::remove_file(format!("{}.gz", file.display())).unwrap();
    }
}

async fn nginx_serves_the_mirror_to_check_and_verify_with_the_right_types() {
    let s = served().await;
    let http = reqwest::Client::new();
    let stem = format!("{}{}", s.nginx.base, hour(1).path());
    for (suffix, want) in [
        ("", "application/json"),
        (".json", "application/json"),
        (".hex", "text/plain; charset=utf-8"),
        (".bin", "application/octet-stream"),
        (".ribbon", "application/vnd.bloomcast.ribbon"),
        (".ribbon.json", "application/vnd.bloomcast.ribbon+json"),
    ] {
        for gzip in [false, true] {
            let reply = http
                .get(format!("{stem}{suffix}"))
                .header("accept-encoding", if gzip { "gzip" } else { "identity" })
                .send()
                .await
                .unwrap();
            assert_eq!(reply.status(), 200, "{suffix}");
            assert_eq!(reply.headers()["content-type"], want, "{suffix}");
            let gzipped = reply.headers().get("content-encoding").is_some();
            assert_eq!(gzipped, gzip && suffix != ".ribbon", "{suffix} gzip {gzip}");
            // The bytes the origin serves, as they are.
            let origin = http
                .get(format!("{}{}{suffix}", s.origin.base(), hour(1).path()))
                .header("accept-encoding", if gzipped { "gzip" } else { "identity" })
                .send()
                .await
                .unwrap();
            let origin_digest = origin.headers()["repr-digest"].clone();
            let body = reply.bytes().await.unwrap();
            assert_eq!(
                bloomcast::chain::repr_digest(&body),
                origin_digest.to_str().unwrap(),
                "{suffix} gzip {gzip}"
            );
        }
    }
    let chain = http
        .get(format!("{}/chain{}", s.nginx.base, hour(0).path()))
        .send()
        .await
        .unwrap();
    assert_eq!(chain.headers()["content-type"], "application/json");
    let partial = http
        .get(format!("{}/.partial/", s.nginx.base))
        .send()
        .await
        .unwrap();
    assert_eq!(partial.status(), 404);

    let since = hour(0).rfc3339();
    let (base, key) = (s.nginx.base.clone(), s.origin.pubkey.clone());
    let verify = move || {
        bloomcast(
            [
                "verify", "--pubkey", &key, "--since", &since, "--url", &base,
            ]
            .map(String::from)
            .to_vec(),
        )
    };
    let (base, key, since) = (
        s.nginx.base.clone(),
        s.origin.pubkey.clone(),
        hour(0).rfc3339(),
    );
    let check = move || {
        let mut args: Vec<String> = ["check", "--server", &base, "--since", &since]
            .map(String::from)
            .to_vec();
        args.extend(["--pubkey".into(), key.clone()]);
        args.extend(probe_ids());
        bloomcast(args)
    };
    let verified = lines(&verify().await);
    assert_eq!(
        verified.first().map(String::as_str),
        Some(&*format!("ok {}", hour(0).rfc3339()))
    );
    assert!(
        verified.last().unwrap().starts_with("verified 3 hours"),
        "{verified:?}"
    );
    let flagged = lines(&check().await);
    for n in 0..3 {
        assert!(flagged.contains(&format!("h{n}:7")), "{flagged:?}");
    }
    assert!(flagged.len() < probe_ids().len(), "{flagged:?}");

    tamper(&s.dir, 1);
    let refused = check().await;
    assert_refused(&refused, &hour(1).rfc3339());
    let refused = verify().await;
    assert_refused(&refused, &hour(1).rfc3339());
}

fn python(args: &[String]) -> Output {
    Command::new(Need::PythonCryptography.found())
        .env(
            "PYTHONPATH",
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/python"),
        )
        .args(["-m", "bloomcast_client"])
        .args(args)
        .output()
        .unwrap()
}

async fn the_python_client_checks_and_verifies_the_nginx_mirror() {
    let s = served().await;
    let since = hour(0).rfc3339();
    let mut check: Vec<String> = ["check", "--server", &s.nginx.base, "--since", &since]
        .map(String::from)
        .to_vec();
    check.extend(["--pubkey".into(), s.origin.pubkey.clone()]);
    check.extend(probe_ids());
    let verify: Vec<String> = [
        "verify",
        "--pubkey",
        &s.origin.pubkey,
        "--since",
        &since,
        "--url",
        &s.nginx.base,
    ]
    .map(String::from)
    .to_vec();
    let run = |args: Vec<String>| tokio::task::spawn_blocking(move || python(&args));

    let flagged = lines(&run(check.clone()).await.unwrap());
    for n in 0..3 {
        assert!(flagged.contains(&format!("h{n}:7")), "{flagged:?}");
    }
    assert!(flagged.len() < probe_ids().len(), "{flagged:?}");
    let verified = lines(&run(verify.clone()).await.unwrap());
    assert_eq!(
        verified.last().map(String::as_str),
        Some("verified 3 hours")
    );

    tamper(&s.dir, 1);
    for args in [check, verify] {
        let out = run(args).await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "accepted: {stderr}");
        assert!(stderr.contains(&hour(1).rfc3339()), "{stderr}");
    }
}

async fn the_js_client_checks_the_nginx_mirror() {
    let s = served().await;
    let client = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/js/bloomcast.js");
    let script = s.dir.parent().unwrap().join("check.mjs");
    std::fs::write(
        &script,
        format!(
            "import {{ Client }} from {:?};\n\
             const [base, since, ids] = process.argv.slice(2);\n\
             const changed = await new Client(base).changedSince(JSON.parse(ids), since, {{ strategy: \"hourly\" }});\n\
             console.log(JSON.stringify(changed.flatMap((c) => c.ids)));\n",
            format!("file://{}", client.display())
        ),
    )
    .unwrap();
    let args = vec![
        script.display().to_string(),
        s.nginx.base.clone(),
        hour(0).rfc3339(),
        serde_json::to_string(&probe_ids()).unwrap(),
    ];
    let out = tokio::task::spawn_blocking(move || {
        Command::new(Need::Node.found())
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();

    let flagged: Vec<String> = serde_json::from_str(&lines(&out).join("")).unwrap();
    for n in 0..3 {
        assert!(flagged.contains(&format!("h{n}:7")), "{flagged:?}");
    }
    assert!(flagged.len() < probe_ids().len(), "{flagged:?}");
}
