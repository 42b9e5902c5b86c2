//! Writing a mirror's files so that none is ever seen half-written: each is written
//! under `.partial/` in the mirror directory (the same file system), then renamed into
//! place. A reader sees the old file or the new one, never a part.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where files are written before they are renamed into place; never served.
pub const PARTIAL_DIR: &str = ".partial";

/// A file-system failure, with the path it concerns.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct FileError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The mirror directory.
#[derive(Debug, Clone)]
pub struct Files {
    root: PathBuf,
}

impl Files {
    pub fn new(root: PathBuf) -> Files {
        Files { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of a URL path (`/2008/09/03/05.bin`).
    pub fn path_of(&self, url_path: &str) -> PathBuf {
        self.root.join(url_path.trim_start_matches('/'))
    }

    /// Whether the file of `url_path` exists.
    pub fn exists(&self, url_path: &str) -> bool {
        self.path_of(url_path).is_file()
    }

    /// Reads the file of `url_path`, `None` when there is none.
    ///
    /// # Errors
    /// A file that exists but cannot be read.
    pub fn read(&self, url_path: &str) -> Result<Option<Vec<u8>>, FileError> {
        let path = self.path_of(url_path);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(FileError { path, source }),
        }
    }

    /// Creates the directory and proves it writable by writing and removing a file in
    /// [`PARTIAL_DIR`], before anything else is written.
    ///
    /// # Errors
    /// The directory cannot be created or written to.
    pub fn check_writable(&self) -> Result<(), FileError> {
        let partial = self.root.join(PARTIAL_DIR);
        let err = |source| FileError {
            path: self.root.clone(),
            source,
        };
        std::fs::create_dir_all(&partial).map_err(err)?;
        tempfile::NamedTempFile::new_in(&partial)
            .and_then(|probe| probe.close())
            .map_err(err)
    }

    /// Writes `bytes` as the file of `url_path` (mode 0644, for a web server's user),
    /// through a temporary file renamed into place. Returns the bytes written.
    ///
    /// # Errors
    /// Creating, writing or renaming fails.
    pub fn write(&self, url_path: &str, bytes: &[u8]) -> Result<u64, FileError> {
        let target = self.path_of(url_path);
        let err = |path: &Path| {
            let path = path.to_owned();
            move |source| FileError { path, source }
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(err(parent))?;
        }
        let partial = self.root.join(PARTIAL_DIR);
        let mut file = tempfile::NamedTempFile::new_in(&partial).map_err(err(&partial))?;
        file.write_all(bytes).map_err(err(file.path()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::Permissions::from_mode(0o644);
            file.as_file()
                .set_permissions(mode)
                .map_err(err(file.path()))?;
        }
        file.persist(&target).map_err(|e| FileError {
            path: target.clone(),
            source: e.error,
        })?;
        Ok(bytes.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_is_in_place_and_nothing_is_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path().to_owned());
        files.check_writable().unwrap();
        assert_eq!(files.write("/2008/09/03/05.bin", b"abc").unwrap(), 3);
        assert_eq!(files.read("/2008/09/03/05.bin").unwrap().unwrap(), b"abc");
        files.write("/2008/09/03/05.bin", b"abcd").unwrap();
        assert_eq!(files.read("/2008/09/03/05.bin").unwrap().unwrap(), b"abcd");
        let left = std::fs::read_dir(dir.path().join(PARTIAL_DIR))
            .unwrap()
            .count();
        assert_eq!(left, 0);
        assert_eq!(files.read("/nothing").unwrap(), None);
    }
}
