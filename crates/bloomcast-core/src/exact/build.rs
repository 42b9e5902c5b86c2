//! Construction: choose the filter's bits (`k`, `split`) for the least expected size,
//! build the two filter parts from the changed keys, find the filter's false positives
//! by testing the whole universe, and store one answer bit for every key it lets
//! through. Deterministic: the same universe and changed keys give the same bytes.

use super::system::{salt, value_mask, Band, Layout, Row, MAX_WIDTH};
use super::{passes, selector, Exact, MAX_K, SELECTOR_RANGE, TAG_A, TAG_B, TAG_RETRIEVAL};
use crate::bloom::{FilterError, Key};
use std::borrow::Cow;

/// Seeds tried at one size before the system grows by 0.5% (the documented fallback).
/// [`rows_for`] makes a seed succeed half the time or more, so a growth happens in
/// fewer than 1 build in 256, and each costs 0.5% of that system's rows.
const SEEDS_PER_SIZE: u32 = 8;

/// Universes up to this many IDs try [`FILTER_SEEDS`] seeds for each filter part and
/// keep the one that lets the fewest unchanged keys through, which the header records
/// anyway: a tenth fewer false positives on average, what matters in small bodies.
const SEARCH_UP_TO: u64 = 200_000;
const FILTER_SEEDS: u32 = 16;

/// Rows of a system of `n` equations: exactly `n` while the system is dense (at most
/// 128 rows), then `n` plus a slack that grows with `log10(n)` (a standard ribbon's
/// failure rate grows with its length), interpolated between the points of
/// [`SLACK`], at which one seed succeeds at least half the time (the test
/// `one_seed_succeeds_half_the_time_at_the_systems_slack_margin`, compiled under
/// `--cfg bloomcast_margins`, measures it).
pub fn rows_for(n: u64) -> u32 {
    if n <= u64::from(MAX_WIDTH) {
        return n as u32;
    }
    let x = (n as f64).log10();
    let rate = match SLACK.iter().position(|&(at, _)| x <= at) {
        Some(0) => SLACK[0].1,
        Some(i) => {
            let ((x0, y0), (x1, y1)) = (SLACK[i - 1], SLACK[i]);
            y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        }
        None => SLACK[SLACK.len() - 1].1,
    };
    (n as f64 * (1.0 + rate) + 8.0)
        .ceil()
        .min(f64::from(u32::MAX)) as u32
}

/// (log10 of the equations, slack rate) for 128-wide bands.
pub const SLACK: [(f64, f64); 6] = [
    (2.5, 0.0),
    (3.0, 0.009),
    (4.0, 0.016),
    (5.0, 0.025),
    (6.0, 0.036),
    (7.0, 0.047),
];

/// The filter's shape: `k` bits for part B, `k + 1` for part A, which holds the keys
/// whose selector is below `split`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub k: u32,
    pub split: u32,
}

impl Shape {
    /// The probability that an unchanged key passes the filter.
    pub fn false_positive_rate(self) -> f64 {
        let in_a = f64::from(self.split) / f64::from(SELECTOR_RANGE);
        in_a * (-f64::from(self.k + 1)).exp2() + (1.0 - in_a) * (-f64::from(self.k)).exp2()
    }

    /// The expected solution bits for `n` universe keys of which `r` changed, `in_a` of
    /// them in part A.
    pub fn expected_bits(self, n: u64, r: u64, in_a: u64) -> f64 {
        let a = u64::from(self.k + 1) * u64::from(rows_for(in_a));
        let b = if self.k == 0 {
            0
        } else {
            u64::from(self.k) * u64::from(rows_for(r.saturating_sub(in_a)))
        };
        let through = r as f64 + (n - r) as f64 * self.false_positive_rate();
        (a + b) as f64 + f64::from(rows_for(through.ceil() as u64))
    }

    /// The shape of least expected size; `per_selector[s]` counts changed keys of
    /// selector `s`.
    pub fn best(n: u64, r: u64, per_selector: &[u64; SELECTOR_RANGE as usize]) -> Shape {
        let mut below = [0u64; SELECTOR_RANGE as usize + 1];
        for s in 0..SELECTOR_RANGE as usize {
            below[s + 1] = below[s] + per_selector[s];
        }
        let mut best = (f64::INFINITY, Shape { k: 0, split: 0 });
        for k in 0..=MAX_K - 1 {
            for split in 0..SELECTOR_RANGE {
                let shape = Shape { k, split };
                let bits = shape.expected_bits(n, r, below[split as usize]);
                if bits < best.0 {
                    best = (bits, shape);
                }
            }
        }
        best.1
    }
}

