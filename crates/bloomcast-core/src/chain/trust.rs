//! The trust model (pure): what a client holding one public key accepts from anyone
//! (the origin, a cache, a mirror, a saved file), stated in `docs/PROTOCOL.md` section
//! 11, "Trust".
//!
//! - **Successions.** A key the client trusts is replaced only by a change that key
//!   signed: when a key retires, it signs its successor's *vouch*,
//!   `"bloomcast-key-v1" || successor's 32 bytes || successor's first hour (8 bytes,
//!   big-endian)`, and the successor signs an *acknowledgement* of it,
//!   `"bloomcast-key-ack-v1" || predecessor's 32 bytes || successor's first hour`. Both
//!   travel in the key list. From its key, a client walks forward through vouches and
//!   back through acknowledgements ([`KeyList::trusted_from`]); any other key listed is
//!   refused, naming it.
//! - **Checkpoints.** The service signs, at least hourly, a statement of its newest
//!   sealed hour: `"bloomcast-checkpoint-v1" || made (Unix seconds, 8 bytes big-endian)
//!   || the hour's index || its chain header`. A client tells a stale or withholding
//!   mirror from a quiet publisher by how old it is.
//! - **The open hour.** Each version of the open hour a signed service serves is signed
//!   over `"bloomcast-open-v1" || the hour's index || made || SHA-256(its filter's
//!   bytes)`, so a client can refuse one replayed past its freshness bound.

use super::{ChainError, Hash, KeyList, ListedKey, PublicKey, Signer};
use crate::hour::Hour;
use ed25519_dalek::Signer as _;

/// The domain of a key's vouch for its successor.
pub const VOUCH_DOMAIN: &[u8] = b"bloomcast-key-v1";
/// The domain of a key's acknowledgement of its predecessor.
pub const ACK_DOMAIN: &[u8] = b"bloomcast-key-ack-v1";
/// The domain of a checkpoint.
pub const CHECKPOINT_DOMAIN: &[u8] = b"bloomcast-checkpoint-v1";
/// The domain of an open hour's version.
pub const OPEN_DOMAIN: &[u8] = b"bloomcast-open-v1";

fn message(domain: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut msg = domain.to_vec();
    for part in parts {
        msg.extend_from_slice(part);
    }
    msg
}

/// What a retiring key signs for `next`, which signs hours from `first_hour` on.
pub fn vouch_message(next: &PublicKey, first_hour: Hour) -> Vec<u8> {
    message(
        VOUCH_DOMAIN,
        &[next.as_bytes(), &first_hour.index().to_be_bytes()],
    )
}

/// What a new key signs for `prev`, the key it succeeds from `first_hour` on.
pub fn ack_message(prev: &PublicKey, first_hour: Hour) -> Vec<u8> {
    message(
        ACK_DOMAIN,
        &[prev.as_bytes(), &first_hour.index().to_be_bytes()],
    )
}

/// What a checkpoint signs: when it was made, the newest sealed hour and its header.
pub fn checkpoint_message(made: i64, hour: Hour, header: &Hash) -> Vec<u8> {
    message(
        CHECKPOINT_DOMAIN,
        &[&made.to_be_bytes(), &hour.index().to_be_bytes(), header],
    )
}

/// What a version of the open hour `hour` made at `made` signs: its filter's bytes'
/// SHA-256 (the `digest` of section 11).
pub fn open_message(hour: Hour, made: i64, digest: &Hash) -> Vec<u8> {
    message(
        OPEN_DOMAIN,
        &[&hour.index().to_be_bytes(), &made.to_be_bytes(), digest],
    )
}

impl Signer {
    /// This (retiring) key's vouch for `next`, first signing `first_hour`.
    pub fn vouch(&self, next: &PublicKey, first_hour: Hour) -> [u8; 64] {
        self.key.sign(&vouch_message(next, first_hour)).to_bytes()
    }

    /// This (new) key's acknowledgement of `prev`, succeeded from `first_hour`.
    pub fn acknowledge(&self, prev: &PublicKey, first_hour: Hour) -> [u8; 64] {
        self.key.sign(&ack_message(prev, first_hour)).to_bytes()
    }

