//! Which form of a closed hour to fetch: pure arithmetic on the hour's count, the
//! number of IDs followed and what a wasted fetch costs.
//!
//! A filter is downloaded once, but every ID it wrongly flags costs the caller a
//! fetch of that resource. So the bytes a closed hour costs are its filter's bytes plus
//! `followed × fpp × fetch_cost`, and the best precision rises with the number of IDs
//! followed: a reader of 45,754 feeds whose fetches cost 10 KiB wastes 4.7 MB per hour
//! at p = 0.01 and about 56 bytes at p = 2^-23. Both terms are known before fetching:
//! the count comes from the index, the sizes from the formulas of docs/PROTOCOL.md
//! (section 3 and section 12), so the choice costs no request.

/// The default cost of fetching a resource that turns out not to have changed.
pub const DEFAULT_FETCH_COST: u64 = 10 * 1024;
/// The fingerprint bits the client asks for: `?fpp=2^-r` for r in this range.
pub const RIBBON_BITS: std::ops::RangeInclusive<u32> = 4..=24;

/// The bytes gzip adds to a `.bin` body (near-random bits do not compress): its framing
/// and stored-block headers. Measured: 3,707 → 3,730; 37,068 → 37,096; 370,673 → 370,751.
fn gzip_len(raw: u64) -> u64 {
    raw + 24 + raw / 8192
}

/// How a closed hour travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The v1 Bloom filter, `.bin` with gzip, at the service's target fpp.
    Bloom,
    /// The ribbon filter at `fpp = 2^-r` (`.ribbon?fpp=2^-r`).
    Ribbon { r: u32 },
    /// The version 2 ribbon at `fpp = 2^-k` (`.ribbon2?fpp=2^-k`). Version 2 serves any
    /// precision, but filter bytes and `fpp` are both linear in the fraction between two
    /// whole bits, so the cheapest is always at a whole bit.
    Ribbon2 { k: u32 },
    /// The pages the IDs followed fall in, of the hour's paged form at `fpp = 2^-k`
    /// (`.pages?fpp=2^-k`, PROTOCOL.md section 12, "Huge hours by the page"), by `Range`.
    Pages { k: u32 },
    /// The exact body (`.exact`, PROTOCOL.md section 14): no false positive among the
    /// IDs of the publisher's universe, for sealed hours from the index's `exact_since`.
    Exact,
}

/// Whether [`Client::changed_since_in`](crate::Client::changed_since_in) may read exact
/// bodies on its own or must read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Forms {
    /// Each sealed hour in its cheapest form: v1 Bloom, ribbon, or (from the index's
    /// `exact_since`) exact.
    #[default]
    Auto,
    /// Every sealed hour from the index's `exact_since` in exact form (hour by hour); an
    /// error when the server has no universe (`exact_since` is null).
    Exact,
}

/// A form with its predicted body size and false-positive probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    pub form: Form,
    /// Body bytes on the wire (headers aside; they are the same for every form).
    pub filter_bytes: u64,
    pub fpp: f64,
}

impl Choice {
    /// The form of a closed hour of `n` IDs as the v1 Bloom filter: sized for `n` at
    /// `target_fpp` by the rule of section 3 plus one of the server's 1/32 growth steps,
    /// gzip framing. Its fpp is the rule's expected rate for `n`, which is at most the
    /// target (the server grows m until the rate at the actual fill is too), and nothing
    /// for an empty hour, whose filter has no bit set.
    pub fn bloom(n: u64, target_fpp: f64) -> Choice {
        let p = target_fpp.clamp(1e-12, 0.5);
        let (m, fpp) = match crate::bloom::Params::sized(n, p) {
            Ok(params) => (u64::from(params.m), params.expected_fpp(n).min(p)),
            Err(_) => (u64::from(u32::MAX), p),
        };
        let m = m + m / 32;
        Choice {
            form: Form::Bloom,
            filter_bytes: gzip_len(m.div_ceil(8)),
            fpp: if n == 0 { 0.0 } else { fpp },
        }
    }

    /// The form of a closed hour of `n` IDs as a ribbon at `2^-r`: the 24-byte header and
    /// `ceil(r * rows / 8)` bytes of solution (section 12), served without gzip.
    pub fn ribbon(n: u64, r: u32) -> Choice {
        Choice {
            form: Form::Ribbon { r },
            filter_bytes: 24 + (u64::from(r) * ribbon_rows(n)).div_ceil(8),
            fpp: (-f64::from(r)).exp2(),
        }
    }

