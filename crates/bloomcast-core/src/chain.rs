//! Verifiable history (pure): the digest of an hour's filter, the hour chain that links
//! every sealed hour to the one before it, and the Ed25519 signature over each link.
//!
//! A closed hour is immutable and meant to be served by caches and mirrors; these let a
//! client that trusts only the publisher's public key check that the bytes it got are
//! the bytes the publisher sealed. `docs/PROTOCOL.md` ("Verifiable history") states the
//! byte strings below exactly, and `docs/chain-vectors.json` pins them.
//!
//! - `digest(h) = SHA-256(bin(h))`, `bin(h)` the body of `GET /YYYY/MM/DD/HH.bin` in
//!   identity encoding (the filter's bytes in wire order).
//! - `header(h) = SHA-256(digest(h) || header(h-1))`; before the first hour of the chain,
//!   `header(h-1)` is [`GENESIS`] (32 zero bytes).
//! - `signature(h) = Ed25519(key, "bloomcast-hour-v1" || hour index (8 bytes, big-endian)
//!   || header(h))`: the prefix keeps the signature from passing for anything else, the
//!   hour keeps a valid link from passing for another hour's.
//!
//! Keys rotate: [`KeyId`], [`SignatureField`] and [`KeyList`] (in `keys.rs`) say which key
//! signs which hour.

mod keys;
mod trust;

pub use keys::{KeyId, KeyList, ListedKey, SignatureField};
pub use trust::{
    ack_message, checkpoint_message, open_message, vouch_message, Checkpoint, Succession, Trusted,
    ACK_DOMAIN, CHECKPOINT_DOMAIN, OPEN_DOMAIN, VOUCH_DOMAIN,
};

use base64::Engine;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};

/// A SHA-256 value: a digest or a chain header.
pub type Hash = [u8; 32];

/// `header(h-1)` of the first hour of a chain: 32 zero bytes (as BIP 157's filter headers).
pub const GENESIS: Hash = [0; 32];

/// Prefixed to every signed message (domain separation).
pub const SIGNING_DOMAIN: &[u8] = b"bloomcast-hour-v1";

/// Response header: the signature over the hour's chain link, lowercase hex, and the
/// id of the key that made it ([`SignatureField`]).
pub const HEADER_SIGNATURE: &str = "bloom-signature";
/// Response header on the open hour of a signed service: the signature over the version
/// served (section 11, "Trust"), its key's id and when it was made:
/// `<128 hex>; keyid="<16 hex>"; made=<Unix seconds>`.
pub const HEADER_OPEN_SIGNATURE: &str = "bloom-open-signature";
/// Response header: `header(h-1)`, lowercase hex, so one hour can be checked on its own.
pub const HEADER_PREV: &str = "bloom-prev-header";
/// Response header (RFC 9530) with the SHA-256 of the bytes sent.
pub const HEADER_REPR_DIGEST: &str = "repr-digest";

/// Why a piece of history does not verify. Each names the hour it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The filter's bytes hash to another digest than the chain covers.
    #[error("hour {hour}: the filter's digest is {got}, but its chain says {want}: the bytes were altered")]
    Digest {
        /// The hour, RFC 3339.
        hour: String,
        /// The digest of the bytes received, hex.
        got: String,
        /// The digest the chain says, hex.
        want: String,
    },
    /// The hour's link does not follow from the previous hour's header.
    #[error("hour {hour}: its chain link does not follow the previous hour's header ({detail})")]
    Link {
        /// The hour, RFC 3339.
        hour: String,
        /// The headers that disagree.
        detail: String,
    },
    /// The signature does not verify with the key given.
    #[error("hour {hour}: the signature does not verify with the public key given")]
    Signature {
        /// The hour, RFC 3339.
        hour: String,
    },
    /// A signature, header or digest that does not parse.
    #[error("hour {hour}: {detail}")]
    Malformed {
        /// The hour, RFC 3339.
        hour: String,
        /// What is wrong.
        detail: String,
    },
    /// Not 64 hex digits.
    #[error("not a public key: {0} (expected 64 hex digits, an Ed25519 public key)")]
    BadKey(String),
    /// 64 hex digits that do not encode a point of the curve: a key mistyped or
    /// truncated and padded, not a format problem.
    #[error("not a valid Ed25519 public key: {0} (64 hex digits, but not a point on the curve)")]
    NotEd25519(String),
    /// The hour is signed by a key the key list does not give it.
    #[error("hour {hour}: {detail}")]
    OtherKey {
        /// The hour, RFC 3339.
        hour: String,
        /// What is wrong.
        detail: String,
    },
    /// A key list that is malformed, or does not extend the one pinned.
    #[error("the publisher's key list is refused: {0}")]
    BadKeyList(String),
}