impl Exact {
    /// Builds the exact body of `changed` over `universe` (changed keys missing from the
    /// universe are added to it; duplicates are harmless). Changed keys already sorted
    /// and distinct (a sealed hour's, as stored) are read in place, not copied. Where
    /// more than half the universe changed, the body is complemented (version 2).
    ///
    /// # Errors
    /// More than `u32::MAX / 2` universe keys.
    pub fn build(universe: Vec<Key>, changed: &[Key]) -> Result<Exact, FilterError> {
        Exact::build_from(Cow::Owned(universe), changed, true)
    }

    /// [`Exact::build`] over a borrowed `universe`: read in place when it is sorted,
    /// distinct and holds every changed key (a stored universe, as read), else copied
    /// first. The same bytes as [`Exact::build`] of the same keys.
    ///
    /// # Errors
    /// More than `u32::MAX / 2` universe keys.
    pub fn build_over(universe: &[Key], changed: &[Key]) -> Result<Exact, FilterError> {
        Exact::build_from(Cow::Borrowed(universe), changed, true)
    }

    /// [`Exact::build_over`] never complemented: a version 1 body however much of the
    /// universe changed, the bytes bloomcast built before version 2 existed (a server
    /// rebuilds a range first served then in this form).
    ///
    /// # Errors
    /// More than `u32::MAX / 2` universe keys.
    pub fn build_over_uncomplemented(
        universe: &[Key],
        changed: &[Key],
    ) -> Result<Exact, FilterError> {
        Exact::build_from(Cow::Borrowed(universe), changed, false)
    }

    fn build_from(
        mut universe: Cow<[Key]>,
        changed: &[Key],
        may_complement: bool,
    ) -> Result<Exact, FilterError> {
        let changed: Cow<[Key]> = if changed.windows(2).all(|w| w[0] < w[1]) {
            Cow::Borrowed(changed)
        } else {
            let mut sorted = changed.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            Cow::Owned(sorted)
        };
        if !universe.windows(2).all(|w| w[0] < w[1]) {
            let owned = universe.to_mut();
            owned.sort_unstable();
            owned.dedup();
        }
        let missing: Vec<Key> = changed
            .iter()
            .copied()
            .filter(|c| universe.binary_search(c).is_err())
            .collect();
        if !missing.is_empty() {
            let owned = universe.to_mut();
            owned.extend(missing);
            owned.sort_unstable();
        }
        if universe.len() > (u32::MAX / 2) as usize {
            return Err(FilterError::BadDocument(format!(
                "a universe of {} IDs is too large for one exact body",
                universe.len()
            )));
        }
        let n = universe.len() as u64;
        let changed_count = changed.len() as u32;
        // The keys the levels hold: the changed ones, or the unchanged ones where the
        // body is complemented.
        let complemented = may_complement && 2 * changed.len() > universe.len();
        let held: Cow<[Key]> = if complemented {
            Cow::Owned(unchanged(&universe, &changed))
        } else {
            changed
        };
        let r = held.len() as u64;

        let mut per_selector = [0u64; SELECTOR_RANGE as usize];
        for c in held.iter() {
            per_selector[selector(c.to_u64()) as usize] += 1;
        }
        let shape = Shape::best(n, r, &per_selector);
        let (in_a, in_b): (Vec<u64>, Vec<u64>) = held
            .iter()
            .map(|c| c.to_u64())
            .partition(|&c| selector(c) < shape.split);

        // Part A, then part B, bit-contiguous from bit 0. In a small universe each part
        // keeps the seed that lets the fewest other keys through.
        let candidates = if n <= SEARCH_UP_TO { FILTER_SEEDS } else { 1 };
        let others_through = |in_a: bool, layout: &Layout, tag: u32, seed: u32, words: &[u64]| {
            let mut next_held = held.iter().peekable();
            let salted = salt(tag, seed);
            let mask = value_mask(layout.bits);
            let mut count = 0u64;
            for key in universe.iter() {
                let key = key.to_u64();
                if next_held.next_if(|c| c.to_u64() == key).is_some()
                    || (selector(key) < shape.split) != in_a
                {
                    continue;
                }
                let row = Row::of(key, salted, layout.m);
                count += u64::from(layout.eval(words, &row) == row.fingerprint & mask);
            }
            count
        };
        let (a_seed, a_band) = filter_part(&in_a, shape.k + 1, TAG_A, candidates, |l, seed, w| {
            others_through(true, l, TAG_A, seed, w)
        });
        let a = Layout {
            m: a_band.m(),
            bits: shape.k + 1,
            offset: 0,
        };
        let (b_seed, b_band) = if shape.k == 0 {
            (0, Band::new(0))
        } else {
            filter_part(&in_b, shape.k, TAG_B, candidates, |l, seed, w| {
                others_through(false, l, TAG_B, seed, w)
            })
        };
        let b = Layout {
            m: b_band.m(),
            bits: shape.k,
            offset: a.bits_len(),
        };
        let filters_end = b.offset + b.bits_len();
        let mut words = vec![0u64; filters_end.div_ceil(64) as usize + 2];
        a_band.solve_into(a, &mut words);
        drop(a_band);
        b_band.solve_into(b, &mut words);
        drop(b_band);
        drop((in_a, in_b));

        // Every key the filter lets through, with its answer bit.
        let seeds = [a_seed, b_seed, 0];
        let through = |words: &[u64], each: &mut dyn FnMut(u64, u8) -> bool| -> bool {
            let mut next_held = held.iter().peekable();
            for key in universe.iter() {
                let key = key.to_u64();
                let is_held = next_held.next_if(|c| c.to_u64() == key).is_some();
                if passes(key, shape.split, [&a, &b], seeds, words) && !each(key, u8::from(is_held))
                {
                    return false;
                }
            }
            true
        };
        let mut count = 0u64;
        through(&words, &mut |_, _| {
            count += 1;
            true
        });
        let mut seed = 0u32;
        let mut band = Band::<u8>::new(rows_at(count, seed));
        loop {
            let m = band.m();
            let salted = salt(TAG_RETRIEVAL, seed);
            let ok = through(&words, &mut |key, value| {
                band.add(&Row::of(key, salted, m), value)
            });
            if ok {
                break;
            }
            seed = next_seed(seed, 0);
            let next = rows_at(count, seed);
            if next == m {
                band.clear();
            } else {
                // The old band goes before the larger one is made: never both at once.
                drop(std::mem::replace(&mut band, Band::new(0)));
                band = Band::new(next);
            }
        }
        let m = band.m();
        let retrieval = Layout {
            m,
            bits: 1,
            offset: filters_end,
        };
        words.resize(
            (filters_end + retrieval.bits_len()).div_ceil(64) as usize + 2,
            0,
        );
        band.solve_into(retrieval, &mut words);
        Ok(Exact {
            k: shape.k,
            split: shape.split,
            universe: n as u32,
            changed: changed_count,
            complemented,
            seeds: [a_seed, b_seed, seed],
            a,
            b,
            retrieval,
            words,
        })
    }

