//! The `check`, `ingest`, `inspect` and `confirm-clock` verbs of the real binary against a
//! real server.

mod common;

use std::process::{Command, Output};

/// Runs `bloomcast <args>` with `stdin` piped in.
fn bloomcast(args: &[&str], stdin: &str) -> Output {
    common::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_bloomcast"))
            .args(args)
            .env_remove("BLOOMCAST_SERVER")
            .env_remove("BLOOMCAST_TOKEN"),
        stdin,
    )
}

fn lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The server's current hour in the CLI's form, read after it started.
fn now_hour() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H").to_string()
}

#[test]
fn ids_ingested_from_stdin_are_reported_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let since = now_hour();
    let ids: Vec<String> = (0..2500).map(|i| format!("feed/{i}")).collect();

    let ingest = bloomcast(
        &[
            "ingest",
            "--server",
            &server.base,
            "--token",
            common::TOKEN,
            "--batch",
            "300",
            "-",
        ],
        &ids.join("\n"),
    );
    let check = bloomcast(
        &[
            "check",
            "--server",
            &server.base,
            "--since",
            &since,
            "feed/7",
            "-",
            "feed/7",
        ],
        &ids[..100].join("\r\n"),
    );

    assert!(ingest.status.success(), "{}", stderr(&ingest));
    assert!(
        stderr(&ingest).contains("ingested 2500 IDs in 9 requests"),
        "{}",
        stderr(&ingest)
    );
    assert!(check.status.success(), "{}", stderr(&check));
    let mut expected = vec!["feed/7".to_owned()];
    expected.extend(ids[..100].iter().filter(|id| *id != "feed/7").cloned());
    assert_eq!(lines(&check), expected, "each ID once, in the order given");
}

#[test]
fn check_exits_zero_when_nothing_changed_and_json_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);

    let out = bloomcast(
        &[
            "check",
            "--server",
            &server.base,
            "--hours",
            "1",
            "--json",
            "never-seen",
        ],
        "",
    );

    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["checked"], 1);
    assert_eq!(doc["changed"], serde_json::json!([]));
    assert!(doc["requests"].as_u64().unwrap() >= 2, "{doc}");
}

#[test]
fn inspect_reads_a_url_and_a_saved_document() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let ingest = bloomcast(
        &[
            "ingest",
            "--server",
            &server.base,
            "--token",
            common::TOKEN,
            "a",
            "b",
            "c",
        ],
        "",
    );
    let hour_url = format!(
        "{}/{}",
        server.base,
        chrono::Utc::now().format("%Y/%m/%d/%H")
    );
    let saved = dir.path().join("hour.json");
    let body = get_body(&hour_url);
    std::fs::write(&saved, &body).unwrap();

    let from_url = bloomcast(&["inspect", "--json", &hour_url], "");
    let from_file = bloomcast(&["inspect", "--json", saved.to_str().unwrap()], "");

    assert!(ingest.status.success(), "{}", stderr(&ingest));
    for out in [&from_url, &from_file] {
        assert!(out.status.success(), "{}", stderr(out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["count"], 3, "{doc}");
        assert_eq!(doc["hash"], "sha1-km32");
        assert!(doc["fpp"].as_f64().unwrap() < 0.01, "{doc}");
        assert!(doc["bits_set"].as_u64().unwrap() > 0);
    }
}

#[test]
fn failures_exit_nonzero_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let long = "x".repeat(1025);

    let bad_token = bloomcast(
        &[
            "ingest",
            "--server",
            &server.base,
            "--token",
            "wrong-token-123",
            "a",
        ],
        "",
    );
    let bad_line = bloomcast(
        &[
            "ingest",
            "--server",
            &server.base,
            "--token",
            common::TOKEN,
            "-",
        ],
        &format!("ok\n{long}\n"),
    );
    let before_genesis = bloomcast(
        &[
            "check",
            "--server",
            &server.base,
            "--since",
            "2008-09-03T05",
            "a",
        ],
        "",
    );
    let not_a_filter = bloomcast(&["inspect", dir.path().to_str().unwrap()], "");

    for (out, needle) in [
        (&bad_token, "401"),
        (&bad_line, "line 2"),
        (&before_genesis, "404"),
        (&not_a_filter, "cannot read"),
    ] {
        assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
        assert!(stderr(out).contains(needle), "{needle}: {}", stderr(out));
    }
}

