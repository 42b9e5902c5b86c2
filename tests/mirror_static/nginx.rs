//! The mirror served by nginx with deploy/nginx-mirror.conf, read by `bloomcast check
//! --pubkey` and `bloomcast verify`, the Python client and the JavaScript client.

use crate::assert_refused;
use crate::common::needs::Need;
use crate::origin::{bloomcast, hour, mirror, Origin};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
    let listens = crate::common::wait::tried(|| async move {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    })
    .await;
    if listens.is_some() {
        return nginx;
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
/// siblings, so nginx serves the tampered bytes; drops its signed forms' sidecars too,
/// so that a client given the key reads the documents (it uses no unsigned ribbon).
fn tamper(dir: &Path, n: i64) {
    let stem = dir.join(hour(n).path().trim_start_matches('/'));
    for signed in [".ribbon", ".ribbon.json", ".ribbon2"] {
        std::fs::remove_file(format!("{}{signed}.sig", stem.display())).unwrap();
    }
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

pub async fn nginx_serves_the_mirror_to_check_and_verify_with_the_right_types() {
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
        (".ribbon2", "application/vnd.bloomcast.ribbon; v=2"),
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
            let raw = suffix == ".ribbon" || suffix == ".ribbon2";
            assert_eq!(gzipped, gzip && !raw, "{suffix} gzip {gzip}");
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
    // Each signed form's sidecar: its Bloom-Signature as the origin sent it, as text.
    for signed in [".ribbon", ".ribbon.json", ".ribbon2"] {
        let reply = http
            .get(format!("{stem}{signed}.sig"))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200, "{signed}.sig");
        assert_eq!(
            reply.headers()["content-type"],
            "text/plain; charset=utf-8",
            "{signed}.sig"
        );
        let origin = http
            .get(format!("{}{}{signed}", s.origin.base(), hour(1).path()))
            .send()
            .await
            .unwrap();
        let want = origin.headers()["bloom-signature"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(reply.text().await.unwrap().trim(), want, "{signed}.sig");
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
                "verify",
                "--pubkey",
                &key,
                "--since",
                &since,
                "--url",
                &base,
                // Hours of 2008: stale on purpose.
                "--accept-stale",
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
        // A mirror of 2008 hours, far behind this machine's clock: stale on purpose.
        args.extend(["--accept-stale".into()]);
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
    // Unverified and with a dear fetch, closed hours come as version 2 ribbons: nginx
    // ignores `?fpp=` and serves the target's, which the client reads as it is.
    let mut args: Vec<String> = ["check", "--server", &s.nginx.base, "--since"]
        .map(String::from)
        .to_vec();
    args.extend([hour(0).rfc3339(), "--fetch-cost".into(), "100000000".into()]);
    args.extend(["--json".into(), "--accept-stale".into()]);
    args.extend(probe_ids());
    let out = bloomcast(args).await;
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for n in 0..3 {
        let id = format!("h{n}:7");
        assert!(
            doc["changed"].as_array().unwrap().contains(&id.into()),
            "{doc}"
        );
    }
    // The index's `current` (the newest mirrored hour) is read as the open hour: v1.
    assert_eq!(
        doc["ribbons2"], 2,
        "the hours before it as version 2: {doc}"
    );
    // A mirror whose newest hour is of 2008 is stale: the hour after it, the one it
    // would offer next, is named, and without --accept-stale the answer exits 3.
    let stale = doc["stale"].as_array().unwrap();
    assert!(
        stale.len() == 1 && stale[0].as_str().unwrap().contains(&hour(2).rfc3339()),
        "{doc}"
    );
    let mut args: Vec<String> = ["check", "--server", &s.nginx.base, "--since"]
        .map(String::from)
        .to_vec();
    args.extend([hour(0).rfc3339(), "h1:7".into()]);
    let out = bloomcast(args).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("(mirrored)"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "h1:7");

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

pub async fn the_python_client_checks_and_verifies_the_nginx_mirror() {
    let s = served().await;
    let since = hour(0).rfc3339();
    let mut check: Vec<String> = ["check", "--server", &s.nginx.base, "--since", &since]
        .map(String::from)
        .to_vec();
    // The mirror's hours are 2008's and the test publisher signed no checkpoint: stale
    // by this machine's clock, on purpose.
    check.extend([
        "--pubkey".into(),
        s.origin.pubkey.clone(),
        "--accept-stale".into(),
    ]);
    check.extend(probe_ids());
    let verify: Vec<String> = [
        "verify",
        "--pubkey",
        &s.origin.pubkey,
        "--since",
        &since,
        "--url",
        &s.nginx.base,
        "--accept-stale",
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

pub async fn the_js_client_checks_the_nginx_mirror() {
    let s = served().await;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/js");
    let script = s.dir.parent().unwrap().join("check.mjs");
    // The default strategy (a union, which a mirror does not have) and hour by hour; the
    // mirror's 2008 hours are stale by this machine's clock, on purpose.
    std::fs::write(
        &script,
        format!(
            "import {{ Client }} from {:?};\n\
             const [base, since, ids, strategy] = process.argv.slice(2);\n\
             const changed = await new Client(base).changedSince(JSON.parse(ids), since, {{ acceptStale: true, ...(strategy ? {{ strategy }} : {{}}) }});\n\
             console.log(JSON.stringify(changed.flatMap((c) => c.ids)));\n",
            format!("file://{}", root.join("bloomcast.js").display())
        ),
    )
    .unwrap();
    let node = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            Command::new(Need::Node.found())
                .args(&args)
                .output()
                .unwrap()
        })
    };
    for strategy in ["", "hourly"] {
        let args = vec![
            script.display().to_string(),
            s.nginx.base.clone(),
            hour(0).rfc3339(),
            serde_json::to_string(&probe_ids()).unwrap(),
            strategy.to_owned(),
        ];
        let out = node(args).await.unwrap();

        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{strategy:?}: {stderr}");
        let flagged: Vec<String> = serde_json::from_str(&lines(&out).join("")).unwrap();
        for n in 0..3 {
            assert!(flagged.contains(&format!("h{n}:7")), "{flagged:?}");
        }
        assert!(flagged.len() < probe_ids().len(), "{flagged:?}");
    }

    // The example script, as the README runs it against a server.
    let example = root.join("examples/changed.js").display().to_string();
    let out = node(vec![
        example,
        "--accept-stale".into(),
        s.nginx.base.clone(),
        "h2:7".into(),
    ])
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let printed = lines(&out);
    assert!(
        printed.iter().any(|l| l.ends_with(": h2:7")),
        "{printed:?} {stderr}"
    );
    assert!(
        printed.iter().any(|l| l.starts_with("current hour: ")),
        "{printed:?}"
    );
}
