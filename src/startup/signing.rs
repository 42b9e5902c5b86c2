//! The key that signs the hour chain: read from `signing_key_file`, or generated on
//! first start into `<data_dir>/signing-key` (mode 0600, as the ingest token). The file
//! holds the 32-byte Ed25519 seed as 64 hex digits and a newline. `bloomcast rotate-key`
//! puts a new key in it ([`rotate`]); in cluster mode it also records the new key as the
//! cluster's current one ([`rotate_recorded`]), and a node whose key the cluster has not
//! recorded refuses to start ([`refuse_foreign_key`]).

use super::{open_store, write_private, StartError};
use crate::chain::{self, ListedKey, PublicKey, Signer};
use crate::clock::Clock;
use crate::config::Settings;
use crate::service::register_key;
use crate::store::Store;
use secrecy::ExposeSecret;
use std::path::{Path, PathBuf};

/// The generated key's file in the data directory.
pub const KEY_FILE: &str = "signing-key";

/// The service's signer, its public key logged; `None` in cluster mode without a
/// configured key (each node would otherwise sign with a key of its own), which
/// [`refuse_foreign_key`] then refuses or warns of.
///
/// # Errors
/// The key file cannot be read, written or is not a key.
pub fn signer(settings: &Settings) -> Result<Option<Signer>, StartError> {
    let configured = !settings.signing_key_file.as_os_str().is_empty();
    let cluster = !settings.database_url.expose_secret().is_empty();
    if !configured && cluster {
        return Ok(None);
    }
    let path = key_file(settings);
    let signer = match read_key(&path)? {
        Some(signer) => signer,
        None if !configured => {
            generate(&path).map_err(io(format!("cannot write {}", path.display())))?
        }
        None => {
            let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
            return Err(io(format!("cannot read {}", path.display()))(missing));
        }
    };
    tracing::info!(public_key = %signer.public_key(), file = %path.display(),
        "signing the hour chain; clients verify with --pubkey {}", signer.public_key());
    Ok(Some(signer))
}

/// The key file: `signing_key_file`, else the generated one in the data directory.
fn key_file(settings: &Settings) -> PathBuf {
    if settings.signing_key_file.as_os_str().is_empty() {
        settings.data_dir.join(KEY_FILE)
    } else {
        settings.signing_key_file.clone()
    }
}

/// The key `path` holds; `None` when there is no such file.
fn read_key(path: &Path) -> Result<Option<Signer>, StartError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text).map(Some).ok_or_else(|| StartError::Io {
            context: format!(
                "{} does not hold a signing key (64 hex digits, an Ed25519 seed); left as it is",
                path.display()
            ),
            source: std::io::Error::from(std::io::ErrorKind::InvalidData),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(format!("cannot read {}", path.display()))(e)),
    }
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> StartError {
    move |source| StartError::Io { context, source }
}

/// What [`rotate`] did.
#[derive(Debug)]
pub struct Rotated {
    /// The key file written.
    pub file: PathBuf,
    /// The key it held before, if any.
    pub old: Option<PublicKey>,
    /// The key it holds now.
    pub new: PublicKey,
}

/// Puts a new key in the service's key file (`signing_key_file`, else the generated
/// `<data_dir>/signing-key`): written beside it (mode 0600), then renamed over it, so the
/// file always holds a whole key. The server signs with it from its next start (see
/// `docs/PROTOCOL.md`, "Keys that rotate").
///
/// # Errors
/// A file that holds something other than a key (left as it is), or cannot be written.
pub fn rotate(settings: &Settings) -> Result<Rotated, StartError> {
    let file = key_file(settings);
    let old = read_key(&file)?.map(|signer| signer.public_key());
    let seed = draw_seed().map_err(io("cannot draw a new key".into()))?;
    let beside = file.with_extension("new");
    let _ = std::fs::remove_file(&beside);
    write_key(&beside, &seed)
        .and_then(|()| std::fs::rename(&beside, &file))
        .map_err(io(format!("cannot write {}", file.display())))?;
    Ok(Rotated {
        file,
        old,
        new: Signer::from_seed(&seed).public_key(),
    })
}

