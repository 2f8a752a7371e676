//! Records as files: `ROOT/SEG0/…/LAST.json`, each replaced whole through a temporary file
//! flushed to disk and a rename (a reader never sees one torn, nor a crash leaves one), each read-modify-write under
//! `LAST.lock`, an advisory lock that exists only while held (`crate::lockfile`), so
//! processes changing one record at once all land, one after the other.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::{Change, Loaded, RecordGuard, RecordKey, RecordStore, RecordUpdate, RecordUpdates};
use crate::hosts::{Clock, StoreError};
use crate::lockfile::HeldLock;

/// The longest one read-modify-write waits for other processes' (each holds the lock for
/// one read and one write).
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The most records [`RecordStore::update_all_if`] changes under one hold of the guard's
/// lock: their locks and temporary files are held together, and whoever waits for the guard
/// (a forget) waits for one batch at most.
const BATCH: usize = 64;

/// Records in a directory tree.
#[derive(Debug, Clone)]
pub(super) struct FileRecords {
    root: PathBuf,
    /// This machine's wall clock moved by this much (a test knob; 0 otherwise).
    skew_ms: i64,
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.display().to_string();
    move |source| StoreError::Io {
        action,
        path,
        source,
    }
}

fn read(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("cannot read", path)(e)),
    }
}

