//! A second language from the spec alone: the standard-library Python client in
//! `clients/python/` (run from the source tree as `python3 -m bloomcast_client`, the
//! same as the installed `bloomcast-py`) reads what the real server publishes after the
//! real CLI ingested. Its own unit tests are the pytest suite that `.ci/run` runs.
//!
//! Reported ignored, with the reason, where `python3` is missing; fails instead in CI
//! (`CI` set). See `tests/common/needs.rs`.

mod common;

use common::needs::{self, Need};
use std::path::PathBuf;
use std::process::Command;

/// `python3 -m bloomcast_client` from the source tree.
fn client(python: &str) -> Command {
    let mut cmd = Command::new(python);
    cmd.env("PYTHONPATH", root().join("clients/python"))
        .args(["-m", "bloomcast_client"]);
    cmd
}

fn main() {
    needs::run(vec![
        needs::trial(
            "the_python_client_passes_the_published_test_vectors",
            &[Need::Python3],
            the_python_client_passes_the_published_test_vectors,
        ),
        needs::trial(
            "the_python_client_verifies_through_a_mirror_and_refuses_tampering",
            &[Need::PythonCryptography],
            the_python_client_verifies_through_a_mirror_and_refuses_tampering,
        ),
        needs::trial(
            "the_python_client_verifies_across_two_key_rotations",
            &[Need::PythonCryptography],
            the_python_client_verifies_across_two_key_rotations,
        ),
        needs::trial(
            "a_mirror_the_cli_wrote_verifies_with_the_python_client_and_one_it_wrote_with_the_cli",
            &[Need::PythonCryptography],
            a_mirror_the_cli_wrote_verifies_with_the_python_client_and_one_it_wrote_with_the_cli,
        ),
        needs::trial(
            "check_json_has_the_same_fields_from_the_cli_and_the_python_client",
            &[Need::Python3],
            check_json_has_the_same_fields_from_the_cli_and_the_python_client,
        ),
        needs::trial(
            "the_python_client_finds_every_id_the_cli_ingested",
            &[Need::Python3],
            the_python_client_finds_every_id_the_cli_ingested,
        ),
    ]);
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a command with `stdin`, asserting success; returns stdout's lines.
fn run(cmd: &mut Command, stdin: &str) -> Vec<String> {
    let out = common::run_with_stdin(cmd, stdin);
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn the_python_client_passes_the_published_test_vectors() {
    let python = Need::Python3.found();

    let out = run(
        client(&python)
            .arg("selftest")
            .arg(root().join("docs/test-vectors.json")),
        "",
    );

    assert_eq!(out.len(), 1);
    assert!(out[0].starts_with("ok: "), "{out:?}");
}

fn the_python_client_finds_every_id_the_cli_ingested() {
    let python = Need::Python3.found();
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let since = chrono::Utc::now().format("%Y-%m-%dT%H").to_string();
    // At the default capacity, so the hour's filter is as full as the target allows.
    let updated: Vec<String> = (0..3000).map(|i| format!("user/{i}")).collect();
    let absent: Vec<String> = (0..10_000).map(|i| format!("absent/{i}")).collect();

    run(
        Command::new(env!("CARGO_BIN_EXE_bloomcast")).args([
            "ingest",
            "--server",
            &server.base,
            "--token",
            common::TOKEN,
            "-",
        ]),
        &updated.join("\n"),
    );
    let flagged = run(
        client(&python).args(["check", "--server", &server.base, "--since", &since, "-"]),
        &[updated.join("\n"), absent.join("\n")].join("\n"),
    );

    let found_updated = flagged.iter().filter(|id| id.starts_with("user/")).count();
    let false_positives = flagged
        .iter()
        .filter(|id| id.starts_with("absent/"))
        .count();
    assert_eq!(found_updated, updated.len(), "a false negative");
    // At capacity some absent IDs must collide; none would mean the test checks nothing.
    assert!(false_positives > 0, "no false positives at all: suspicious");
    let target = 0.01;
    assert!(
        (false_positives as f64) <= 1.5 * target * absent.len() as f64,
        "{false_positives} false positives in {} absent IDs",
        absent.len()
    );
}

/// `check --json` is one contract in both languages: the same fields (`exact` always,
/// `exacts` and `ribbons2` only when above 0), whatever each client's own order.
fn check_json_has_the_same_fields_from_the_cli_and_the_python_client() {
    let python = Need::Python3.found();
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let args = [
        "check",
        "--server",
        &server.base,
        "--hours",
        "1",
        "--json",
        "a",
    ];
    let keys = |cmd: &mut Command| {
        let line = run(cmd, "").join("\n");
        let doc: serde_json::Value = serde_json::from_str(&line).expect(&line);
        let mut keys: Vec<String> = doc.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        (keys, doc)
    };

    let (rust, rust_doc) = keys(Command::new(env!("CARGO_BIN_EXE_bloomcast")).args(args));
    let (py, py_doc) = keys(client(&python).args(args));

    assert_eq!(rust, py, "{rust_doc}\n{py_doc}");
    assert_eq!(rust_doc["exact"], 0, "{rust_doc}");
    assert_eq!(py_doc["exact"], 0, "{py_doc}");
    assert!(rust_doc.get("exacts").is_none(), "{rust_doc}");
}

/// Runs the Python client expecting a refusal naming `hour` (as `hour RFC3339:`, or by
/// the path of the body refused, e.g. a ribbon whose bytes do not match their digest).
fn assert_refuses(cmd: &mut Command, hour: &str) {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted: {stderr}");
    let path = bloomcast::hour::Hour::parse_flexible(hour).unwrap().path();
    assert!(
        stderr.contains(&format!("hour {hour}: ")) || stderr.contains(&format!("{path}.")),
        "{stderr}"
    );
}

fn the_python_client_verifies_through_a_mirror_and_refuses_tampering() {
    use common::mirror::{self, Tamper};
    let python = Need::PythonCryptography.found();
    let m = mirror::start();
    let hour = |n: i64| bloomcast::hour::Hour::from_index(mirror::first_hour().index() + n);
    let since = hour(0).rfc3339();
    let verify = |key: &str| {
        let mut cmd = client(&python);
        cmd.args([
            "verify", "--pubkey", key, "--since", &since, "--url", &m.base,
        ]);
        // The mirror's hours are 2008's: stale by this machine's clock, on purpose.
        cmd.arg("--accept-stale");
        cmd
    };
    let check = || {
        let mut cmd = client(&python);
        cmd.args(["check", "--server", &m.base, "--since", &since]);
        // Its open hour too was made in 2008: fresh enough for this test.
        cmd.args([
            "--pubkey",
            &m.pubkey,
            "--accept-stale",
            "--freshness",
            "1000000000",
        ]);
        cmd.arg("h1:3");
        cmd
    };
    let out = run(&mut verify(&m.pubkey), "");
    assert_eq!(
        out.last().map(String::as_str),
        Some("verified 3 hours"),
        "{out:?}"
    );
    assert_eq!(run(&mut check(), ""), ["h1:3"]);

    m.set(Tamper::FlipBit(hour(1).path()));
    assert_refuses(&mut check(), &hour(1).rfc3339());
    assert_refuses(&mut verify(&m.pubkey), &hour(1).rfc3339());
    let mut inspect = client(&python);
    let url = format!("{}{}", m.base, hour(1).path());
    inspect.args(["inspect", &url, "--pubkey", &m.pubkey]);
    assert_refuses(&mut inspect, &hour(1).rfc3339());

    m.set(Tamper::Swap(hour(1).path(), hour(2).path()));
    assert_refuses(&mut check(), &hour(1).rfc3339());

    m.set(Tamper::DropFromChain);
    assert_refuses(&mut verify(&m.pubkey), &hour(2).rfc3339());

    m.set(Tamper::None);
    let other = bloomcast::chain::Signer::from_seed(&[9; 32]).public_key();
    // Another service's key: the key list names it nowhere, so nothing is trusted.
    let out = verify(&other.to_string()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted: {stderr}");
    assert!(stderr.contains(&other.id().to_string()), "{stderr}");
}

/// A publisher rotated twice (tests/common/rotated.rs): given its first key or its
/// current one, the Python client verifies the chain and reads every hour, each under
/// the key listed for it.
fn the_python_client_verifies_across_two_key_rotations() {
    use common::rotated::{hour, rotated_twice, signer};
    let python = Need::PythonCryptography.found();
    let (data, pins) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    needs::block_on(async {
        let (publisher, _, _) = rotated_twice(data.path(), pins.path()).await;
        let base = publisher.base.clone();
        let since = hour(0).rfc3339();
        let outputs = tokio::task::spawn_blocking(move || {
            [1, 3].map(|seed| {
                let key = signer(seed).public_key().to_string();
                let verified = run(
                    client(&python)
                        .args(["verify", "--pubkey", &key, "--since", &since])
                        .args(["--url", &base, "--accept-stale"]),
                    "",
                );
                let found = run(
                    client(&python)
                        .args(["check", "--server", &base, "--since", &since])
                        .args(["--pubkey", &key, "--accept-stale"])
                        .args(["--freshness", "1000000000", "id0", "id3"]),
                    "",
                );
                (verified, found)
            })
        })
        .await
        .unwrap();
        for (verified, found) in outputs {
            assert_eq!(
                verified.last().map(String::as_str),
                Some("verified 4 hours")
            );
            assert_eq!(found, ["id0", "id3"]);
        }
        publisher.stop().await;
    });
}

/// The mirror formats are one: a mirror `bloomcast mirror --pubkey` wrote (its `.sig`
/// sidecars, chain pages and key list) verifies with the Python client's `verify --dir`
/// and fails there once a sidecar is forged; the Python tests' hand-made mirror
/// (clients/python/tests/handmade.py: sidecars, `checkpoint.json`, a key list with
/// successions) verifies with `bloomcast verify --dir`, and its forged key list is
/// refused naming the forger's key.
fn a_mirror_the_cli_wrote_verifies_with_the_python_client_and_one_it_wrote_with_the_cli() {
    use common::mirror;
    let python = Need::PythonCryptography.found();
    let m = mirror::start();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rust-made");
    let since = mirror::first_hour().rfc3339();
    let made = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .arg("mirror")
        .arg(&dir)
        .args(["--url", &m.base, "--pubkey", &m.pubkey])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let python_verify = |dir: &std::path::Path| {
        let mut cmd = client(&python);
        cmd.args(["verify", "--pubkey", &m.pubkey, "--since", &since, "--dir"])
            .arg(dir)
            // 2008's hours, and no checkpoint from the test publisher: stale on purpose.
            .arg("--accept-stale");
        cmd
    };
    let out = run(&mut python_verify(&dir), "");
    assert_eq!(
        out.last().map(String::as_str),
        Some("verified 3 hours"),
        "{out:?}"
    );
    let hour = |n: i64| bloomcast::hour::Hour::from_index(mirror::first_hour().index() + n);
    let sidecar = dir.join(format!("{}.ribbon2.sig", hour(1).path()).trim_start_matches('/'));
    let other = dir.join(format!("{}.ribbon2.sig", hour(2).path()).trim_start_matches('/'));
    std::fs::copy(other, &sidecar).unwrap();
    assert_refuses(&mut python_verify(&dir), &hour(1).rfc3339());

    // The Python tests' hand-made mirror, read by the CLI.
    let hand = tmp.path().join("python-made");
    let script = "import pathlib, sys, time, types\n\
        root = pathlib.Path(sys.argv[1])\n\
        sys.path[:0] = [str(root / 'clients/python'), str(root / 'clients/python/tests')]\n\
        sys.modules['conftest'] = types.SimpleNamespace(ROOT=root)\n\
        import handmade\n\
        handmade.make(sys.argv[2], int(time.time()))\n\
        if sys.argv[3] == 'forge':\n    print(handmade.K, handmade.forge_list(sys.argv[2]))\n\
        else:\n    print(handmade.K, handmade.HOURS[0])\n";
    let make = |forge: &str| {
        let out = Command::new(&python)
            .args(["-c", script])
            .arg(root())
            .arg(&hand)
            .arg(forge)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut words = text.split_whitespace().map(str::to_owned);
        (words.next().unwrap(), words.next().unwrap())
    };
    let cli_verify = |key: &str, since: &str| {
        Command::new(env!("CARGO_BIN_EXE_bloomcast"))
            .args(["verify", "--pubkey", key, "--since", since, "--dir"])
            .arg(&hand)
            .arg("--accept-stale")
            .output()
            .unwrap()
    };
    let (key, first) = make("honest");
    let out = cli_verify(&key, &first);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("verified 3 hours"), "{stdout}");
    // Its checkpoint was made now: only the hours' age makes it stale.
    let strict = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args(["verify", "--pubkey", &key, "--since", &first, "--dir"])
        .arg(&hand)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(3), "{stderr}");
    assert!(!stderr.contains("checkpoint"), "{stderr}");

    let (key, forger) = make("forge");
    let out = cli_verify(&key, &first);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&forger), "{stderr}");
}