    /// The most memory [`Exact::build`] holds at once for `n` universe keys of which `r`
    /// changed, in bytes, with the universe's 8 bytes a key and the changed keys' 8 (as a
    /// sealed hour's come: sorted, read in place): while the filter is built, the keys
    /// the levels hold (the unchanged ones, made, where more than half changed) split
    /// by part and the parts' bands; then the retrieval band, sized for the keys the
    /// filter is expected to let through plus a tenth; and the solutions.
    pub fn build_bytes(n: u64, r: u64) -> u64 {
        let r = r.min(n);
        if 2 * r > n {
            return 8 * r + Exact::build_bytes(n, n - r);
        }
        Exact::held_build_bytes(n, r)
    }

    /// At least [`Exact::build_bytes`] for every count of changed keys up to `r`: what a
    /// build reserves before it knows how many changed (a range's count is its hours'
    /// summed, IDs in two hours counted twice). Not monotone in `r`: past half the
    /// universe, the fewer changed, the more keys the systems hold.
    pub fn build_bytes_up_to(n: u64, r: u64) -> u64 {
        let r = r.min(n);
        if 2 * r > n {
            return 8 * r + Exact::held_build_bytes(n, n / 2);
        }
        Exact::held_build_bytes(n, r)
    }

    /// [`Exact::build_bytes`] where the systems hold `r` keys, at most half of `n`.
    fn held_build_bytes(n: u64, r: u64) -> u64 {
        let uniform = [r / u64::from(SELECTOR_RANGE); SELECTOR_RANGE as usize];
        let shape = Shape::best(n, r, &uniform);
        let through = (r as f64 + (n - r) as f64 * shape.false_positive_rate()) * 1.1 + 1024.0;
        let through = (through as u64).min(n);
        let in_a = r * u64::from(shape.split) / u64::from(SELECTOR_RANGE) + 1024;
        let in_b = if shape.k == 0 {
            0
        } else {
            r.saturating_sub(in_a) + 2048
        };
        let band = |keys: u64| Band::<u32>::bytes(u64::from(grown(rows_for(keys.min(r)))));
        let filters = 8 * r + band(in_a) + band(in_b);
        let retrieval = Band::<u8>::bytes(u64::from(grown(rows_for(through))));
        let solutions = (shape.expected_bits(n, r, in_a.min(r)) * 1.1 / 8.0) as u64;
        8 * n + 8 * r + filters.max(retrieval) + solutions + 64 * 1024
    }
}