/// Writes `bytes` to a new temporary file in `dir` (readable by its owner only).
fn temp_with(dir: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile, StoreError> {
    crate::hosts::file::private_dir(dir).map_err(io("cannot create", dir))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(io("cannot create a temporary file in", dir))?;
    tmp.write_all(bytes)
        .map_err(io("cannot write", tmp.path()))?;
    Ok(tmp)
}

/// Takes the lock of record `name` in `dir`, creating `dir` first (again, if a forget
/// removed it as it was emptied in between: a held lock's file keeps it from that).
async fn lock(dir: &Path, name: &str) -> Result<HeldLock, StoreError> {
    let lock_path = dir.join(format!("{name}.lock"));
    let mut tries = 0;
    loop {
        crate::hosts::file::private_dir(dir).map_err(io("cannot create", dir))?;
        match HeldLock::take(&lock_path, LOCK_WAIT).await {
            Ok(Some(held)) => return Ok(held),
            Ok(None) => return Err(StoreError::Timeout(LOCK_WAIT)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 8 => tries += 1,
            Err(e) => return Err(io("cannot lock", &lock_path)(e)),
        }
    }
}

impl FileRecords {
    /// Records under `root` (created on the first write). `skew_ms` moves the clock.
    pub(super) fn open(root: &Path, skew_ms: i64) -> FileRecords {
        FileRecords {
            root: root.to_path_buf(),
            skew_ms,
        }
    }

    fn now_ms(&self) -> u64 {
        Clock::local(self.skew_ms).wall_ms()
    }

    /// The directory of `key`'s file, and its name without extension.
    fn place(&self, key: &RecordKey) -> (PathBuf, String) {
        let segs = key.segments();
        let (last, dirs) = segs.split_last().expect("a key has a segment");
        let dir = dirs.iter().fold(self.root.clone(), |p, s| p.join(s));
        (dir, last.clone())
    }

    fn path_of(&self, key: &RecordKey) -> PathBuf {
        let (dir, name) = self.place(key);
        dir.join(format!("{name}.json"))
    }

    async fn update_now(&self, key: &RecordKey, f: &RecordUpdate<'_>) -> Result<(), StoreError> {
        let (dir, name) = self.place(key);
        let _held = lock(&dir, &name).await?;
        let path = dir.join(format!("{name}.json"));
        let current = read(&path)?;
        match f(current.as_deref(), self.now_ms()) {
            Change::Keep => Ok(()),
            Change::Put(bytes, _) => {
                crate::durable::persist_blocking(temp_with(&dir, &bytes)?, &path)
                    .await
                    .map_err(io("cannot replace", &path))
            }
            Change::Delete => match fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io("cannot remove", &path)(e)),
            },
        }
    }

    /// [`RecordStore::update_if`]: under `guard`'s lock (always taken before a record's own,
    /// so two of these never wait for each other), `key`'s change.
    async fn update_if_now(
        &self,
        key: &RecordKey,
        guard: &RecordKey,
        holds: &RecordGuard<'_>,
        f: &RecordUpdate<'_>,
    ) -> Result<bool, StoreError> {
        let (dir, name) = self.place(guard);
        let _held = lock(&dir, &name).await?;
        if !holds(read(&dir.join(format!("{name}.json")))?.as_deref()) {
            return Ok(false);
        }
        self.update_now(key, f).await.map(|()| true)
    }

    /// [`RecordStore::update_all_if`]: `keys` in batches, each under `guard`'s lock (taken
    /// first, as [`FileRecords::update_if_now`] does) checked once, then every key's lock,
    /// its change written to a temporary file; the batch's files are flushed side by side,
    /// then renamed ([`crate::durable::persist_all`]), then the locks let go.
    async fn update_all_if_now(
        &self,
        keys: &[RecordKey],
        guard: &RecordKey,
        holds: &RecordGuard<'_>,
        f: &RecordUpdates<'_>,
    ) -> Result<usize, StoreError> {
        let (guard_dir, guard_name) = self.place(guard);
        let guard_path = guard_dir.join(format!("{guard_name}.json"));
        let mut done = 0;
        for batch in keys.chunks(BATCH) {
            let _guard = lock(&guard_dir, &guard_name).await?;
            if !holds(read(&guard_path)?.as_deref()) {
                return Ok(done);
            }
            let now = self.now_ms();
            let mut held = Vec::with_capacity(batch.len());
            let mut puts = Vec::new();
            for (j, key) in batch.iter().enumerate() {
                let (dir, name) = self.place(key);
                held.push(lock(&dir, &name).await?);
                let path = dir.join(format!("{name}.json"));
                match f(done + j, read(&path)?.as_deref(), now) {
                    Change::Keep => {}
                    Change::Put(bytes, _) => puts.push((temp_with(&dir, &bytes)?, path)),
                    Change::Delete => match fs::remove_file(&path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(io("cannot remove", &path)(e)),
                    },
                }
            }
            crate::durable::persist_all_blocking(puts)
                .await
                .map_err(|(path, e)| io("cannot replace", &path)(e))?;
            drop(held);
            done += batch.len();
        }
        Ok(done)
    }

    /// Every record file under `dir`, as keys starting with `prefix`.
    fn walk(dir: &Path, prefix: &[String], out: &mut Vec<RecordKey>) -> Result<(), StoreError> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io("cannot list", dir)(e)),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let mut segs = prefix.to_vec();
            if is_dir {
                segs.push(name);
                if RecordKey::new(segs.iter().cloned()).is_some() {
                    Self::walk(&entry.path(), &segs, out)?;
                }
            } else if let Some(stem) = name.strip_suffix(".json") {
                segs.push(stem.to_owned());
                out.extend(RecordKey::new(segs));
            }
        }
        Ok(())
    }

    fn list_now(&self, under: &[String]) -> Result<Vec<RecordKey>, StoreError> {
        let mut out = Vec::new();
        match under.split_last() {
            None => Self::walk(&self.root, &[], &mut out)?,
            Some(_) => {
                let dir = under.iter().fold(self.root.clone(), |p, s| p.join(s));
                Self::walk(&dir, under, &mut out)?;
            }
        }
        out.sort();
        Ok(out)
    }
}

impl RecordStore for FileRecords {
    fn describe(&self) -> String {
        format!("file:{}", self.root.display())
    }

