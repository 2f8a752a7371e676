//! Advisory lock files: ones that exist only while they are held ([`HeldLock`], for locks
//! keyed on something callers choose, such as hosts), and a fixed set that stays
//! ([`take_blocking`], for the cache's entry locks).
//!
//! A holder deletes its lock file before it lets go, and a lock counts only while its path
//! still names the file that was locked: a process that locked a file just deleted (it had
//! opened it before the delete) lets go and opens the path afresh. So locks taken per host
//! or per cache entry leave no files behind, and two holders never both believe they hold
//! one path. The kernel drops a dead process's lock; its file stays until someone takes and
//! lets go of it (`rss hosts clear`, `rss cache clear`).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Tries to lock a path whose file keeps being replaced before giving up for now.
const LOCK_TRIES: usize = 16;

/// Opens (creating) `path` for locking.
pub(crate) fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

/// Whether `path` still names `file` (it was not deleted, or replaced, since it was opened).
#[cfg(unix)]
fn still_named(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_named(_: &File, path: &Path) -> bool {
    path.exists()
}

/// A held lock on a file that is deleted when the lock is let go (on drop), unless it was
/// taken as a lasting one.
#[derive(Debug)]
pub(crate) struct HeldLock {
    file: Option<File>,
    path: PathBuf,
    /// Keep the file when letting go (one of a fixed set, reused by the next holder).
    lasting: bool,
}

impl HeldLock {
    /// Tries once to lock `path`: `None` when another process holds it.
    pub(crate) fn try_take(path: &Path) -> io::Result<Option<HeldLock>> {
        HeldLock::try_take_as(path, false)
    }

    /// Like [`HeldLock::try_take`], but the file stays when the lock is let go: for a fixed
    /// set of lock files, where creating and deleting a file per use would cost the file
    /// system more than the use. It may still be deleted by someone holding it (a tidy-up),
    /// which the check that the path names the locked file makes safe.
    pub(crate) fn try_take_lasting(path: &Path) -> io::Result<Option<HeldLock>> {
        HeldLock::try_take_as(path, true)
    }

    fn try_take_as(path: &Path, lasting: bool) -> io::Result<Option<HeldLock>> {
        for _ in 0..LOCK_TRIES {
            let file = open(path)?;
            match file.try_lock() {
                Ok(()) if still_named(&file, path) => {
                    return Ok(Some(HeldLock {
                        file: Some(file),
                        path: path.to_path_buf(),
                        lasting,
                    }));
                }
                // Locked a file its holder deleted as it let go: open the path afresh.
                Ok(()) => continue,
                Err(TryLockError::WouldBlock) => return Ok(None),
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Takes `path`'s lock, waiting for another holder at most `wait` without blocking
    /// the async threads; `None` when it was still held then.
    pub(crate) async fn take(path: &Path, wait: Duration) -> io::Result<Option<HeldLock>> {
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            if let Some(held) = HeldLock::try_take(path)? {
                return Ok(Some(held));
            }
            if started.elapsed() >= wait {
                return Ok(None);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            // Deleted while still held, so nobody can take a lock on it that counts.
            if !self.lasting && still_named(&file, &self.path) {
                let _ = fs::remove_file(&self.path);
            }
            drop(file);
        }
    }
}

/// A lock held on a file that stays (one of a fixed set); released on drop.
#[derive(Debug)]
pub(crate) struct Held(#[allow(dead_code)] File);

/// Takes the lock of the lasting file `path` (creating it), blocking this (non-async)
/// thread for at most `wait`; `None` when it was still held then.
pub(crate) fn take_blocking(path: &Path, wait: Duration) -> io::Result<Option<Held>> {
    let file = open(path)?;
    let started = std::time::Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(Held(file))),
            Err(TryLockError::WouldBlock) if started.elapsed() < wait => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_taken_on_a_file_deleted_meanwhile_does_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        // Another process opened the file, then its holder deleted it and let go.
        let stale = open(&path).unwrap();
        let held = HeldLock::try_take(&path).unwrap().unwrap();
        drop(held);
        assert!(!path.exists());
        stale.try_lock().unwrap();
        assert!(!still_named(&stale, &path));
        // A fresh holder gets a lock on a file the path names, beside the stale one.
        let fresh = HeldLock::try_take(&path).unwrap().unwrap();
        assert!(HeldLock::try_take(&path).unwrap().is_none());
        drop(fresh);
        assert!(!path.exists());
    }

    #[test]
    fn a_blocking_take_waits_for_the_holder_and_gives_up_at_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = take_blocking(&path, Duration::ZERO).unwrap().unwrap();
        assert!(
            take_blocking(&path, Duration::from_millis(30))
                .unwrap()
                .is_none()
        );
        let p = path.clone();
        let waiter = std::thread::spawn(move || {
            take_blocking(&p, Duration::from_secs(10))
                .unwrap()
                .is_some()
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert!(waiter.join().unwrap());
    }
}
