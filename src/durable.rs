//! Files put in place whole: written to a temporary file beside their place, flushed to
//! disk, then renamed over it. Without the flush a crash can leave the new name on a file
//! whose data never reached the disk (empty, or torn); with it, the name holds the old
//! file or the new one. For every file `rss` writes then renames: cache entries, host
//! state, records (readers' marks and deliveries), the cache's credential key.

use std::fs::File;
use std::path::Path;

use tempfile::{NamedTempFile, PersistError};

/// Flushes `tmp`'s data to disk, then renames it to `path` (replacing what is there).
pub(crate) fn persist(tmp: NamedTempFile, path: &Path) -> Result<File, PersistError> {
    let tmp = flushed(tmp)?;
    tmp.persist(path)
}

/// Flushes `tmp`'s data to disk, then gives it the name `path` unless that exists.
pub(crate) fn persist_noclobber(tmp: NamedTempFile, path: &Path) -> Result<File, PersistError> {
    let tmp = flushed(tmp)?;
    tmp.persist_noclobber(path)
}

/// Flushes `tmp`'s data to disk (for a caller that renames it later, under a lock it
/// should not hold while the disk works).
pub(crate) fn flush(tmp: &NamedTempFile) -> std::io::Result<()> {
    tmp.as_file().sync_data()
}

fn flushed(tmp: NamedTempFile) -> Result<NamedTempFile, PersistError> {
    match flush(&tmp) {
        Ok(()) => Ok(tmp),
        Err(error) => Err(PersistError { error, file: tmp }),
    }
}

/// [`persist`] on a blocking thread, so the flush (milliseconds on a busy disk) holds no
/// async worker: for records, written from async code under their own file lock. (Host
/// state stays on its thread: its read-modify-write must not yield to the process's other
/// sends, which read the same state.)
pub(crate) async fn persist_blocking(tmp: NamedTempFile, path: &Path) -> std::io::Result<()> {
    let path = path.to_path_buf();
    match tokio::task::spawn_blocking(move || persist(tmp, &path)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.error),
        Err(e) => Err(std::io::Error::other(e)),
    }
}
