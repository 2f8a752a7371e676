//! Files put in place whole: written to a temporary file beside their place, flushed to
//! disk, then renamed over it. Without the flush a crash can leave the new name on a file
//! whose data never reached the disk (empty, or torn); with it, the name holds the old
//! file or the new one. For every file `rss` writes then renames: cache entries, host
//! state, records (readers' marks and deliveries), the cache's credential key.
//! Many records written together ([`persist_all`]: an acknowledgement's marks) are flushed
//! side by side, then renamed, then their directory flushed once.

use std::fs::File;
use std::path::{Path, PathBuf};

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

/// How many files [`persist_all`] flushes at once: flushes that wait together are written in
/// one commit of the file system's journal, so a batch costs about what a few files do.
const FLUSHES_AT_ONCE: usize = 16;

/// Flushes every temporary file of `files` to disk (several at once), then renames each to
/// its path, then flushes each directory they went to once: when it returns, every file is
/// in place on disk (a caller that writes something later counting on them finds them after
/// a crash). The error names the path that failed.
pub(crate) fn persist_all(
    files: Vec<(NamedTempFile, PathBuf)>,
) -> Result<(), (PathBuf, std::io::Error)> {
    let per_thread = files.len().div_ceil(FLUSHES_AT_ONCE).max(1);
    std::thread::scope(|s| {
        let threads: Vec<_> = files
            .chunks(per_thread)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .try_for_each(|(tmp, path)| flush(tmp).map_err(|e| (path.clone(), e)))
                })
            })
            .collect();
        threads.into_iter().try_for_each(|t| {
            t.join().unwrap_or_else(|_| {
                Err((
                    PathBuf::new(),
                    std::io::Error::other("a flush thread failed"),
                ))
            })
        })
    })?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (tmp, path) in files {
        tmp.persist(&path).map_err(|e| (path.clone(), e.error))?;
        if let Some(dir) = path.parent()
            && !dirs.iter().any(|d| d == dir)
        {
            dirs.push(dir.to_path_buf());
        }
    }
    for dir in dirs {
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| (dir.clone(), e))?;
    }
    Ok(())
}

/// [`persist_all`] on a blocking thread.
pub(crate) async fn persist_all_blocking(
    files: Vec<(NamedTempFile, PathBuf)>,
) -> Result<(), (PathBuf, std::io::Error)> {
    if files.is_empty() {
        return Ok(());
    }
    match tokio::task::spawn_blocking(move || persist_all(files)).await {
        Ok(r) => r,
        Err(e) => Err((PathBuf::new(), std::io::Error::other(e))),
    }
}
