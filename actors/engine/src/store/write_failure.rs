//! Why the engine refuses writes. After any failed write (a commit, a sync, or a flush on
//! one of its own background threads) fjall "poisons" itself and answers every later write
//! with a bare `Poisoned`, which says nothing about the cause. This keeps the first I/O error
//! a write of weaver's saw and, when the failure happened where weaver could not see it,
//! asks the disk directly, so an operator reads "No space left on device" and not "poisoned".

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::StoreError;

/// The name of the small file written (and removed) to ask the disk why writes fail.
const PROBE_FILE: &str = ".weaver-write-probe";

pub(super) struct WriteFailure {
    dir: PathBuf,
    first: OnceLock<String>,
}

impl WriteFailure {
    pub(super) fn new(dir: &Path) -> Self {
        WriteFailure {
            dir: dir.to_path_buf(),
            first: OnceLock::new(),
        }
    }

    /// The store's error for a write the engine failed with `error`.
    pub(super) fn explain(&self, error: fjall::Error) -> StoreError {
        match error {
            fjall::Error::Poisoned => StoreError::Poisoned {
                cause: self.cause(),
            },
            error => {
                self.saw(&error);
                StoreError::Engine(error)
            }
        }
    }

    /// Remembers `error` if it is the first I/O error of a write.
    pub(super) fn saw(&self, error: &fjall::Error) {
        if let fjall::Error::Io(io) | fjall::Error::Storage(fjall::LsmError::Io(io)) = error {
            let _ = self.first.set(io.to_string());
        }
    }

    fn cause(&self) -> String {
        if let Some(first) = self.first.get() {
            return first.clone();
        }
        match probe_write(&self.dir.join(PROBE_FILE), 4096) {
            Err(e) => format!("a background write failed; writing to {} now fails: {e}", self.dir.display()),
            Ok(()) => "a background write failed earlier; the disk accepts writes again, and the store needs a restart to accept them too".into(),
        }
    }
}

/// Writes and syncs a file of `bytes` zeros at `path`, then removes it: the OS's own answer
/// to "can this directory take a write".
pub(crate) fn probe_write(path: &Path, bytes: usize) -> std::io::Result<()> {
    let written = std::fs::File::create(path).and_then(|mut file| {
        file.write_all(&vec![0u8; bytes])
            .and_then(|()| file.sync_all())
    });
    let _ = std::fs::remove_file(path);
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_error(kind: std::io::ErrorKind) -> fjall::Error {
        fjall::Error::Io(std::io::Error::from(kind))
    }

    #[test]
    fn poisoned_reports_the_first_io_error_seen() {
        let dir = tempfile::tempdir().unwrap();
        let failure = WriteFailure::new(dir.path());
        let first = failure.explain(io_error(std::io::ErrorKind::StorageFull));
        assert!(matches!(first, StoreError::Engine(_)), "{first}");
        failure.saw(&io_error(std::io::ErrorKind::PermissionDenied));
        let poisoned = failure.explain(fjall::Error::Poisoned);
        assert!(poisoned.is_io());
        let text = poisoned.to_string();
        assert!(
            text.contains(&std::io::Error::from(std::io::ErrorKind::StorageFull).to_string()),
            "{text}"
        );
        assert!(!text.to_lowercase().contains("permission"), "{text}");
    }

    #[test]
    fn poisoned_with_no_error_seen_asks_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        let failure = WriteFailure::new(&missing);
        let text = failure.explain(fjall::Error::Poisoned).to_string();
        assert!(
            text.contains("now fails") && text.contains("No such file or directory"),
            "{text}"
        );

        let writable = WriteFailure::new(dir.path());
        let text = writable.explain(fjall::Error::Poisoned).to_string();
        assert!(text.contains("needs a restart"), "{text}");
        assert!(
            !dir.path().join(PROBE_FILE).exists(),
            "the probe is removed"
        );
    }
}
