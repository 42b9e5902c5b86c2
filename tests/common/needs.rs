//! What a test needs from the machine (PostgreSQL, python3, node, curl, Chromium, nginx,
//! promtool, the HTTP checkers' Python, systemd-analyze, script), probed once, and the rule
//! for when it is missing: the test is reported
//! **ignored** in the runner's own summary line (`test result: ok. N passed; 0 failed; M
//! ignored`) with the reason and how to enable it, never as passed; with `CI` set (to
//! anything but `0`/`false`) it fails.
//!
//! A test target that uses this is declared `harness = false` in `Cargo.toml` (libtest's
//! own harness cannot ignore a test at run time) and ends its `main` with [`run`]:
//!
//! ```ignore
//! mod common;
//! use common::needs::{self, Need};
//!
//! fn main() {
//!     needs::run(vec![
//!         needs::trial("node_reads_an_hour", &[Need::Node], || {
//!             let node = Need::Node.found(); // the `node` binary found
//!             // ... assert as usual; a panic fails the trial.
//!         }),
//!     ]);
//! }
//! ```
//!
//! `cargo test --test NAME -- --list`, filters and `--ignored` work as with libtest.

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The PostgreSQL URL the tests use unless `BLOOMCAST_TEST_DATABASE_URL` says otherwise.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Something outside Rust a test needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    /// A reachable PostgreSQL; found: its URL.
    Postgres,
    /// PostgreSQL's server programs (`initdb`, `pg_ctl`) to run a private cluster;
    /// found: their `bin` directory.
    PostgresServer,
    /// `python3`; found: the program name.
    Python3,
    /// `python3` with the `cryptography` package (the Python client's signature checks);
    /// found: the program name.
    PythonCryptography,
    /// Node.js; found: the program name.
    Node,
    /// `curl` (the README's examples use it); found: the program name.
    Curl,
    /// A Chromium or Chrome binary for browser tests; found: its path or name.
    Chromium,
    /// Varnish's `varnishd` and `varnishadm` (and a C compiler, which it compiles VCL
    /// with); found: the path of `varnishd`.
    Varnish,
    /// Mounting a small tmpfs (root, `mount`), for the full-disk test; found: `mount`.
    Tmpfs,
    /// nginx, to serve a static mirror; found: the program.
    Nginx,
    /// Prometheus's `promtool` (Debian's `prometheus` package), to check `/metrics` and
    /// the rules of `deploy/prometheus/`; found: the program.
    Promtool,
    /// A Python with the HTTP checkers of `tests/http-checkers/requirements.txt`
    /// (schemathesis, httplint, openapi-spec-validator): `BLOOMCAST_TEST_HTTP_CHECKERS`,
    /// else the virtual environment `.ci/run` makes in `target/http-checkers-venv`;
    /// found: that Python.
    HttpCheckers,
    /// `systemd-analyze` (Debian's `systemd` package), to check the unit of
    /// `deploy/systemd/`; found: the program.
    SystemdAnalyze,
    /// PgBouncer (Debian's `pgbouncer`), to put a pooler in transaction mode between
    /// nodes and PostgreSQL; found: the program.
    PgBouncer,
    /// util-linux's `script` (Debian's `bsdutils`), to run a command on a terminal;
    /// found: the program.
    Script,
}

/// True when running under CI, where nothing may be skipped.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