/// Cluster mode: refuses `signer` when the cluster's registry has a current key and
/// `signer`'s key is not recorded at all (a retired key is recorded: that node starts
/// and signs no new hour), and refuses a node with no key at all (no
/// `signing_key_file`) once the cluster has one: it would publish the hours it seals
/// unsigned, half a fleet's hours failing every client that verifies. No key recorded
/// yet: this node's is recorded, unless another node starting at the same moment
/// records its own first (then this one is refused), or the cluster has sealed hours
/// already (unsigned, by nodes that may still be running without a key: signing it is
/// done on purpose, with `bloomcast rotate-key` and a restart of every node).
///
/// # Errors
/// [`StartError::ForeignKey`], naming both key ids; [`StartError::NoKey`], naming the
/// cluster's; [`StartError::UnsignedCluster`]; store failures.
pub async fn refuse_foreign_key(
    store: &dyn Store,
    signer: Option<&Signer>,
) -> Result<(), StartError> {
    let Some(signer) = signer else {
        let keys = store.signing_keys().await?;
        if let Some(current) = keys.iter().find(|k| k.last_hour.is_none()) {
            return Err(StartError::NoKey {
                cluster: current.id(),
            });
        }
        tracing::warn!("cluster mode without signing_key_file, and no key recorded for the cluster: hours are published unsigned (`bloomcast rotate-key` makes the cluster's key; then give every node its file as signing_key_file)");
        return Ok(());
    };
    let ours = signer.public_key();
    let mut keys = store.signing_keys().await?;
    if keys.is_empty() {
        // Hours sealed and no key: nodes without a key file are serving this cluster,
        // and would go on sealing unsigned hours beside this node's signed ones.
        if let Some(sealed) = store.last_sealed().await? {
            return Err(StartError::UnsignedCluster {
                ours: ours.id(),
                sealed_through: sealed,
            });
        }
        let genesis = store.genesis().await?;
        let list = register_key(store, genesis, signer, None, false).await?;
        keys = list.keys().to_vec();
    }
    if keys.iter().any(|k| k.public_key == ours) {
        return Ok(());
    }
    match keys.iter().find(|k| k.last_hour.is_none()) {
        Some(current) => Err(StartError::ForeignKey {
            ours: ours.id(),
            cluster: current.id(),
        }),
        None => Ok(()),
    }
}

/// Records the key in the service's key file as the current key (see [`register_key`]):
/// it signs the hours after the newest sealed one, and the key it replaces signs none of
/// them. The file holds the new key alone, so the succession carries its acknowledgement
/// of the key it replaces but no vouch from that key: clients trusting only the old key
/// refuse its hours ([`rotate_recorded`] signs both). What the registry then says of it.
///
/// # Errors
/// No key file, or one that is not a key; the store cannot be opened or written.
pub async fn record_key(settings: &Settings, clock: &dyn Clock) -> Result<ListedKey, StartError> {
    let path = key_file(settings);
    let Some(signer) = read_key(&path)? else {
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        return Err(io(format!("cannot read {}", path.display()))(missing));
    };
    Ok(record(settings, clock, &signer, None).await?.listed)
}

/// Registers `signer`'s key as the current one, vouched for by `retiring` when given.
async fn record(
    settings: &Settings,
    clock: &dyn Clock,
    signer: &Signer,
    retiring: Option<&Signer>,
) -> Result<Recorded, StartError> {
    let store = open_store(settings, clock).await?;
    let genesis = store.genesis().await?;
    let list = register_key(store.as_ref(), genesis, signer, retiring, true).await?;
    let ours = signer.public_key();
    let at = list.keys().iter().position(|k| k.public_key == ours);
    let at = at.expect("register_key returns a registry that holds the key");
    Ok(Recorded {
        listed: list.keys()[at],
        previous: at.checked_sub(1).map(|i| list.keys()[i].public_key),
    })
}

