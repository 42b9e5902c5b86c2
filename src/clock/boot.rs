//! This machine's boot: which boot it is and how long since it began, read from the
//! kernel. A start compares them with what the last heartbeat recorded to tell how long
//! the server was really down (`record`), which no wall clock reading can tell.

use sha1::{Digest, Sha1};
use std::sync::OnceLock;
use std::time::Duration;

/// A reading of the machine's boot: which boot, and the time since it began (suspend
/// included). Two readings with the same `id` are on one timeline: their difference in
/// `since_boot` is the real time between them, however the wall clock was stepped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootReading {
    /// The boot's identity, hashed to a number a store keeps as an integer; never 0
    /// (which a record uses for "unknown").
    pub id: i64,
    pub since_boot: Duration,
}

/// A boot identity's text (`/proc/sys/kernel/random/boot_id`) as the number recorded:
/// the first 8 bytes of its SHA-1, a hash that stays the same across builds and
/// versions (the standard library's does not promise to).
pub fn boot_id_of(text: &str) -> i64 {
    let digest = Sha1::digest(text.trim().as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    match i64::from_be_bytes(first) {
        0 => 1,
        id => id,
    }
}

/// This machine's boot now, where the kernel tells it (Linux); `None` elsewhere or when
/// it cannot be read.
pub fn system() -> Option<BootReading> {
    static ID: OnceLock<Option<i64>> = OnceLock::new();
    let id = (*ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|text| boot_id_of(&text))
    }))?;
    Some(BootReading {
        id,
        since_boot: since_boot()?,
    })
}

/// `CLOCK_BOOTTIME`: monotonic, counting time suspended, never stepped.
#[cfg(target_os = "linux")]
fn since_boot() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through the pointer, which points to
    // a live, writable one.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } == 0;
    if !ok {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u32::try_from(ts.tv_nsec).ok()?;
    Some(Duration::new(secs, nanos))
}

#[cfg(not(target_os = "linux"))]
fn since_boot() -> Option<Duration> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_id_hashes_alike_whatever_its_surrounding_whitespace_and_never_to_zero() {
        let id = "6a1e3c5e-2f0b-4c3e-9a57-0d6f1c2b8e44";
        assert_eq!(boot_id_of(id), boot_id_of(&format!("{id}\n")));
        assert_ne!(boot_id_of(id), boot_id_of("another boot"));
        assert_ne!(boot_id_of(id), 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_systems_boot_is_read_and_its_time_since_boot_only_grows() {
        let first = system().expect("Linux tells the boot");
        std::thread::sleep(Duration::from_millis(5));
        let second = system().unwrap();
        assert_eq!(first.id, second.id);
        assert!(second.since_boot >= first.since_boot + Duration::from_millis(5));
    }
}
