//! What an answer covers (PROTOCOL.md sections 10, 11 and 13): the hours actually read,
//! those that could not be verified, and whether the source is shown current.
//!
//! A source that stopped updating (a stale mirror) or that hides its newest hours (a
//! withholding one) would otherwise make a client answer "nothing changed" for hours it
//! never saw. So an answer names the first and last hours it read, and says when the
//! newest hour its source offers starts more than the publication lag bound
//! ([`LAG_HOURS`]) before this machine's current hour; with the publisher's key, a signed
//! checkpoint of the newest sealed hour also tells a withholding or stale copy from a
//! quiet publisher. Such an answer is returned as [`ClientError::Stale`] unless the
//! client accepts it ([`crate::ClientBuilder::accept_stale`]).
//!
//! The open hour: each version a signed service serves carries `Bloom-Open-Signature:
//! <128 hex>; keyid="<16 hex>"; made=<Unix seconds>`; a client with a key verifies it and
//! refuses one made further in the past than its freshness bound (a replay of an older
//! version, which would hide the changes since); one served unsigned is used, and listed
//! in [`Coverage::unverified`].

use super::{Changed, Client, ClientError, Index, Result};
use crate::chain::{self, ChainError, Checkpoint, KeyId, SignatureField};
use crate::hour::Hour;
use serde::Deserialize;
use std::time::Duration;

/// The publication lag bound: a source whose newest hour starts more than this many
/// hours before this machine's current hour is stale.
pub const LAG_HOURS: i64 = 2;

/// How old a version of the open hour may be, by default, for a client with a key.
pub const DEFAULT_FRESHNESS: Duration = Duration::from_secs(600);

/// What an answer covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    /// The first hour read (`None` when none was).
    pub first: Option<Hour>,
    /// The last hour read: hours after it may have changed unseen.
    pub last: Option<Hour>,
    /// With a key, the hours used without a verified signature (an open hour served
    /// unsigned), oldest first; `None` without a key (nothing was verified).
    pub unverified: Option<Vec<Hour>>,
    /// Why the source is not shown current, one line each naming the hour (empty when it
    /// is).
    pub stale: Vec<String>,
}

/// An answer to [`Client::changed_since_covering`]: the changes and what they cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub changes: Vec<Changed>,
    pub coverage: Coverage,
}

/// `GET /checkpoint` as sent.
#[derive(Debug, Deserialize)]
struct CheckpointDoc {
    hour: String,
    header: String,
    made: i64,
    signature: String,
    #[serde(default)]
    key_id: Option<String>,
}

/// Now, in Unix seconds, by this machine's clock.
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The hour holding `now` (Unix seconds).
fn hour_at(now: i64) -> Hour {
    Hour::from_index(now.div_euclid(3600))
}

/// Why `source` is stale, or `None`: `newest` is the newest hour it offers (the index's
/// `current`: a server's open hour, a static mirror's newest mirrored hour, whose next
/// hour is the one it offers next), compared with `now`'s hour.
pub fn lag_reason(source: &str, newest: Hour, static_layout: bool, now: i64) -> Option<String> {
    let offered = if static_layout { newest.next() } else { newest };
    let here = hour_at(now);
    let behind = here.index() - offered.index();
    if behind <= LAG_HOURS {
        return None;
    }
    let what = if static_layout { "mirrored" } else { "served" };
    Some(format!(
        "{source} is stale: the newest hour it offers is {} ({what}), {behind} hours before \
         this machine's current hour {}, past the publication lag bound of {LAG_HOURS} hours: \
         what changed after it is not in this answer",
        newest.rfc3339(),
        here.rfc3339()
    ))
}

/// Why a verified checkpoint shows `source` withholding or stale: its hour is newer than
/// `newest_sealed`, the newest sealed hour the source offers, or it was made more than
/// the lag bound before `now`.
pub fn checkpoint_reasons(
    source: &str,
    checkpoint: &Checkpoint,
    newest_sealed: Option<Hour>,
    now: i64,
) -> Vec<String> {
    let mut reasons = Vec::new();
    if newest_sealed.is_none_or(|sealed| checkpoint.hour > sealed) {
        let offered = match newest_sealed {
            None => "no sealed hour".to_owned(),
            Some(h) => format!("sealed hours only through {}", h.rfc3339()),
        };
        reasons.push(format!(
            "{source} withholds hours: the publisher's signed checkpoint names {} sealed, but \
             it offers {offered}",
            checkpoint.hour.rfc3339()
        ));
    }
    let age = now - checkpoint.made;
    if age > LAG_HOURS * 3600 {
        reasons.push(format!(
            "{source} is stale: the publisher's checkpoint it serves was made {} minutes ago \
             (made={}), past the publication lag bound of {LAG_HOURS} hours: hours sealed \
             since may be missing",
            age / 60,
            checkpoint.made
        ));
    }
    reasons
}

