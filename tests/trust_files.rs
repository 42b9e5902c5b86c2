//! What the CLI reads or writes as files is verified against the key given, offline too
//! (PROTOCOL.md section 11, "Trust", and section 13): `bloomcast mirror --pubkey`
//! through a tampering proxy (tests/common/mirror.rs) refuses the hour whose form was
//! altered and writes nothing for it; `bloomcast verify --dir` passes an honest mirror
//! and names a forged file, a forged sidecar and a form without one; `bloomcast inspect
//! --pubkey FILE` verifies a saved body by its headers or its mirror directory, refuses
//! one that came with nothing signed, and names a lowered count, flipped bits and an
//! altered signature; a forged key list is refused by all three, naming the key.

mod common;

use bloomcast::hour::Hour;
use common::mirror::{self, Mirror, Tamper};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hour(n: i64) -> Hour {
    Hour::from_index(mirror::first_hour().index() + n)
}

fn bloomcast<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts exit 1 with a message holding every one of `says`.
fn assert_refused(out: &Output, says: &[&str]) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout {} stderr {err}",
        stdout(out)
    );
    for s in says {
        assert!(err.contains(s), "{s:?} not in: {err}");
    }
}

fn mirror_into(m: &Mirror, dir: &Path) -> Output {
    bloomcast(&[
        "mirror",
        &dir.display().to_string(),
        "--url",
        &m.base,
        "--pubkey",
        &m.pubkey,
    ])
}

/// A mirror of the publisher's three sealed hours, made through the honest proxy.
fn honest_mirror(m: &Mirror, dir: &Path) {
    let out = mirror_into(m, dir);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The file of URL path `url_path` in the mirror `dir`.
fn file(dir: &Path, url_path: &str) -> PathBuf {
    dir.join(url_path.trim_start_matches('/'))
}

/// Every file the mirror `dir` holds for `h`: its forms, their copies and sidecars, its
/// chain page.
fn files_of(dir: &Path, h: Hour) -> Vec<PathBuf> {
    let stem = file(dir, &h.path());
    let name = stem.file_name().unwrap().to_string_lossy().into_owned();
    let mut out: Vec<PathBuf> = std::fs::read_dir(stem.parent().unwrap())
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| {
                    let n = p.file_name().unwrap().to_string_lossy();
                    n == name || n.starts_with(&format!("{name}."))
                })
                .collect()
        })
        .unwrap_or_default();
    let page = file(dir, &format!("/chain{}", h.path()));
    if page.exists() {
        out.push(page);
    }
    out
}

fn verify_dir(m: &Mirror, dir: &Path) -> Output {
    bloomcast(&[
        "verify",
        "--pubkey",
        &m.pubkey,
        "--since",
        &hour(0).rfc3339(),
        "--dir",
        &dir.display().to_string(),
        // The publisher's hours are of 2008, and it has signed no checkpoint yet.
        "--accept-stale",
    ])
}

#[test]
fn mirror_refuses_an_hour_any_form_of_which_was_tampered_and_writes_nothing_for_it() {
    let m = mirror::start();
    let stem = hour(1).path();
    let name = hour(1).rfc3339();
    // What each refusal names: the file, and what failed.
    let cases = [
        (Tamper::Zero(format!("{stem}.hex")), ["06.hex", "digest"]),
        (Tamper::Zero(format!("{stem}.bin")), ["06.bin", "digest"]),
        (
            Tamper::FlipLast(format!("{stem}.json")),
            [stem.as_str(), "digest"],
        ),
        (
            Tamper::FlipLast(format!("{stem}.ribbon")),
            ["the ribbon (", "signature does not verify"],
        ),
        (
            Tamper::FlipLast(format!("{stem}.ribbon.json")),
            ["the ribbon's JSON form (", "signature does not verify"],
        ),
        (
            Tamper::FlipLast(format!("{stem}.ribbon2")),
            ["the version 2 ribbon (", "signature does not verify"],
        ),
    ];
    for (tamper, says) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mirror");
        m.set(tamper.clone());

        let out = mirror_into(&m, &dir);

        assert_refused(&out, &[&format!("refusing hour {name}"), says[0], says[1]]);
        assert_eq!(files_of(&dir, hour(1)), Vec::<PathBuf>::new(), "{tamper:?}");
        // The same proxy, honest again: the hour is mirrored whole.
        m.set(Tamper::None);
        honest_mirror(&m, &dir);
        assert!(file(&dir, &format!("{stem}.ribbon2.sig")).is_file());
        assert!(verify_dir(&m, &dir).status.success(), "{tamper:?}");
    }
}

