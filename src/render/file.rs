//! Large bodies kept in sealed memory files (Linux `memfd`), so the connection's own
//! writer sends them with `sendfile(2)`, as nginx sends a static file: the kernel takes
//! the pages by reference instead of copying the body from user memory on every read.
//! Every other reader (hyper, the tests, a delta) reads the same pages through a
//! read-only mapping, so the bytes are held once, not twice.
//!
//! A file is made once per rendering (one copy of the body, on the blocking pool with
//! the rendering itself) and read by every request for it after.

use bytes::Bytes;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bodies at least this large are kept in a file: below it, copying the body costs
/// less than the file's system calls and its pages.
pub const FILE_MIN: usize = 256 * 1024;

/// Files held at most at once (each is a descriptor, and descriptors are what
/// connections need): past it, a body stays in memory and is copied as before.
pub const MAX_FILES: usize = 64;

/// Files held now.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// A sealed, read-only memory file holding one body, and its mapping.
pub struct BodyFile {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only (`PROT_READ`) and the file sealed against writes,
// shrinking and growing, so its bytes never change while `self` lives; the pointer is
// only read through `&self`.
unsafe impl Send for BodyFile {}
// SAFETY: as above: shared reads of memory that never changes.
unsafe impl Sync for BodyFile {}

impl std::fmt::Debug for BodyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyFile").field("len", &self.len).finish()
    }
}

/// The response extension naming the file a response's body is held in, for the
/// connection's writer to send with `sendfile(2)` (it is the body's bytes, exactly).
#[derive(Clone)]
pub struct SendFile(pub Arc<BodyFile>);

impl BodyFile {
    /// A file holding `bytes`: written, sealed, mapped read-only.
    ///
    /// # Errors
    /// What the system calls return (e.g. no `memfd` support), or `Unsupported` off
    /// Linux; callers then keep the bytes in memory as they are.
    #[cfg(target_os = "linux")]
    pub fn new(bytes: &[u8]) -> io::Result<BodyFile> {
        if bytes.is_empty() {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        if !reserve(&LIVE, MAX_FILES) {
            return Err(io::Error::other("the most memory files are held"));
        }
        // From here the file counts in LIVE: `Drop` gives its place back, and a failure
        // before there is one gives it back here.
        Self::create(bytes).inspect_err(|_| {
            LIVE.fetch_sub(1, Ordering::Relaxed);
        })
    }

    #[cfg(target_os = "linux")]
    fn create(bytes: &[u8]) -> io::Result<BodyFile> {
        use std::io::Write as _;
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        // SAFETY: the name is a NUL-terminated string; the flags are valid.
        let raw = unsafe {
            libc::memfd_create(
                c"bloomcast-body".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor just opened and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        let fd = OwnedFd::from(file);
        let seals =
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
        // SAFETY: `fd` is open; `F_ADD_SEALS` takes an int argument.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh read-only shared mapping of the whole (sealed) file; the
        // kernel picks the address.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes.len(),
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(BodyFile {
            fd,
            ptr: ptr.cast::<u8>().cast_const(),
            len: bytes.len(),
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new(_bytes: &[u8]) -> io::Result<BodyFile> {
        Err(io::ErrorKind::Unsupported.into())
    }

    /// The body's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's descriptor, for `sendfile(2)`.
    #[cfg(target_os = "linux")]
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    /// The body as `Bytes` reading the mapping (no copy).
    pub fn bytes(self: &Arc<BodyFile>) -> Bytes {
        Bytes::from_owner(Mapped(self.clone()))
    }
}

impl Drop for BodyFile {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: `ptr` and `len` are the mapping made in `new`, unmapped once, here;
        // no `Bytes` reads it any more (each holds an `Arc` of `self`).
        unsafe {
            libc::munmap(self.ptr.cast_mut().cast(), self.len);
        }
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Takes one of `max` places counted in `live`, if one is free.
fn reserve(live: &AtomicUsize, max: usize) -> bool {
    if live.fetch_add(1, Ordering::Relaxed) >= max {
        live.fetch_sub(1, Ordering::Relaxed);
        return false;
    }
    true
}

/// A `Bytes` owner that keeps the file (and so its mapping) alive.
struct Mapped(Arc<BodyFile>);

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until the file is dropped, which the
        // `Arc` held here prevents; the bytes never change (the file is sealed).
        unsafe { std::slice::from_raw_parts(self.0.ptr, self.0.len) }
    }
}

/// `bytes` moved into a file when large enough and files can be made here: the file and
/// `Bytes` reading it; otherwise `bytes` unchanged.
pub fn filed(bytes: Bytes) -> (Bytes, Option<Arc<BodyFile>>) {
    if bytes.len() < FILE_MIN {
        return (bytes, None);
    }
    match BodyFile::new(&bytes) {
        Ok(file) => {
            let file = Arc::new(file);
            (file.bytes(), Some(file))
        }
        Err(e) => {
            tracing::debug!(error = %e, "a large body stays in memory (no memory file)");
            (bytes, None)
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_back_its_bytes_and_refuses_writes() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 251) as u8).collect();
        // Counted as `new` counts it (other tests may hold every place meanwhile).
        LIVE.fetch_add(1, Ordering::Relaxed);
        let file = Arc::new(BodyFile::create(&data).expect("a memfd on Linux"));
        let bytes = file.bytes();
        assert_eq!(bytes, data);
        assert_eq!(file.len(), data.len());
        // Sealed: a write through the descriptor fails, so the pages can be sent by
        // reference safely.
        // SAFETY: writes one byte from a valid buffer to an open descriptor.
        let wrote = unsafe { libc::pwrite(file.raw_fd(), [0u8].as_ptr().cast(), 1, 0) };
        assert_eq!(wrote, -1);
        // The bytes outlive the other handles.
        drop(file);
        assert_eq!(&bytes[..], &data[..]);
    }

    #[test]
    fn places_are_bounded_and_given_back() {
        let live = AtomicUsize::new(0);
        for _ in 0..3 {
            assert!(reserve(&live, 3));
        }
        assert!(!reserve(&live, 3), "past the bound");
        assert_eq!(live.load(Ordering::Relaxed), 3);
        live.fetch_sub(1, Ordering::Relaxed);
        assert!(reserve(&live, 3));
    }

    #[test]
    fn small_bodies_stay_in_memory() {
        let (bytes, file) = filed(Bytes::from_static(b"small"));
        assert!(file.is_none());
        assert_eq!(bytes, "small");
    }
}