    /// A checkpoint of the newest sealed `hour` (its chain `header`), made at `made`.
    pub fn checkpoint(&self, made: i64, hour: Hour, header: &Hash) -> [u8; 64] {
        self.key
            .sign(&checkpoint_message(made, hour, header))
            .to_bytes()
    }

    /// A version of the open `hour` made at `made`, whose filter's bytes hash to `digest`.
    pub fn sign_open(&self, hour: Hour, made: i64, digest: &Hash) -> [u8; 64] {
        self.key.sign(&open_message(hour, made, digest)).to_bytes()
    }
}

impl PublicKey {
    /// Whether `signature` over `msg` verifies under this key (strict, RFC 8032).
    fn signed(&self, msg: &[u8], signature: &[u8; 64]) -> bool {
        let sig = ed25519_dalek::Signature::from_bytes(signature);
        self.0.verify_strict(msg, &sig).is_ok()
    }

    fn check(
        &self,
        msg: &[u8],
        signature: &[u8; 64],
        what: impl FnOnce() -> ChainError,
    ) -> Result<(), ChainError> {
        if self.signed(msg, signature) {
            Ok(())
        } else {
            Err(what())
        }
    }

    /// Verifies a checkpoint made by this key.
    ///
    /// # Errors
    /// [`ChainError::Signature`] naming the hour.
    pub fn verify_checkpoint(&self, checkpoint: &Checkpoint) -> Result<(), ChainError> {
        let msg = checkpoint_message(checkpoint.made, checkpoint.hour, &checkpoint.header);
        self.check(&msg, &checkpoint.signature, || ChainError::Signature {
            hour: format!("{} (checkpoint)", checkpoint.hour.rfc3339()),
        })
    }

    /// Verifies the signature of a version of the open `hour` made at `made`.
    ///
    /// # Errors
    /// [`ChainError::Signature`] naming the hour.
    pub fn verify_open(
        &self,
        hour: Hour,
        made: i64,
        digest: &Hash,
        signature: &[u8; 64],
    ) -> Result<(), ChainError> {
        self.check(&open_message(hour, made, digest), signature, || {
            ChainError::Signature {
                hour: format!("{} (open)", hour.rfc3339()),
            }
        })
    }
}

/// A signed statement of the service's newest sealed hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The newest sealed hour when it was made.
    pub hour: Hour,
    /// That hour's chain header.
    pub header: Hash,
    /// When it was made, Unix seconds.
    pub made: i64,
    /// The Ed25519 signature over [`checkpoint_message`].
    pub signature: [u8; 64],
}

/// A key's signatures over its succession, as listed with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Succession {
    /// The previous key's vouch for this one ([`vouch_message`]).
    pub vouch: Option<[u8; 64]>,
    /// This key's acknowledgement of the previous one ([`ack_message`]).
    pub ack: Option<[u8; 64]>,
}

/// The keys a client trusts, from the one it was given: a contiguous run of a
/// publisher's list, each link of it signed (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trusted {
    list: KeyList,
    /// The run trusted: `list.keys()[first..=last]`.
    first: usize,
    last: usize,
}

impl KeyList {
    /// The keys trusted from `anchor`: `anchor` itself, each later key vouched for by the
    /// one before it, each earlier key acknowledged by the one after it.
    ///
    /// # Errors
    /// [`ChainError::BadKeyList`] when the list does not name `anchor` at all.
    pub fn trusted_from(&self, anchor: &PublicKey) -> Result<Trusted, ChainError> {
        let keys = self.keys();
        let Some(at) = keys.iter().position(|k| k.public_key == *anchor) else {
            return Err(ChainError::BadKeyList(format!(
                "it does not list the key you trust ({}), so nothing it says is vouched for",
                anchor.id()
            )));
        };
        let mut last = at;
        while last + 1 < keys.len() && vouches(&keys[last], &keys[last + 1]) {
            last += 1;
        }
        let mut first = at;
        while first > 0 && acknowledges(&keys[first], &keys[first - 1]) {
            first -= 1;
        }
        Ok(Trusted {
            list: self.clone(),
            first,
            last,
        })
    }
}

