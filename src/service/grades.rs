//! The published precisions of the compact forms (docs/PROTOCOL.md section 12, "The
//! grade set"): a small fixed set per service, so that no reader can make the server
//! build, nor a cache keep, more than a few bodies of an hour, whatever `?fpp=` it sends.
//!
//! - Version 2 (`.ribbon2`): the grades of `2^-b` for `b` in [`MIN_BITS`]`..=`[`MAX_BITS`]
//!   (the precisions the SDKs ask for) and the grade of the service's `target_fpp` (what
//!   a request without `?fpp=` gets).
//! - Version 1 (`.ribbon`, `.ribbon.json`): `2^-r` for `r` in the same range.
//!
//! `?fpp=P` is served the cheapest member whose rate is at most `P` (the next stricter).
//! Each member has one canonical spelling, [`canonical`]: the shortest scientific
//! decimal that parses back to exactly its rate.

use crate::bloom::{bits_for_fpp, Grade};
use crate::render::Compact;

/// Fingerprint bits a client may ask for: `fpp` from 2^-4 to 2^-24.
pub const MIN_BITS: u32 = 4;
pub const MAX_BITS: u32 = 24;

/// The finest precision served, `2^-24`.
pub fn finest() -> f64 {
    (-f64::from(MAX_BITS)).exp2()
}

/// The coarsest precision served, `2^-4`.
pub fn coarsest() -> f64 {
    (-f64::from(MIN_BITS)).exp2()
}

/// The canonical spelling of a served rate in a URL: the shortest decimal in scientific
/// notation that parses back to exactly `fpp` (`6.25e-2`, `9.979248046875e-3`).
pub fn canonical(fpp: f64) -> String {
    format!("{fpp:e}")
}

/// A service's version 2 grade set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grades {
    /// The members, coarsest first (by [`Grade::code`]: rates strictly falling).
    ribbon2: Vec<Grade>,
    target: Grade,
    /// Version 1's bits for the target.
    target_bits: u32,
}

impl Grades {
    /// The set of a service whose target is `target_fpp`.
    pub fn new(target_fpp: f64) -> Grades {
        let target = unlisted_grade(target_fpp.clamp(finest(), coarsest()));
        let mut ribbon2: Vec<Grade> = (MIN_BITS..=MAX_BITS)
            .map(|b| Grade { k: b, split: 0 })
            .chain([target])
            .collect();
        ribbon2.sort_by_key(|g| g.code());
        ribbon2.dedup();
        Grades {
            ribbon2,
            target,
            target_bits: ribbon_bits(target_fpp),
        }
    }

    /// What a compact `form` is served at for `?fpp=asked` (`None`: no `fpp`, the
    /// target's): the grade code (version 2) or bits (version 1) naming the body, and
    /// its rate, whose [`canonical`] spelling names its URL.
    pub fn served(&self, form: Compact, asked: Option<f64>) -> (u32, f64) {
        match (form, asked) {
            (Compact::Ribbon2 | Compact::Pages, None) => (self.target.code(), self.target.fpp()),
            (Compact::Ribbon2 | Compact::Pages, Some(p)) => {
                let grade = self.ribbon2_for(p);
                (grade.code(), grade.fpp())
            }
            (_, asked) => {
                let r = asked.map_or(self.target_bits, ribbon_bits);
                (r, ribbon_fpp(r))
            }
        }
    }

    /// Every version 2 grade served, coarsest first.
    pub fn ribbon2(&self) -> &[Grade] {
        &self.ribbon2
    }

    /// The grade served without `?fpp=`: the target's.
    pub fn target(&self) -> Grade {
        self.target
    }

    /// The member served for `?fpp=p` (`2^-24 <= p < 1`): the cheapest whose rate is at
    /// most `p`; the finest member for anything finer (the caller refuses those).
    pub fn ribbon2_for(&self, p: f64) -> Grade {
        self.ribbon2
            .iter()
            .copied()
            .find(|g| g.fpp() <= p)
            .unwrap_or(Grade {
                k: MAX_BITS,
                split: 0,
            })
    }

    /// The canonical spellings of the version 2 rates, coarsest first (`ribbon_grades`
    /// in `GET /`).
    pub fn published(&self) -> Vec<String> {
        self.ribbon2.iter().map(|g| canonical(g.fpp())).collect()
    }
}

