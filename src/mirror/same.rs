//! Whether a mirror directory's `/.well-known/bloomcast.json` and a server's describe
//! the same service: the same chain genesis and first hour, and at least one public key
//! in common. A rotated key (listed under `keys` beside the current `public_key`) is
//! still the same service; a different key set is another one, whose files a mirror
//! must never write over.

use serde_json::Value;
use std::collections::BTreeSet;

/// Every public key a well-known document names: `public_key` and each
/// `keys[].public_key`, lowercased.
fn keys(doc: &Value) -> BTreeSet<String> {
    let listed = doc["keys"].as_array().into_iter().flatten();
    std::iter::once(&doc["public_key"])
        .chain(listed.map(|k| &k["public_key"]))
        .filter_map(Value::as_str)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// `Ok` when `mirrored` and `served` describe one service; otherwise why not.
///
/// # Errors
/// A sentence naming the field that differs.
pub fn same_service(mirrored: &Value, served: &Value) -> Result<(), String> {
    for field in ["chain_genesis", "genesis"] {
        if mirrored[field] != served[field] {
            return Err(format!(
                "its {field} is {}, the server's is {}",
                mirrored[field], served[field]
            ));
        }
    }
    let (ours, theirs) = (keys(mirrored), keys(served));
    if ours.is_empty() && theirs.is_empty() {
        return Ok(());
    }
    if ours.is_disjoint(&theirs) {
        let list = |set: &BTreeSet<String>| {
            if set.is_empty() {
                "none".to_owned()
            } else {
                set.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        };
        return Err(format!(
            "it was signed with {}, the server signs with {}",
            list(&ours),
            list(&theirs)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "aa00000000000000000000000000000000000000000000000000000000000000";
    const B: &str = "bb00000000000000000000000000000000000000000000000000000000000000";
    const C: &str = "cc00000000000000000000000000000000000000000000000000000000000000";

    fn doc(key: &str) -> Value {
        json!({"public_key": key, "chain_genesis": "00", "genesis": "2008-09-03T05:00:00Z"})
    }

    #[test]
    fn the_same_key_and_genesis_is_the_same_service() {
        assert_eq!(same_service(&doc(A), &doc(A)), Ok(()));
    }

    #[test]
    fn another_key_is_another_service() {
        let why = same_service(&doc(A), &doc(B)).unwrap_err();
        assert!(why.contains(A) && why.contains(B), "{why}");
    }

    #[test]
    fn a_rotated_key_listed_beside_the_old_one_is_the_same_service() {
        let mut rotated = doc(B);
        rotated["keys"] = json!([
            {"id": "1", "public_key": A, "first_hour": "2008-09-03T05:00:00Z", "last_hour": "2008-09-03T06:00:00Z"},
            {"id": "2", "public_key": B, "first_hour": "2008-09-03T07:00:00Z"},
        ]);
        assert_eq!(same_service(&doc(A), &rotated), Ok(()));
        assert_eq!(same_service(&rotated, &doc(B)), Ok(()));
        assert!(same_service(&rotated, &doc(C)).is_err());
    }

    #[test]
    fn another_genesis_is_another_service_even_with_the_same_key() {
        let mut other = doc(A);
        other["genesis"] = json!("2010-01-01T00:00:00Z");
        let why = same_service(&doc(A), &other).unwrap_err();
        assert!(why.contains("genesis"), "{why}");
        let mut other = doc(A);
        other["chain_genesis"] = json!("ff");
        assert!(same_service(&doc(A), &other).is_err());
    }

    #[test]
    fn a_signed_and_an_unsigned_service_differ_two_unsigned_ones_compare_by_genesis() {
        let unsigned =
            json!({"public_key": null, "chain_genesis": "00", "genesis": "2008-09-03T05:00:00Z"});
        assert!(same_service(&doc(A), &unsigned).is_err());
        assert_eq!(same_service(&unsigned, &unsigned), Ok(()));
    }
}
