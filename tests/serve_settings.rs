//! `bloomcast serve`'s settings as a user gives them: flags over the environment over
//! files, host names to listen on, and typos and bad files refused at start with a
//! message that says what to fix.

#![cfg(unix)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

/// `bloomcast serve` over `data_dir` with the test token, `env` and `args`.
fn serve(data_dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bloomcast"));
    cmd.arg("serve")
        .args(args)
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("BLOOMCAST_DATA_DIR", data_dir)
        .env("BLOOMCAST_INGEST_TOKENS", common::TOKEN)
        .env("RUST_LOG", "info");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs a `serve` that must refuse to start; its output.
fn refused(mut cmd: Command) -> Output {
    let out = common::run_with_stdin(&mut cmd, "");
    assert!(
        !out.status.success(),
        "it started: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The line `bloomcast serve` ends with when it does not start.
fn last_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr.lines().last().unwrap_or_default().to_owned()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_misspelt_bloomcast_variable_stops_serve_naming_the_setting_meant() {
    let dir = tempfile::tempdir().unwrap();

    let out = refused(serve(
        dir.path(),
        &[("BLOOMCAST_RETENTION_HOUR", "48"), ("BLOOMCAST_TOKEN", "x")],
        &[],
    ));

    let line = last_line(&out);
    assert_eq!(out.status.code(), Some(2), "{line}");
    assert!(
        line.contains("unknown environment variable BLOOMCAST_RETENTION_HOUR ")
            && line.contains("BLOOMCAST_RETENTION_HOURS"),
        "{line}"
    );
}

#[test]
fn serve_listens_on_a_host_name() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let listen = format!("localhost:{port}");

    let server = common::start_command(serve(dir.path(), &[("BLOOMCAST_LISTEN", &listen)], &[]));

    let addr: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_eq!(addr.port(), port);
}

#[test]
fn serve_flags_win_over_the_environment() {
    let env_dir = tempfile::tempdir().unwrap();
    let flag_dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");

    let server = common::start_command(serve(
        env_dir.path(),
        &[],
        &[
            "--listen",
            &listen,
            "--data-dir",
            flag_dir.path().to_str().unwrap(),
        ],
    ));

    assert_eq!(server.base, format!("http://{listen}"));
    assert!(flag_dir.path().join("bloomcast.sqlite3").exists());
    assert!(!env_dir.path().join("bloomcast.sqlite3").exists());
}

#[test]
fn the_config_flag_names_a_file_that_must_exist_and_wins_over_bloomcast_config() {
    let dir = tempfile::tempdir().unwrap();
    let from_env = dir.path().join("from-env.toml");
    std::fs::write(&from_env, "capacity = 10\n").unwrap();
    let missing = dir.path().join("missing.toml");

    let out = refused(serve(
        dir.path(),
        &[("BLOOMCAST_CONFIG", from_env.to_str().unwrap())],
        &["--config", missing.to_str().unwrap()],
    ));

    let line = last_line(&out);
    assert_eq!(out.status.code(), Some(2), "{line}");
    assert!(line.contains("missing.toml"), "{line}");
}

#[test]
fn a_missing_ca_file_is_refused_with_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("no-such-ca.pem");

    let out = refused(serve(
        dir.path(),
        &[
            (
                "BLOOMCAST_DATABASE_URL",
                "postgres://bloomcast@127.0.0.1:9/none?sslmode=verify-full",
            ),
            ("BLOOMCAST_DATABASE_CA_FILE", ca.to_str().unwrap()),
        ],
        &[],
    ));

    let line = last_line(&out);
    assert!(line.starts_with("bloomcast: cannot start"), "{line}");
    assert!(line.contains("database_ca_file"), "{line}");
    assert_eq!(line.matches("no-such-ca.pem").count(), 1, "{line}");
    assert_eq!(line.matches("No such file").count(), 1, "{line}");
}

/// A bad replica or listen URL is refused at start, before any connection, naming its
/// own setting (not database_url's).
#[test]
fn a_bad_read_or_listen_url_is_refused_naming_its_setting() {
    for (setting, env) in [
        ("database_read_url", "BLOOMCAST_DATABASE_READ_URL"),
        ("database_listen_url", "BLOOMCAST_DATABASE_LISTEN_URL"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = refused(serve(
            dir.path(),
            &[
                (
                    "BLOOMCAST_DATABASE_URL",
                    "postgres://bloomcast@127.0.0.1:9/none",
                ),
                ("BLOOMCAST_INGEST_TOKENS", "a-token-of-length"),
                (
                    env,
                    "postgres://bloomcast@127.0.0.1:9/none?sslmode=sometimes",
                ),
            ],
            &[],
        ));
        let line = last_line(&out);
        assert!(line.starts_with("bloomcast: cannot start"), "{line}");
        assert!(
            line.contains(&format!("invalid {setting}: sslmode=")),
            "{line}"
        );
        assert!(!line.contains("database_url:"), "{line}");
    }
}