#[test]
fn an_honest_mirror_verifies_offline_and_a_forged_file_or_sidecar_is_named() {
    let m = mirror::start();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    honest_mirror(&m, &dir);
    let stem = hour(1).path();

    let ok = verify_dir(&m, &dir);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("verified 3 hours"), "{}", stdout(&ok));
    // Read as a file URL, the same.
    let url = reqwest::Url::from_directory_path(&dir).unwrap().to_string();
    let args = [
        "verify",
        "--pubkey",
        &m.pubkey,
        "--since",
        &hour(0).rfc3339(),
    ];
    let by_url = bloomcast(&[&args[..], &["--url", &url, "--accept-stale"]].concat());
    assert!(by_url.status.success(), "{}", stderr(&by_url));
    // Without --accept-stale: verified, but stale (2008, and no checkpoint).
    let stale = bloomcast(&[&args[..], &["--dir", &dir.display().to_string()]].concat());
    assert_eq!(stale.status.code(), Some(3), "{}", stderr(&stale));
    assert!(stderr(&stale).contains("is stale"), "{}", stderr(&stale));

    // A sidecar of another hour's ribbon: a signature, but not over these bytes.
    let sidecar = file(&dir, &format!("{stem}.ribbon.sig"));
    let honest = std::fs::read(&sidecar).unwrap();
    std::fs::copy(
        file(&dir, &format!("{}.ribbon.sig", hour(2).path())),
        &sidecar,
    )
    .unwrap();
    assert_refused(
        &verify_dir(&m, &dir),
        &[
            &hour(1).rfc3339(),
            "the ribbon (",
            "signature does not verify",
        ],
    );
    std::fs::write(&sidecar, honest).unwrap();

    // A ribbon without its sidecar: listed, and exit 1.
    let sidecar2 = file(&dir, &format!("{stem}.ribbon2.sig"));
    let kept = std::fs::read(&sidecar2).unwrap();
    std::fs::remove_file(&sidecar2).unwrap();
    let out = verify_dir(&m, &dir);
    assert_refused(&out, &["unverified", "06.ribbon2", "could not be verified"]);
    assert!(
        stderr(&out).contains(&sidecar2.display().to_string()),
        "{}",
        stderr(&out)
    );
    std::fs::write(&sidecar2, kept).unwrap();

    // An all-zero hex body.
    let hex = file(&dir, &format!("{stem}.hex"));
    let text = std::fs::read_to_string(&hex).unwrap();
    std::fs::write(&hex, "0".repeat(text.trim_end().len())).unwrap();
    assert_refused(
        &verify_dir(&m, &dir),
        &[&hour(1).rfc3339(), &hex.display().to_string(), "digest"],
    );
    std::fs::write(&hex, text).unwrap();

    // A document's count lowered (its gzip copy too, so only the count differs).
    let json = file(&dir, &format!("{stem}.json"));
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    doc["count"] = 1.into();
    std::fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    assert_refused(
        &verify_dir(&m, &dir),
        &[&json.display().to_string(), "count was altered"],
    );
}

