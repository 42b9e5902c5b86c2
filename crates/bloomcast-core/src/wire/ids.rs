//! The rule every ingested ID follows, shared by the server (which enforces it) and the
//! clients (which check it before sending).

/// The longest ID ingest accepts, in bytes of UTF-8.
pub const MAX_ID_BYTES: usize = 1024;

/// Why an ID cannot be ingested; displayed after where the ID was ("line 3 is ...").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The empty string.
    #[error("is an empty ID")]
    Empty,
    /// Longer than [`MAX_ID_BYTES`] bytes.
    #[error("is {0} bytes; IDs are at most {MAX_ID_BYTES} bytes")]
    TooLong(usize),
}

/// The rule every ingested ID follows: not empty, at most [`MAX_ID_BYTES`] bytes. The
/// server enforces it; clients check it before sending.
///
/// # Errors
/// The [`IdError`] the ID breaks.
pub fn check_id(id: &str) -> Result<(), IdError> {
    match id.len() {
        0 => Err(IdError::Empty),
        n if n > MAX_ID_BYTES => Err(IdError::TooLong(n)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_one_to_max_id_bytes_long() {
        assert_eq!(check_id(""), Err(IdError::Empty));
        assert_eq!(check_id(&"é".repeat(MAX_ID_BYTES / 2)), Ok(()));
        let long = "x".repeat(MAX_ID_BYTES + 1);
        assert_eq!(check_id(&long), Err(IdError::TooLong(MAX_ID_BYTES + 1)));
        assert_eq!(
            format!("line 2 {}", check_id(&long).unwrap_err()),
            "line 2 is 1025 bytes; IDs are at most 1024 bytes"
        );
    }
}