    fn load_many<'a>(&'a self, keys: &'a [RecordKey]) -> BoxFuture<'a, Result<Loaded, StoreError>> {
        let paths: Vec<PathBuf> = keys.iter().map(|k| self.path_of(k)).collect();
        let now = self.now_ms();
        async move {
            let read_all = move || paths.iter().map(|p| read(p)).collect::<Result<Vec<_>, _>>();
            let found = if keys.len() > 4 {
                tokio::task::spawn_blocking(read_all)
                    .await
                    .unwrap_or_else(|_| Err(StoreError::Timeout(Duration::ZERO)))?
            } else {
                read_all()?
            };
            Ok((found, now))
        }
        .boxed()
    }

    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        f: &'a RecordUpdate<'a>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.update_now(key, f).boxed()
    }

    fn update_if<'a>(
        &'a self,
        key: &'a RecordKey,
        guard: &'a RecordKey,
        holds: &'a RecordGuard<'a>,
        f: &'a RecordUpdate<'a>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.update_if_now(key, guard, holds, f).boxed()
    }

    fn update_all_if<'a>(
        &'a self,
        keys: &'a [RecordKey],
        guard: &'a RecordKey,
        holds: &'a RecordGuard<'a>,
        f: &'a RecordUpdates<'a>,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        self.update_all_if_now(keys, guard, holds, f).boxed()
    }

    fn put_if_absent<'a>(
        &'a self,
        key: &'a RecordKey,
        bytes: &'a [u8],
    ) -> BoxFuture<'a, Result<Vec<u8>, StoreError>> {
        let r = (|| {
            let (dir, _) = self.place(key);
            let path = self.path_of(key);
            if let Some(found) = read(&path)? {
                return Ok(found);
            }
            match crate::durable::persist_noclobber(temp_with(&dir, bytes)?, &path) {
                Ok(_) => Ok(bytes.to_vec()),
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => read(&path)?
                    .ok_or_else(|| io("cannot read", &path)(std::io::ErrorKind::NotFound.into())),
                Err(e) => Err(io("cannot create", &path)(e.error)),
            }
        })();
        async move { r }.boxed()
    }

    fn list<'a>(
        &'a self,
        under: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<RecordKey>, StoreError>> {
        let r = self.list_now(under);
        async move { r }.boxed()
    }

    fn remove_under<'a>(&'a self, under: &'a [String]) -> BoxFuture<'a, Result<usize, StoreError>> {
        async move {
            if under.is_empty() {
                return Ok(0);
            }
            let keys = self.list_now(under)?;
            for key in &keys {
                // Each under its own lock, so a change under way lands first or not at all.
                self.update_now(key, &|_, _| Change::Delete).await?;
            }
            // Directories left empty go too (one still in use stays: it is not empty).
            let mut dirs: Vec<PathBuf> = keys
                .iter()
                .filter_map(|k| self.path_of(k).parent().map(Path::to_path_buf))
                .collect();
            dirs.push(under.iter().fold(self.root.clone(), |p, s| p.join(s)));
            dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            dirs.dedup();
            for d in dirs {
                let _ = fs::remove_dir(d);
            }
            Ok(keys.len())
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_behave_as_a_record_store_and_leave_no_lock_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileRecords::open(&dir.path().join("readers"), 0);
        super::super::tests::behaves(&store).await;
        let locks: Vec<_> = walkdir(dir.path())
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "lock"))
            .collect();
        assert!(locks.is_empty(), "{locks:?}");
    }

    fn walkdir(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                out.extend(walkdir(&e.path()));
            } else {
                out.push(e.path());
            }
        }
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_changes_of_one_record_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let key = RecordKey::new(["g", "counter"]).unwrap();
        let mut tasks = Vec::new();
        for _ in 0..4 {
            // Four stores on one directory, as four processes.
            let store = FileRecords::open(dir.path(), 0);
            let key = key.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..25 {
                    let bump = |cur: Option<&[u8]>, _: u64| {
                        let n: u32 = cur
                            .and_then(|c| std::str::from_utf8(c).ok()?.parse().ok())
                            .unwrap_or(0);
                        Change::Put((n + 1).to_string().into_bytes(), None)
                    };
                    store.update(&key, &bump).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let store = FileRecords::open(dir.path(), 0);
        let got = (&store as &dyn RecordStore).load(&key).await.unwrap().0;
        assert_eq!(got.as_deref(), Some(&b"100"[..]));
    }
}