#[test]
fn the_server_may_be_given_as_host_and_port() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let host_port = server.base.trim_start_matches("http://");

    let ingest = bloomcast(
        &[
            "ingest",
            "--server",
            host_port,
            "--token",
            common::TOKEN,
            "seen",
        ],
        "",
    );
    let check = bloomcast(
        &[
            "check", "--server", host_port, "--hours", "1", "seen", "unseen",
        ],
        "",
    );

    assert!(ingest.status.success(), "{}", stderr(&ingest));
    assert_eq!(lines(&check), ["seen"], "{}", stderr(&check));
}

#[test]
fn rejected_arguments_are_named_as_typed() {
    let since = bloomcast(
        &[
            "check",
            "--server",
            "127.0.0.1:9",
            "--since",
            "yesterday",
            "a",
        ],
        "",
    );
    let server = bloomcast(&["check", "--server", "ftp://x", "a"], "");

    assert_eq!(since.status.code(), Some(2));
    assert!(
        stderr(&since).contains("\"yesterday\""),
        "{}",
        stderr(&since)
    );
    assert!(!stderr(&since).contains("yes/erday"), "{}", stderr(&since));
    assert_eq!(server.status.code(), Some(1));
    assert!(
        stderr(&server).contains("\"ftp://x\""),
        "{}",
        stderr(&server)
    );
}

#[test]
fn nothing_listening_fails_at_once_with_one_line_naming_the_server() {
    // A port just freed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = format!("127.0.0.1:{port}");

    // With the CLI's own log level, which shows each retry as a warning.
    let out = common::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_bloomcast"))
            .args(["ingest", "--server", &server, "--token", common::TOKEN, "a"])
            .env_remove("BLOOMCAST_SERVER")
            .env_remove("BLOOMCAST_TOKEN")
            .env("RUST_LOG", "warn"),
        "",
    );

    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        !err.contains("retrying"),
        "retried a refused connection: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("http://{server}")), "{err}");
}

/// The identity JSON of a filter, fetched without the SDK.
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

#[test]
fn inspect_reads_a_saved_ribbon_body() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<bloomcast::bloom::Key> = ["a", "b", "c"]
        .iter()
        .map(|id| bloomcast::bloom::Key::of(id))
        .collect();
    let ribbon = bloomcast::bloom::Ribbon::build(&keys, 10).unwrap();
    let saved = dir.path().join("hour.ribbon");
    std::fs::write(&saved, ribbon.to_bytes()).unwrap();

    let out = bloomcast(&["inspect", "--json", saved.to_str().unwrap()], "");

    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["structure"], "ribbon", "{doc}");
    assert_eq!(doc["count"], 3);
    assert_eq!(doc["r"], 10);
    assert_eq!(doc["bytes"], ribbon.byte_len());
    assert_eq!(doc["fpp"].as_f64().unwrap(), 1.0 / 1024.0);
}

