//! docs/SCENARIO.md shows what `examples/seed_scenario.rs` prints: the 2008 day is
//! replayed here (a real server on loopback, its clock moved by hand; about 7 s in a
//! debug build) and every line of its report must be in the document, verbatim, and the
//! README's table of forms must be three of its rows.

#[allow(dead_code)]
#[path = "../examples/seed_scenario.rs"]
mod seed_scenario;

#[tokio::test(flavor = "multi_thread")]
async fn the_scenario_doc_shows_what_the_example_prints() {
    let report = seed_scenario::run(&seed_scenario::Args::default()).await;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/SCENARIO.md"))
        .expect("docs/SCENARIO.md");
    let missing: Vec<&str> = report
        .lines()
        .filter(|line| !line.trim().is_empty() && !doc.contains(line))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/SCENARIO.md lacks these lines of `cargo run --release --example seed_scenario`:\n{}",
        missing.join("\n")
    );
    // The README's table of forms is three of its rows, verbatim.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    for row in [
        "| bloomcast, hourly |",
        "| bloomcast, hourly, ribbon at the target |",
        "| bloomcast, hourly, exact (following registered IDs) |",
    ] {
        let line = report
            .lines()
            .find(|l| l.starts_with(row))
            .expect("the report has the row");
        assert!(
            readme.contains(line),
            "README.md lacks the scenario's row {line}"
        );
    }
}
