//! Synthetic keys for the benches: uniform keys (splitmix64) and a day of hours shaped
//! like real ones. Included by the benches that use them with `#[path]`.

#![allow(dead_code)] // each bench uses what it needs

use bloomcast::bloom::Key;
use bloomcast::store::distinct;

/// Hours in a day of [`hours`].
pub const HOURS: usize = 24;

/// Uniform keys from `state`, a new one each call (splitmix64).
pub fn splitmix(mut state: u64) -> impl FnMut() -> Key {
    move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Key::from_u64(z ^ (z >> 31))
    }
}

/// `total` keys from `next` as 24 sorted distinct hours, each sharing an eighth with the
/// one before.
pub fn hours(total: usize, mut next: impl FnMut() -> Key) -> Vec<Vec<Key>> {
    let per_hour = total / HOURS;
    let mut hours: Vec<Vec<Key>> = Vec::with_capacity(HOURS);
    for h in 0..HOURS {
        let mut keys: Vec<Key> = match h {
            0 => Vec::with_capacity(per_hour),
            _ => hours[h - 1].iter().step_by(8).copied().collect(),
        };
        while keys.len() < per_hour {
            keys.push(next());
        }
        hours.push(distinct(keys));
    }
    hours
}
