//! The key that signs the hour chain: read from `signing_key_file`, or generated on
//! first start into `<data_dir>/signing-key` (mode 0600, as the ingest token). The file
//! holds the 32-byte Ed25519 seed as 64 hex digits and a newline.

use super::{write_private, StartError};
use crate::chain::{self, Signer};
use crate::config::Settings;
use secrecy::ExposeSecret;
use std::path::Path;

/// The generated key's file in the data directory.
pub const KEY_FILE: &str = "signing-key";

/// The service's signer, its public key logged; `None` in cluster mode without a
/// configured key (each node would otherwise sign with a key of its own).
///
/// # Errors
/// The key file cannot be read, written or is not a key.
pub fn signer(settings: &Settings) -> Result<Option<Signer>, StartError> {
    let configured = !settings.signing_key_file.as_os_str().is_empty();
    let cluster = !settings.database_url.expose_secret().is_empty();
    if !configured && cluster {
        tracing::warn!("cluster mode without signing_key_file: hours are published unsigned (set the same key file on every node to sign them)");
        return Ok(None);
    }
    let path = if configured {
        settings.signing_key_file.clone()
    } else {
        settings.data_dir.join(KEY_FILE)
    };
    let io = |context: String| move |source| StartError::Io { context, source };
    let signer = match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text).ok_or_else(|| StartError::Io {
            context: format!(
                "{} does not hold a signing key (64 hex digits, an Ed25519 seed)",
                path.display()
            ),
            source: std::io::Error::from(std::io::ErrorKind::InvalidData),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !configured => {
            generate(&path).map_err(io(format!("cannot write {}", path.display())))?
        }
        Err(e) => return Err(io(format!("cannot read {}", path.display()))(e)),
    };
    tracing::info!(public_key = %signer.public_key(), file = %path.display(),
        "signing the hour chain; clients verify with --pubkey {}", signer.public_key());
    Ok(Some(signer))
}

fn parse(text: &str) -> Option<Signer> {
    chain::parse_hex::<32>(text.trim()).map(|seed| Signer::from_seed(&seed))
}

fn generate(path: &Path) -> std::io::Result<Signer> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| std::io::Error::other(e.to_string()))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    write_private(path, &chain::hex(&seed))?;
    tracing::warn!(file = %path.display(), "no signing key configured (signing_key_file): generated one and saved it in this file");
    Ok(Signer::from_seed(&seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_its_seed_in_hex_of_either_case_and_nothing_looser() {
        let seed = chain::hex(&[7; 32]);
        let key = Signer::from_seed(&[7; 32]).public_key();
        assert_eq!(parse(&format!("{seed}\n")).unwrap().public_key(), key);
        assert_eq!(parse(&seed.to_uppercase()).unwrap().public_key(), key);
        for bad in [
            format!("+7{}", &seed[2..]),
            format!("0x{}", &seed[2..]),
            seed[1..].to_owned(),
            format!("{seed}7"),
        ] {
            assert!(parse(&bad).is_none(), "{bad}");
        }
    }
}