#[test]
fn inspect_reads_a_saved_version_2_body() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<bloomcast::bloom::Key> = (0..5_000)
        .map(|i| bloomcast::bloom::Key::of(&format!("id:{i}")))
        .collect();
    let grade = bloomcast::bloom::Grade::for_fpp(0.003).unwrap();
    let ribbon = bloomcast::bloom::Ribbon2::build(&keys, grade).unwrap();
    let saved = dir.path().join("hour.ribbon2");
    std::fs::write(&saved, ribbon.to_bytes()).unwrap();

    let out = bloomcast(&["inspect", "--json", saved.to_str().unwrap()], "");

    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["structure"], "ribbon2", "{doc}");
    assert_eq!(doc["count"], 5_000);
    assert_eq!(
        (doc["k"].as_u64(), doc["split"].as_u64()),
        (Some(8), Some(u64::from(grade.split)))
    );
    assert_eq!(doc["bytes"], ribbon.byte_len());
    assert_eq!(doc["fpp"].as_f64().unwrap(), grade.fpp());
    let of_floor = doc["of_floor"].as_f64().unwrap();
    assert!(of_floor > 1.0 && of_floor <= 1.05, "{of_floor}");
}

#[test]
fn inspect_reads_the_json_form_as_the_binary_body_and_names_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<bloomcast::bloom::Key> = (0..100)
        .map(|i| bloomcast::bloom::Key::of(&format!("id:{i}")))
        .collect();
    let ribbon = bloomcast::bloom::Ribbon::build(&keys, 7).unwrap();
    let meta = bloomcast::wire::Meta::hour("2008-09-03T13:00:00Z".into(), true, 100);
    let json = bloomcast::wire::RibbonDocument::new(meta, &ribbon).to_json();
    let (bin_path, json_path) = (dir.path().join("h.ribbon"), dir.path().join("h.json"));
    std::fs::write(&bin_path, ribbon.to_bytes()).unwrap();
    std::fs::write(&json_path, &json).unwrap();

    let of = |path: &std::path::Path| {
        let out = bloomcast(&["inspect", "--json", path.to_str().unwrap()], "");
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (from_bin, from_json) = (of(&bin_path), of(&json_path));

    for field in ["structure", "count", "m", "r", "seed", "bytes", "fpp"] {
        assert_eq!(from_json[field], from_bin[field], "{field}");
    }
    assert_eq!(from_json["covers"], "2008-09-03T13:00:00Z");
    assert_eq!(from_json["complete"], true);
    assert!(
        from_bin["covers"].is_null(),
        "a binary body says nothing of its time"
    );
}

#[test]
fn ingest_without_a_token_says_where_to_find_one() {
    let out = bloomcast(&["ingest", "--server", "127.0.0.1:9", "a"], "");

    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("BLOOMCAST_TOKEN") && err.contains("data/ingest-token"),
        "{err}"
    );
}