#[test]
fn a_forged_key_list_is_refused_by_mirror_verify_and_inspect_naming_the_key() {
    let m = mirror::start();
    let forger = mirror::forger().public_key().id().to_string();
    let tmp = tempfile::tempdir().unwrap();

    m.set(Tamper::ForgeKeys);
    let dir = tmp.path().join("through-forger");
    let out = mirror_into(&m, &dir);
    assert_refused(&out, &[&forger, "no key you trust vouched for it"]);
    assert!(!file(&dir, &hour(1).path()).exists());
    let online = bloomcast(&[
        "verify",
        "--pubkey",
        &m.pubkey,
        "--since",
        &hour(0).rfc3339(),
        "--url",
        &m.base,
        "--accept-stale",
    ]);
    assert_refused(&online, &[&hour(1).rfc3339(), &forger]);
    let url = format!("{}{}", m.base, hour(1).path());
    let inspect = bloomcast(&["inspect", &url, "--pubkey", &m.pubkey]);
    assert_refused(&inspect, &[&hour(1).rfc3339(), &forger]);

    // A mirror directory whose list was forged afterwards.
    m.set(Tamper::None);
    let dir = tmp.path().join("mirror");
    honest_mirror(&m, &dir);
    m.set(Tamper::ForgeKeys);
    let forged = reqwest_get(&format!("{}/.well-known/bloomcast.json", m.base)).1;
    std::fs::write(file(&dir, "/.well-known/bloomcast.json"), forged).unwrap();
    assert_refused(&verify_dir(&m, &dir), &[&hour(1).rfc3339(), &forger]);
    let saved = file(&dir, &format!("{}.json", hour(1).path()));
    let inspect = bloomcast(&[
        "inspect",
        &saved.display().to_string(),
        "--pubkey",
        &m.pubkey,
    ]);
    assert_refused(&inspect, &[&hour(1).rfc3339(), &forger]);
}

/// GET `url`: the response head as `curl -D` writes it, and the body.
fn reqwest_get(url: &str) -> (String, Vec<u8>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let response = reqwest::get(url).await.unwrap();
        assert!(response.status().is_success(), "{url}");
        let mut head = format!("HTTP/1.1 {}\r\n", response.status());
        for (name, value) in response.headers() {
            head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
        }
        head.push_str("\r\n");
        (head, response.bytes().await.unwrap().to_vec())
    })
}

#[test]
fn inspect_verifies_a_saved_hour_by_its_headers_and_refuses_one_with_nothing_signed() {
    let m = mirror::start();
    let tmp = tempfile::tempdir().unwrap();
    let (head, body) = reqwest_get(&format!("{}{}", m.origin, hour(1).path()));
    let (body_file, headers_file) = (tmp.path().join("hour.json"), tmp.path().join("headers"));
    std::fs::write(&body_file, &body).unwrap();
    std::fs::write(&headers_file, &head).unwrap();
    let inspect = |body: &Path, headers: Option<&Path>| {
        let mut args = vec![
            "inspect".to_owned(),
            body.display().to_string(),
            "--pubkey".into(),
            m.pubkey.clone(),
        ];
        if let Some(h) = headers {
            args.extend(["--headers".into(), h.display().to_string()]);
        }
        bloomcast(&args)
    };

    let ok = inspect(&body_file, Some(&headers_file));
    assert!(ok.status.success(), "{}", stderr(&ok));
    let lines = stdout(&ok);
    assert!(lines.contains("count           10"), "{lines}");
    assert!(
        lines.contains(&format!("verified        {} under key", hour(1).rfc3339())),
        "{lines}"
    );

    // Nothing signed with it: --pubkey is refused for the file, not answered.
    let alone = inspect(&body_file, None);
    assert_refused(&alone, &["nothing signed came with it", "--headers"]);
    assert!(stdout(&alone).is_empty(), "{}", stdout(&alone));

    // The count lowered (unsigned): it no longer fits the filter's bits.
    let mut doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
    doc["count"] = 1.into();
    let lowered = tmp.path().join("lowered.json");
    std::fs::write(&lowered, serde_json::to_vec(&doc).unwrap()).unwrap();
    assert_refused(
        &inspect(&lowered, Some(&headers_file)),
        &["count was altered"],
    );

    // A bit flipped (the document's digest dropped, so it still parses).
    let mut doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let hex = doc["filter"].as_str().unwrap().to_owned();
    let first = u8::from_str_radix(&hex[..1], 16).unwrap() ^ 1;
    doc["filter"] = format!("{first:x}{}", &hex[1..]).into();
    doc.as_object_mut().unwrap().remove("digest");
    let flipped = tmp.path().join("flipped.json");
    std::fs::write(&flipped, serde_json::to_vec(&doc).unwrap()).unwrap();
    assert_refused(
        &inspect(&flipped, Some(&headers_file)),
        &[&hour(1).rfc3339(), "signature does not verify"],
    );

    // The signature altered in the saved headers.
    let signature = head
        .lines()
        .find_map(|l| l.strip_prefix("bloom-signature: "))
        .unwrap()
        .to_owned();
    let first = u8::from_str_radix(&signature[..1], 16).unwrap() ^ 1;
    let altered = format!("{first:x}{}", &signature[1..]);
    let bad_headers = tmp.path().join("bad-headers");
    std::fs::write(&bad_headers, head.replace(&signature, &altered)).unwrap();
    assert_refused(
        &inspect(&body_file, Some(&bad_headers)),
        &[&hour(1).rfc3339(), "signature does not verify"],
    );

    // Another service's key.
    let other = bloomcast::chain::Signer::from_seed(&[9; 32])
        .public_key()
        .to_string();
    let out = bloomcast(&[
        "inspect",
        &body_file.display().to_string(),
        "--pubkey",
        &other,
        "--headers",
        &headers_file.display().to_string(),
    ]);
    assert_refused(&out, &[&hour(1).rfc3339(), "signed by key"]);
}