/// Why a source without a checkpoint is not shown current, with a key: nothing signed
/// says its newest hour is the publisher's (for a server, a fresh signed version of its
/// open hour would).
pub fn no_checkpoint_reason(source: &str, newest: Hour, static_layout: bool) -> String {
    let (what, verb) = if static_layout {
        ("", "sealed")
    } else {
        (", and no fresh signed version of its open hour", "serves")
    };
    format!(
        "{source} serves no signed checkpoint{what}: nothing shows that {} is the newest hour \
         the publisher {verb} (a stale or withholding copy cannot be told from a quiet \
         publisher)",
        newest.rfc3339()
    )
}

/// A `Bloom-Open-Signature` value: the signature, the key it names, and `made`.
pub(crate) fn parse_open_signature(value: &str) -> Option<(SignatureField, Option<i64>)> {
    let field = SignatureField::parse(value)?;
    let made = value.split(';').skip(1).find_map(|param| {
        let (name, v) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("made") {
            return None;
        }
        v.trim().trim_matches('"').parse::<i64>().ok()
    });
    Some((field, made))
}

impl Client {
    /// Why this source, whose index is `index`, is not shown current: its newest hour
    /// past the lag bound; with a key, a checkpoint newer than its hours or too old, or
    /// none where no verified version of its open hour shows it current.
    pub(crate) async fn staleness(&self, index: &Index) -> Result<Vec<String>> {
        let newest = index.current_hour()?;
        let static_layout = index.static_layout;
        let now = unix_now();
        let mut reasons: Vec<String> = lag_reason(&self.base, newest, static_layout, now)
            .into_iter()
            .collect();
        if self.keys(None).await?.is_none() {
            return Ok(reasons);
        }
        match self.checkpoint(static_layout).await? {
            Some(checkpoint) => {
                let sealed = if static_layout {
                    Some(newest)
                } else {
                    Some(newest.prev())
                };
                reasons.extend(checkpoint_reasons(&self.base, &checkpoint, sealed, now));
            }
            None => {
                let open_verified = !static_layout && self.open_verified(newest);
                if !open_verified {
                    reasons.push(no_checkpoint_reason(&self.base, newest, static_layout));
                }
            }
        }
        Ok(reasons)
    }

