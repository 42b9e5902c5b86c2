//! The `If-None-Match` check: a request's tags read against a rendering's SHA-256, with
//! nothing formatted.

use crate::render::{Encodings, Rendered};

/// Whether an `If-None-Match` value names `r` in either encoding (weak comparison, as
/// RFC 9110 prescribes for `If-None-Match`), or a `dcz` delta of its bytes: each tag is
/// read against the rendering's SHA-256, with nothing formatted.
pub(super) fn matches(r: &Rendered, if_none_match: &str) -> bool {
    matches_name(r.tag(), r.encodings, if_none_match)
}

/// Whether an `If-None-Match` value names the rendering named `name` holding
/// `encodings` (as [`matches`]), known without the rendering itself.
pub(super) fn matches_name(name: &[u8; 32], encodings: Encodings, if_none_match: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|tag| {
        let tag = tag.strip_prefix("W/").unwrap_or(tag);
        tag == "*" || names(name, encodings, tag)
    })
}

/// Whether `tag` is one of the quoted tags [`Head`] gives a rendering named `name`.
///
/// [`Head`]: crate::render::Head
fn names(name: &[u8; 32], encodings: Encodings, tag: &str) -> bool {
    let Some(inner) = tag.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return false;
    };
    let Some((hex, suffix)) = inner.split_at_checked(20) else {
        return false;
    };
    let suffixes: &[&str] = match encodings {
        Encodings::Both => &["", "-gz", "-dcz"],
        Encodings::Identity => &["", "-dcz"],
        Encodings::Gzip => &["-gz", "-gz-dcz"],
    };
    suffixes.contains(&suffix) && is_hex_of(hex.as_bytes(), &name[..10])
}

/// Whether `hex` is the lowercase hex of `bytes`.
fn is_hex_of(hex: &[u8], bytes: &[u8]) -> bool {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    hex.len() == 2 * bytes.len()
        && hex.chunks_exact(2).zip(bytes).all(|(pair, b)| {
            pair[0] == DIGITS[usize::from(b >> 4)] && pair[1] == DIGITS[usize::from(b & 15)]
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::head::fixtures::{half_full, sample, tag_of, text};
    use crate::render::{render, render_as, Effort, Repr};

    #[test]
    fn if_none_match_accepts_lists_weak_tags_and_star() {
        let (meta, f) = sample(false);
        let r = render(&meta, &f, Repr::Hex, Effort::Fast);
        let head = r.head();
        assert!(matches(&r, text(head.etag(false))));
        assert!(matches(
            &r,
            &format!("\"other\", W/{}", text(head.etag(true)))
        ));
        assert!(matches(&r, "*"));
        assert!(matches(&r, text(head.etag_dcz())));
        assert!(!matches(&r, "\"other\""));
        assert!(!matches(&r, "\"other-dcz\""));
    }

    #[test]
    fn if_none_match_names_exactly_the_tags_a_rendering_gives() {
        let (meta, f) = half_full();
        for encodings in [Encodings::Both, Encodings::Identity, Encodings::Gzip] {
            let r = render_as(&meta, &f, Repr::Hex, Effort::Fast, encodings);
            let head = r.head();
            let given = [head.etag(false), head.etag(true), head.etag_dcz()].map(text);
            let tag = tag_of(&r);
            for suffix in ["", "-gz", "-dcz", "-gz-dcz", "-x", "-dcz-gz"] {
                let candidate = format!("\"{tag}{suffix}\"");
                assert_eq!(
                    matches(&r, &candidate),
                    given.contains(&candidate.as_str()),
                    "{encodings:?} {candidate}"
                );
            }
            if tag.bytes().any(|b| b.is_ascii_alphabetic()) {
                let upper = format!("\"{}\"", tag.to_uppercase());
                assert!(!matches(&r, &upper), "lowercase hex only");
            }
            assert!(!matches(&r, &format!("\"{}\"", &tag[..19])), "too short");
            assert!(!matches(&r, &tag), "unquoted");
            assert!(!matches(&r, &format!("\"{tag}")), "unclosed");
        }
    }
}