/// SHA-256 of an hour's `.bin` bytes.
pub fn digest(bin: &[u8]) -> Hash {
    Sha256::digest(bin).into()
}

/// `SHA-256(digest || prev)`: the link of an hour whose previous hour's header is `prev`.
pub fn header(digest: &Hash, prev: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update(digest);
    h.update(prev);
    h.finalize().into()
}

/// The exact bytes signed for hour `index` (hours since the Unix epoch) with `header`.
pub fn signed_message(index: i64, header: &Hash) -> Vec<u8> {
    let mut msg = Vec::with_capacity(SIGNING_DOMAIN.len() + 8 + 32);
    msg.extend_from_slice(SIGNING_DOMAIN);
    msg.extend_from_slice(&index.to_be_bytes());
    msg.extend_from_slice(header);
    msg
}

/// The domain of an exact body's signature (docs/PROTOCOL.md section 14).
pub const EXACT_SIGNING_DOMAIN: &[u8] = b"bloomcast-exact-v1";

/// A form of a sealed hour derived from its filter's keys and signed on its own, bound
/// to the hour's place in the chain (docs/PROTOCOL.md section 11, "Derived forms"): each
/// has its own signing domain, so a signature over one form's bytes is never one over
/// another's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyForm {
    /// `.exact` (section 14).
    Exact,
    /// `.ribbon`, version 1 (section 12); its JSON form carries the same body.
    Ribbon,
    /// `.ribbon2`, version 2 (section 12).
    Ribbon2,
    /// One page of `.pages` (section 12, "Huge hours by the page"): its "body" is
    /// [`crate::bloom::pages::signed_page`]'s bytes.
    Page,
}

impl BodyForm {
    /// The form's signing domain (ASCII).
    pub fn domain(self) -> &'static [u8] {
        match self {
            BodyForm::Exact => EXACT_SIGNING_DOMAIN,
            BodyForm::Ribbon => b"bloomcast-ribbon-v1",
            BodyForm::Ribbon2 => b"bloomcast-ribbon2-v1",
            BodyForm::Page => b"bloomcast-page-v1",
        }
    }
}

/// The exact bytes signed for a `form` body of hour `index`: the form's domain, the
/// index, the hour's chain header and the body's SHA-256.
pub fn body_signed_message(form: BodyForm, index: i64, header: &Hash, body: &[u8]) -> Vec<u8> {
    let domain = form.domain();
    let mut msg = Vec::with_capacity(domain.len() + 8 + 64);
    msg.extend_from_slice(domain);
    msg.extend_from_slice(&index.to_be_bytes());
    msg.extend_from_slice(header);
    msg.extend_from_slice(&Sha256::digest(body));
    msg
}

/// The exact bytes signed for hour `index`'s exact body: the domain, the index, the
/// hour's chain header and the body's SHA-256.
pub fn exact_signed_message(index: i64, header: &Hash, body: &[u8]) -> Vec<u8> {
    body_signed_message(BodyForm::Exact, index, header, body)
}

/// The `Repr-Digest` field value (RFC 9530) of `bytes`: `sha-256=:BASE64:`.
pub fn repr_digest(bytes: &[u8]) -> String {
    repr_digest_of(&Sha256::digest(bytes).into())
}

/// `Repr-Digest` of bytes whose SHA-256 is `d`.
pub fn repr_digest_of(d: &[u8; 32]) -> String {
    format!(
        "sha-256=:{}:",
        base64::engine::general_purpose::STANDARD.encode(d)
    )
}

/// Lowercase hex of any bytes.
pub fn hex(bytes: &[u8]) -> String {
    crate::bloom::to_hex(bytes)
}

/// Parses exactly `N` bytes of hex, ignoring whitespace around it: every key, digest,
/// link and signature read from a header, a document, a file or the command line.
///
/// Strict as the protocol's "Bad hex" (docs/PROTOCOL.md, section 6) is: exactly two
/// digits `0-9a-f` per byte, nothing else (no sign, no `0x`); `A-F` is accepted, as
/// [`crate::bloom::from_hex`] accepts it in filter bodies. The digits are decoded by the
/// `hex` crate, the one hex decoder of this crate.
pub fn parse_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    hex::decode_to_slice(s.trim(), &mut out).ok()?;
    Some(out)
}

