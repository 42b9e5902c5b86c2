//! How a sealed hour with an exact body is read (PROTOCOL.md section 14, "Choosing it"):
//! pure arithmetic, as [`super::choice`].
//!
//! An exact body answers truly only for the IDs of the publisher's universe as it stood
//! when the hour was sealed; for any other ID its answer is arbitrary (near a coin toss
//! when most of the universe changed). A poller cannot tell which IDs are registered: the
//! universe is never published. So an exact body is read **alone** only for a caller that
//! declares the IDs it asks about registered ([`super::ClientBuilder::registered`]).
//! Otherwise it **refines** an approximate form of the same hour, the cheapest whose fpp
//! is at most the service's target: an ID is changed only when both say so. No false
//! negative is added (the approximate form has none, nor has the exact body for a changed
//! ID, which is always in the universe), an ID of the universe is answered exactly, and
//! any other is flagged at most at the approximate form's fpp, never above the target.

use super::choice::{Choice, RIBBON_BITS};
use super::plan::RESPONSE_OVERHEAD;

/// How a closed hour is read: one body, or an approximate form refined by the exact body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// One body: the v1 filter, a ribbon, or the exact body alone (only for IDs the caller
    /// declared registered: [`Choice::exact`]).
    One(Choice),
    /// The exact body of `exact_bytes` bytes and the approximate form `under` (fpp at most
    /// the service's target): an ID is changed when both say so.
    Refined { under: Choice, exact_bytes: u64 },
}

impl Reading {
    /// Body bytes plus the expected bytes of wasted fetches for `followed` IDs of the
    /// universe. A refinement pays both bodies and the second response's headers, and
    /// wastes no fetch on those IDs (the exact body removes the approximate form's false
    /// positives among them).
    pub fn expected_bytes(&self, followed: u64, fetch_cost: u64) -> f64 {
        match self {
            Reading::One(choice) => choice.expected_bytes(followed, fetch_cost),
            Reading::Refined { under, exact_bytes } => {
                (under.filter_bytes + exact_bytes) as f64 + RESPONSE_OVERHEAD
            }
        }
    }

    /// The most an ID **outside** the universe is flagged at: the approximate form's
    /// fpp; 1 for an exact body read alone, whose answer for it is arbitrary.
    pub fn outsider_fpp(&self) -> f64 {
        match self {
            Reading::One(choice) if choice.form == super::Form::Exact => 1.0,
            Reading::One(choice) => choice.fpp,
            Reading::Refined { under, .. } => under.fpp,
        }
    }
}

/// The approximate form of a closed hour of `count` IDs with the fewest body bytes whose
/// fpp is at most `target_fpp`: what an exact body refines. The v1 filter at the target
/// always qualifies; ribbons (version 2 when `ribbon2`) at the whole bits that reach the
/// target are weighed too unless `bloom_only` (a verifying client: ribbons are not signed).
///
/// ```
/// use bloomcast_client::{cheapest_within, Form};
/// // 3,000 IDs at 0.01: a version 2 ribbon at 2^-7 is smaller than the v1 filter.
/// assert_eq!(cheapest_within(3_000, 0.01, true, false).form, Form::Ribbon2 { k: 7 });
/// assert_eq!(cheapest_within(3_000, 0.01, true, true).form, Form::Bloom);
/// ```
pub fn cheapest_within(count: u64, target_fpp: f64, ribbon2: bool, bloom_only: bool) -> Choice {
    let ribbons = RIBBON_BITS.filter(|_| !bloom_only).map(|r| match ribbon2 {
        true => Choice::ribbon2(count, r),
        false => Choice::ribbon(count, r),
    });
    ribbons
        .chain([Choice::bloom(count, target_fpp)])
        .filter(|c| c.fpp <= target_fpp)
        .min_by_key(|c| c.filter_bytes)
        .expect("the v1 filter at the target")
}