#[test]
fn inspect_verifies_a_file_in_its_mirror_directory_and_refuses_a_ribbon_taken_out_of_it() {
    let m = mirror::start();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    honest_mirror(&m, &dir);
    let inspect = |path: &Path| {
        bloomcast(&[
            "inspect",
            &path.display().to_string(),
            "--pubkey",
            &m.pubkey,
        ])
    };
    let verified = format!("verified        {} under key", hour(1).rfc3339());
    for suffix in [".json", ".hex.gz", ".ribbon", ".ribbon.json", ".ribbon2"] {
        let path = file(&dir, &format!("{}{suffix}", hour(1).path()));
        let args = if suffix == ".hex.gz" {
            // A raw body says nothing of its shape: its m and k from the document.
            let doc: serde_json::Value =
                serde_json::from_slice(&std::fs::read(file(&dir, &hour(1).path())).unwrap())
                    .unwrap();
            vec![
                "--m".to_owned(),
                doc["m"].to_string(),
                "--k".into(),
                doc["k"].to_string(),
            ]
        } else {
            Vec::new()
        };
        let mut all = vec![
            "inspect".to_owned(),
            path.display().to_string(),
            "--pubkey".into(),
            m.pubkey.clone(),
        ];
        all.extend(args);
        let out = bloomcast(&all);
        assert!(out.status.success(), "{suffix}: {}", stderr(&out));
        assert!(
            stdout(&out).contains(&verified),
            "{suffix}: {}",
            stdout(&out)
        );
    }

    // A ribbon altered in place fails by its sidecar.
    let ribbon = file(&dir, &format!("{}.ribbon", hour(1).path()));
    let mut bytes = std::fs::read(&ribbon).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&ribbon, &bytes).unwrap();
    assert_refused(
        &inspect(&ribbon),
        &[&hour(1).rfc3339(), "signature does not verify"],
    );

    // Taken out of the mirror with its sidecar: the chain header it is signed under is
    // not there.
    let elsewhere = tmp.path().join("saved");
    let out_of = file(&elsewhere, &format!("{}.ribbon2", hour(1).path()));
    std::fs::create_dir_all(out_of.parent().unwrap()).unwrap();
    std::fs::copy(file(&dir, &format!("{}.ribbon2", hour(1).path())), &out_of).unwrap();
    std::fs::copy(
        file(&dir, &format!("{}.ribbon2.sig", hour(1).path())),
        format!("{}.sig", out_of.display()),
    )
    .unwrap();
    assert_refused(&inspect(&out_of), &["keep it in its mirror directory"]);
}