/// The publisher's signing key. Its seed is 32 random bytes kept in a file.
#[derive(Clone)]
pub struct Signer {
    key: SigningKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret: only what identifies it.
        write!(f, "Signer({})", self.public_key())
    }
}

impl Signer {
    /// The key of a 32-byte seed (RFC 8032's private key).
    pub fn from_seed(seed: &[u8; 32]) -> Signer {
        Signer {
            key: SigningKey::from_bytes(seed),
        }
    }

    /// The public key, to publish and pass to clients as `--pubkey`.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.key.verifying_key())
    }

    /// The signature of hour `index`'s link `header`.
    pub fn sign(&self, index: i64, header: &Hash) -> [u8; 64] {
        self.key.sign(&signed_message(index, header)).to_bytes()
    }

    /// Signs hour `index`'s exact body, bound to the hour's chain `header`.
    pub fn sign_exact(&self, index: i64, header: &Hash, body: &[u8]) -> [u8; 64] {
        self.sign_body(BodyForm::Exact, index, header, body)
    }

    /// Signs hour `index`'s `form` body, bound to the hour's chain `header`.
    pub fn sign_body(&self, form: BodyForm, index: i64, header: &Hash, body: &[u8]) -> [u8; 64] {
        self.key
            .sign(&body_signed_message(form, index, header, body))
            .to_bytes()
    }
}

/// A publisher's Ed25519 public key; displayed and parsed as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex(self.0.as_bytes()))
    }
}

impl std::str::FromStr for PublicKey {
    type Err = ChainError;

    fn from_str(s: &str) -> Result<PublicKey, ChainError> {
        let bytes = parse_hex::<32>(s).ok_or_else(|| ChainError::BadKey(s.to_owned()))?;
        PublicKey::from_bytes(&bytes)
    }
}

impl PublicKey {
    /// The key of 32 bytes (RFC 8032's encoding).
    ///
    /// # Errors
    /// [`ChainError::NotEd25519`] when they are not an Ed25519 public key.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<PublicKey, ChainError> {
        VerifyingKey::from_bytes(bytes)
            .map(PublicKey)
            .map_err(|_| ChainError::NotEd25519(hex(bytes)))
    }

    /// The key's 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    /// Checks hour `index`'s signature over `header`.
    ///
    /// # Errors
    /// [`ChainError::Signature`] naming `hour` when it does not verify.
    pub fn verify(
        &self,
        hour: &str,
        index: i64,
        header: &Hash,
        signature: &[u8; 64],
    ) -> Result<(), ChainError> {
        let sig = ed25519_dalek::Signature::from_bytes(signature);
        self.0
            .verify_strict(&signed_message(index, header), &sig)
            .map_err(|_| ChainError::Signature {
                hour: hour.to_owned(),
            })
    }

    /// Verifies the signature of hour `index`'s exact body under the hour's chain
    /// `header`.
    ///
    /// # Errors
    /// [`ChainError::Signature`] naming the hour.
    pub fn verify_exact(
        &self,
        hour: &str,
        index: i64,
        header: &Hash,
        body: &[u8],
        signature: &[u8; 64],
    ) -> Result<(), ChainError> {
        self.verify_body(BodyForm::Exact, hour, index, header, body, signature)
    }

    /// Verifies the signature of hour `index`'s `form` body under the hour's chain
    /// `header`.
    ///
    /// # Errors
    /// [`ChainError::Signature`] naming the hour.
    pub fn verify_body(
        &self,
        form: BodyForm,
        hour: &str,
        index: i64,
        header: &Hash,
        body: &[u8],
        signature: &[u8; 64],
    ) -> Result<(), ChainError> {
        let sig = ed25519_dalek::Signature::from_bytes(signature);
        self.0
            .verify_strict(&body_signed_message(form, index, header, body), &sig)
            .map_err(|_| ChainError::Signature {
                hour: hour.to_owned(),
            })
    }
}

