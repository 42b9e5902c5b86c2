//! `/metrics` and `deploy/prometheus/` as Prometheus reads them: a live node's exposition
//! (after ingest, a seal and reads, so most series exist) passes `promtool check metrics`
//! with no lint problem, every family has `# HELP`, `# TYPE`, its unit in its name and a
//! documented meaning in docs/PROTOCOL.md ("Metrics"); the rules pass `promtool check
//! rules`, and `promtool test rules` makes every alert fire and resolve; two nodes on one
//! PostgreSQL report one chain head. The promtool trials need Prometheus's `promtool`, the
//! chain-head trial PostgreSQL (each ignored with the reason where it is missing; `.ci/run`
//! installs Debian's `prometheus` and PostgreSQL).

mod common;

use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use common::needs::{self, Need};
use common::nodes::{drop_schema, node, node_settings, unique_schema};
use common::{post_ids, run_with_stdin, TOKEN};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, Output};

fn main() {
    needs::run(vec![
        needs::trial(
            "every_metric_has_help_type_a_unit_and_a_documented_meaning",
            &[],
            || needs::block_on(every_metric_has_help_type_a_unit_and_a_documented_meaning()),
        ),
        needs::trial(
            "the_metrics_report_the_store_the_chain_head_and_errors_by_code",
            &[],
            || needs::block_on(the_metrics_report_the_store_the_chain_head_and_errors_by_code()),
        ),
        needs::trial("open_connections_are_counted_while_they_last", &[], || {
            needs::block_on(open_connections_are_counted_while_they_last())
        }),
        needs::trial(
            "nodes_on_one_store_report_one_chain_head_whichever_sealed",
            &[Need::Postgres],
            || needs::block_on(nodes_on_one_store_report_one_chain_head_whichever_sealed()),
        ),
        needs::trial(
            "every_alert_has_a_runbook_and_a_test_that_fires_and_resolves_it",
            &[],
            every_alert_has_a_runbook_and_a_test_that_fires_and_resolves_it,
        ),
        needs::trial(
            "promtool_finds_no_problem_in_a_live_metrics_page",
            &[Need::Promtool],
            || needs::block_on(promtool_finds_no_problem_in_a_live_metrics_page()),
        ),
        needs::trial(
            "promtool_accepts_the_configuration_and_rules",
            &[Need::Promtool],
            promtool_accepts_the_configuration_and_rules,
        ),
        needs::trial(
            "promtool_fires_and_resolves_every_alert",
            &[Need::Promtool],
            promtool_fires_and_resolves_every_alert,
        ),
    ]);
}

/// The hour the node publishes into first; its clock starts ten minutes into it.
fn first_hour() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn prometheus_dir() -> PathBuf {
    root().join("deploy/prometheus")
}

/// A node on the embedded store in `dir`, its clock at ten minutes into the first hour.
async fn embedded_node(dir: &std::path::Path) -> (common::nodes::Node, ManualClock) {
    let clock = ManualClock::at(first_hour(), Duration::minutes(10));
    let settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_owned(),
        ingest_tokens: vec![TOKEN.into()],
        refresh_ms: 0,
        ..Settings::default()
    };
    (node(settings, &clock).await, clock)
}