    /// The form of a closed hour of `n` IDs as a version 2 ribbon at `2^-k`
    /// (PROTOCOL.md section 12, "Version 2"): its shards at their first size
    /// ([`crate::bloom::Ribbon2::predicted_bytes`]), served without gzip.
    pub fn ribbon2(n: u64, k: u32) -> Choice {
        let grade = crate::bloom::Grade { k, split: 0 };
        Choice {
            form: Form::Ribbon2 { k },
            filter_bytes: crate::bloom::Ribbon2::predicted_bytes(n, grade),
            fpp: (-f64::from(k)).exp2(),
        }
    }

    /// The pages of a closed hour of `n` IDs at `2^-k` that `followed` IDs fall in, by
    /// `Range`: the body's header and each page's slot
    /// ([`crate::bloom::Pages::predicted_slot_bytes`]), with the headers of every
    /// response past the first ([`PAGE_RESPONSE`] each) and its round trip
    /// ([`PAGE_ROUND_TRIP`], counted as bytes), for the pages `followed` random
    /// IDs are expected to fall in, times `cover` ([`crate::ClientBuilder::pages_cover`]).
    pub fn pages(n: u64, k: u32, followed: u64, cover: u32) -> Choice {
        let grade = crate::bloom::Grade { k, split: 0 };
        let pages = f64::from(crate::bloom::pages::pages_for(n));
        let needed = pages * (1.0 - (1.0 - 1.0 / pages).powf(followed as f64));
        let needed = (needed * f64::from(cover.max(1))).min(pages);
        let slot = crate::bloom::Pages::predicted_slot_bytes(n, grade) as f64
            + PAGE_RESPONSE
            + PAGE_ROUND_TRIP;
        Choice {
            form: Form::Pages { k },
            filter_bytes: (crate::bloom::pages::HEADER_LEN as f64 + needed * slot).ceil() as u64,
            fpp: (-f64::from(k)).exp2(),
        }
    }

    /// The exact body of a sealed hour, of `bytes` bytes (the index's `exact_bytes`, or
    /// for an hour it does not list, the v1 body's predicted bytes): served without gzip,
    /// with no false positive among the universe's IDs.
    pub fn exact(bytes: u64) -> Choice {
        Choice {
            form: Form::Exact,
            filter_bytes: bytes,
            fpp: 0.0,
        }
    }

    /// Filter bytes plus the expected bytes of wasted fetches:
    /// `filter_bytes + followed × fpp × fetch_cost`.
    pub fn expected_bytes(&self, followed: u64, fetch_cost: u64) -> f64 {
        self.filter_bytes as f64 + wasted(self.fpp, followed, fetch_cost)
    }
}

/// Bytes of a response's status line and headers when a page is read by `Range` (a
/// `206` from the origin, a cache or a file server, measured in docs/BENCHMARKS.md,
/// "Huge hours").
pub const PAGE_RESPONSE: f64 = 400.0;
/// What each page's request costs beside its bytes, a round trip, weighed as bytes: a
/// client back after many hours of millions of IDs catches up in two requests (the
/// version 2 union) rather than hundreds of pages an hour, and one that keeps up reads
/// a huge hour's few pages (PROTOCOL.md section 12, "Huge hours by the page").
pub const PAGE_ROUND_TRIP: f64 = 4096.0;

/// The cheapest paged reading of a closed hour of `count` IDs for `followed` IDs at
/// `fetch_cost` bytes per wasted fetch: the whole bit `k` in [`RIBBON_BITS`] minimising
/// the pages' bytes and the fetches they waste.
pub fn cheapest_pages(count: u64, followed: u64, fetch_cost: u64, cover: u32) -> Choice {
    let cost = |c: &Choice| c.expected_bytes(followed, fetch_cost);
    RIBBON_BITS
        .map(|k| Choice::pages(count, k, followed, cover))
        .min_by(|a, b| cost(a).total_cmp(&cost(b)))
        .expect("at least one precision")
}

/// Expected bytes of fetches wasted on false positives: `followed × fpp × fetch_cost`.
pub fn wasted(fpp: f64, followed: u64, fetch_cost: u64) -> f64 {
    followed as f64 * fpp * fetch_cost as f64
}

/// The rows of the server's first ribbon for `n` keys (section 12, construction):
/// `ceil(n * 1.065) + 16` below 10,000 keys, `ceil(n * 1.075) + 16` from there, at least
/// 64. A rare retry grows it by 1 %; the prediction ignores that.
pub fn ribbon_rows(n: u64) -> u64 {
    let slack = if n < 10_000 { 0.065 } else { 0.075 };
    ((n as f64 * (1.0 + slack)).ceil() as u64 + 16).max(64)
}