#[test]
fn confirm_clock_follows_a_start_held_a_day_ahead_and_says_when_there_is_nothing_to_confirm() {
    let dir = tempfile::tempdir().unwrap();
    drop(common::start(dir.path(), &[]));
    let ahead = common::start(dir.path(), &[("BLOOMCAST_CLOCK_OFFSET_SECONDS", "86400")]);
    let health = |base: &str| -> serde_json::Value {
        serde_json::from_slice(&get_body(&format!("{base}/healthz"))).unwrap()
    };
    assert_eq!(health(&ahead.base)["status"], "degraded");
    let confirm = |token: &str| {
        bloomcast(
            &["confirm-clock", "--server", &ahead.base, "--token", token],
            "",
        )
    };

    let refused = confirm("not-the-token");
    let confirmed = confirm(common::TOKEN);
    let again = confirm(common::TOKEN);

    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("401"), "{}", stderr(&refused));
    assert!(confirmed.status.success(), "{}", stderr(&confirmed));
    let printed = lines(&confirmed);
    assert!(printed[0].starts_with("confirmed: "), "{printed:?}");
    let day_ahead: Vec<String> = [-5, 0, 5]
        .iter()
        .map(|s| {
            let t = chrono::Utc::now() + chrono::Duration::days(1) + chrono::Duration::seconds(*s);
            format!(
                "current_hour {}",
                bloomcast::hour::Hour::containing(t).rfc3339()
            )
        })
        .collect();
    assert!(printed.iter().any(|l| day_ahead.contains(l)), "{printed:?}");
    let now = health(&ahead.base);
    assert_eq!(now["status"], "ok", "{now}");
    let current = format!("current_hour {}", now["current_hour"].as_str().unwrap());
    assert!(day_ahead.contains(&current), "{current} is not a day ahead");
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("nothing_to_confirm"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_pubkey_of_hex_digits_that_is_no_ed25519_key_is_named_so() {
    // 64 hex digits, but y = 2 is no point of the curve.
    let not_a_point = format!("02{}", "0".repeat(62));

    let out = bloomcast(
        &[
            "verify",
            "--pubkey",
            &not_a_point,
            "--since",
            "2008-09-03T05",
            "--url",
            "http://127.0.0.1:9",
        ],
        "",
    );

    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a valid Ed25519 public key"), "{err}");
    assert!(!err.contains("expected 64 hex digits"), "{err}");
}

#[test]
fn check_exact_without_a_universe_names_the_server_and_post_universe() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);

    let since = now_hour();
    let out = bloomcast(
        &[
            "check",
            "--server",
            &server.base,
            "--exact",
            "--since",
            &since,
            "a",
        ],
        "",
    );

    assert!(!out.status.success(), "accepted: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&server.base) && err.contains("POST /universe"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn check_stops_asking_for_exact_hours_the_server_will_not_build() {
    // A universe of 400,000 IDs: each hour's exact build needs more than the build budget
    // of an 8 MiB cache (a third of it: 2.7 MiB; the universe's keys alone are 3.2 MB), so
    // the server answers 406 for each exact body, while the hours' compact builds fit.
    let start = bloomcast::hour::hour_of(2008, 9, 3, 5).unwrap();
    let hours = 4;
    let (server, changed) =
        common::exact::serve_tuned(common::TOKEN, start, 400_000, hours, 20, |settings| {
            settings.cache_bytes = 8 << 20
        })
        .await;
    let refused = reqwest::get(format!("{}/2008/09/03/05.exact", server.base))
        .await
        .unwrap();
    assert_eq!(refused.status(), 406);
    let followed: Vec<String> = changed.concat();
    let mut args = check_since_2008(&server.base);
    args.extend(strings(&["--registered", "--strategy", "hourly", "-"]));
    let out = bloomcast_async(args, followed.join("\n")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let got: std::collections::HashSet<String> =
        serde_json::from_value(doc["changed"].clone()).unwrap();
    assert_eq!(got, followed.iter().cloned().collect(), "{doc}");
    assert_eq!(doc["exact"], 0, "{doc}");
    // The index, one exact body refused, each closed hour's approximate form and the
    // open hour: not one refusal per hour.
    assert_eq!(doc["requests"], hours + 3, "{doc}");
}

/// `bloomcast check --json` of `server` from 2008-09-03T05: hours of 2008, far behind this
/// machine's clock (stale), their open hour's versions made then, on purpose.
fn check_since_2008(server: &str) -> Vec<String> {
    strings(&[
        "check",
        "--server",
        server,
        "--since",
        "2008-09-03T05",
        "--json",
        "--accept-stale",
        "--freshness",
        "600000000",
    ])
}

/// Runs `bloomcast <args>` off the async runtime that serves the test's server.
async fn bloomcast_async(args: Vec<String>, stdin: String) -> Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        bloomcast(&args, &stdin)
    })
    .await
    .unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn check_reads_exact_hours_when_cheaper_or_forced_and_inspect_prints_one() {
    let start = bloomcast::hour::hour_of(2008, 9, 3, 5).unwrap();
    let (server, changed) = common::exact::serve(common::TOKEN, start, 2_000, 2, 20).await;
    let universe = common::exact::universe(2_000).join("\n");
    let want: std::collections::HashSet<String> = changed.concat().into_iter().collect();
    let key = common::well_known(&reqwest::Client::new(), &server.base).await["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let base = check_since_2008(&server.base);

    for extra in [
        // The universe's own IDs, declared so: exact bodies alone, hour by hour (two
        // hours of 20 would cost less still as one version 2 union at 2^-24, which
        // auto takes: it names no hour, and is exact only nearly).
        vec!["--registered", "--strategy", "hourly"],
        // Forced, where a wasted fetch costs nothing (it would read Bloom filters), and
        // forced while verifying (each exact body and the form it refines verified by
        // its own signature): each exact body refines an approximate form, exact for
        // these IDs all the same.
        vec!["--exact", "--fetch-cost", "0"],
        vec!["--exact", "--pubkey", &key],
    ] {
        let mut args = base.clone();
        args.extend(strings(&extra));
        args.push("-".into());
        let out = bloomcast_async(args, universe.clone()).await;
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["exacts"], 2, "{extra:?}: {doc}");
        assert_eq!(doc["exact"], 2, "bloomcast-py's name for it: {doc}");
        let got: std::collections::HashSet<String> =
            serde_json::from_value(doc["changed"].clone()).unwrap();
        // Each changed ID and none of the 1,960 universe IDs that did not change.
        assert_eq!(got, want, "{extra:?}");
    }

    let url = format!("{}/2008/09/03/05.exact", server.base);
    let out = bloomcast_async(
        strings(&["inspect", "--json", "--pubkey", &key, &url]),
        String::new(),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let from_url: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(from_url["structure"], "exact", "{from_url}");
    assert_eq!(from_url["covers"], "2008-09-03T05:00:00Z");
    assert_eq!(from_url["universe"], 2_000);
    assert_eq!(from_url["changed"], 20);
    let body = reqwest::get(&url).await.unwrap().bytes().await.unwrap();
    assert_eq!(from_url["bytes"], body.len());

    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("05.exact");
    std::fs::write(&saved, &body).unwrap();
    let out = bloomcast_async(
        strings(&["inspect", saved.to_str().unwrap()]),
        String::new(),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "structure       exact",
        "universe        2000",
        "changed         20",
        "complemented    false",
    ] {
        assert!(text.contains(line), "{text}");
    }
    for field in ["k", "split", "rows", "seeds", "bytes"] {
        assert!(
            text.lines().any(|l| l.starts_with(field)),
            "{field}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn check_flags_never_registered_ids_at_most_at_the_target_rate_once_a_universe_exists() {
    // The README's quick start, sealed: a universe registered, then 3,000 IDs published in
    // each of two hours (most of each hour's universe changed in it).
    let start = bloomcast::hour::hour_of(2008, 9, 3, 5).unwrap();
    let (server, published) =
        common::exact::serve_quick_start(common::TOKEN, start, 2, 3_000).await;
    let outsiders = common::exact::outsiders(1_000).join("\n");
    let key = common::well_known(&reqwest::Client::new(), &server.base).await["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let base = check_since_2008(&server.base);
    // Two sealed hours (the open one is empty): 2,000 (ID, hour) trials, each flagged at
    // most at the service's target of 0.01.
    let bound = common::exact::at_most_at_rate(2_000, 0.01);

    // The default path, hour by hour, verifying (v1 filters refined by the signed exact
    // bodies), forced exact without the declaration, and a dear fetch (refined ribbons).
    for (extra, refined) in [
        (vec![], true),
        (vec!["--strategy", "hourly"], true),
        (vec!["--pubkey", &key], true),
        (vec!["--exact"], true),
        (vec!["--fetch-cost", "1000000"], true),
    ] {
        let mut args = base.clone();
        args.extend(strings(&extra));
        args.push("-".into());
        let doc = bloomcast_json(args, outsiders.clone()).await;
        let flags = flags_in(&doc);
        let ids = doc["changed"].as_array().unwrap().len();
        let exacts = doc["exacts"].as_u64().unwrap_or(0);
        eprintln!("{extra:?}: {flags} flags in 2,000 (ID, hour) pairs, {ids} of 1,000 IDs, {exacts} exact bodies");
        assert!(flags <= bound, "{extra:?}: {flags} flags > {bound}");
        if refined {
            assert_eq!(exacts, 2, "{extra:?}: read with the exact bodies");
        }
    }

    // Declared registered (falsely), the exact bodies are read alone: their answers for
    // these IDs are arbitrary, what the declaration is the caller's word against.
    let mut args = base.clone();
    args.extend(strings(&["--registered", "-"]));
    let doc = bloomcast_json(args, outsiders).await;
    let flags = flags_in(&doc);
    eprintln!("[\"--registered\"]: {flags} flags in 2,000 (ID, hour) pairs");
    assert!(
        flags > bound,
        "{flags}: the exact bodies alone were not read"
    );

    // The published IDs are found in their hours; those of the first hour, in the
    // universe when the second was sealed, are answered for it exactly: not flagged.
    let mut args = base.clone();
    args.push("-".into());
    let doc = bloomcast_json(args, published.concat().join("\n")).await;
    let ranges = doc["ranges"].as_array().unwrap();
    assert_eq!(ranges.len(), 2, "{}", doc["ranges"]);
    let [first, second] = [0, 1].map(|n| -> std::collections::HashSet<String> {
        serde_json::from_value(ranges[n]["ids"].clone()).unwrap()
    });
    assert!(published[0].iter().all(|id| first.contains(id)));
    assert!(published[1].iter().all(|id| second.contains(id)));
    assert!(published[0].iter().all(|id| !second.contains(id)));
}

/// Runs `bloomcast <args>`, which must succeed, and reads the JSON it prints.
async fn bloomcast_json(args: Vec<String>, stdin: String) -> serde_json::Value {
    let out = bloomcast_async(args, stdin).await;
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The (ID, hour) pairs `check --json` flagged: one per ID per range listing it.
fn flags_in(doc: &serde_json::Value) -> usize {
    (doc["ranges"].as_array().unwrap().iter())
        .map(|r| r["ids"].as_array().unwrap().len())
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn check_and_history_fail_naming_a_damaged_hour_and_check_json_says_so_on_stdout() {
    let start = bloomcast::hour::hour_of(2008, 9, 3, 5).unwrap();
    let (server, ids) = common::damaged::serve(common::TOKEN, start).await;
    let damaged = "2008-09-03T06:00:00Z";
    let all = ids.concat().join("\n");
    let check = |extra: &[&str]| {
        // Hours of 2008, far behind this machine's clock (stale): on purpose.
        let mut args = strings(&["check", "--server", &server.base, "--accept-stale"]);
        args.extend(strings(extra));
        args.push("-".into());
        bloomcast_async(args, all.clone())
    };

    for window in [&["--since", "2008-09-03T05"][..], &["--hours", "24"]] {
        let out = check(window).await;
        assert_eq!(out.status.code(), Some(1), "{window:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(damaged), "{}", stderr(&out));
        assert!(
            out.stdout.is_empty(),
            "no IDs printed as if nothing else changed"
        );

        let out = check(&[window, &["--json"][..]].concat()).await;
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["error"], "corrupt", "{doc}");
        assert_eq!(doc["hours"], serde_json::json!([damaged]), "{doc}");
        assert!(doc.get("changed").is_none(), "{doc}");
    }
    let history = bloomcast_async(
        strings(&[
            "history",
            "--server",
            &server.base,
            "--no-cache",
            "--since",
            "2008-09-03T05",
            "-",
        ]),
        all.clone(),
    )
    .await;
    assert_eq!(history.status.code(), Some(1), "{}", stderr(&history));
    assert!(stderr(&history).contains(damaged), "{}", stderr(&history));

    // A range after it is checked as ever.
    let out = check(&["--since", "2008-09-03T07"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let changed = lines(&out);
    assert!(ids[2].iter().all(|id| changed.contains(id)), "{changed:?}");
}
