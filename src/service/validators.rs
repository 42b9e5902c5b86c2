//! What names a complete rendering (a sealed hour's, a past day's) when not its bytes:
//! a digest of its hours' chain digests, with the server's version and the form. Its
//! ETags are made from it, so a revalidation is answered from the hours' chain links,
//! without rendering or building anything (after a restart, on another node, or once
//! the rendering has left memory).

use super::parts::{Forms, Hours};
use super::{Result, Service, Target};
use crate::hour::Hour;
use crate::render::{Compact, Repr};
use crate::store::StoreError;

/// What is named: one hour, or a union of hours (whose body differs from the hour's
/// even over one hour).
#[derive(Debug, Clone, Copy)]
pub(super) enum Named {
    Hour,
    Union,
}

/// The form a name is for: a Bloom representation, or a compact form at `r` bits.
#[derive(Debug, Clone, Copy)]
pub(super) enum Form {
    Bloom(Repr),
    Compact(Compact, u32),
}

impl From<Repr> for Form {
    fn from(repr: Repr) -> Form {
        Form::Bloom(repr)
    }
}

impl Form {
    /// The form's part of a name: a Bloom representation's suffix (as names have always
    /// been made), a compact form's after a `#` no suffix has.
    fn tag(self) -> String {
        match self {
            Form::Bloom(repr) => repr.suffix().to_owned(),
            Form::Compact(Compact::Ribbon, r) => format!("#ribbon r={r}"),
            Form::Compact(Compact::RibbonJson, r) => format!("#ribbon.json r={r}"),
            Form::Compact(Compact::Ribbon2, grade) => format!("#ribbon2 grade={grade}"),
            Form::Compact(Compact::Pages, grade) => format!("#pages grade={grade}"),
        }
    }
}

/// The name of the `kind` rendering of `from..=to` in `form` whose hours' filters have
/// `digests` (their chain links'), oldest first.
pub(super) fn name<'d>(
    kind: Named,
    form: impl Into<Form>,
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
    named.extend_from_slice(form.into().tag().as_bytes());
    named.extend_from_slice(&from.index().to_be_bytes());
    named.extend_from_slice(&to.index().to_be_bytes());
    for digest in digests {
        named.extend_from_slice(digest);
    }
    crate::dcz::sha256(&named)
}

impl Service {
    /// The [`name`] of the `kind` rendering of `from..=to` in `form`, from the hours'
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
        form: impl Into<Form>,
    ) -> Result<Option<[u8; 32]>> {
        let form = form.into();
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
        Ok(contiguous.then(|| name(kind, form, from, to, links.iter().map(|l| &l.digest))))
    }

    /// [`Service::linked_name`] for a complete rendering just made: `None` (named by its
    /// bytes) when the links cannot be read now, which is logged.
    pub(super) async fn name_when_linked(
        &self,
        kind: Named,
        from: Hour,
        to: Hour,
        form: impl Into<Form>,
    ) -> Option<[u8; 32]> {
        match self.linked_name(kind, from, to, form).await {
            Ok(validator) => validator,
            Err(e) => {
                tracing::warn!(error = %e, %from, %to, "cannot read the hours' links; the rendering is named by its bytes");
                None
            }
        }
    }

    /// The hours of `target` when it is a closed hour or a past day (what a name can be
    /// known for without its bytes).
    fn complete_range(&self, target: Target) -> Option<(Named, Hour, Hour)> {
        let now = self.current_hour();
        match target {
            Target::Hour(hour) if hour < now && self.check(hour, now).is_ok() => {
                Some((Named::Hour, hour, hour))
            }
            Target::Day(day) => match self.day_hours(day, now) {
                Ok((first, last)) if last < now => {
                    Some((Named::Union, first.max(self.earliest(now)), last))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// What a compact rendering of `from..=to` is named as: one hour's body is the same
/// whether it was asked as the hour or as a day of one retained hour.
pub(super) fn compact_kind(from: Hour, to: Hour) -> Named {
    if from == to {
        Named::Hour
    } else {
        Named::Union
    }
}

impl Hours<'_> {
    /// What names the closed hour or complete day union `target` in `repr`, known
    /// without rendering or building it: `None` for anything else, or when it is named
    /// by its bytes.
    ///
    /// # Errors
    /// Store failures.
    pub async fn known_validator(&self, target: Target, repr: Repr) -> Result<Option<[u8; 32]>> {
        let Some((kind, from, to)) = self.complete_range(target) else {
            return Ok(None);
        };
        if let Some(r) = self.cache.get(&(from.index(), to.index(), repr)) {
            return Ok(r.validator);
        }
        self.linked_name(kind, from, to, repr).await
    }
}

impl Forms<'_> {
    /// As [`Hours::known_validator`], for the compact `form` at `r` bits.
    ///
    /// # Errors
    /// Store failures.
    pub async fn known_compact_validator(
        &self,
        target: Target,
        r: u32,
        form: Compact,
    ) -> Result<Option<[u8; 32]>> {
        let Some((_, from, to)) = self.complete_range(target) else {
            return Ok(None);
        };
        if let Some(r) = self.cache.get_compact(&(from.index(), to.index(), r, form)) {
            return Ok(r.validator);
        }
        self.linked_name(compact_kind(from, to), from, to, Form::Compact(form, r))
            .await
    }
}