/// The form of a closed hour of `count` IDs that minimises
/// [`Choice::expected_bytes`] for `followed` IDs at `fetch_cost` bytes per wasted fetch:
/// the v1 Bloom filter at `target_fpp`, or a ribbon at `2^-r` for r in [`RIBBON_BITS`].
/// Ties go to the smaller filter.
///
/// ```
/// use bloomcast_client::{cheapest_form, Form};
/// // Following 45,754 feeds at 10 KiB a fetch, an hour of 280 IDs is worth 23 bits:
/// let choice = cheapest_form(280, 0.01, 45_754, 10 * 1024);
/// assert_eq!(choice.form, Form::Ribbon { r: 23 });
/// // An empty hour: the Bloom filter, 2 bytes and no false positive.
/// assert_eq!(cheapest_form(0, 0.01, 45_754, 10 * 1024).form, Form::Bloom);
/// ```
pub fn cheapest_form(count: u64, target_fpp: f64, followed: u64, fetch_cost: u64) -> Choice {
    cheapest_form_of(count, target_fpp, followed, fetch_cost, false)
}

/// [`cheapest_form`], with version 2 ribbons in place of version 1 when `ribbon2` (the
/// server's index lists version 2).
///
/// ```
/// use bloomcast_client::{cheapest_form_of, Form};
/// // Following 45,754 feeds, an hour of 280: version 2 at 2^-23, 836 bytes (v1: 930).
/// let choice = cheapest_form_of(280, 0.01, 45_754, 10 * 1024, true);
/// assert_eq!((choice.form, choice.filter_bytes), (Form::Ribbon2 { k: 23 }, 836));
/// ```
pub fn cheapest_form_of(
    count: u64,
    target_fpp: f64,
    followed: u64,
    fetch_cost: u64,
    ribbon2: bool,
) -> Choice {
    let cost = |c: &Choice| (c.expected_bytes(followed, fetch_cost), c.filter_bytes);
    RIBBON_BITS
        .map(|r| {
            if ribbon2 {
                Choice::ribbon2(count, r)
            } else {
                Choice::ribbon(count, r)
            }
        })
        .chain([Choice::bloom(count, target_fpp)])
        .min_by(|a, b| cost(a).partial_cmp(&cost(b)).expect("finite costs"))
        .expect("at least one form")
}

