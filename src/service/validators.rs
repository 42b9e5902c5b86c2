//! What names a complete rendering (a sealed hour's, a past day's) when not its bytes:
//! a digest of its hours' chain digests, with the server's version and the form. Its
//! ETags are made from it, so a revalidation is answered from the hours' chain links,
//! without rendering or building anything (after a restart, on another node, or once
//! the rendering has left memory).

use super::{Result, Service, Target};
use crate::hour::Hour;
use crate::render::Repr;
use crate::store::StoreError;

/// What is named: one hour, or a union of hours (whose body differs from the hour's
/// even over one hour).
#[derive(Debug, Clone, Copy)]
pub(super) enum Named {
    Hour,
    Union,
}

/// The name of the `kind` rendering of `from..=to` in `repr` whose hours' filters have
/// `digests` (their chain links'), oldest first.
pub(super) fn name<'d>(
    kind: Named,
    repr: Repr,
    from: Hour,
    to: Hour,
    digests: impl IntoIterator<Item = &'d [u8; 32]>,
) -> [u8; 32] {
    let mut named = Vec::with_capacity(128);
    named.extend_from_slice(match kind {
        Named::Hour => b"bloomcast hour ",
        Named::Union => b"bloomcast union",
    });
    named.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
    named.extend_from_slice(repr.suffix().as_bytes());
    named.extend_from_slice(&from.index().to_be_bytes());
    named.extend_from_slice(&to.index().to_be_bytes());
    for digest in digests {
        named.extend_from_slice(digest);
    }
    crate::dcz::sha256(&named)
}

impl Service {
    /// The [`name`] of the `kind` rendering of `from..=to` in `repr`, from the hours'
    /// chain links; `None` when an hour of it has no link yet (then it is named by its
    /// bytes).
    ///
    /// # Errors
    /// Store failures.
    pub(super) async fn linked_name(
        &self,
        kind: Named,
        from: Hour,
        to: Hour,
        repr: Repr,
    ) -> Result<Option<[u8; 32]>> {
        let hours = usize::try_from(to.index() - from.index() + 1).unwrap_or(0);
        if hours == 0 {
            return Ok(None);
        }
        let links = match self.store.links(from, hours).await {
            Ok(links) => links,
            Err(StoreError::Corrupt(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let contiguous = links.len() == hours
            && links
                .iter()
                .zip(0..)
                .all(|(link, i)| link.hour.index() == from.index() + i);
        Ok(contiguous.then(|| name(kind, repr, from, to, links.iter().map(|l| &l.digest))))
    }

    /// What names the closed hour or complete day union `target` in `repr`, known
    /// without rendering or building it: `None` for anything else, or when it is named
    /// by its bytes.
    ///
    /// # Errors
    /// Store failures.
    pub async fn known_validator(&self, target: Target, repr: Repr) -> Result<Option<[u8; 32]>> {
        let now = self.current_hour();
        let (kind, from, to) = match target {
            Target::Hour(hour) if hour < now && self.check(hour, now).is_ok() => {
                (Named::Hour, hour, hour)
            }
            Target::Day(day) => match self.day_hours(day, now) {
                Ok((first, last)) if last < now => {
                    (Named::Union, first.max(self.earliest(now)), last)
                }
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        if let Some(r) = self.cache.get(&(from.index(), to.index(), repr)) {
            return Ok(r.validator);
        }
        self.linked_name(kind, from, to, repr).await
    }
}