/// The grade of `p` on the whole version 2 grid (not the set): the cheapest whose rate is
/// at most `p`.
fn unlisted_grade(p: f64) -> Grade {
    Grade::for_fpp(p).unwrap_or(Grade {
        k: MAX_BITS,
        split: 0,
    })
}

/// Fingerprint bits of version 1 for `p`: rounded down to a power of two, at most 2^-4.
pub fn ribbon_bits(p: f64) -> u32 {
    bits_for_fpp(p)
        .unwrap_or(MAX_BITS)
        .clamp(MIN_BITS, MAX_BITS)
}

/// The rate of version 1 at `r` bits, `2^-r`.
pub fn ribbon_fpp(r: u32) -> f64 {
    (-f64::from(r)).exp2()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_the_whole_bits_and_the_target() {
        let grades = Grades::new(0.01);
        assert_eq!(grades.ribbon2().len(), 22);
        assert_eq!(grades.target(), Grade { k: 6, split: 185 });
        assert!(grades.ribbon2().contains(&Grade { k: 6, split: 185 }));
        // A target on a whole bit adds nothing.
        assert_eq!(Grades::new(2f64.powi(-10)).ribbon2().len(), 21);
        // Rates strictly fall.
        for pair in grades.ribbon2().windows(2) {
            assert!(pair[0].fpp() > pair[1].fpp());
        }
    }

    #[test]
    fn a_precision_gets_the_next_stricter_member() {
        let grades = Grades::new(0.01);
        assert_eq!(grades.ribbon2_for(0.5), Grade { k: 4, split: 0 });
        assert_eq!(grades.ribbon2_for(0.0625), Grade { k: 4, split: 0 });
        assert_eq!(grades.ribbon2_for(0.06), Grade { k: 5, split: 0 });
        assert_eq!(grades.ribbon2_for(0.01), Grade { k: 6, split: 185 });
        assert_eq!(grades.ribbon2_for(0.0099), Grade { k: 7, split: 0 });
        assert_eq!(grades.ribbon2_for(finest()), Grade { k: 24, split: 0 });
        for p in [0.3, 0.02, 1e-3, 3.3e-5, 1e-7, finest()] {
            let g = grades.ribbon2_for(p);
            assert!(g.fpp() <= p, "{p}");
            assert!(grades.ribbon2().contains(&g));
        }
    }

    #[test]
    fn each_form_is_served_at_a_member_of_its_set() {
        let grades = Grades::new(0.01);
        let target = Grade { k: 6, split: 185 };
        assert_eq!(
            grades.served(Compact::Ribbon2, None),
            (target.code(), target.fpp())
        );
        assert_eq!(
            grades.served(Compact::Ribbon2, Some(0.003)),
            (Grade { k: 9, split: 0 }.code(), ribbon_fpp(9))
        );
        assert_eq!(grades.served(Compact::Ribbon, None), (7, ribbon_fpp(7)));
        assert_eq!(
            grades.served(Compact::RibbonJson, Some(0.003)),
            (9, ribbon_fpp(9))
        );
        assert_eq!(grades.served(Compact::Ribbon, Some(0.5)), (4, 0.0625));
    }

    #[test]
    fn every_canonical_spelling_parses_back_to_its_member() {
        for target in [0.01, 0.05, 1e-6, 0.3, 1e-9] {
            let grades = Grades::new(target);
            for (grade, spelled) in grades.ribbon2().iter().zip(grades.published()) {
                let parsed: f64 = spelled.parse().unwrap();
                assert_eq!(parsed, grade.fpp(), "{spelled}");
                assert_eq!(grades.ribbon2_for(parsed), *grade, "{spelled}");
            }
        }
        assert_eq!(canonical(0.0625), "6.25e-2");
        assert_eq!(
            canonical(Grade { k: 6, split: 185 }.fpp()),
            "9.979248046875e-3"
        );
        for r in MIN_BITS..=MAX_BITS {
            let spelled = canonical(ribbon_fpp(r));
            assert_eq!(ribbon_bits(spelled.parse().unwrap()), r);
        }
    }
}
