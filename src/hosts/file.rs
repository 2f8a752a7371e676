//! The file backend: host state under the cache directory, shared by every process of the
//! machine that uses that directory.
//!
//! Per host (`NAME` = the key made file-safe plus a short hash):
//! - `NAME.json`: the state, replaced whole through a temporary file and a rename, so a
//!   reader never sees it torn;
//! - `NAME.state.lock`: held (an OS advisory lock) for the length of one read-modify-write;
//! - `NAME.send.I.lock`, one per permit of `HOST_MAX_CONCURRENCY`: held by the request that
//!   is sending. The kernel releases an advisory lock when its process dies, so a crashed
//!   or killed process never wedges a host.
//!
//! Lock files are never deleted (removing one that another process holds would let a
//! third process take a fresh one beside it).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use super::{HostStore, Lease, Listed, StoreError, StoredHost, Update};
use crate::gate::HostKey;

/// The longest one read-modify-write waits for another process's.
const STATE_LOCK_WAIT: Duration = Duration::from_secs(2);

/// Host state in a directory.
#[derive(Debug, Clone)]
pub(crate) struct FileStore {
    dir: PathBuf,
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.display().to_string();
    move |source| StoreError::Io {
        action,
        path,
        source,
    }
}

/// Opens (creating) `path` for locking.
fn lock_file(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io("cannot open the lock file", path))
}

impl FileStore {
    /// The store in `dir`, created if needed; fails when it cannot be written (a read-only
    /// cache directory).
    pub(crate) fn open(dir: &Path) -> Result<FileStore, StoreError> {
        fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
        lock_file(&dir.join(".probe.lock"))?;
        Ok(FileStore {
            dir: dir.to_path_buf(),
        })
    }

    fn name(host: &HostKey) -> String {
        let safe: String = host
            .as_str()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(100)
            .collect();
        let hash = hex::encode(&Sha256::digest(host.as_str().as_bytes())[..4]);
        format!("{safe}-{hash}")
    }

    fn state_path(&self, host: &HostKey) -> PathBuf {
        self.dir.join(format!("{}.json", Self::name(host)))
    }

    fn read(path: &Path, host: &str) -> Result<Option<StoredHost>, StoreError> {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io("cannot read", path)(e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| StoreError::Corrupt {
                host: host.to_owned(),
                source,
            })
    }

    fn write(&self, path: &Path, state: &StoredHost) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(state).map_err(|source| StoreError::Corrupt {
            host: state.host.clone(),
            source,
        })?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(io("cannot create a temporary file in", &self.dir))?;
        tmp.write_all(&bytes)
            .map_err(io("cannot write", tmp.path()))?;
        tmp.persist(path)
            .map_err(|e| io("cannot replace", path)(e.error))?;
        Ok(())
    }

    /// Takes `path`'s lock, waiting for another process's read-modify-write at most
    /// [`STATE_LOCK_WAIT`], without blocking the async threads.
    async fn lock_state(path: &Path) -> Result<File, StoreError> {
        let file = lock_file(path)?;
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(TryLockError::WouldBlock) if started.elapsed() < STATE_LOCK_WAIT => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(TryLockError::WouldBlock) => return Err(StoreError::Timeout(STATE_LOCK_WAIT)),
                Err(TryLockError::Error(e)) => return Err(io("cannot lock", path)(e)),
            }
        }
    }

    async fn update_inner(
        &self,
        host: &HostKey,
        f: &Update<'_>,
    ) -> Result<Option<StoredHost>, StoreError> {
        let path = self.state_path(host);
        let lock_path = self.dir.join(format!("{}.state.lock", Self::name(host)));
        let _lock = Self::lock_state(&lock_path).await?;
        // A damaged entry is replaced by what the update makes of nothing.
        let current = Self::read(&path, host.as_str()).unwrap_or(None);
        let existed = current.is_some();
        let next = f(current);
        match &next {
            Some(state) => self.write(&path, state)?,
            None if existed => match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("cannot remove", &path)(e)),
            },
            None => {}
        }
        Ok(next)
    }

    fn try_lease_now(&self, host: &HostKey, slots: usize) -> Result<Option<Lease>, StoreError> {
        let name = Self::name(host);
        for i in 0..slots.max(1) {
            let path = self.dir.join(format!("{name}.send.{i}.lock"));
            let file = lock_file(&path)?;
            match file.try_lock() {
                Ok(()) => return Ok(Some(Lease(Box::new(file)))),
                Err(TryLockError::WouldBlock) => continue,
                Err(TryLockError::Error(e)) => return Err(io("cannot lock", &path)(e)),
            }
        }
        Ok(None)
    }

    fn entries(&self) -> Result<Vec<(PathBuf, String)>, StoreError> {
        let mut out = Vec::new();
        let dir = match fs::read_dir(&self.dir) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io("cannot list", &self.dir)(e)),
        };
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".json") {
                out.push((entry.path(), stem.to_owned()));
            }
        }
        out.sort();
        Ok(out)
    }
}