/// A node on the embedded store after what a day brings: ingest, the hour sealed (and
/// its chain link read by housekeeping), reads of the sealed hour and its day, and
/// refused requests. Returns its `/metrics` text and the sealed hour's chain header.
async fn live_metrics() -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (node, clock) = embedded_node(dir.path()).await;
    let http = reqwest::Client::new();
    let ids: Vec<String> = (0..50).map(|i| format!("id-{i}")).collect();
    post_ids(&http, &node.base, &ids).await.expect("ingest");
    clock.advance(Duration::hours(1));
    node.service
        .tick()
        .await
        .expect("housekeeping seals the hour");
    post_ids(&http, &node.base, &ids[..10])
        .await
        .expect("ingest");
    let get = |path: String| {
        let http = http.clone();
        let base = node.base.clone();
        async move {
            let reply = http.get(format!("{base}{path}")).send().await.unwrap();
            (reply.status().as_u16(), reply.text().await.unwrap())
        }
    };
    let sealed = first_hour().path();
    assert_eq!(get(sealed.clone()).await.0, 200);
    assert_eq!(get(format!("{sealed}.ribbon")).await.0, 200);
    assert_eq!(get("/2008/09/03".into()).await.0, 200);
    assert_eq!(get("/no/such/thing/in/this/service".into()).await.0, 404);
    assert_eq!(get("/healthz".into()).await.0, 200);
    let refused = http
        .post(format!("{}/updates", node.base))
        .json(&serde_json::json!({ "ids": ["x"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let (status, chain) = get(format!("/chain{sealed}")).await;
    assert_eq!(status, 200, "{chain}");
    let links: serde_json::Value = serde_json::from_str(&chain).unwrap();
    let header = links[0]["header"].as_str().unwrap().to_owned();
    let (status, text) = get("/metrics".into()).await;
    assert_eq!(status, 200);
    (text, header)
}

/// Family name → (`# TYPE`, whether it has `# HELP`), and the family of every sample.
struct Families {
    kinds: BTreeMap<String, String>,
    helped: BTreeSet<String>,
    sampled: BTreeSet<String>,
}

fn families(text: &str) -> Families {
    let mut families = Families {
        kinds: BTreeMap::new(),
        helped: BTreeSet::new(),
        sampled: BTreeSet::new(),
    };
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("#"), Some("HELP"), Some(name)) => {
                assert!(
                    families.helped.insert(name.to_owned()),
                    "two HELP for {name}"
                );
            }
            (Some("#"), Some("TYPE"), Some(name)) => {
                let kind = words.next().unwrap_or_default().to_owned();
                assert!(
                    families.kinds.insert(name.to_owned(), kind).is_none(),
                    "two TYPE for {name}"
                );
            }
            (Some(first), _, _) if !first.starts_with('#') => {
                let name = first.split('{').next().unwrap();
                families.sampled.insert(name.to_owned());
            }
            _ => {}
        }
    }
    families
}

/// docs/PROTOCOL.md's "Metrics" section: from its heading to the next one of its level
/// or above.
fn documented_metrics() -> String {
    let protocol = std::fs::read_to_string(root().join("docs/PROTOCOL.md")).unwrap();
    let start = protocol
        .find("\n### Metrics")
        .expect("docs/PROTOCOL.md has a Metrics section");
    let section = &protocol[start + 1..];
    let body = &section["### Metrics".len()..];
    let end = ["\n## ", "\n### "]
        .iter()
        .filter_map(|heading| body.find(heading))
        .min()
        .unwrap_or(body.len());
    section[.."### Metrics".len() + end].to_owned()
}

/// Suffixes that say a gauge's unit (base units), or that it counts IDs (`_ids`), hours
/// listed (`_listed`: promtool takes `_hours` for a unit of time) or connections
/// (`_connections`), is a 0/1 state (`_up`) or carries labels (`_info`).
const GAUGE_SUFFIXES: [&str; 7] = [
    "_seconds",
    "_bytes",
    "_ids",
    "_listed",
    "_connections",
    "_up",
    "_info",
];

/// Metrics under the names Prometheus' client libraries give them (its process
/// collector's), which dashboards look for: the only ones not named `bloomcast_*`.
const STANDARD: [&str; 1] = ["process_resident_memory_bytes"];

async fn every_metric_has_help_type_a_unit_and_a_documented_meaning() {
    let (text, _) = live_metrics().await;
    let found = families(&text);
    let docs = documented_metrics();
    assert!(found.kinds.len() >= 20, "{text}");
    for (name, kind) in &found.kinds {
        assert!(found.helped.contains(name), "{name} has no # HELP");
        assert!(
            name.starts_with("bloomcast_") || STANDARD.contains(&name.as_str()),
            "{name}"
        );
        match kind.as_str() {
            "counter" => assert!(
                name.ends_with("_total"),
                "counter {name} must end in _total"
            ),
            "gauge" => assert!(
                GAUGE_SUFFIXES.iter().any(|s| name.ends_with(s)),
                "gauge {name} must end in one of {GAUGE_SUFFIXES:?}"
            ),
            other => panic!("{name} is a {other}: document its unit and extend this test"),
        }
        assert!(
            docs.contains(&format!("`{name}`")),
            "{name} is not documented in docs/PROTOCOL.md's Metrics section"
        );
    }
    for name in &found.helped {
        assert!(found.kinds.contains_key(name), "{name} has no # TYPE");
    }
    for name in &found.sampled {
        assert!(
            found.kinds.contains_key(name),
            "sample of {name} without # TYPE"
        );
    }
}

