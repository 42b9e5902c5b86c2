//! Construction: banding (on-the-fly Gaussian elimination over GF(2), one row per key)
//! and back-substitution into the column-major solution. Retries with the next seed on
//! the rare inconsistent system and grows `m` by 1% every few failures, so it always
//! ends with a filter.

use super::{fingerprint_mask, Ribbon, Slot, MAX_R, MIN_R, WIDTH};
use crate::bloom::{FilterError, Key};

/// Row overhead by size: small sets need relatively more slack for the same success
/// rate (the last band cannot spill past row m).
pub(super) fn initial_rows(n: usize) -> u32 {
    let slack = if n < 10_000 { 0.065 } else { 0.075 };
    let rows = (n as f64 * (1.0 + slack)).ceil() as u64 + 16;
    rows.max(u64::from(WIDTH)) as u32
}

/// Seeds tried before growing `m` by 1%. At 300,000 keys a seed fails 40 to 55 % of the
/// time at the initial size and about 25 % after one growth (the test
/// `first_seed_succeeds_often_enough_at_the_initial_size_margin`, compiled under
/// `--cfg bloomcast_margins`), so 4 seeds grew m in 3 to 9 % of builds and crossed the
/// 1.15 x floor bound at p = 0.01 (two growths) in 1e-4 to 4e-4 of them; 8 seeds make
/// those 0.07 to 0.8 % and below 1.3e-7, for the same expected number of attempts.
pub(super) const SEEDS_PER_SIZE: u64 = 8;

impl Ribbon {
    /// Builds a filter of `2^-r` false-positive rate holding every key.
    ///
    /// # Errors
    /// `r` outside `1..=32`, or more keys than a u32 row index can address.
    pub fn build(keys: &[Key], r: u32) -> Result<Ribbon, FilterError> {
        if !(MIN_R..=MAX_R).contains(&r) {
            return Err(FilterError::RibbonBits(r));
        }
        if keys.len() > (u32::MAX / 2) as usize {
            return Err(FilterError::BadDocument(format!(
                "{} keys are too many for one ribbon",
                keys.len()
            )));
        }
        let mut m = initial_rows(keys.len());
        let mut seed = 0u64;
        let mut band = Band::new(m);
        loop {
            if band.add_all(keys, seed, r) {
                return Ok(band.solve(keys.len() as u32, r, seed));
            }
            seed += 1;
            if seed % SEEDS_PER_SIZE == 0 {
                m = m + m / 100 + 1;
            }
            band = Band::new(m);
        }
    }
}

impl Ribbon {
    /// The most memory [`Ribbon::build`] of `n` keys at `r` bits holds at once, in bytes:
    /// the band being eliminated twice (a retry allocates the next before the last is
    /// freed, at up to two 1% growths of `m`) and the solution. What a server reserves
    /// before it starts a build; the keys themselves are the caller's.
    pub fn build_bytes(n: u64, r: u32) -> u64 {
        let rows = Self::rows_at_most(n);
        2 * rows * (std::mem::size_of::<u64>() + std::mem::size_of::<u32>()) as u64
            + Self::solution_bytes(n, r)
    }

    /// The solution's size in bytes for `n` keys at `r` bits (about the body's size).
    pub fn solution_bytes(n: u64, r: u32) -> u64 {
        (Self::rows_at_most(n) * u64::from(r)).div_ceil(64) * 8 + 8
    }

    /// Rows of a build of `n` keys, allowing two 1% growths past the first size.
    fn rows_at_most(n: u64) -> u64 {
        let first = u64::from(initial_rows(n.min(u64::from(u32::MAX / 2)) as usize));
        first + first / 50 + 2
    }
}

#[cfg(test)]
impl Ribbon {
    /// One construction attempt at exactly `m` rows (at least 64) and `seed`: `None`
    /// when that system is inconsistent. For measuring the retry policy of
    /// [`Ribbon::build`] (the test
    /// `first_seed_succeeds_often_enough_at_the_initial_size_margin`).
    ///
    /// # Errors
    /// As [`Ribbon::build`].
    pub(crate) fn try_build(
        keys: &[Key],
        r: u32,
        m: u32,
        seed: u64,
    ) -> Result<Option<Ribbon>, FilterError> {
        if !(MIN_R..=MAX_R).contains(&r) {
            return Err(FilterError::RibbonBits(r));
        }
        let mut band = Band::new(m.max(WIDTH));
        if !band.add_all(keys, seed, r) {
            return Ok(None);
        }
        Ok(Some(band.solve(keys.len() as u32, r, seed)))
    }
}

/// The banded system being eliminated: row i holds a coefficient word whose bit 0 is
/// row i itself, and the right-hand side.
struct Band {
    m: u32,
    coeff: Vec<u64>,
    rhs: Vec<u32>,
}

impl Band {
    fn new(m: u32) -> Band {
        Band {
            m,
            coeff: vec![0; m as usize],
            rhs: vec![0; m as usize],
        }
    }

    /// Adds every key; false when the system became inconsistent.
    fn add_all(&mut self, keys: &[Key], seed: u64, r: u32) -> bool {
        let mask = fingerprint_mask(r);
        keys.iter().all(|&key| {
            let slot = Slot::of(key, seed, self.m);
            self.add(
                slot.start as usize,
                slot.coeff,
                (slot.fingerprint & mask) as u32,
            )
        })
    }

    #[inline]
    fn add(&mut self, mut i: usize, mut c: u64, mut fp: u32) -> bool {
        loop {
            let existing = self.coeff[i];
            if existing == 0 {
                self.coeff[i] = c;
                self.rhs[i] = fp;
                return true;
            }
            c ^= existing;
            fp ^= self.rhs[i];
            if c == 0 {
                // Dependent on rows already placed: consistent only if the sides agree
                // (a duplicate key always does).
                return fp == 0;
            }
            let tz = c.trailing_zeros();
            i += tz as usize;
            c >>= tz;
        }
    }

    /// Back-substitution from the last row up; free rows are zero.
    fn solve(self, n: u32, r: u32, seed: u64) -> Ribbon {
        let m = self.m as usize;
        let total_bits = m * r as usize;
        let mut words = vec![0u64; total_bits.div_ceil(64) + 1];
        // state[b] bit j = bit b of solution row i + j.
        let mut state = [0u64; MAX_R as usize];
        for i in (0..m).rev() {
            let c = self.coeff[i];
            let rhs = self.rhs[i];
            for (b, column) in state.iter_mut().enumerate().take(r as usize) {
                *column <<= 1;
                let bit = if c == 0 {
                    0
                } else {
                    ((c & *column).count_ones() ^ (rhs >> b)) & 1
                };
                *column |= u64::from(bit);
                if bit != 0 {
                    let t = b * m + i;
                    words[t / 64] |= 1 << (t % 64);
                }
            }
        }
        Ribbon {
            n,
            m: self.m,
            r,
            seed,
            words,
        }
    }
}
