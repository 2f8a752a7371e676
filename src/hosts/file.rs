//! The file backend: host state under the cache directory, shared by every process of the
//! machine that uses that directory.
//!
//! Per host (`NAME` = the key made file-safe plus a short hash):
//! - `NAME.json`: the state, replaced whole through a temporary file and a rename, so a
//!   reader never sees it torn;
//! - `NAME.state.lock`: held (an OS advisory lock) for the length of one read-modify-write;
//! - `send-BBB-I.lock`: send slot I (one per permit of `HOST_MAX_CONCURRENCY`) of the hosts
//!   whose key hashes to bucket `BBB` (one of 4,096), held by the request that is sending.
//!   A process holding a bucket for one host sends to another host of the same bucket
//!   under the same lock (other processes are kept off both, which is what the lock is
//!   for); two processes meet on a bucket only when they send to two such hosts at once,
//!   and then one waits for the other's send. The kernel releases an advisory lock when
//!   its process dies, so a crashed or killed process never wedges a host.
//!
//! The state lock exists only while it is held: its holder deletes it before letting go,
//! and a lock counts only while its path still names the file that was locked (a process
//! that locked a file just deleted lets go and tries again). Send-slot files are a fixed
//! set that stays (a file created and deleted per send costs the file system far more
//! than the send: each new file scans past the recently deleted ones). So a thousand hosts
//! tried leave no thousand files; `rss hosts clear` and `rss cache clear` remove the lock
//! files nobody holds (see `FileStore::tidy_now`).

use crate::sync::lock;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use super::{Clock, Held, HostStore, Lease, Listed, Snapshot, StoreError, StoredHost, Update};
use crate::gate::HostKey;
use crate::lockfile::HeldLock;

/// The longest one read-modify-write waits for another process's.
const STATE_LOCK_WAIT: Duration = Duration::from_secs(2);

/// Host state in a directory.
#[derive(Debug, Clone)]
pub(crate) struct FileStore {
    dir: PathBuf,
    /// This machine's wall clock moved by this much (a test knob; 0 otherwise).
    skew_ms: i64,
    /// The send-slot buckets this process holds, shared by its sends to different hosts.
    buckets: Arc<Mutex<HashMap<PathBuf, Weak<HeldLock>>>>,
    /// The (host, slot) pairs this process is sending on: one send per slot of a host.
    sending: Arc<Mutex<HashSet<(HostKey, usize)>>>,
}

/// Send-slot buckets.
const BUCKETS: u16 = 4096;

/// A send slot held for one host: the bucket's lock (shared with this process's sends to
/// other hosts of the bucket) and the slot's place among this process's sends.
struct SlotLease {
    _bucket: Arc<HeldLock>,
    key: (HostKey, usize),
    sending: Arc<Mutex<HashSet<(HostKey, usize)>>>,
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        lock(&self.sending).remove(&self.key);
    }
}

impl Held for SlotLease {
    fn release(self: Box<Self>) -> BoxFuture<'static, ()> {
        drop(self);
        Box::pin(async {})
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.display().to_string();
    move |source| StoreError::Io {
        action,
        path,
        source,
    }
}

impl Held for HeldLock {
    fn release(self: Box<Self>) -> BoxFuture<'static, ()> {
        drop(self);
        Box::pin(async {})
    }
}

fn lock_error(e: std::io::Error, path: &Path) -> StoreError {
    io("cannot lock", path)(e)
}

/// Takes `path`'s lock, waiting for another process's read-modify-write at most
/// [`STATE_LOCK_WAIT`], without blocking the async threads.
async fn take_state_lock(path: &Path) -> Result<HeldLock, StoreError> {
    match HeldLock::take(path, STATE_LOCK_WAIT).await {
        Ok(Some(held)) => Ok(held),
        Ok(None) => Err(StoreError::Timeout(STATE_LOCK_WAIT)),
        Err(e) => Err(lock_error(e, path)),
    }
}

/// Creates `dir` and its missing parents readable by their owner only (`0700`): what lives
/// under the state directory (host state, readers' marks, the names of token scopes) is the
/// user's own. A directory that already exists keeps its mode.
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

impl FileStore {
    /// The store in `dir`, created if needed; fails when it cannot be written (a read-only
    /// cache directory). `skew_ms` moves the wall clock it stamps (a test knob).
    pub(crate) fn open(dir: &Path, skew_ms: i64) -> Result<FileStore, StoreError> {
        private_dir(dir).map_err(io("cannot create", dir))?;
        crate::lockfile::open(&dir.join(".probe.lock"))
            .map_err(io("cannot open the lock file", dir))?;
        Ok(FileStore {
            dir: dir.to_path_buf(),
            skew_ms,
            buckets: Arc::default(),
            sending: Arc::default(),
        })
    }

