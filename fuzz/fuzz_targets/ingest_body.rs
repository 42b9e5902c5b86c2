//! Feeds arbitrary bodies to the ingest decoder, as JSON or as text/plain (the first
//! byte chooses). Nothing may panic; a rejected body is a 400; an accepted one yields
//! exactly the IDs an independent reading of the body finds, each 1..=1024 bytes.

#![no_main]

use bloomcast::bloom::Key;
use bloomcast::http::{decode_keys, BodyKind, MAX_ID_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let kind = if selector & 1 == 0 {
        BodyKind::Json
    } else {
        BodyKind::Lines
    };
    let keys = match decode_keys(kind, body) {
        Ok(keys) => keys,
        Err(e) => {
            assert_eq!(e.status().as_u16(), 400, "{e}");
            return;
        }
    };
    let text = std::str::from_utf8(body).expect("an accepted body is UTF-8");
    let ids: Vec<String> = match kind {
        BodyKind::Json => {
            let value: serde_json::Value =
                serde_json::from_str(text).expect("accepted JSON parses");
            value["ids"]
                .as_array()
                .expect("accepted JSON has an ids array")
                .iter()
                .map(|id| id.as_str().expect("every ID is a string").to_owned())
                .collect()
        }
        BodyKind::Lines => text
            .split('\n')
            .map(|line| line.strip_suffix('\r').unwrap_or(line))
            .filter(|line| !line.trim().is_empty())
            .map(str::to_owned)
            .collect(),
    };
    assert_eq!(keys.len(), ids.len());
    for (key, id) in keys.iter().zip(&ids) {
        assert!(!id.is_empty() && id.len() <= MAX_ID_BYTES, "{id:?}");
        assert_eq!(*key, Key::of(id));
    }
});
