//! The classic figure: the false-positive rate of the intersection (bitwise AND) of
//! two filters against the sets' size, standard Bloom versus partitioned Bloom, with
//! the independent-bits theory beside the measurements. Writes a hand-made SVG and
//! prints the figures as a Markdown table.
//!
//! ```text
//! cargo run --release --example intersection_figure [docs/intersection-fpp.svg]
//! ```
//!
//! Both filters have the shape sized for 10,000 IDs at 1% (m = 95,851, k = 7). A and B
//! hold `n` IDs each, half of them shared; the AND of their filters is probed with
//! 1,000,000 IDs in neither set (one false positive is a rate of 1e-6). A measured rate of 0 (no false positive at all) has
//! no place on a log axis and is left out of its curve.

use bloomcast::bloom::{Filter, Key, Params, PartitionedFilter};
use std::fmt::Write as _;

const PROBES: usize = 1_000_000;
const SIZES: [u32; 15] = [
    2_000, 4_000, 6_000, 8_000, 10_000, 12_000, 14_000, 16_000, 18_000, 20_000, 22_000, 24_000,
    26_000, 28_000, 30_000,
];

struct Point {
    n: u32,
    standard: f64,
    partitioned: f64,
    theory: f64,
    /// The rate of a filter built from the keys of A ∩ B, which AND can only approach.
    exact: f64,
}

fn keys(prefix: &str, n: u32) -> Vec<Key> {
    (0..n).map(|i| Key::of(&format!("{prefix}:{i}"))).collect()
}

/// The AND's false-positive probability if bits were independent: a bit is set in
/// it if some shared ID set it, or else if both an A-only and a B-only ID did.
fn theory(params: Params, shared: f64, only_a: f64, only_b: f64) -> f64 {
    let (m, k) = (f64::from(params.m), f64::from(params.k));
    let unset = |n: f64| (-k * n / m).exp();
    let bit = 1.0 - unset(shared) + unset(shared) * (1.0 - unset(only_a)) * (1.0 - unset(only_b));
    bit.powf(k)
}

fn measure(params: Params, absent: &[Key], max: u32) -> Vec<Point> {
    let shared_pool = keys("shared", max / 2);
    let a_pool = keys("a", max / 2);
    let b_pool = keys("b", max / 2);
    SIZES
        .iter()
        .map(|&n| {
            let half = (n / 2) as usize;
            let a: Vec<&Key> = shared_pool[..half].iter().chain(&a_pool[..half]).collect();
            let b: Vec<&Key> = shared_pool[..half].iter().chain(&b_pool[..half]).collect();
            let mut standard = Filter::from_keys(params, a.iter().copied());
            standard
                .intersect_with(&Filter::from_keys(params, b.iter().copied()))
                .expect("one shape");
            let mut parted = PartitionedFilter::from_keys(params, a.iter().copied()).unwrap();
            parted
                .intersect_with(&PartitionedFilter::from_keys(params, b.iter().copied()).unwrap())
                .expect("one shape");
            let rate = |hits: usize| hits as f64 / absent.len() as f64;
            let h = half as f64;
            Point {
                n,
                standard: rate(absent.iter().filter(|k| standard.contains_key(**k)).count()),
                partitioned: rate(absent.iter().filter(|k| parted.contains_key(**k)).count()),
                theory: theory(params, h, h, h),
                exact: theory(params, h, 0.0, 0.0),
            }
        })
        .collect()
}

// Plot area, in SVG pixels.
const W: f64 = 760.0;
const H: f64 = 500.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;
const Y_MIN_EXP: i32 = -9;
const Y_MAX_EXP: i32 = 0;

fn x_of(n: f64) -> f64 {
    let max = f64::from(*SIZES.last().unwrap());
    LEFT + n / max * (W - LEFT - RIGHT)
}

fn y_of(rate: f64) -> f64 {
    let span = f64::from(Y_MAX_EXP - Y_MIN_EXP);
    let t = (rate.log10() - f64::from(Y_MIN_EXP)) / span;
    H - BOTTOM - t * (H - TOP - BOTTOM)
}

fn polyline(svg: &mut String, points: &[(f64, f64)], style: &str) {
    let coords: Vec<String> = points
        .iter()
        .filter(|(_, r)| *r > 0.0)
        .map(|(n, r)| format!("{:.1},{:.1}", x_of(*n), y_of(*r)))
        .collect();
    writeln!(
        svg,
        r#"<polyline fill="none" {style} points="{}"/>"#,
        coords.join(" ")
    )
    .unwrap();
}

fn markers(svg: &mut String, points: &[(f64, f64)], shape: &str, color: &str) {
    for (n, r) in points.iter().filter(|(_, r)| *r > 0.0) {
        let (x, y) = (x_of(*n), y_of(*r));
        match shape {
            "circle" => writeln!(
                svg,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{color}"/>"#
            ),
            _ => writeln!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{color}"/>"#,
                x - 4.0,
                y - 4.0
            ),
        }
        .unwrap();
    }
}

