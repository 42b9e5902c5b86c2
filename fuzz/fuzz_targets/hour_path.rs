//! Feeds arbitrary (percent-decoded) paths to the filter-path parser the handlers use.
//! Nothing may panic; a rejected path is a 400 or a 404; an accepted one has a
//! canonical form that parses back to the same target and representation.

#![no_main]

use bloomcast::hour::Hour;
use bloomcast::http::{canonical_path, filter_path};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(path) = std::str::from_utf8(data) else {
        return;
    };
    match filter_path(path) {
        Ok(parsed) => {
            let canonical = canonical_path(parsed);
            let again = filter_path(&canonical).expect("a canonical path parses");
            assert_eq!(again, parsed, "{path:?} → {canonical:?}");
            assert_eq!(canonical_path(again), canonical);
        }
        Err(e) => {
            let status = e.status().as_u16();
            assert!(status == 400 || status == 404, "{path:?}: {status}");
            assert!(!e.to_string().is_empty());
        }
    }
    // The CLI's lenient hour parser sees user input too.
    if let Ok(hour) = Hour::parse_flexible(path) {
        let hour_path = hour.path();
        // Outside years 0000..=9999 an hour has no path form (an RFC 3339 offset can
        // push 0000-01-01T00 back into year -1).
        if hour_path.len() == "/YYYY/MM/DD/HH".len() {
            assert_eq!(Hour::parse_path(&hour_path), Ok(hour), "{path:?}");
        }
    }
});