/// The keys of `universe` not in `changed` (both sorted and distinct, `changed` within
/// `universe`), sorted.
fn unchanged(universe: &[Key], changed: &[Key]) -> Vec<Key> {
    let mut next_changed = changed.iter().peekable();
    let mut out = Vec::with_capacity(universe.len() - changed.len());
    for &key in universe {
        if next_changed.next_if(|&&c| c == key).is_none() {
            out.push(key);
        }
    }
    out
}

/// The next size after [`SEEDS_PER_SIZE`] failed seeds.
fn grown(m: u32) -> u32 {
    m + m / 200 + 1
}

/// A filter of `keys` at `bits` fingerprint bits: the seed it keeps and its eliminated
/// band. Of the first `candidates` seeds that succeed, it keeps the one of least bits
/// plus `score(layout, seed, solution)` (the first on ties).
fn filter_part(
    keys: &[u64],
    bits: u32,
    tag: u32,
    candidates: u32,
    score: impl Fn(&Layout, u32, &[u64]) -> u64,
) -> (u32, Band<u32>) {
    let (seed, mut band) = filter_system(keys, bits, tag, 0);
    if candidates <= 1 {
        return (seed, band);
    }
    let solved = |seed: u32, band: &Band<u32>| {
        let layout = Layout {
            m: band.m(),
            bits,
            offset: 0,
        };
        let mut words = vec![0u64; layout.bits_len().div_ceil(64) as usize + 2];
        band.solve_into(layout, &mut words);
        layout.bits_len() + score(&layout, seed, &words)
    };
    let mut best = solved(seed, &band);
    let mut kept = seed;
    let mut next_seed = seed + 1;
    for _ in 1..candidates {
        let (found, next) = filter_system(keys, bits, tag, next_seed);
        next_seed = found + 1;
        let got = solved(found, &next);
        if got < best {
            (best, kept, band) = (got, found, next);
        }
    }
    (kept, band)
}

/// Seeds of one size: seed `s` is seed `s % SIZE_SEEDS` at the size grown `s / SIZE_SEEDS`
/// times by 0.5%.
const SIZE_SEEDS: u32 = 1 << 16;

/// Rows of a system of `n` equations at `seed`.
fn rows_at(n: u64, seed: u32) -> u32 {
    (0..seed / SIZE_SEEDS).fold(rows_for(n), |m, _| grown(m))
}

/// The seed after a failed one: the next at this size, or the first of the next size
/// once [`SEEDS_PER_SIZE`] failed in a row from `first`.
fn next_seed(seed: u32, first: u32) -> u32 {
    let size = seed / SIZE_SEEDS;
    let from = if size == first / SIZE_SEEDS {
        first % SIZE_SEEDS
    } else {
        0
    };
    if seed % SIZE_SEEDS - from + 1 >= SEEDS_PER_SIZE {
        (size + 1) * SIZE_SEEDS
    } else {
        seed + 1
    }
}

/// The first seed from `first` on whose system of `keys` at `bits` bits is consistent,
/// and its eliminated band.
fn filter_system(keys: &[u64], bits: u32, tag: u32, first: u32) -> (u32, Band<u32>) {
    let mask = value_mask(bits);
    let mut seed = first;
    let mut band = Band::<u32>::new(rows_at(keys.len() as u64, seed));
    loop {
        let m = band.m();
        let salted = salt(tag, seed);
        let ok = keys.iter().all(|&key| {
            let row = Row::of(key, salted, m);
            band.add(&row, (row.fingerprint & mask) as u32)
        });
        if ok {
            return (seed, band);
        }
        seed = next_seed(seed, first);
        let next = rows_at(keys.len() as u64, seed);
        if next == m {
            band.clear();
        } else {
            drop(std::mem::replace(&mut band, Band::new(0)));
            band = Band::new(next);
        }
    }
}