/// Whether `earlier` signed the vouch `later` lists.
fn vouches(earlier: &ListedKey, later: &ListedKey) -> bool {
    later.succession.vouch.is_some_and(|v| {
        let msg = vouch_message(&later.public_key, later.first_hour);
        earlier.public_key.signed(&msg, &v)
    })
}

/// Whether `later` signed the acknowledgement of `earlier` it lists.
fn acknowledges(later: &ListedKey, earlier: &ListedKey) -> bool {
    later.succession.ack.is_some_and(|a| {
        let msg = ack_message(&earlier.public_key, later.first_hour);
        later.public_key.signed(&msg, &a)
    })
}

impl Trusted {
    /// The keys trusted, oldest first.
    pub fn keys(&self) -> &[ListedKey] {
        &self.list.keys()[self.first..=self.last]
    }

    /// The whole list they were found in.
    pub fn list(&self) -> &KeyList {
        &self.list
    }

    /// The trusted key to verify `hour` with.
    ///
    /// # Errors
    /// [`ChainError::OtherKey`] naming the key listed for the hour when it is not
    /// trusted (no trusted key vouched for it, or it acknowledged none), or saying no
    /// key is listed for it.
    pub fn key_for(&self, hour: Hour) -> Result<PublicKey, ChainError> {
        let other = |detail: String| ChainError::OtherKey {
            hour: hour.rfc3339(),
            detail,
        };
        let keys = self.list.keys();
        let Some(at) = keys.iter().position(|k| k.covers(hour)) else {
            return Err(other("no key is listed for this hour".into()));
        };
        if (self.first..=self.last).contains(&at) {
            return Ok(keys[at].public_key);
        }
        let how = if at > self.last {
            "no key you trust vouched for it"
        } else {
            "it is not acknowledged by the keys you trust"
        };
        Err(other(format!(
            "it is listed under key {}, which is refused: {how} (a key is trusted only \
             through a succession its predecessor signed)",
            keys[at].id()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(seed: u8) -> Signer {
        Signer::from_seed(&[seed; 32])
    }

    fn h(i: i64) -> Hour {
        Hour::from_index(i)
    }

    /// Key 1 over hours 0..=9, then key 2 from 10 (with `succession`), then maybe key 3
    /// from 20 (vouched by 2, acknowledging 2).
    fn list(succession: Succession, third: bool) -> KeyList {
        let mut keys = vec![
            ListedKey {
                public_key: signer(1).public_key(),
                first_hour: h(0),
                last_hour: Some(h(9)),
                succession: Succession::default(),
            },
            ListedKey {
                public_key: signer(2).public_key(),
                first_hour: h(10),
                last_hour: third.then(|| h(19)),
                succession,
            },
        ];
        if third {
            let three = signer(3).public_key();
            keys.push(ListedKey {
                public_key: three,
                first_hour: h(20),
                last_hour: None,
                succession: Succession {
                    vouch: Some(signer(2).vouch(&three, h(20))),
                    ack: Some(signer(3).acknowledge(&signer(2).public_key(), h(20))),
                },
            });
        }
        KeyList::new(keys).unwrap()
    }

    fn signed_succession() -> Succession {
        Succession {
            vouch: Some(signer(1).vouch(&signer(2).public_key(), h(10))),
            ack: Some(signer(2).acknowledge(&signer(1).public_key(), h(10))),
        }
    }

    #[test]
    fn a_signed_succession_is_trusted_from_either_key() {
        let list = list(signed_succession(), true);
        for anchor in [1, 2, 3] {
            let trusted = list.trusted_from(&signer(anchor).public_key()).unwrap();
            assert_eq!(trusted.keys().len(), 3, "from key {anchor}");
            assert_eq!(trusted.key_for(h(5)), Ok(signer(1).public_key()));
            assert_eq!(trusted.key_for(h(25)), Ok(signer(3).public_key()));
        }
    }

    #[test]
    fn a_key_listed_without_its_predecessors_vouch_is_refused_naming_it() {
        let forger = signer(9);
        // The attack: the trusted key retired early, a key of the mirror's own after it,
        // "vouched" by itself.
        let forged = KeyList::new(vec![
            ListedKey {
                public_key: signer(1).public_key(),
                first_hour: h(0),
                last_hour: Some(h(9)),
                succession: Succession::default(),
            },
            ListedKey {
                public_key: forger.public_key(),
                first_hour: h(10),
                last_hour: None,
                succession: Succession {
                    vouch: Some(forger.vouch(&forger.public_key(), h(10))),
                    ack: Some(forger.acknowledge(&signer(1).public_key(), h(10))),
                },
            },
        ])
        .unwrap();
        let trusted = forged.trusted_from(&signer(1).public_key()).unwrap();
        assert_eq!(trusted.key_for(h(3)), Ok(signer(1).public_key()));
        let refused = trusted.key_for(h(12)).unwrap_err().to_string();
        assert!(
            refused.contains(&forger.public_key().id().to_string()),
            "{refused}"
        );
        // A list that does not name the trusted key at all says nothing.
        assert!(forged.trusted_from(&signer(2).public_key()).is_err());
    }

    #[test]
    fn a_vouch_binds_the_first_hour_and_each_direction_needs_its_own_signature() {
        let moved = Succession {
            vouch: Some(signer(1).vouch(&signer(2).public_key(), h(11))),
            ack: Some(signer(2).acknowledge(&signer(1).public_key(), h(11))),
        };
        let trusted = list(moved, false)
            .trusted_from(&signer(1).public_key())
            .unwrap();
        assert!(
            trusted.key_for(h(10)).is_err(),
            "signed for another first hour"
        );
        let forward_only = Succession {
            ack: None,
            ..signed_succession()
        };
        let list = list(forward_only, false);
        let from_old = list.trusted_from(&signer(1).public_key()).unwrap();
        assert_eq!(from_old.key_for(h(10)), Ok(signer(2).public_key()));
        let from_new = list.trusted_from(&signer(2).public_key()).unwrap();
        assert!(from_new.key_for(h(5)).is_err(), "no acknowledgement");
        assert_eq!(from_new.key_for(h(15)), Ok(signer(2).public_key()));
    }

    #[test]
    fn a_checkpoint_verifies_only_as_made() {
        let key = signer(4);
        let checkpoint = Checkpoint {
            hour: h(100),
            header: [7; 32],
            made: 1_700_000_000,
            signature: key.checkpoint(1_700_000_000, h(100), &[7; 32]),
        };
        assert!(key.public_key().verify_checkpoint(&checkpoint).is_ok());
        for altered in [
            Checkpoint {
                made: 1_700_003_600,
                ..checkpoint
            },
            Checkpoint {
                hour: h(101),
                ..checkpoint
            },
            Checkpoint {
                header: [8; 32],
                ..checkpoint
            },
        ] {
            assert!(key.public_key().verify_checkpoint(&altered).is_err());
        }
        assert!(signer(5)
            .public_key()
            .verify_checkpoint(&checkpoint)
            .is_err());
    }

    #[test]
    fn an_open_version_verifies_only_for_its_hour_time_and_bytes() {
        let key = signer(4);
        let sig = key.sign_open(h(7), 1000, &[1; 32]);
        let public = key.public_key();
        assert!(public.verify_open(h(7), 1000, &[1; 32], &sig).is_ok());
        assert!(public.verify_open(h(8), 1000, &[1; 32], &sig).is_err());
        assert!(public.verify_open(h(7), 1001, &[1; 32], &sig).is_err());
        assert!(public.verify_open(h(7), 1000, &[2; 32], &sig).is_err());
        // Never valid as an hour's chain signature over the same bytes.
        assert!(public.verify("h", 7, &[1; 32], &sig).is_err());
    }
}