impl HostStore for FileStore {
    fn describe(&self) -> String {
        format!("file:{}", self.dir.display())
    }

    fn load<'a>(
        &'a self,
        host: &'a HostKey,
    ) -> BoxFuture<'a, Result<Option<StoredHost>, StoreError>> {
        let r = Self::read(&self.state_path(host), host.as_str());
        async move { r }.boxed()
    }

    fn update<'a>(
        &'a self,
        host: &'a HostKey,
        f: &'a Update<'a>,
    ) -> BoxFuture<'a, Result<Option<StoredHost>, StoreError>> {
        self.update_inner(host, f).boxed()
    }

    fn try_lease<'a>(
        &'a self,
        host: &'a HostKey,
        slots: usize,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        let r = self.try_lease_now(host, slots);
        async move { r }.boxed()
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<Listed>, StoreError>> {
        let r = self.entries().map(|entries| {
            entries
                .into_iter()
                .filter_map(|(path, stem)| Self::read(&path, &stem).transpose())
                .collect()
        });
        async move { r }.boxed()
    }

    fn clear<'a>(&'a self, host: Option<&'a HostKey>) -> BoxFuture<'a, Result<usize, StoreError>> {
        let r = (|| {
            let targets: Vec<PathBuf> = match host {
                Some(h) => vec![self.state_path(h)],
                None => self.entries()?.into_iter().map(|(p, _)| p).collect(),
            };
            let mut removed = 0;
            for path in targets {
                match fs::remove_file(&path) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io("cannot remove", &path)(e)),
                }
            }
            Ok(removed)
        })();
        async move { r }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> HostKey {
        HostKey::parse(s).unwrap()
    }

    fn stored(host: &str, depth: u32) -> StoredHost {
        StoredHost {
            host: host.into(),
            next_allowed_ms: None,
            warm_until_ms: None,
            depth,
            last_retry_after_ms: None,
            floor_ms: None,
            last_admitted_ms: None,
            last_status: None,
            updated_ms: 1,
        }
    }

    #[tokio::test]
    async fn updates_are_read_back_and_removed_when_empty() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        let a = key("a.test:80");
        assert_eq!(store.load(&a).await.unwrap(), None);
        let put = |_: Option<StoredHost>| Some(stored("a.test:80", 3));
        store.update(&a, &put).await.unwrap();
        assert_eq!(store.load(&a).await.unwrap().unwrap().depth, 3);
        let bump = |s: Option<StoredHost>| s.map(|s| stored(&s.host, s.depth + 1));
        store.update(&a, &bump).await.unwrap();
        assert_eq!(store.load(&a).await.unwrap().unwrap().depth, 4);
        assert_eq!(store.list().await.unwrap().len(), 1);
        let drop_it = |_: Option<StoredHost>| None;
        store.update(&a, &drop_it).await.unwrap();
        assert_eq!(store.load(&a).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_damaged_entry_is_an_error_on_load_and_replaced_on_update() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        let a = key("a.test:80");
        std::fs::write(store.state_path(&a), b"{\"host\": \"a.te").unwrap();
        assert!(matches!(
            store.load(&a).await,
            Err(StoreError::Corrupt { .. })
        ));
        let put = |s: Option<StoredHost>| {
            assert!(s.is_none());
            Some(stored("a.test:80", 1))
        };
        store.update(&a, &put).await.unwrap();
        assert_eq!(store.load(&a).await.unwrap().unwrap().depth, 1);
    }

    #[tokio::test]
    async fn each_send_slot_has_one_holder_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        let a = key("a.test:80");
        let first = store.try_lease(&a, 2).await.unwrap();
        let second = store.try_lease(&a, 2).await.unwrap();
        assert!(first.is_some() && second.is_some());
        assert!(store.try_lease(&a, 2).await.unwrap().is_none());
        drop(first);
        assert!(store.try_lease(&a, 2).await.unwrap().is_some());
        // Another host is not affected.
        assert!(
            store
                .try_lease(&key("b.test:80"), 1)
                .await
                .unwrap()
                .is_some()
        );
    }

    #[tokio::test]
    async fn clearing_one_host_leaves_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        for h in ["a.test:80", "b.test:80"] {
            let put = move |_: Option<StoredHost>| Some(stored(h, 1));
            store.update(&key(h), &put).await.unwrap();
        }
        assert_eq!(store.clear(Some(&key("a.test:80"))).await.unwrap(), 1);
        assert_eq!(store.list().await.unwrap().len(), 1);
        assert_eq!(store.clear(None).await.unwrap(), 1);
        assert!(store.list().await.unwrap().is_empty());
    }

    #[test]
    fn a_read_only_directory_cannot_be_opened() {
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        let mut perm = std::fs::metadata(&ro).unwrap().permissions();
        perm.set_readonly(true);
        std::fs::set_permissions(&ro, perm).unwrap();
        let writable = std::fs::write(ro.join("x"), b"x").is_ok();
        // Root ignores permissions: then there is nothing to test.
        if !writable {
            assert!(FileStore::open(&ro.join("hosts")).is_err());
        }
    }
}
