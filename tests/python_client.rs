//! A second language from the spec alone: the standard-library Python client in
//! `examples/python/` reads what the real server publishes after the real CLI ingested.
//!
//! Skipped with a message where `python3` is missing, except in CI (`CI` set).

mod common;

use std::path::PathBuf;
use std::process::Command;

const CLIENT: &str = "examples/python/bloomcast_client.py";

fn python() -> Option<&'static str> {
    let found = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    match found {
        true => Some("python3"),
        false if std::env::var_os("CI").is_some() => panic!("CI needs python3"),
        false => {
            eprintln!(
                "skipped: python3 not found; install Python 3 to run the Python client tests"
            );
            None
        }
    }
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

#[test]
fn the_python_client_passes_the_published_test_vectors() {
    let Some(python) = python() else { return };

    let out = run(
        Command::new(python)
            .arg(root().join(CLIENT))
            .arg("selftest")
            .arg(root().join("docs/test-vectors.json")),
        "",
    );

    assert_eq!(out.len(), 1);
    assert!(out[0].starts_with("ok: "), "{out:?}");
}

#[test]
fn the_python_client_finds_every_id_the_cli_ingested() {
    let Some(python) = python() else { return };
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
        Command::new(python).arg(root().join(CLIENT)).args([
            "check",
            "--server",
            &server.base,
            "--since",
            &since,
            "-",
        ]),
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