/// `bloomcast ARGS` off the runtime that serves the publisher.
async fn bloomcast_async(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || bloomcast(&args))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mirror_of_a_rotated_publisher_holds_its_vouched_keys_and_checkpoint_and_verifies() {
    use common::rotated::{hour, rotated_twice, signer};
    let (data, pins) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (publisher, _, _) = rotated_twice(data.path(), pins.path()).await;
    // Restarted on the current key with hour 3 sealed: it signs a checkpoint of it.
    publisher.stop().await;
    let clock = bloomcast::clock::ManualClock::at(hour(4), chrono::Duration::minutes(1));
    let publisher = common::rotated::Publisher::start(data.path(), 3, &clock).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mirror");
    let key = |seed: u8| signer(seed).public_key().to_string();

    let out = bloomcast_async(vec![
        "mirror".into(),
        dir.display().to_string(),
        "--url".into(),
        publisher.base.clone(),
        "--pubkey".into(),
        key(1),
    ])
    .await;
    assert!(out.status.success(), "{}", stderr(&out));

    // The key list with its successions, the publisher's checkpoint, named by the index.
    let well_known: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file(&dir, "/.well-known/bloomcast.json")).unwrap())
            .unwrap();
    let keys = well_known["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 3, "{well_known}");
    assert!(
        keys[1]["vouch"].is_string() && keys[2]["vouch"].is_string(),
        "{well_known}"
    );
    let checkpoint = file(&dir, "/checkpoint.json");
    let served = publisher.get("/checkpoint").await.bytes().await.unwrap();
    assert_eq!(std::fs::read(&checkpoint).unwrap(), served.to_vec());
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file(&dir, "/index.json")).unwrap()).unwrap();
    assert_eq!(index["urls"]["checkpoint"], "/checkpoint.json");
    // Hour 1's ribbon was first asked for after its key retired: served unsigned, it is
    // left out (its v1 forms stand); hour 3's comes with its sidecar.
    assert!(!file(&dir, &format!("{}.ribbon", hour(1).path())).exists());
    assert!(file(&dir, &format!("{}.json", hour(1).path())).is_file());
    assert!(file(&dir, &format!("{}.ribbon.sig", hour(3).path())).is_file());

    let verify = |seed: u8| {
        bloomcast_async(vec![
            "verify".into(),
            "--pubkey".into(),
            key(seed),
            "--since".into(),
            hour(0).rfc3339(),
            "--dir".into(),
            dir.display().to_string(),
            "--accept-stale".into(),
        ])
    };
    for seed in [1, 3] {
        let out = verify(seed).await;
        assert!(out.status.success(), "key {seed}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("verified 4 hours"),
            "{}",
            stdout(&out)
        );
    }

    // A checkpoint made to look newer than it is no longer verifies.
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&checkpoint).unwrap()).unwrap();
    doc["made"] = (doc["made"].as_i64().unwrap() + 3600).into();
    std::fs::write(&checkpoint, serde_json::to_vec(&doc).unwrap()).unwrap();
    assert_refused(&verify(1).await, &["(checkpoint)", "does not verify"]);
    publisher.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mirror_verifies_exact_bodies_by_their_signature_and_refuses_a_flipped_one() {
    let start = mirror::first_hour();
    let (server, _) = common::exact::serve("trust-files-token", start, 300, 2, 3).await;
    let proxy = common::exact::proxy(&server.base).await;
    let well_known: serde_json::Value =
        reqwest::get(format!("{}/.well-known/bloomcast.json", server.base))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let pubkey = well_known["public_key"].as_str().unwrap().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let mirror_args = |dir: &Path| {
        vec![
            "mirror".to_owned(),
            dir.display().to_string(),
            "--url".into(),
            proxy.base.clone(),
            "--pubkey".into(),
            pubkey.clone(),
        ]
    };

    let honest = tmp.path().join("honest");
    let out = bloomcast_async(mirror_args(&honest)).await;
    assert!(out.status.success(), "{}", stderr(&out));
    for n in 0..2 {
        let stem = Hour::from_index(start.index() + n).path();
        assert!(file(&honest, &format!("{stem}.exact")).is_file(), "{stem}");
        assert!(
            file(&honest, &format!("{stem}.exact.sig")).is_file(),
            "{stem}"
        );
    }
    let verified = bloomcast_async(vec![
        "verify".into(),
        "--pubkey".into(),
        pubkey.clone(),
        "--since".into(),
        start.rfc3339(),
        "--dir".into(),
        honest.display().to_string(),
        "--accept-stale".into(),
    ])
    .await;
    assert!(verified.status.success(), "{}", stderr(&verified));

    proxy.set(common::exact::Lie::FlipExact);
    let dir = tmp.path().join("flipped");
    let out = bloomcast_async(mirror_args(&dir)).await;
    assert_refused(
        &out,
        &[
            "refusing hour",
            "the exact body (",
            "signature does not verify",
        ],
    );
    // Both hours' bodies are flipped; the pass stops at the first refused, which has no
    // file written.
    let refused: Vec<Hour> = (0..2)
        .map(|n| Hour::from_index(start.index() + n))
        .filter(|h| stderr(&out).contains(&format!("refusing hour {}", h.rfc3339())))
        .collect();
    assert_eq!(refused.len(), 1, "{}", stderr(&out));
    assert_eq!(files_of(&dir, refused[0]), Vec::<PathBuf>::new());
}