/// What a client knows of one closed hour after fetching it: the digest it computed of
/// the filter's bytes, and what the response claims (previous header and signature).
#[derive(Debug, Clone)]
pub struct Claim {
    /// RFC 3339 start of the hour, for messages.
    pub hour: String,
    /// The hour's index (hours since the Unix epoch), which the signature covers.
    pub index: i64,
    /// SHA-256 of the filter's bytes as received.
    pub digest: Hash,
    /// `header(h-1)`, as the response claims it (`Bloom-Prev-Header`).
    pub prev: Hash,
    /// The Ed25519 signature over the hour's link.
    pub signature: [u8; 64],
}

impl Claim {
    /// Verifies the claim against `key`, and against `known_prev`, the previous hour's
    /// header when the client has verified it already (the chain link). Returns the
    /// hour's header.
    ///
    /// # Errors
    /// [`ChainError::Link`] when `known_prev` differs from the claimed previous header;
    /// [`ChainError::Signature`] when the signature (hence the digest) does not verify.
    pub fn verify(&self, key: &PublicKey, known_prev: Option<&Hash>) -> Result<Hash, ChainError> {
        if let Some(known) = known_prev {
            if known != &self.prev {
                return Err(ChainError::Link {
                    hour: self.hour.clone(),
                    detail: format!(
                        "it says the previous header is {}, the previous hour's is {}",
                        hex(&self.prev),
                        hex(known)
                    ),
                });
            }
        }
        let header = header(&self.digest, &self.prev);
        key.verify(&self.hour, self.index, &header, &self.signature)?;
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> Signer {
        Signer::from_seed(&[7; 32])
    }

    #[test]
    fn an_exact_signature_binds_the_body_the_hour_and_its_header() {
        let key = signer();
        let public = key.public_key();
        let sig = key.sign_exact(5, &[1; 32], b"body");
        assert!(public.verify_exact("h", 5, &[1; 32], b"body", &sig).is_ok());
        assert!(public
            .verify_exact("h", 6, &[1; 32], b"body", &sig)
            .is_err());
        assert!(public
            .verify_exact("h", 5, &[2; 32], b"body", &sig)
            .is_err());
        assert!(public
            .verify_exact("h", 5, &[1; 32], b"bodY", &sig)
            .is_err());
        // Never valid as an hour's chain signature.
        assert!(public.verify("h", 5, &[1; 32], &sig).is_err());
        assert_eq!(
            exact_signed_message(5, &[1; 32], b"").len(),
            18 + 8 + 32 + 32
        );
    }

    #[test]
    fn a_signature_over_one_forms_body_is_never_one_over_another_forms() {
        let key = signer();
        let public = key.public_key();
        let forms = [
            BodyForm::Exact,
            BodyForm::Ribbon,
            BodyForm::Ribbon2,
            BodyForm::Page,
        ];
        for form in forms {
            let sig = key.sign_body(form, 5, &[1; 32], b"body");
            for other in forms {
                let verdict = public.verify_body(other, "h", 5, &[1; 32], b"body", &sig);
                assert_eq!(verdict.is_ok(), other == form, "{form:?} as {other:?}");
            }
            assert!(public.verify("h", 5, &[1; 32], &sig).is_err());
        }
        assert_eq!(
            &body_signed_message(BodyForm::Ribbon2, 5, &[1; 32], b"")[..20],
            b"bloomcast-ribbon2-v1"
        );
    }

    #[test]
    fn the_header_hashes_digest_then_previous_header() {
        let d = digest(b"");
        assert_eq!(
            hex(&d),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let mut both = d.to_vec();
        both.extend_from_slice(&GENESIS);
        assert_eq!(header(&d, &GENESIS), digest(&both));
        assert_ne!(header(&d, &GENESIS), header(&GENESIS, &d), "order matters");
    }

    #[test]
    fn the_signed_message_is_domain_hour_then_header() {
        let msg = signed_message(1, &[0xab; 32]);
        assert_eq!(&msg[..17], b"bloomcast-hour-v1");
        assert_eq!(&msg[17..25], &[0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&msg[25..], &[0xab; 32]);
    }

    #[test]
    fn a_signature_verifies_only_for_its_hour_header_and_key() {
        let s = signer();
        let key = s.public_key();
        let h = header(&digest(b"x"), &GENESIS);
        let sig = s.sign(10, &h);
        assert!(key.verify("h", 10, &h, &sig).is_ok());
        assert!(key.verify("h", 11, &h, &sig).is_err(), "another hour");
        assert!(
            key.verify("h", 10, &GENESIS, &sig).is_err(),
            "another header"
        );
        let other = Signer::from_seed(&[8; 32]).public_key();
        assert!(other.verify("h", 10, &h, &sig).is_err(), "another key");
    }

    #[test]
    fn public_keys_round_trip_through_hex_and_refuse_junk() {
        let key = signer().public_key();
        assert_eq!(key.to_string().parse::<PublicKey>().unwrap(), key);
        assert!(matches!(
            "abc".parse::<PublicKey>(),
            Err(ChainError::BadKey(_))
        ));
    }

    #[test]
    fn hex_digits_that_are_no_curve_point_are_named_as_such() {
        // y = 2 has no x on the curve (its x^2 is not a square mod p).
        let not_a_point = format!("02{}", "0".repeat(62));

        let err = not_a_point.parse::<PublicKey>().unwrap_err();

        assert!(matches!(err, ChainError::NotEd25519(_)), "{err}");
        let shown = err.to_string();
        assert!(shown.contains("not a valid Ed25519 public key"), "{shown}");
        assert!(!shown.contains("expected 64 hex digits"), "{shown}");
    }

    /// `good` spoiled as a loose decoder would still read it: a sign before a digit
    /// (`u8::from_str_radix` reads `+f` as 0x0f), a `0x` prefix, a digit dropped or added,
    /// a character that is not a digit, a non-ASCII character.
    fn spoiled(good: &str) -> Vec<String> {
        let tail = &good[2..];
        vec![
            format!("+f{tail}"),
            format!("-1{tail}"),
            format!("0x{tail}"),
            good[1..].to_owned(),
            format!("{good}0"),
            format!("0g{tail}"),
            format!("é{}", &good[2..]),
            format!("{} {}", &good[..2], &good[3..]),
        ]
    }

    #[test]
    fn parse_hex_takes_exactly_two_digits_a_byte_in_either_case() {
        assert_eq!(parse_hex::<2>("0fA0"), Some([0x0f, 0xa0]));
        assert_eq!(parse_hex::<2>(" 0fa0\n"), Some([0x0f, 0xa0]), "around it");
        for bad in spoiled("0fa0")
            .into_iter()
            .chain(["+f+f".into(), "".into()])
        {
            assert_eq!(parse_hex::<2>(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_public_key_is_refused_unless_every_digit_is_hex() {
        let key = signer().public_key();
        let text = key.to_string();
        assert_eq!(text.to_uppercase().parse::<PublicKey>(), Ok(key));
        for bad in spoiled(&text) {
            assert!(
                matches!(bad.parse::<PublicKey>(), Err(ChainError::BadKey(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_signature_or_hash_in_hex_is_refused_unless_every_digit_is_hex() {
        let sig = signer().sign(1, &GENESIS);
        let text = hex(&sig);
        assert_eq!(parse_hex::<64>(&text), Some(sig));
        assert_eq!(parse_hex::<64>(&text.to_uppercase()), Some(sig));
        for bad in spoiled(&text) {
            assert_eq!(parse_hex::<64>(&bad), None, "{bad:?}");
        }
        for bad in spoiled(&hex(&GENESIS)) {
            assert_eq!(parse_hex::<32>(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_claim_fails_on_a_changed_byte_a_broken_link_or_another_key() {
        let s = signer();
        let d = digest(b"filter");
        let prev = header(&digest(b"before"), &GENESIS);
        let claim = Claim {
            hour: "2026-01-01T00:00:00Z".into(),
            index: 5,
            digest: d,
            prev,
            signature: s.sign(5, &header(&d, &prev)),
        };
        let key = s.public_key();
        assert_eq!(claim.verify(&key, Some(&prev)), Ok(header(&d, &prev)));
        let tampered = Claim {
            digest: digest(b"filtes"),
            ..claim.clone()
        };
        assert!(matches!(
            tampered.verify(&key, None),
            Err(ChainError::Signature { .. })
        ));
        assert!(matches!(
            claim.verify(&key, Some(&GENESIS)),
            Err(ChainError::Link { .. })
        ));
        let err = claim
            .verify(&Signer::from_seed(&[1; 32]).public_key(), None)
            .unwrap_err();
        assert!(err.to_string().contains("2026-01-01T00:00:00Z"), "{err}");
    }

    #[test]
    fn repr_digest_is_rfc_9530_sha_256() {
        // RFC 9530 appendix: `{"hello": "world"}` → this value.
        assert_eq!(
            repr_digest(b"{\"hello\": \"world\"}"),
            "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
        );
    }
}