impl Need {
    /// What was found (URL, directory or program), or why not and how to enable it.
    /// Probed once per process.
    pub fn probe(self) -> Result<String, String> {
        static CACHE: OnceLock<Mutex<HashMap<Need, Result<String, String>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(known) = cache.lock().unwrap().get(&self) {
            return known.clone();
        }
        let found = match self {
            Need::Postgres => probe_postgres(),
            Need::PostgresServer => probe_postgres_server(),
            Need::Python3 => probe_program(
                &["python3"],
                "python3 not found on PATH; install Python 3 (apt-get install python3)",
            ),
            Need::PythonCryptography => probe_python_cryptography(),
            Need::Node => probe_program(
                &["node", "nodejs"],
                "node not found on PATH; install Node.js (apt-get install nodejs)",
            ),
            Need::Curl => probe_program(
                &["curl"],
                "curl not found on PATH; install it (apt-get install curl)",
            ),
            Need::Chromium => probe_chromium(),
            Need::Varnish => probe_varnish(),
            Need::Tmpfs => probe_tmpfs(),
            Need::Nginx => probe_nginx(),
            Need::Promtool => probe_program(
                &["promtool"],
                "promtool not found on PATH; install Prometheus (apt-get install prometheus; \
                 .ci/run does)",
            ),
            Need::HttpCheckers => probe_http_checkers(),
            Need::SystemdAnalyze => probe_program(
                &["systemd-analyze"],
                "systemd-analyze not found on PATH; install systemd (apt-get install systemd; \
                 .ci/run does)",
            ),
            Need::PgBouncer => probe_program(
                &["pgbouncer", "/usr/sbin/pgbouncer"],
                "pgbouncer not found on PATH or in /usr/sbin; install PgBouncer (apt-get install \
                 pgbouncer; .ci/run does)",
            ),
            Need::Script => probe_program(
                &["script"],
                "script not found on PATH; install util-linux's (apt-get install bsdutils)",
            ),
        };
        cache.lock().unwrap().insert(self, found.clone());
        found
    }

    /// What [`probe`](Self::probe) found; for use inside a trial gated on this need.
    pub fn found(self) -> String {
        self.probe()
            .unwrap_or_else(|why| panic!("{self:?} is missing: {why}"))
    }
}

/// A trial that runs `body` when every need is met; otherwise it is reported ignored with
/// the reason (or, in CI, fails with it).
pub fn trial(name: &str, needs: &[Need], body: impl FnOnce() + Send + 'static) -> Trial {
    let needs = needs.to_vec();
    Trial::ignorable_test(name, move || {
        let missing: Vec<String> = needs.iter().filter_map(|n| n.probe().err()).collect();
        if missing.is_empty() {
            body();
            Ok(Completion::Completed)
        } else if in_ci() {
            Err(Failed::from(format!(
                "CI is set, so this test may not be skipped: {}",
                missing.join("; ")
            )))
        } else {
            Ok(Completion::ignored_with(missing.join("; ")))
        }
    })
}

/// Runs the trials with libtest's command line and output, and exits with its status.
pub fn run(trials: Vec<Trial>) -> ! {
    libtest_mimic::run(&Arguments::from_args(), trials).exit()
}

/// As [`block_on`], on one thread: for a test that moves tokio's clock on
/// (`wait::pass`), which only a current-thread runtime allows.
pub fn block_on_one_thread<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// Runs a future to completion on a two-worker runtime (what `#[tokio::test(flavor =
/// "multi_thread", worker_threads = 2)]` gives a harness test).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

fn probe_postgres() -> Result<String, String> {
    let url = std::env::var("BLOOMCAST_TEST_DATABASE_URL")
        .unwrap_or_else(|_| DEFAULT_DATABASE_URL.into());
    let connect = async {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        client.simple_query("SELECT 1").await.map(drop)
    };
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(async { tokio::time::timeout(Duration::from_secs(5), connect).await });
    match outcome {
        Ok(Ok(())) => Ok(url),
        Ok(Err(e)) => Err(format!(
            "PostgreSQL is not reachable at {url} ({e}); start PostgreSQL (.ci/run sets it up) \
             or set BLOOMCAST_TEST_DATABASE_URL=postgres://user@host:port/db"
        )),
        Err(_) => Err(format!(
            "PostgreSQL at {url} did not answer within 5 s; start PostgreSQL or set \
             BLOOMCAST_TEST_DATABASE_URL"
        )),
    }
}

