//! `bloomcast estimate --intersect A B` and the estimated count of `inspect`, run as
//! the real binary on saved filter documents and against a real server.

mod common;

use bloomcast::bloom::{Filter, Params};
use bloomcast::wire::{Document, Meta};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bloomcast(args: &[&str]) -> Output {
    common::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_bloomcast"))
            .args(args)
            .env_remove("BLOOMCAST_SERVER")
            .env_remove("BLOOMCAST_TOKEN"),
        "",
    )
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_of(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Saves a filter of shape `params` holding `ids` as an hourly JSON document.
fn save(dir: &Path, name: &str, params: Params, ids: &[String]) -> PathBuf {
    let mut filter = Filter::new(params);
    for id in ids {
        filter.insert(id);
    }
    let meta = Meta::hour("2008-09-03T13:00:00Z".into(), true, ids.len() as u64);
    let path = dir.join(name);
    std::fs::write(&path, Document::new(meta, &filter).to_json()).unwrap();
    path
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}/{i}")).collect()
}

fn near(value: &serde_json::Value, truth: f64, tolerance: f64) -> bool {
    (value.as_f64().unwrap() - truth).abs() <= tolerance * truth
}

#[test]
fn two_saved_filters_of_one_shape_estimate_their_intersection_and_union() {
    let dir = tempfile::tempdir().unwrap();
    let params = Params::optimal(10_000, 0.01).unwrap();
    let common = ids("both", 3000);
    let a = save(
        dir.path(),
        "a.json",
        params,
        &[common.clone(), ids("a", 3000)].concat(),
    );
    let b = save(
        dir.path(),
        "b.json",
        params,
        &[common, ids("b", 3000)].concat(),
    );
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());

    let json = bloomcast(&["estimate", "--json", "--intersect", a, b]);
    let text = bloomcast(&["estimate", "--intersect", a, b]);

    let doc = json_of(&json);
    assert_eq!(doc["a"]["count"], 6000, "{doc}");
    assert!(near(&doc["a"]["estimated_count"], 6000.0, 0.03), "{doc}");
    assert!(near(&doc["b"]["estimated_count"], 6000.0, 0.03), "{doc}");
    assert!(near(&doc["union"], 9000.0, 0.03), "{doc}");
    assert!(near(&doc["intersection"], 3000.0, 0.08), "{doc}");
    assert_eq!(doc["a"]["m"], params.m);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8(text.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("intersection"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        line.split_whitespace().nth(1).unwrap(),
        doc["intersection"].to_string(),
        "{text}"
    );
}

#[test]
fn filters_of_different_shapes_are_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let small = save(
        dir.path(),
        "small.json",
        Params { m: 959, k: 7 },
        &ids("x", 10),
    );
    let other_k = save(dir.path(), "k.json", Params { m: 959, k: 6 }, &ids("x", 10));
    let big = save(
        dir.path(),
        "big.json",
        Params { m: 28_756, k: 7 },
        &ids("x", 10),
    );

    for (a, b) in [(&small, &big), (&small, &other_k)] {
        let out = bloomcast(&[
            "estimate",
            "--intersect",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ]);

        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(out.stdout.is_empty());
        assert!(err.contains("different shapes"), "{err}");
        assert!(err.contains("(m=959, k=7, hash=sha1-km32)"), "{err}");
        let (m, k) = if b == &big { (28_756, 7) } else { (959, 6) };
        assert!(
            err.contains(&format!("(m={m}, k={k}, hash=sha1-km32)")),
            "{err}"
        );
    }
}

#[test]
fn estimate_needs_exactly_two_filters() {
    let out = bloomcast(&["estimate", "--intersect", "only-one.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_served_hour_intersected_with_its_saved_copy_is_itself() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let mut args = vec![
        "ingest".to_owned(),
        "--server".into(),
        server.base.clone(),
        "--token".into(),
        common::TOKEN.into(),
    ];
    args.extend(ids("feed", 800));
    let ingest = bloomcast(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ingest.status.success(), "{}", stderr(&ingest));
    let hour = format!(
        "{}/{}",
        server.base,
        chrono::Utc::now().format("%Y/%m/%d/%H")
    );
    let saved = dir.path().join("hour.json");
    let inspect = json_of(&bloomcast(&["inspect", "--json", &hour]));
    let text = bloomcast(&["inspect", &hour]);
    std::fs::write(&saved, get_body(&hour)).unwrap();

    let doc = json_of(&bloomcast(&[
        "estimate",
        "--json",
        "--intersect",
        &hour,
        saved.to_str().unwrap(),
    ]));

    assert_eq!(inspect["count"], 800, "{inspect}");
    assert!(near(&inspect["estimated_count"], 800.0, 0.05), "{inspect}");
    let text = String::from_utf8(text.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let at = names
        .iter()
        .position(|n| *n == "count")
        .expect("count line");
    assert_eq!(
        names[at + 1],
        "estimated_count",
        "next to the exact count: {text}"
    );
    assert_eq!(doc["intersection"], doc["a"]["estimated_count"], "{doc}");
    assert_eq!(doc["union"], doc["a"]["estimated_count"], "{doc}");
    assert_eq!(doc["jaccard"], 1.0, "{doc}");
}

fn get_body(url: &str) -> Vec<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let reply = reqwest::get(url).await.unwrap();
        assert_eq!(reply.status(), 200);
        reply.bytes().await.unwrap().to_vec()
    })
}
