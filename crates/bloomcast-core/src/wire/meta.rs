//! What a document or a raw response says about its filter besides the bits: the hour or
//! range it covers, whether it is complete, and how many IDs it holds.

/// What a document or a raw response says about its filter, besides the bits.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// The hour covered (RFC 3339); `None` for a union.
    pub hour: Option<String>,
    /// A union's first hour (RFC 3339); `None` for one hour.
    pub from: Option<String>,
    /// A union's last hour, inclusive (RFC 3339); `None` for one hour.
    pub to: Option<String>,
    /// `true` once the covered time is over and the content can never change.
    pub complete: bool,
    /// Distinct IDs recorded.
    pub count: u64,
}

impl Meta {
    /// Metadata of one hour's filter.
    pub fn hour(hour: String, complete: bool, count: u64) -> Meta {
        Meta {
            hour: Some(hour),
            from: None,
            to: None,
            complete,
            count,
        }
    }

    /// Metadata of a union over `from..=to`.
    pub fn range(from: String, to: String, complete: bool, count: u64) -> Meta {
        Meta {
            hour: None,
            from: Some(from),
            to: Some(to),
            complete,
            count,
        }
    }
}

/// A filter of three IDs and the metadata of a complete hour, for the wire tests.
#[cfg(test)]
pub(super) fn sample() -> (Meta, crate::bloom::Filter) {
    let mut f = crate::bloom::Filter::with_capacity(100, 0.01).unwrap();
    for id in ["a", "b", "c"] {
        f.insert(id);
    }
    (Meta::hour("2008-09-03T13:00:00Z".into(), true, 3), f)
}