fn probe_postgres_server() -> Result<String, String> {
    std::fs::read_dir("/usr/lib/postgresql")
        .ok()
        .and_then(|versions| {
            versions
                .filter_map(Result::ok)
                .map(|e| e.path().join("bin"))
                .find(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
        })
        .map(|bin: PathBuf| bin.display().to_string())
        .ok_or_else(|| {
            "PostgreSQL's server programs (initdb, pg_ctl under /usr/lib/postgresql/*/bin) \
             are not installed; apt-get install postgresql"
                .to_owned()
        })
}

/// The first of `names` that runs with `--version`.
fn probe_program(names: &[&str], why: &str) -> Result<String, String> {
    names
        .iter()
        .find(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(|name| name.to_string())
        .ok_or_else(|| why.to_owned())
}

fn probe_varnish() -> Result<String, String> {
    ["varnishd", "/usr/sbin/varnishd"]
        .iter()
        .find(|name| {
            Command::new(name)
                .arg("-V")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        // varnishadm (same package) tells a test which port varnishd chose.
        .filter(|_| Command::new("varnishadm").arg("-h").output().is_ok())
        .map(|name| name.to_string())
        .ok_or_else(|| {
            "varnishd or varnishadm not found on PATH or in /usr/sbin; install Varnish \
             (apt-get install varnish; .ci/run does)"
                .to_owned()
        })
}

/// The Python of the HTTP checkers' virtual environment, if it imports them.
fn probe_http_checkers() -> Result<String, String> {
    let python = std::env::var("BLOOMCAST_TEST_HTTP_CHECKERS").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/target/http-checkers-venv/bin/python"
        )
        .to_owned()
    });
    let ok = Command::new(&python)
        .args([
            "-c",
            "import schemathesis, httplint, openapi_spec_validator",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Ok(python)
    } else {
        Err(format!(
            "{python} cannot import schemathesis, httplint and openapi_spec_validator; make \
             it (.ci/run does): python3 -m venv target/http-checkers-venv && \
             target/http-checkers-venv/bin/pip install -r tests/http-checkers/requirements.txt \
             (or set BLOOMCAST_TEST_HTTP_CHECKERS to such a Python)"
        ))
    }
}

fn probe_python_cryptography() -> Result<String, String> {
    let ok = Command::new("python3")
        .args(["-c", "import cryptography"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Ok("python3".into())
    } else {
        Err(
            "python3 cannot import cryptography (the Python client's signature checks); \
             install it (python3 -m pip install cryptography, or apt-get install \
             python3-cryptography)"
                .into(),
        )
    }
}

fn probe_chromium() -> Result<String, String> {
    if let Ok(path) = std::env::var("BLOOMCAST_TEST_CHROMIUM") {
        return probe_program(
            &[path.as_str()],
            &format!("BLOOMCAST_TEST_CHROMIUM={path} does not run"),
        );
    }
    probe_program(
        &[
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ],
        "no Chromium found (chromium, chromium-browser, google-chrome); apt-get install \
         chromium or set BLOOMCAST_TEST_CHROMIUM=/path/to/chrome",
    )
}

/// `nginx` on PATH or in /usr/sbin (Debian's), run with `-v` (it has no `--version`).
fn probe_nginx() -> Result<String, String> {
    ["nginx", "/usr/sbin/nginx"]
        .iter()
        .find(|name| {
            Command::new(name)
                .arg("-v")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(|name| name.to_string())
        .ok_or_else(|| {
            "nginx not found on PATH or in /usr/sbin; install it (apt-get install nginx) to \
             serve the static mirror"
                .to_owned()
        })
}

/// Mounts and unmounts a 1 MiB tmpfs under a temporary directory.
fn probe_tmpfs() -> Result<String, String> {
    let why_not = |detail: String| {
        format!(
            "cannot mount a tmpfs ({detail}); run the tests as root (CI does) to test a full disk"
        )
    };
    let dir = tempfile::tempdir().map_err(|e| why_not(e.to_string()))?;
    let out = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(dir.path())
        .output()
        .map_err(|e| why_not(e.to_string()))?;
    if !out.status.success() {
        return Err(why_not(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    let _ = std::process::Command::new("umount")
        .arg(dir.path())
        .status();
    Ok("mount".into())
}
