//! The HTTP ecosystem's own checkers against a live server (the whole application on a
//! real socket, in this process, with a clock the test moves): the OpenAPI description it
//! serves validated, then exercised by schemathesis (no server error, no response that
//! contradicts it, no undocumented status), and httplint (REDbot's engine) on every form
//! of an open and a sealed hour, a union, the index, the chain and the key list (no note
//! at warning level or worse). The checkers are `tests/http-checkers/check.py` with the
//! Python packages pinned beside it.
//!
//! Reported ignored, with the reason, where that Python is missing; fails instead in CI
//! (`CI` set). See `tests/common/needs.rs`.

mod common;

use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use common::needs::{self, Need};
use std::process::Command;

use common::TOKEN;

fn main() {
    needs::run(vec![needs::trial(
        "schemathesis_and_httplint_find_nothing",
        &[Need::HttpCheckers],
        || common::needs::block_on(the_checkers_find_nothing(Need::HttpCheckers.found())),
    )]);
}

/// The sealed hour: the hour the description's examples name (`2008/09/03/13`).
fn sealed() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

/// The service's first hour, a day before: its day (`2008/09/02`, the other day the
/// examples name) is over when the checkers run, so it has every form.
fn genesis() -> Hour {
    hour_of(2008, 9, 2, 13).unwrap()
}

async fn the_checkers_find_nothing(python: String) {
    let server =
        common::inproc::serve("127.0.0.1:0".parse().unwrap(), TOKEN, genesis(), |_| {}).await;
    let http = reqwest::Client::new();
    // A universe, so sealed hours have their exact form; IDs in the first hour, the
    // sealed hour and the open one after it.
    let universe = common::exact::universe(200);
    common::exact::post_universe(&server.base, TOKEN, &universe).await;
    let ids = |range: std::ops::Range<usize>| universe[range].to_vec();
    common::post_ids(&http, &server.base, &ids(100..130))
        .await
        .unwrap();
    server.clock.advance(Duration::hours(24));
    common::post_ids(&http, &server.base, &ids(0..50))
        .await
        .unwrap();
    server.clock.advance(Duration::hours(1));
    common::post_ids(&http, &server.base, &ids(40..60))
        .await
        .unwrap();
    let sealed_path = sealed().path();
    let open_path = sealed().next().path();
    // Sealed and signed: its exact form is served, and it is cached for ever.
    common::wait::until("the sealed hour is signed with its exact form", || {
        let http = http.clone();
        let url = format!("{}{sealed_path}.exact", server.base);
        async move {
            let reply = http.get(url).send().await.ok()?;
            let cache = reply.headers().get("cache-control")?.to_str().ok()?;
            (reply.status() == 200 && cache.contains("immutable")).then_some(())
        }
    })
    .await;

    let checker = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/http-checkers/check.py");
    let base = server.base.clone();
    let (sealed_arg, open_arg) = (sealed_path.clone(), open_path.clone());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(checker)
            .args(["--base", &base, "--token", TOKEN])
            .args(["--sealed", &sealed_arg, "--open", &open_arg])
            .args(["--past-day", &genesis().day().path()])
            .output()
            .unwrap()
    })
    .await
    .unwrap();

    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the checkers found something:\n{stdout}\n{stderr}"
    );
    println!("{stdout}");
    assert!(stdout.contains("httplint: "), "{stdout}");
    assert!(stdout.contains("schemathesis: "), "{stdout}");
}