#[test]
fn inspect_verifies_a_ribbon_url_by_its_signature_and_refuses_an_altered_one() {
    let m = mirror::start();
    let verified = format!("verified        {} under key", hour(1).rfc3339());
    for suffix in [".ribbon", ".ribbon.json", ".ribbon2"] {
        let url = format!("{}{}{suffix}", m.base, hour(1).path());
        let inspect = || bloomcast(&["inspect", &url, "--pubkey", &m.pubkey]);
        m.set(Tamper::None);
        let ok = inspect();
        assert!(ok.status.success(), "{suffix}: {}", stderr(&ok));
        assert!(stdout(&ok).contains(&verified), "{suffix}: {}", stdout(&ok));

        m.set(Tamper::FlipLast(format!("{}{suffix}", hour(1).path())));
        let out = inspect();
        assert_refused(&out, &[&hour(1).rfc3339(), "signature does not verify"]);
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    }
}

#[test]
fn inspect_of_a_url_verifies_the_open_hour_by_its_signature_and_refuses_a_union() {
    let m = mirror::start();
    let open = format!("{}{}", m.base, hour(3).path());
    // The version was made in 2008: past the default freshness bound, and refused so.
    let stale = bloomcast(&["inspect", &open, "--pubkey", &m.pubkey]);
    assert_refused(&stale, &[&hour(3).rfc3339(), "past the freshness bound"]);
    let out = bloomcast(&[
        "inspect",
        &open,
        "--pubkey",
        &m.pubkey,
        "--freshness",
        "1000000000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!(
            "verified        {} (open, made=",
            hour(3).rfc3339()
        )),
        "{}",
        stdout(&out)
    );
    let sealed = format!("{}{}", m.base, hour(1).path());
    let out = bloomcast(&["inspect", &sealed, "--pubkey", &m.pubkey]);
    assert!(stdout(&out).contains(&format!("verified        {} under key", hour(1).rfc3339())));
    // A day is a union: nothing signs it.
    let day = format!("{}{}", m.base, hour(1).day().path());
    let out = bloomcast(&["inspect", &day, "--pubkey", &m.pubkey]);
    assert_refused(&out, &["unions (days, since) are not signed"]);
}
