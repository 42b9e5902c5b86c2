//! Checks a saved paged body (`.pages`) and version 2 body (`.ribbon2`) of one hour
//! against the IDs seeded into it: every member must answer "yes" in its page (no
//! false negative), and the false-positive rate over absent IDs is compared with the
//! whole version 2 body's at the same grade. Used by benches/harness/pages.sh.
//!
//! ```text
//! cargo run --release --example pages_check -- <pages-file> <ribbon2-file> <prefix> <n> [absent]
//! ```
//!
//! Members are `<prefix>:0` .. `<prefix>:<n-1>` (as examples/seed_closed_hour writes
//! them); `absent` IDs (default 1,000,000) are `absent:<i>`. Prints one line of JSON.

use bloomcast::bloom::{Key, Pages, Ribbon2};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [pages, ribbon2, prefix, n, rest @ ..] = args.as_slice() else {
        return Err("usage: pages_check <pages-file> <ribbon2-file> <prefix> <n> [absent]".into());
    };
    let n: u64 = n.parse()?;
    let absent: u64 = rest.first().map_or(Ok(1_000_000), |a| a.parse())?;
    let pages = Pages::from_bytes(&std::fs::read(pages)?)?;
    let whole = Ribbon2::from_bytes(&std::fs::read(ribbon2)?)?;
    let missed = (0..n)
        .filter(|i| !pages.contains(Key::of(&format!("{prefix}:{i}"))))
        .count();
    let (mut fp_pages, mut fp_whole) = (0u64, 0u64);
    for i in 0..absent {
        let key = Key::of(&format!("absent:{i}"));
        fp_pages += u64::from(pages.contains(key));
        fp_whole += u64::from(whole.contains(key));
    }
    let header = pages.header();
    println!(
        "{}",
        serde_json::json!({
            "members": n,
            "false_negatives": missed,
            "absent": absent,
            "fpp_pages": fp_pages as f64 / absent as f64,
            "fpp_ribbon2": fp_whole as f64 / absent as f64,
            "grade_fpp": header.grade.fpp(),
            "pages": header.pages,
            "slot": header.slot,
            "pages_bytes": pages.as_bytes().len(),
        })
    );
    Ok(())
}