/// The value of the sample `series` (name and labels exactly as written).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn the_metrics_report_the_store_the_chain_head_and_errors_by_code() {
    let (text, header) = live_metrics().await;
    assert_eq!(value(&text, "bloomcast_store_up"), Some(1.0), "{text}");
    assert_eq!(value(&text, "bloomcast_corrupt_listed"), Some(0.0));
    assert_eq!(value(&text, "bloomcast_seal_failures_total"), Some(0.0));
    assert_eq!(
        value(&text, "bloomcast_max_hour_ids"),
        Some(Settings::default().max_hour_ids as f64)
    );
    assert_eq!(value(&text, "bloomcast_current_hour_ids"), Some(10.0));
    assert_eq!(value(&text, "bloomcast_ids_ingested_total"), Some(60.0));
    // The head is the sealed hour, and its header is the one /chain serves for it.
    assert_eq!(
        value(&text, "bloomcast_chain_head_timestamp_seconds"),
        Some(first_hour().start().timestamp() as f64)
    );
    assert_eq!(
        value(
            &text,
            &format!("bloomcast_chain_head_info{{header=\"{header}\"}}")
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        text.matches("\nbloomcast_chain_head_info{").count(),
        1,
        "one head: {text}"
    );
    // Refused requests by code; codes never answered are there at 0 (rates need them).
    let errors = |code: &str| {
        value(
            &text,
            &format!("bloomcast_http_errors_total{{code=\"{code}\"}}"),
        )
    };
    assert_eq!(errors("unauthorized"), Some(1.0));
    assert_eq!(errors("not_found"), Some(1.0));
    assert_eq!(errors("busy"), Some(0.0));
    assert_eq!(errors("store_unavailable"), Some(0.0));
}

/// Each connection open counts in `bloomcast_http_open_connections` and in `/stats`'
/// `connections` part until it closes.
async fn open_connections_are_counted_while_they_last() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let (node, _clock) = embedded_node(dir.path()).await;
    let address = node.base.trim_start_matches("http://").to_owned();
    // Three idle keep-alive connections, each after one answered request.
    let mut idle = Vec::new();
    for _ in 0..3 {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = [0; 1024];
        let n = stream.read(&mut answer).await.unwrap();
        assert!(answer[..n].starts_with(b"HTTP/1.1 "), "an answer");
        idle.push(stream);
    }
    // One more: the asking one, a connection of its own that closes after its answer
    // (a pooled client may hold a second connection for a moment, which would count).
    let ask = |path: &'static str| {
        let address = address.clone();
        async move {
            let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
            let request = format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n");
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).await.unwrap();
            let answer = String::from_utf8(answer).unwrap();
            let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
            assert!(head.starts_with("HTTP/1.0 200"), "{head}");
            body.to_owned()
        }
    };
    let open = || async { value(&ask("/metrics").await, "bloomcast_http_open_connections") };
    assert_eq!(open().await, Some(4.0));
    let stats: serde_json::Value = serde_json::from_str(&ask("/stats").await).unwrap();
    assert_eq!(
        stats["memory"]["parts"]["connections"]["bytes"].as_u64(),
        Some(4 * bloomcast::server::CONNECTION_BYTES),
        "{stats}"
    );
    drop(idle);
    common::wait::until("the closed connections are no longer counted", || async {
        (open().await == Some(1.0)).then_some(())
    })
    .await;
}

/// The chain-head alert's premise: two nodes on one PostgreSQL schema, one of which
/// seals the hour, report the same head once each has run its housekeeping.
async fn nodes_on_one_store_report_one_chain_head_whichever_sealed() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(first_hour(), Duration::minutes(10));
    let mut nodes = Vec::new();
    for i in 0..2 {
        let settings = node_settings(&url, &schema, dir.path().join(format!("node{i}")));
        nodes.push(node(settings, &clock).await);
    }
    let http = reqwest::Client::new();
    let ids: Vec<String> = (0..20).map(|i| format!("id-{i}")).collect();
    post_ids(&http, &nodes[1].base, &ids).await.expect("ingest");
    clock.advance(Duration::hours(1));
    nodes[0]
        .service
        .tick()
        .await
        .expect("node 0 seals the hour");
    let head = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("bloomcast_chain_head_info{"))
            .map(str::to_owned)
    };
    let metrics = |i: usize| {
        let (http, base) = (http.clone(), nodes[i].base.clone());
        async move {
            let reply = http.get(format!("{base}/metrics")).send().await.unwrap();
            reply.text().await.unwrap()
        }
    };
    let sealed = head(&metrics(0).await).expect("node 0 reports the head it sealed");
    assert_eq!(
        head(&metrics(1).await),
        None,
        "node 1 has not run housekeeping"
    );
    nodes[1].service.tick().await.expect("node 1 housekeeping");
    assert_eq!(head(&metrics(1).await), Some(sealed));
    drop(nodes);
    drop_schema(&url, &schema).await;
}

