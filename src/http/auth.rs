//! Bearer-token authentication for ingest, compared in constant time.

use super::error::{ApiError, Result};
use axum::http::{header, HeaderMap};
use sha1::{Digest, Sha1};
use subtle::{Choice, ConstantTimeEq};

/// The accepted ingest tokens, kept only as digests.
#[derive(Clone)]
pub struct Auth {
    digests: Vec<[u8; 20]>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Auth(<{} tokens>)", self.digests.len())
    }
}

impl Auth {
    pub fn new(tokens: &[String]) -> Auth {
        Auth {
            digests: tokens.iter().map(|t| digest(t.as_bytes())).collect(),
        }
    }

    /// Accepts `Authorization: Bearer <token>` for any configured token.
    ///
    /// Both sides are hashed first, so the comparison takes the same time whatever the
    /// length or content of the presented token, and every configured token is compared
    /// (`subtle`'s `ct_eq`, its results combined as a `Choice` without a branch).
    ///
    /// # Errors
    /// [`ApiError::Unauthorized`] when missing, malformed or unknown.
    pub fn check(&self, headers: &HeaderMap) -> Result<()> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| digest(token.trim().as_bytes()))
            .ok_or(ApiError::Unauthorized)?;
        let mut ok = Choice::from(0);
        for known in &self.digests {
            ok |= known[..].ct_eq(&presented[..]);
        }
        if bool::from(ok) {
            Ok(())
        } else {
            Err(ApiError::Unauthorized)
        }
    }
}

fn digest(bytes: &[u8]) -> [u8; 20] {
    Sha1::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn accepts_any_configured_token_with_any_scheme_case() {
        let auth = Auth::new(&["first-token".into(), "second-token".into()]);
        assert!(auth.check(&with_auth("Bearer first-token")).is_ok());
        assert!(auth.check(&with_auth("bearer second-token")).is_ok());
    }

    #[test]
    fn rejects_missing_wrong_and_malformed_credentials() {
        let auth = Auth::new(&["first-token".into()]);
        for bad in [
            "Bearer wrong-token",
            "Basic first-token",
            "first-token",
            "Bearer ",
            "Bearer first-token2",
        ] {
            assert!(
                matches!(auth.check(&with_auth(bad)), Err(ApiError::Unauthorized)),
                "{bad}"
            );
        }
        assert!(matches!(
            auth.check(&HeaderMap::new()),
            Err(ApiError::Unauthorized)
        ));
    }
}