/// The refinement of `under` by an exact body of `exact_bytes` bytes when it costs no
/// more than `other` (the cheapest approximate form alone), weighed as
/// [`Reading::expected_bytes`]; else `other`. Ties go to the refinement.
///
/// ```
/// use bloomcast_client::{cheapest_form_of, cheapest_within, refined_or, Reading};
/// // 1,000 IDs followed at 10 KiB a fetch, an hour of 3,000 IDs: the cheapest ribbon alone
/// // costs about 6 KB with its waste; one at 2^-7 and an exact body of 500 bytes, 3.6 KB.
/// let other = cheapest_form_of(3_000, 0.01, 1_000, 10 * 1024, true);
/// let under = cheapest_within(3_000, 0.01, true, false);
/// let reading = refined_or(500, under, other, 1_000, 10 * 1024);
/// assert_eq!(reading, Reading::Refined { under, exact_bytes: 500 });
/// assert!(reading.outsider_fpp() <= 0.01);
/// // An exact body as large as the universe's filter: the approximate form alone.
/// assert_eq!(refined_or(50_000, under, other, 1_000, 10 * 1024), Reading::One(other));
/// ```
pub fn refined_or(
    exact_bytes: u64,
    under: Choice,
    other: Choice,
    followed: u64,
    fetch_cost: u64,
) -> Reading {
    let refined = Reading::Refined { under, exact_bytes };
    let alone = Reading::One(other);
    if refined.expected_bytes(followed, fetch_cost) <= alone.expected_bytes(followed, fetch_cost) {
        refined
    } else {
        alone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choice::{cheapest_form_of, Form, DEFAULT_FETCH_COST};

    #[test]
    fn the_form_refined_never_exceeds_the_target_and_is_the_smallest_that_does() {
        for n in [0, 5, 280, 3_000, 100_000] {
            for (ribbon2, bloom_only) in [(false, false), (true, false), (true, true)] {
                let under = cheapest_within(n, 0.01, ribbon2, bloom_only);
                assert!(under.fpp <= 0.01, "n {n}: {under:?}");
                assert!(under.filter_bytes <= Choice::bloom(n, 0.01).filter_bytes);
                if bloom_only {
                    assert_eq!(under.form, Form::Bloom);
                }
            }
        }
        // Whole bits: 2^-7 is the first ribbon at or under 0.01.
        assert_eq!(
            cheapest_within(3_000, 0.01, false, false).form,
            Form::Ribbon { r: 7 }
        );
    }

    #[test]
    fn a_refinement_counts_both_bodies_and_a_second_response() {
        let under = Choice::bloom(3_000, 0.01);
        let reading = Reading::Refined {
            under,
            exact_bytes: 700,
        };
        let want = (under.filter_bytes + 700) as f64 + RESPONSE_OVERHEAD;
        assert_eq!(reading.expected_bytes(1_000_000, 1 << 20), want);
        assert_eq!(reading.outsider_fpp(), under.fpp);
    }

    #[test]
    fn a_refinement_is_read_only_when_the_waste_it_saves_outweighs_the_exact_body() {
        let cost = DEFAULT_FETCH_COST;
        let under = cheapest_within(280, 0.01, true, false);
        // One ID followed: the approximate form alone wastes about 80 bytes an hour.
        let other = cheapest_form_of(280, 0.01, 1, cost, true);
        assert_eq!(refined_or(300, under, other, 1, cost), Reading::One(other));
        // A million: the precise ribbon alone costs more than a coarse one and the body.
        let other = cheapest_form_of(280, 0.01, 1_000_000, cost, true);
        assert!(matches!(
            refined_or(300, under, other, 1_000_000, cost),
            Reading::Refined { .. }
        ));
    }

    #[test]
    fn an_exact_body_alone_answers_nothing_certain_outside_the_universe() {
        assert_eq!(Reading::One(Choice::exact(100)).outsider_fpp(), 1.0);
        let ribbon = Choice::ribbon(280, 9);
        assert_eq!(Reading::One(ribbon).outsider_fpp(), ribbon.fpp);
    }
}