    fn clock(&self) -> Clock {
        Clock::local(self.skew_ms)
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

    /// Replaces `path` with `state`: flushed, then renamed, on the calling thread (the
    /// update does not yield meanwhile: this process's other sends read the same state).
    fn write(&self, path: &Path, state: &StoredHost) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(state).map_err(|source| StoreError::Corrupt {
            host: state.host.clone(),
            source,
        })?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(io("cannot create a temporary file in", &self.dir))?;
        tmp.write_all(&bytes)
            .map_err(io("cannot write", tmp.path()))?;
        crate::durable::persist(tmp, path).map_err(|e| io("cannot replace", path)(e.error))?;
        Ok(())
    }

    async fn update_inner(&self, host: &HostKey, f: &Update<'_>) -> Result<Snapshot, StoreError> {
        let path = self.state_path(host);
        let lock_path = self.dir.join(format!("{}.state.lock", Self::name(host)));
        let _lock = take_state_lock(&lock_path).await?;
        // A damaged entry is replaced by what the update makes of nothing.
        let current = Self::read(&path, host.as_str()).unwrap_or(None);
        let existed = current.is_some();
        let before = current.clone();
        let clock = self.clock();
        let next = f(current, clock);
        match &next {
            // Written only when it changed (a write makes a file).
            Some(state) if before.as_ref() == Some(state) => {}
            Some(state) => self.write(&path, state)?,
            None if existed => match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("cannot remove", &path)(e)),
            },
            None => {}
        }
        Ok(Snapshot {
            stored: next,
            clock,
        })
    }

    fn bucket(host: &HostKey) -> u16 {
        let d = Sha256::digest(host.as_str().as_bytes());
        u16::from_be_bytes([d[0], d[1]]) % BUCKETS
    }

    fn try_lease_now(&self, host: &HostKey, slots: usize) -> Result<Option<Lease>, StoreError> {
        let bucket = Self::bucket(host);
        let mut buckets = lock(&self.buckets);
        let mut sending = lock(&self.sending);
        for i in 0..slots.max(1) {
            let key = (host.clone(), i);
            if sending.contains(&key) {
                continue;
            }
            let path = self.dir.join(format!("send-{bucket:03x}-{i}.lock"));
            let held = match buckets.get(&path).and_then(Weak::upgrade) {
                Some(held) => held,
                None => {
                    match HeldLock::try_take_lasting(&path).map_err(|e| lock_error(e, &path))? {
                        Some(h) => {
                            let h = Arc::new(h);
                            buckets.retain(|_, w| w.strong_count() > 0);
                            buckets.insert(path, Arc::downgrade(&h));
                            h
                        }
                        None => continue,
                    }
                }
            };
            sending.insert(key.clone());
            return Ok(Some(Lease::new(SlotLease {
                _bucket: held,
                key,
                sending: self.sending.clone(),
            })));
        }
        Ok(None)
    }

    fn files_ending(&self, suffix: &str) -> Result<Vec<(PathBuf, String)>, StoreError> {
        let mut out = Vec::new();
        let dir = match fs::read_dir(&self.dir) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io("cannot list", &self.dir)(e)),
        };
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(suffix)
                && !stem.starts_with('.')
            {
                out.push((entry.path(), stem.to_owned()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Removes every lock file nobody holds (one a killed process left behind), and every
    /// lapsed entry.
    pub(crate) async fn tidy_now(&self) -> Result<(), StoreError> {
        for (path, _) in self.files_ending(".lock")? {
            // Taken and let go at once: a held lock file deletes itself.
            drop(HeldLock::try_take(&path).map_err(|e| lock_error(e, &path))?);
        }
        let drop_lapsed =
            |s: Option<StoredHost>, c: Clock| s.filter(|s| !s.is_expired(c.wall_ms()));
        for (path, stem) in self.files_ending(".json")? {
            let lapsed = Self::read(&path, &stem)
                .ok()
                .flatten()
                .filter(|s| s.is_expired(self.clock().wall_ms()));
            if let Some(key) = lapsed.and_then(|s| HostKey::parse(&s.host)) {
                self.update_inner(&key, &drop_lapsed).await?;
            }
        }
        Ok(())
    }
}

impl HostStore for FileStore {
    fn describe(&self) -> String {
        format!("file:{}", self.dir.display())
    }

    fn load<'a>(&'a self, host: &'a HostKey) -> BoxFuture<'a, Result<Snapshot, StoreError>> {
        let r = Self::read(&self.state_path(host), host.as_str()).map(|stored| Snapshot {
            stored,
            clock: self.clock(),
        });
        async move { r }.boxed()
    }

    fn update<'a>(
        &'a self,
        host: &'a HostKey,
        f: &'a Update<'a>,
    ) -> BoxFuture<'a, Result<Snapshot, StoreError>> {
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

    fn list(&self) -> BoxFuture<'_, Result<(Vec<Listed>, Clock), StoreError>> {
        let r = self.files_ending(".json").map(|entries| {
            let listed = entries
                .into_iter()
                .filter_map(|(path, stem)| Self::read(&path, &stem).transpose())
                .collect();
            (listed, self.clock())
        });
        async move { r }.boxed()
    }

    fn tidy(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        self.tidy_now().boxed()
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
            next_allowed_ms: Some(u64::MAX / 2),
            warm_until_ms: None,
            depth,
            last_retry_after_ms: None,
            floor_ms: None,
            floor_until_ms: None,
            last_admitted_ms: None,
            last_status: None,
            crawl_delay_ms: None,
            crawl_delay_until_ms: None,
            quota_remaining: None,
            quota_reset_ms: None,
            updated_ms: 1,
            cleared_until_ms: None,
            ..StoredHost::default()
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn updates_are_read_back_and_removed_when_empty() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), 0).unwrap();
        let a = key("a.test:80");
        assert_eq!(store.load(&a).await.unwrap().stored, None);
        let put = |_: Option<StoredHost>, _: Clock| Some(stored("a.test:80", 3));
        store.update(&a, &put).await.unwrap();
        assert_eq!(store.load(&a).await.unwrap().stored.unwrap().depth, 3);
        let bump = |s: Option<StoredHost>, _: Clock| s.map(|s| stored(&s.host, s.depth + 1));
        store.update(&a, &bump).await.unwrap();
        assert_eq!(store.load(&a).await.unwrap().stored.unwrap().depth, 4);
        assert_eq!(store.list().await.unwrap().0.len(), 1);
        let drop_it = |_: Option<StoredHost>, _: Clock| None;
        store.update(&a, &drop_it).await.unwrap();
        assert_eq!(store.load(&a).await.unwrap().stored, None);
        // No lock file outlives its read-modify-write.
        assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
    }

    #[tokio::test]
    async fn a_damaged_entry_is_an_error_on_load_and_replaced_on_update() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), 0).unwrap();
        let a = key("a.test:80");
        std::fs::write(store.state_path(&a), b"{\"host\": \"a.te").unwrap();
        assert!(matches!(
            store.load(&a).await,
            Err(StoreError::Corrupt { .. })
        ));
        let put = |s: Option<StoredHost>, _: Clock| {
            assert!(s.is_none());
            Some(stored("a.test:80", 1))
        };
        store.update(&a, &put).await.unwrap();
        assert_eq!(store.load(&a).await.unwrap().stored.unwrap().depth, 1);
    }

    #[tokio::test]
    async fn each_send_slot_has_one_holder_and_its_file_goes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), 0).unwrap();
        let a = key("a.test:80");
        let first = store.try_lease(&a, 2).await.unwrap();
        let second = store.try_lease(&a, 2).await.unwrap();
        assert!(first.is_some() && second.is_some());
        assert!(store.try_lease(&a, 2).await.unwrap().is_none());
        first.unwrap().release().await;
        assert!(store.try_lease(&a, 2).await.unwrap().is_some());
        // Another host is not affected.
        assert!(
            store
                .try_lease(&key("b.test:80"), 1)
                .await
                .unwrap()
                .is_some()
        );
        drop(second);
        // The slots' files are a fixed set, there for the next send.
        assert!(files(dir.path()).len() <= 3, "{:?}", files(dir.path()));
    }

    #[tokio::test]
    async fn another_process_is_kept_off_every_host_of_a_held_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let mine = FileStore::open(dir.path(), 0).unwrap();
        let theirs = FileStore::open(dir.path(), 0).unwrap();
        // Two hosts of one bucket.
        let a = key("a.test:80");
        let b = (0..100_000)
            .map(|i| key(&format!("h{i}.test:80")))
            .find(|k| FileStore::bucket(k) == FileStore::bucket(&a))
            .unwrap();
        let on_a = mine.try_lease(&a, 1).await.unwrap().unwrap();
        // This process sends to the other host of the bucket at the same time...
        let on_b = mine.try_lease(&b, 1).await.unwrap();
        assert!(on_b.is_some());
        // ...and another process is kept off both until both sends end.
        assert!(theirs.try_lease(&a, 1).await.unwrap().is_none());
        assert!(theirs.try_lease(&b, 1).await.unwrap().is_none());
        drop(on_a);
        assert!(theirs.try_lease(&b, 1).await.unwrap().is_none());
        drop(on_b);
        let their_b = theirs.try_lease(&b, 1).await.unwrap();
        assert!(their_b.is_some());
        assert!(
            mine.try_lease(&a, 1).await.unwrap().is_none(),
            "the other process holds the bucket now"
        );
        drop(their_b);
        // One host's slot is one send, in this process too.
        let first = mine.try_lease(&a, 1).await.unwrap();
        assert!(first.is_some());
        assert!(mine.try_lease(&a, 1).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn tidy_removes_lock_files_nobody_holds_and_keeps_held_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), 0).unwrap();
        // Left behind: files nobody holds.
        for i in 0..5 {
            fs::write(dir.path().join(format!("send-00{i}-0.lock")), b"").unwrap();
        }
        let held = store.try_lease(&key("busy.test:80"), 1).await.unwrap();
        store.tidy().await.unwrap();
        assert_eq!(files(dir.path()).len(), 1);
        drop(held);
        store.tidy().await.unwrap();
        assert!(files(dir.path()).is_empty());
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
            assert!(FileStore::open(&ro.join("hosts"), 0).is_err());
        }
    }
}