fn svg(params: Params, points: &[Point]) -> String {
    let mut s = String::new();
    writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="13">"#).unwrap();
    writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#).unwrap();
    writeln!(s, r#"<text x="{}" y="28" text-anchor="middle" font-size="16">False-positive rate of the intersection A AND B (m = {}, k = {})</text>"#, W / 2.0, params.m, params.k).unwrap();
    let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    for e in Y_MIN_EXP..=Y_MAX_EXP {
        let y = y_of(10f64.powi(e));
        writeln!(
            s,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/>"##
        )
        .unwrap();
        writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">1e{e}</text>"#,
            x0 - 8.0,
            y + 4.0
        )
        .unwrap();
    }
    for n in (0..=30_000).step_by(5_000) {
        let x = x_of(f64::from(n));
        writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#eee"/>"##
        )
        .unwrap();
        writeln!(
            s,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{n}</text>"#,
            y1 + 20.0
        )
        .unwrap();
    }
    writeln!(
        s,
        r#"<rect x="{x0}" y="{y0}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        x1 - x0,
        y1 - y0
    )
    .unwrap();
    writeln!(s, r#"<text x="{}" y="{}" text-anchor="middle">set size |A| = |B| (half of each shared: |A ∩ B| = |A| / 2)</text>"#, (x0 + x1) / 2.0, H - 22.0).unwrap();
    writeln!(s, r#"<text transform="translate(24 {}) rotate(-90)" text-anchor="middle">false-positive rate (log scale)</text>"#, (y0 + y1) / 2.0).unwrap();

    let series = |f: fn(&Point) -> f64| -> Vec<(f64, f64)> {
        points.iter().map(|p| (f64::from(p.n), f(p))).collect()
    };
    let theory = series(|p| p.theory);
    let standard = series(|p| p.standard);
    let parted = series(|p| p.partitioned);
    let exact = series(|p| p.exact);
    polyline(
        &mut s,
        &exact,
        r##"stroke="#2a9d55" stroke-width="2" stroke-dasharray="2 3""##,
    );
    polyline(&mut s, &standard, r##"stroke="#1f5fbf" stroke-width="2""##);
    markers(&mut s, &standard, "circle", "#1f5fbf");
    polyline(&mut s, &parted, r##"stroke="#d2691e" stroke-width="2""##);
    markers(&mut s, &parted, "square", "#d2691e");
    // Theory last, dashed over the measurements it matches.
    polyline(
        &mut s,
        &theory,
        r##"stroke="#777" stroke-width="2" stroke-dasharray="6 4""##,
    );

    let (lx, ly) = (x1 - 300.0, y1 - 120.0);
    writeln!(
        s,
        r##"<rect x="{lx}" y="{ly}" width="290" height="110" fill="white" stroke="#999"/>"##
    )
    .unwrap();
    let entries = [
        (r##"stroke="#1f5fbf" stroke-width="2""##, "Bloom, measured"),
        (
            r##"stroke="#d2691e" stroke-width="2""##,
            "partitioned Bloom, measured",
        ),
        (
            r##"stroke="#777" stroke-width="2" stroke-dasharray="6 4""##,
            "theory, either (independent bits)",
        ),
        (
            r##"stroke="#2a9d55" stroke-width="2" stroke-dasharray="2 3""##,
            "theory, filter built from A ∩ B",
        ),
    ];
    for (i, (style, label)) in entries.iter().enumerate() {
        let y = ly + 22.0 + 25.0 * i as f64;
        writeln!(
            s,
            r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" {style}/>"#,
            lx + 12.0,
            lx + 52.0
        )
        .unwrap();
        writeln!(
            s,
            r#"<text x="{}" y="{}">{label}</text>"#,
            lx + 62.0,
            y + 4.0
        )
        .unwrap();
    }
    s.push_str("</svg>\n");
    s
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "docs/intersection-fpp.svg".into());
    let params = Params::optimal(10_000, 0.01).expect("valid sizing");
    let absent = keys("absent", PROBES as u32);
    let points = measure(params, &absent, *SIZES.last().unwrap());
    println!(
        "| n = \\|A\\| = \\|B\\| | Bloom AND, measured | partitioned AND, measured | theory (either) | filter of A ∩ B (theory) |"
    );
    println!("|---:|---:|---:|---:|---:|");
    for p in &points {
        println!(
            "| {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} |",
            p.n, p.standard, p.partitioned, p.theory, p.exact
        );
    }
    std::fs::write(&out, svg(params, &points))
        .unwrap_or_else(|e| panic!("cannot write {out}: {e}"));
    eprintln!("wrote {out}");
}