/// The alert names of `deploy/prometheus/rules/alerts.yml`, each with its rule's text.
fn alert_rules() -> Vec<(String, String)> {
    let alerts = std::fs::read_to_string(prometheus_dir().join("rules/alerts.yml")).unwrap();
    alerts
        .split("\n      - alert: ")
        .skip(1)
        .map(|rule| {
            let (name, body) = rule.split_once('\n').unwrap();
            (name.trim().to_owned(), body.to_owned())
        })
        .collect()
}

fn every_alert_has_a_runbook_and_a_test_that_fires_and_resolves_it() {
    let rules = alert_rules();
    let names: Vec<&str> = rules.iter().map(|(n, _)| n.as_str()).collect();
    for wanted in [
        "BloomcastStoreUnavailable",
        "BloomcastCorruptDataFound",
        "BloomcastClockBehind",
        "BloomcastClockHeld",
        "BloomcastSealFailing",
        "BloomcastHourNearMaxIds",
        "BloomcastBusyResponses",
        "BloomcastMemoryNearBudget",
        "BloomcastChainHeadDiffers",
        "BloomcastNoIngest",
    ] {
        assert!(names.contains(&wanted), "no alert {wanted} in {names:?}");
    }
    for (name, body) in &rules {
        for field in [
            "expr:",
            "for:",
            "severity:",
            "summary:",
            "description:",
            "runbook: |",
            "Means:",
            "Check:",
            "Do:",
        ] {
            assert!(body.contains(field), "{name} has no {field}");
        }
    }
    // Each alert is expected firing at some eval_time and resolved (no alert) at another.
    let mut tests = String::new();
    for file in test_files() {
        tests.push_str(&std::fs::read_to_string(file).unwrap());
    }
    for name in names {
        let checks: Vec<&str> = tests
            .split("alertname: ")
            .skip(1)
            .filter(|check| check.starts_with(&format!("{name}\n")))
            .collect();
        assert!(
            checks.iter().any(|c| c.contains("exp_alerts:\n")),
            "no test fires {name}"
        );
        assert!(
            checks.iter().any(|c| c.contains("exp_alerts: []")),
            "no test resolves {name}"
        );
    }
}

/// `deploy/prometheus/tests/*.yml`.
fn test_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(prometheus_dir().join("tests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no promtool tests in deploy/prometheus/tests"
    );
    files
}

/// `promtool ARGS` (in `deploy/prometheus`), with `stdin` piped in; panics with its
/// output unless it succeeds.
fn promtool(args: &[&str], paths: &[PathBuf], stdin: &str) -> Output {
    let out = run_with_stdin(
        Command::new(Need::Promtool.found())
            .args(args)
            .args(paths)
            .current_dir(prometheus_dir()),
        stdin,
    );
    assert!(
        out.status.success(),
        "promtool {args:?} {paths:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

async fn promtool_finds_no_problem_in_a_live_metrics_page() {
    let (text, _) = live_metrics().await;
    let out = promtool(&["check", "metrics"], &[], &text);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.trim().is_empty(),
        "promtool check metrics: {said}\n{text}"
    );
}

fn promtool_accepts_the_configuration_and_rules() {
    let rules: Vec<PathBuf> = ["rules/recording.yml", "rules/alerts.yml"]
        .iter()
        .map(|p| prometheus_dir().join(p))
        .collect();
    let out = promtool(&["check", "rules"], &rules, "");
    let said = String::from_utf8_lossy(&out.stdout);
    let alerts = alert_rules().len();
    assert!(
        said.contains(&format!("SUCCESS: {alerts} rules found")),
        "{said}"
    );
    let config = prometheus_dir().join("prometheus.yml");
    let out = promtool(&["check", "config"], &[config], "");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("SUCCESS: 2 rule files found"), "{said}");
}

fn promtool_fires_and_resolves_every_alert() {
    let out = promtool(&["test", "rules"], &test_files(), "");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("SUCCESS"), "{said}");
    assert!(!said.contains("FAILED"), "{said}");
}