/// The exact body when it costs no more than `other` (PROTOCOL.md section 14, "Choosing
/// it"): its bytes against `other`'s filter bytes plus `followed × fpp × fetch_cost`,
/// since an exact body wastes no fetch. Ties go to the exact body.
///
/// ```
/// use bloomcast_client::{cheapest_form, exact_or, Choice, Form};
/// // 45,754 IDs followed, an hour of 280: a 23-bit ribbon of about 830 bytes, or an
/// // exact body of 700 bytes that wastes nothing.
/// let other = cheapest_form(280, 0.01, 45_754, 10 * 1024);
/// assert_eq!(exact_or(700, other, 45_754, 10 * 1024).form, Form::Exact);
/// assert_eq!(exact_or(5_000, other, 45_754, 10 * 1024), other);
/// ```
pub fn exact_or(exact_bytes: u64, other: Choice, followed: u64, fetch_cost: u64) -> Choice {
    let exact = Choice::exact(exact_bytes);
    if exact.expected_bytes(followed, fetch_cost) <= other.expected_bytes(followed, fetch_cost) {
        exact
    } else {
        other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::{Filter, Grade, Key, Ribbon, Ribbon2};

    fn keys(n: u64) -> Vec<Key> {
        (0..n).map(|i| Key::of(&format!("user:{i}"))).collect()
    }

    #[test]
    fn the_predicted_ribbon_size_is_the_servers_for_every_size_and_precision() {
        for n in [0, 1, 40, 63, 300, 2_999, 9_999, 10_000, 30_000] {
            let keys = keys(n);
            for r in [4, 7, 13, 24] {
                let built = Ribbon::build(&keys, r).unwrap();
                let predicted = Choice::ribbon(n, r).filter_bytes;
                // A retry grows m by 1 % at most every 4 seeds; seed 0 nearly always works.
                let slack = if built.seed() < 4 { 0 } else { predicted / 50 };
                assert!(
                    (built.byte_len() as u64).abs_diff(predicted) <= slack,
                    "n {n} r {r}: built {} predicted {predicted}",
                    built.byte_len()
                );
            }
        }
    }

    #[test]
    fn the_predicted_version_2_size_is_the_servers_within_a_percent() {
        for n in [1, 40, 129, 300, 2_999, 10_000, 30_000, 100_000] {
            let keys = keys(n);
            for k in [4, 7, 13, 24] {
                let built = Ribbon2::build(&keys, Grade { k, split: 0 }).unwrap();
                let predicted = Choice::ribbon2(n, k).filter_bytes;
                let bytes = built.byte_len() as u64;
                assert!(
                    bytes.abs_diff(predicted) <= bytes / 100,
                    "n {n} k {k}: built {bytes} predicted {predicted}"
                );
            }
        }
    }

    #[test]
    fn version_2_takes_the_place_of_version_1_when_the_server_serves_it() {
        let v2 = cheapest_form_of(3_000, 0.01, 45_754, DEFAULT_FETCH_COST, true);
        let v1 = cheapest_form_of(3_000, 0.01, 45_754, DEFAULT_FETCH_COST, false);
        assert!(matches!(v2.form, Form::Ribbon2 { .. }), "{v2:?}");
        assert!(matches!(v1.form, Form::Ribbon { .. }), "{v1:?}");
        assert!(
            v2.expected_bytes(45_754, DEFAULT_FETCH_COST)
                < v1.expected_bytes(45_754, DEFAULT_FETCH_COST)
        );
        // Without a fetch to waste, the fewest bits: smaller than version 1's.
        let v2 = cheapest_form_of(3_000, 0.01, 1, 0, true);
        let v1 = cheapest_form_of(3_000, 0.01, 1, 0, false);
        assert!(
            v2.filter_bytes * 100 < v1.filter_bytes * 95,
            "{v2:?} {v1:?}"
        );
    }

    #[test]
    fn the_predicted_bloom_size_is_within_a_growth_step_of_the_servers() {
        for n in [1u64, 2, 5, 20, 50, 100, 300, 3_000, 30_000] {
            let built = Filter::sized_within(&keys(n), 0.01).unwrap();
            let raw = built.params().byte_len() as u64;
            let predicted = Choice::bloom(n, 0.01).filter_bytes;
            let gzip = gzip_len(raw);
            assert!(
                gzip.abs_diff(predicted) <= gzip / 30 + 2,
                "n {n}: served {gzip} predicted {predicted}"
            );
        }
    }

    #[test]
    fn with_nothing_to_waste_the_smallest_filter_wins() {
        // A fetch that costs nothing: only filter bytes count, so the fewest bits.
        assert_eq!(
            cheapest_form(3_000, 0.01, 45_754, 0).form,
            Form::Ribbon { r: 4 }
        );
        // Tiny hours: a ribbon's 24-byte header and 64 rows cost more than a Bloom filter.
        assert_eq!(cheapest_form(0, 0.01, 1, 0).form, Form::Bloom);
        assert_eq!(cheapest_form(5, 0.01, 1, 0).form, Form::Bloom);
    }

    #[test]
    fn few_ids_followed_take_a_coarse_filter_and_many_a_precise_one() {
        let r = |followed| match cheapest_form(300, 0.01, followed, DEFAULT_FETCH_COST).form {
            Form::Ribbon { r } => r,
            Form::Bloom | Form::Exact | Form::Ribbon2 { .. } | Form::Pages { .. } => 0,
        };
        assert_eq!(r(1), 7);
        assert_eq!(r(100), 14);
        assert_eq!(r(45_754), 23);
        assert_eq!(r(10_000_000), 24, "clamped to 2^-24");
    }

    #[test]
    fn a_dearer_fetch_asks_for_more_bits() {
        let r = |cost| match cheapest_form(30_000, 0.01, 1_000, cost).form {
            Form::Ribbon { r } => r,
            Form::Bloom | Form::Exact | Form::Ribbon2 { .. } | Form::Pages { .. } => 0,
        };
        assert!(r(100) < r(10 * 1024) && r(10 * 1024) < r(1 << 20));
    }

    #[test]
    fn the_choice_is_never_worse_than_the_v1_filter() {
        for n in [0, 3, 50, 300, 3_000, 300_000] {
            for followed in [1, 100, 45_754] {
                for cost in [0, 300, 10 * 1024] {
                    let best = cheapest_form(n, 0.01, followed, cost);
                    let v1 = Choice::bloom(n, 0.01);
                    assert!(
                        best.expected_bytes(followed, cost) <= v1.expected_bytes(followed, cost),
                        "n {n} followed {followed} cost {cost}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_exact_body_wins_when_no_dearer_than_the_cheapest_other_sum() {
        let other = cheapest_form(300, 0.01, 2_000, DEFAULT_FETCH_COST);
        let sum = other.expected_bytes(2_000, DEFAULT_FETCH_COST) as u64;
        assert_eq!(
            exact_or(sum, other, 2_000, DEFAULT_FETCH_COST).form,
            Form::Exact
        );
        assert_eq!(exact_or(sum + 2, other, 2_000, DEFAULT_FETCH_COST), other);
        let exact = Choice::exact(123);
        assert_eq!((exact.filter_bytes, exact.fpp), (123, 0.0));
        assert_eq!(exact.expected_bytes(1_000_000, 1 << 20), 123.0);
    }
}
