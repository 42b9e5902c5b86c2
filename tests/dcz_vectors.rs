//! Checks `docs/dcz-vectors.json`, the worked example of open-hour deltas (RFC 9842
//! `dcz`) in docs/PROTOCOL.md: the dictionary and the new version are the `.bin` bodies
//! of the filters they claim, the `dcz` body decodes with the dictionary to the new
//! version, and PROTOCOL.md shows these very bytes. `BLOOMCAST_BLESS=1` rewrites the file
//! (zstd's output may differ between versions; any valid body decodes the same).

use base64::Engine as _;
use bloomcast::bloom::{Filter, Params};
use bloomcast::dcz;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, PartialEq, Debug)]
#[serde(deny_unknown_fields)]
struct Vectors {
    m: u32,
    k: u32,
    /// IDs of the dictionary (the version the client holds) ...
    dictionary_ids: Vec<String>,
    /// ... and the IDs added since, in the new version.
    new_ids: Vec<String>,
    dictionary_hex: String,
    available_dictionary: String,
    version_hex: String,
    dcz_hex: String,
}

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/dcz-vectors.json");
const PROTOCOL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/PROTOCOL.md");

fn bin(m: u32, k: u32, ids: &[String]) -> Vec<u8> {
    let mut f = Filter::new(Params::new(m.into(), k.into()).unwrap());
    for id in ids {
        f.insert(id);
    }
    f.to_bytes()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn made() -> Vectors {
    let (m, k) = (1024, 7);
    let dictionary_ids: Vec<String> = (0..40).map(|i| format!("item-{i}")).collect();
    let new_ids: Vec<String> = vec!["item-40".into(), "item-41".into()];
    let dictionary = bin(m, k, &dictionary_ids);
    let all: Vec<String> = dictionary_ids.iter().chain(&new_ids).cloned().collect();
    let version = bin(m, k, &all);
    let sha = dcz::sha256(&dictionary);
    let body = dcz::encode(&dictionary, &sha, &version, 19).unwrap();
    Vectors {
        m,
        k,
        dictionary_ids,
        new_ids,
        dictionary_hex: hex(&dictionary),
        available_dictionary: format!(
            ":{}:",
            base64::engine::general_purpose::STANDARD.encode(sha)
        ),
        version_hex: hex(&version),
        dcz_hex: hex(&body),
    }
}

#[test]
fn the_dcz_vectors_hold_and_protocol_md_shows_them() {
    if std::env::var_os("BLOOMCAST_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&made()).unwrap() + "\n";
        std::fs::write(FILE, text).unwrap();
    }
    let v: Vectors = serde_json::from_str(&std::fs::read_to_string(FILE).unwrap()).unwrap();
    let dictionary = unhex(&v.dictionary_hex);
    let version = unhex(&v.version_hex);
    let body = unhex(&v.dcz_hex);
    assert_eq!(dictionary, bin(v.m, v.k, &v.dictionary_ids));
    let all: Vec<String> = v.dictionary_ids.iter().chain(&v.new_ids).cloned().collect();
    assert_eq!(version, bin(v.m, v.k, &all));
    let sha = dcz::sha256(&dictionary);
    assert_eq!(
        v.available_dictionary,
        format!(
            ":{}:",
            base64::engine::general_purpose::STANDARD.encode(sha)
        )
    );
    assert_eq!(body[..8], [0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00]);
    assert_eq!(body[8..40], sha);
    assert_eq!(dcz::decode(&dictionary, &body).unwrap(), version);
    // What this code makes now decodes the same, whatever bytes zstd picks.
    let now = unhex(&made().dcz_hex);
    assert_eq!(dcz::decode(&dictionary, &now).unwrap(), version);

    let protocol = std::fs::read_to_string(PROTOCOL).unwrap();
    for (what, value) in [
        ("dictionary", &v.dictionary_hex),
        ("Available-Dictionary", &v.available_dictionary),
        ("new version", &v.version_hex),
        ("dcz body", &v.dcz_hex),
    ] {
        assert!(
            protocol.contains(value.as_str()),
            "PROTOCOL.md shows the {what}: {value}"
        );
    }
}
