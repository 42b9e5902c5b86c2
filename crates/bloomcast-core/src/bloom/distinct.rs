//! The sorted distinct union of several key sets: what a static structure (a ribbon of
//! a day) is built from, where a Bloom union needs only the count and the bits.
//!
//! Sealed hours come sorted and distinct, so the union is a merge: pairwise, in rounds,
//! each pass sequential over memory (`N log k` for `N` keys in `k` sets), with repeats
//! across sets dropped as they meet. A set that is not strictly increasing is sorted and
//! deduplicated first, on a copy.

use super::Key;
use std::borrow::Cow;

/// Every key of every set once, in increasing order.
///
/// ```
/// use bloomcast_core::bloom::{distinct_keys, Key};
/// let a = [Key::from_u64(1), Key::from_u64(5)];
/// let b = [Key::from_u64(5), Key::from_u64(2), Key::from_u64(2)];
/// let keys = distinct_keys(&[&a, &b]);
/// assert_eq!(keys, [1, 2, 5].map(Key::from_u64));
/// ```
pub fn distinct_keys(sets: &[&[Key]]) -> Vec<Key> {
    let mut runs: Vec<Cow<'_, [Key]>> = sets
        .iter()
        .filter(|set| !set.is_empty())
        .map(|&set| {
            if set.windows(2).all(|w| w[0] < w[1]) {
                Cow::Borrowed(set)
            } else {
                let mut own = set.to_vec();
                own.sort_unstable();
                own.dedup();
                Cow::Owned(own)
            }
        })
        .collect();
    while runs.len() > 1 {
        let mut next = Vec::with_capacity(runs.len().div_ceil(2));
        let mut pairs = runs.chunks_exact(2);
        for pair in &mut pairs {
            next.push(Cow::Owned(merge(&pair[0], &pair[1])));
        }
        if let [last] = pairs.remainder() {
            next.push(last.clone());
        }
        runs = next;
    }
    runs.pop().map(Cow::into_owned).unwrap_or_default()
}

/// Two strictly increasing runs as one, a key in both kept once.
fn merge(a: &[Key], b: &[Key]) -> Vec<Key> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out.push(x.min(y));
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        #[test]
        fn equals_the_sorted_set_of_every_key(
            sets in prop::collection::vec(prop::collection::vec(0u64..200, 0..60), 0..9),
            sort in prop::collection::vec(any::<bool>(), 9),
        ) {
            // Some sets as sealed hours give them (sorted, distinct), others raw.
            let sets: Vec<Vec<Key>> = sets
                .into_iter()
                .zip(&sort)
                .map(|(set, &sorted)| {
                    let mut keys: Vec<Key> = set.into_iter().map(Key::from_u64).collect();
                    if sorted {
                        keys.sort_unstable();
                        keys.dedup();
                    }
                    keys
                })
                .collect();
            let refs: Vec<&[Key]> = sets.iter().map(Vec::as_slice).collect();
            let expected: Vec<Key> = sets.iter().flatten().copied().collect::<BTreeSet<_>>()
                .into_iter().collect();
            prop_assert_eq!(distinct_keys(&refs), expected);
        }
    }

    #[test]
    fn no_sets_and_empty_sets_give_no_keys() {
        assert!(distinct_keys(&[]).is_empty());
        assert!(distinct_keys(&[&[], &[]]).is_empty());
    }
}