    /// The publisher's checkpoint as this source serves it (`GET /checkpoint`, a static
    /// mirror's `/checkpoint.json`), verified with the key listed for its hour (and its
    /// header against the chain's when this client verified that hour); `None` when it
    /// serves none (404).
    ///
    /// # Errors
    /// [`ClientError::Unverified`] naming the checkpoint's hour when it does not verify;
    /// transport errors and other error statuses.
    pub async fn checkpoint(&self, static_layout: bool) -> Result<Option<Checkpoint>> {
        let path = if static_layout {
            "/checkpoint.json"
        } else {
            "/checkpoint"
        };
        let response = match super::fetch::check(self.send(self.get(path)).await?).await {
            Ok(response) => response,
            Err(ClientError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let body = self.body(response, None).await?;
        let doc: CheckpointDoc = serde_json::from_slice(&body).map_err(|e| {
            super::verify::malformed("the checkpoint", format!("{path} is malformed: {e}"))
        })?;
        let hour = Hour::parse_flexible(&doc.hour)
            .map_err(|_| super::verify::malformed(&doc.hour, "the checkpoint names no hour"))?;
        let name = format!("{} (checkpoint)", hour.rfc3339());
        let checkpoint = Checkpoint {
            hour,
            header: chain::parse_hex::<32>(&doc.header).ok_or_else(|| {
                super::verify::malformed(&name, "its header is not 32 bytes of hex")
            })?,
            made: doc.made,
            signature: chain::parse_hex::<64>(&doc.signature).ok_or_else(|| {
                super::verify::malformed(&name, "its signature is not 64 bytes of hex")
            })?,
        };
        let key_id = match doc.key_id.as_deref() {
            None => None,
            Some(id) => Some(id.parse::<KeyId>().map_err(|_| {
                super::verify::malformed(&name, format!("key_id {id:?} is not 16 hex digits"))
            })?),
        };
        let keys = self.keys(Some(hour)).await?.ok_or_else(|| {
            super::verify::malformed(&name, "the source no longer publishes its keys")
        })?;
        let key = keys.key_for(hour, key_id)?;
        key.verify_checkpoint(&checkpoint)?;
        let known = crate::sync::lock(&self.verified)
            .get(&hour.index())
            .map(|(_, header)| *header);
        if known.is_some_and(|header| header != checkpoint.header) {
            return Err(ClientError::Unverified(ChainError::Malformed {
                hour: name,
                detail: "the checkpoint's header is not the chain's for that hour".into(),
            }));
        }
        Ok(Some(checkpoint))
    }

    /// Whether a version of the open `hour` was verified, within the freshness bound.
    fn open_verified(&self, hour: Hour) -> bool {
        let made = crate::sync::lock(&self.open_made)
            .get(&hour.index())
            .copied();
        made.is_some_and(|made| unix_now() - made <= self.freshness_secs())
    }

    pub(crate) fn freshness_secs(&self) -> i64 {
        i64::try_from(self.freshness.as_secs()).unwrap_or(i64::MAX)
    }

    /// Verifies a version of the open `hour` whose filter's bytes hash to `digest`, by
    /// its `Bloom-Open-Signature` (`value`) and the freshness bound; without a signature
    /// it is listed unverified and used.
    pub(crate) fn check_open(
        &self,
        keys: &super::keys::Keys,
        hour: Hour,
        digest: &chain::Hash,
        value: Option<&str>,
    ) -> Result<()> {
        let name = format!("{} (open)", hour.rfc3339());
        let Some(value) = value else {
            crate::sync::lock(&self.unverified).insert(hour.index());
            crate::sync::lock(&self.open_made).remove(&hour.index());
            return Ok(());
        };
        let (field, made) = parse_open_signature(value).ok_or_else(|| {
            super::verify::malformed(
                &name,
                "its Bloom-Open-Signature is not 128 hex digits with keyid=\"16 hex digits\" and made=SECONDS",
            )
        })?;
        let made = made.ok_or_else(|| {
            super::verify::malformed(&name, "its Bloom-Open-Signature says no made=")
        })?;
        let key = keys.key_for(hour, field.key_id)?;
        key.verify_open(hour, made, digest, &field.signature)?;
        let age = unix_now() - made;
        let bound = self.freshness_secs();
        if age > bound {
            return Err(super::verify::malformed(
                &name,
                format!(
                    "this version was made {age} s ago (made={made}), past the freshness bound \
                     of {bound} s: an older version replayed would hide the changes since"
                ),
            ));
        }
        crate::sync::lock(&self.unverified).remove(&hour.index());
        crate::sync::lock(&self.open_made).insert(hour.index(), made);
        Ok(())
    }

    /// Whether the version of the open hour at `hour` held was verified with a `made`
    /// past the freshness bound: revalidating it would keep that signature (a 304
    /// carries none), so it is fetched whole, with the newest signature.
    pub(crate) fn open_too_old(&self, hour: Hour) -> bool {
        let made = crate::sync::lock(&self.open_made)
            .get(&hour.index())
            .copied();
        made.is_some_and(|made| unix_now() - made > self.freshness_secs())
    }

    /// The hours from `first` through `last` used unverified (with a key), oldest first.
    pub fn unverified_hours(&self, first: Hour, last: Hour) -> Vec<Hour> {
        let held = crate::sync::lock(&self.unverified);
        held.range(first.index()..=last.index())
            .map(|&i| Hour::from_index(i))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::Signer;

    #[test]
    fn a_source_more_than_two_hours_behind_is_stale_naming_its_newest_hour() {
        let now = 1_000 * 3600 + 1800;
        let newest = Hour::from_index(997);
        let reason = lag_reason("m", newest, false, now).unwrap();
        assert!(reason.contains(&newest.rfc3339()), "{reason}");
        assert!(lag_reason("m", Hour::from_index(998), false, now).is_none());
        // A static mirror's newest hour is sealed: the next is the one it offers next.
        assert!(lag_reason("m", newest, true, now).is_none());
        assert!(lag_reason("m", Hour::from_index(996), true, now).is_some());
    }

    #[test]
    fn a_checkpoint_names_a_withheld_hour_and_its_own_age() {
        let key = Signer::from_seed(&[3; 32]);
        let now = 2_000 * 3600;
        let checkpoint = Checkpoint {
            hour: Hour::from_index(1999),
            header: [1; 32],
            made: now - 60,
            signature: key.checkpoint(now - 60, Hour::from_index(1999), &[1; 32]),
        };
        assert!(checkpoint_reasons("m", &checkpoint, Some(Hour::from_index(1999)), now).is_empty());
        let withheld = checkpoint_reasons("m", &checkpoint, Some(Hour::from_index(1990)), now);
        assert_eq!(withheld.len(), 1);
        assert!(
            withheld[0].contains("withholds") && withheld[0].contains(&checkpoint.hour.rfc3339())
        );
        let old = Checkpoint {
            made: now - 3 * 3600,
            ..checkpoint
        };
        let reasons = checkpoint_reasons("m", &old, Some(old.hour), now);
        assert!(
            reasons.len() == 1 && reasons[0].contains("180 minutes ago"),
            "{reasons:?}"
        );
    }

    #[test]
    fn an_open_signature_field_gives_its_made() {
        let sig = chain::hex(&[7; 64]);
        let (field, made) = parse_open_signature(&format!(
            "{sig}; keyid=\"0011223344556677\"; made=1220450460"
        ))
        .unwrap();
        assert_eq!(made, Some(1_220_450_460));
        assert_eq!(field.key_id.unwrap().to_string(), "0011223344556677");
        assert_eq!(parse_open_signature(&sig).unwrap().1, None);
        assert!(parse_open_signature("nothex; made=1").is_none());
    }
}
