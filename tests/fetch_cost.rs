//! `check --fetch-cost`, in the Rust CLI and the Python client's: whichever form each
//! closed hour is read in (v1 Bloom or a ribbon at the precision the cost asks for),
//! every ID that changed is reported. The real programs against a server in this process
//! whose clock the test moves. The Python trial is reported ignored where `python3` is
//! missing (failed in CI; tests/common/needs.rs).

mod common;

use bloomcast::client::Client;
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use common::needs::{self, Need};
use std::collections::HashSet;
use std::process::Command;

const TOKEN: &str = "fetch-cost-test-token";

fn main() {
    needs::run(vec![
        needs::trial(
            "the_cli_reports_every_changed_id_whichever_form_the_fetch_cost_chose",
            &[],
            || common::needs::block_on(every_changed_id_is_reported(Program::Rust)),
        ),
        needs::trial(
            "the_python_client_reports_every_changed_id_whichever_form_it_chose",
            &[Need::Python3],
            || {
                let python = Need::Python3.found();
                common::needs::block_on(every_changed_id_is_reported(Program::Python(python)))
            },
        ),
    ]);
}

#[derive(Clone)]
enum Program {
    Rust,
    Python(String),
}

impl Program {
    fn command(&self) -> Command {
        match self {
            Program::Rust => Command::new(env!("CARGO_BIN_EXE_bloomcast")),
            Program::Python(python) => {
                let mut cmd = Command::new(python);
                let source = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/python");
                cmd.env("PYTHONPATH", source)
                    .args(["-m", "bloomcast_client"]);
                cmd
            }
        }
    }
}

fn start_hour() -> Hour {
    hour_of(2008, 9, 3, 5).unwrap()
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

/// `check --json` with these arguments and the IDs on stdin, parsed.
async fn check(program: Program, args: Vec<String>, followed: &[String]) -> serde_json::Value {
    let stdin = followed.join("\n");
    let out = tokio::task::spawn_blocking(move || {
        common::run_with_stdin(
            program
                .command()
                // Hours of 2008, far behind this machine's clock: stale on purpose.
                .args(["check", "--json", "--accept-stale"])
                .args(args)
                .arg("-")
                .env_remove("BLOOMCAST_SERVER"),
            &stdin,
        )
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

async fn every_changed_id_is_reported(program: Program) {
    let server =
        common::inproc::serve("127.0.0.1:0".parse().unwrap(), TOKEN, start_hour(), |_| {}).await;
    let publisher = Client::builder(&server.base).token(TOKEN).build().unwrap();
    // Three closed hours (5, 2,000 and 300 IDs), then the open hour with 10.
    let mut changed = Vec::new();
    for (h, n) in [5usize, 2_000, 300, 10].into_iter().enumerate() {
        let batch = ids(&format!("h{h}"), n);
        publisher.ingest(&batch).await.unwrap();
        changed.extend(batch);
        if h < 3 {
            server.clock.advance(Duration::hours(1));
        }
    }
    let mut followed = changed.clone();
    followed.extend(ids("quiet", 3_000));
    let since = start_hour().rfc3339();

    // (fetch cost, strategy, closed hours read as ribbons, most quiet IDs flagged)
    let cases = [
        // Nothing to waste: the fewest bytes. Version 2 (the server lists it) is smaller
        // than the Bloom filter even for the 5-ID hour, where version 1 was not.
        ("0", "hourly", 3, 3_000),
        // The default: ribbons, precise enough to waste next to nothing.
        ("10240", "hourly", 3, 3),
        // Choosing: the three closed hours as one version 2 union (one ribbon), as
        // precise, in one request, and the open hour on its own.
        ("10240", "auto", 1, 3),
        ("100000000", "hourly", 3, 3),
    ];
    for (cost, strategy, ribbons, most_quiet) in cases {
        let args = ["--server", &server.base, "--since", &since];
        let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        args.extend(["--fetch-cost", cost, "--strategy", strategy].map(String::from));

        let doc = check(program.clone(), args, &followed).await;

        let flagged: HashSet<&str> = doc["changed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let missed: Vec<&String> = changed
            .iter()
            .filter(|id| !flagged.contains(id.as_str()))
            .collect();
        assert!(missed.is_empty(), "cost {cost}: missed {missed:?}");
        let quiet = flagged.len() - changed.len();
        assert!(
            quiet <= most_quiet,
            "cost {cost}: {quiet} quiet IDs flagged"
        );
        assert_eq!(doc["ribbons"], ribbons, "cost {cost} {strategy}: {doc}");
    }
}