/// What the registry says of a key [`rotate_recorded`] recorded.
#[derive(Debug, Clone, Copy)]
pub struct Recorded {
    /// The key as listed: its first hour and its succession's signatures.
    pub listed: ListedKey,
    /// The key listed before it (the one it retires), if any. Without a vouch from it
    /// (the key file did not hold it), clients given that key refuse the new key's hours.
    pub previous: Option<PublicKey>,
}

/// `bloomcast rotate-key`: a new key, recorded in the store as the current key from the
/// hour after the newest sealed one with its succession signed both ways (the key in the
/// file vouches for it, it acknowledges that key: docs/PROTOCOL.md section 11, "Trust"),
/// then put in the key file (written beside it, renamed over it). Clients that trust the
/// old key accept the new one through the vouch. The server signs with it from its next
/// start; hours from its first hour on stay unsigned on a node still on the old key.
///
/// # Errors
/// As [`rotate`]; the store cannot be opened or written (nothing recorded, the file
/// left as it was).
pub async fn rotate_recorded(
    settings: &Settings,
    clock: &dyn Clock,
) -> Result<(Rotated, Recorded), StartError> {
    let file = key_file(settings);
    let old = read_key(&file)?;
    let seed = draw_seed().map_err(io("cannot draw a new key".into()))?;
    let new = Signer::from_seed(&seed);
    // The new key is on disk before the store names it: a registry never lists a key
    // whose secret was lost.
    let beside = file.with_extension("new");
    let _ = std::fs::remove_file(&beside);
    write_key(&beside, &seed).map_err(io(format!("cannot write {}", beside.display())))?;
    let recorded = match record(settings, clock, &new, old.as_ref()).await {
        Ok(recorded) => recorded,
        Err(e) => {
            let _ = std::fs::remove_file(&beside);
            return Err(e);
        }
    };
    std::fs::rename(&beside, &file).map_err(io(format!(
        "the new key is recorded but cannot be moved from {} to {}: move it yourself",
        beside.display(),
        file.display()
    )))?;
    let rotated = Rotated {
        file,
        old: old.map(|s| s.public_key()),
        new: new.public_key(),
    };
    Ok((rotated, recorded))
}

fn parse(text: &str) -> Option<Signer> {
    chain::parse_hex::<32>(text.trim()).map(|seed| Signer::from_seed(&seed))
}

fn generate(path: &Path) -> std::io::Result<Signer> {
    let seed = draw_seed()?;
    write_key(path, &seed)?;
    tracing::warn!(file = %path.display(), "no signing key configured (signing_key_file): generated one and saved it in this file");
    Ok(Signer::from_seed(&seed))
}

fn draw_seed() -> std::io::Result<[u8; 32]> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(seed)
}

/// Writes `seed` as a new key file at `path` (mode 0600), its directory made if needed.
fn write_key(path: &Path, seed: &[u8; 32]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    write_private(path, &chain::hex(seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotating_puts_a_new_private_key_in_the_file_and_refuses_one_that_is_not_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            data_dir: dir.path().to_owned(),
            ..Settings::default()
        };
        let first = rotate(&settings).unwrap();
        assert_eq!(first.old, None);
        assert_eq!(first.file, dir.path().join(KEY_FILE));
        let second = rotate(&settings).unwrap();
        assert_eq!(second.old, Some(first.new));
        assert_ne!(second.new, first.new);
        let text = std::fs::read_to_string(&second.file).unwrap();
        assert_eq!(parse(&text).unwrap().public_key(), second.new);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&second.file)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&second.file, "not a key").unwrap();
        assert!(rotate(&settings).is_err());
        assert_eq!(std::fs::read_to_string(&second.file).unwrap(), "not a key");
    }

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
