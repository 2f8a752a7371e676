//! What the cache costs on disk, and the cap that keeps it there: whole entries are evicted,
//! least recently fetched first, when a write passes `--cache-max-bytes`.
//!
//! One process evicts at a time (an advisory lock on `.evict.lock`, waited for: each
//! writer checks the cap after its own write, so the cap holds when the writers are done). An entry goes metadata first, then its
//! bodies, so a reader meets a whole entry or a miss, never a torn one. A body no metadata
//! names (a writer between its two renames, or a superseded body) is kept through its grace
//! period and counted meanwhile.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Cache, Meta, SUPERSEDED_BODY_GRACE};

/// The default cap on the cache's bytes on disk: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// One feed's files as found on disk.
#[derive(Debug, Default)]
pub(crate) struct OnDisk {
    /// The metadata, when it is there and readable.
    pub meta: Option<Meta>,
    /// Every file of the entry with its size and age.
    pub files: Vec<(PathBuf, u64, Option<Duration>)>,
}

impl OnDisk {
    /// Bytes of every file of the entry.
    pub(crate) fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.1).sum()
    }
}

/// Bytes of every file under `dir`, recursively (host state included).
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    let Ok(read) = fs::read_dir(dir) else {
        return 0;
    };
    read.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

impl Cache {
    /// Every entry's files, by key (the first 32 hex digits of each file name).
    pub(crate) fn on_disk(&self) -> HashMap<String, OnDisk> {
        let mut out: HashMap<String, OnDisk> = HashMap::new();
        let Ok(dir) = fs::read_dir(self.feeds()) else {
            return out;
        };
        let now = SystemTime::now();
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(key) = name
                .get(..32)
                .filter(|k| k.bytes().all(|b| b.is_ascii_hexdigit()))
            else {
                continue;
            };
            let Ok(md) = entry.metadata() else { continue };
            let age = md.modified().ok().and_then(|t| now.duration_since(t).ok());
            let slot = out.entry(key.to_owned()).or_default();
            if name.ends_with(".json") {
                slot.meta = fs::read(entry.path())
                    .ok()
                    .and_then(|raw| serde_json::from_slice::<Meta>(&raw).ok());
            }
            slot.files.push((entry.path(), md.len(), age));
        }
        out
    }

    /// Brings the cache under its cap after the entry `keep` was written: evicts whole
    /// entries, least recently fetched first, never `keep`; sweeps orphan bodies past their
    /// grace. Returns the feed URLs evicted.
    pub(crate) fn enforce_cap(&self, keep: &str) -> Vec<String> {
        let Some(max) = self.max_bytes.filter(|m| *m > 0) else {
            return Vec::new();
        };
        let lock_path = self.dir.join(".evict.lock");
        let Ok(lock) = fs::File::create(&lock_path) else {
            return Vec::new();
        };
        if lock.lock().is_err() {
            return Vec::new();
        }
        let mut total = dir_bytes(&self.dir);
        if total <= max {
            return Vec::new();
        }
        let mut entries: Vec<(String, OnDisk)> = self.on_disk().into_iter().collect();
        // Orphans first (no metadata, past grace), then the least recently fetched (ties,
        // within a second, by the metadata file's age).
        entries.sort_by_key(|(_, e)| {
            let fetched = e
                .meta
                .as_ref()
                .and_then(Meta::fetched_at)
                .map_or(i64::MIN, |t| t.timestamp());
            let meta_age = e
                .files
                .iter()
                .find(|f| f.0.extension().is_some_and(|x| x == "json"))
                .and_then(|f| f.2)
                .unwrap_or_default();
            (fetched, std::cmp::Reverse(meta_age))
        });
        let mut evicted = Vec::new();
        for (key, entry) in entries {
            if total <= max {
                break;
            }
            if key == keep {
                continue;
            }
            let freed = match &entry.meta {
                None => remove_past_grace(&entry),
                Some(meta) => {
                    let freed = remove_entry(&entry);
                    if freed > 0 {
                        tracing::info!(
                            feed_url = %meta.feed_url,
                            bytes = freed,
                            "cache: evicted to stay under {max} bytes"
                        );
                        evicted.push(meta.feed_url.clone());
                    }
                    freed
                }
            };
            total = total.saturating_sub(freed);
        }
        drop(lock);
        evicted
    }
}

/// Removes an entry: its metadata first, then its bodies; the bytes freed.
fn remove_entry(entry: &OnDisk) -> u64 {
    let mut freed = 0;
    let (meta, bodies): (Vec<_>, Vec<_>) = entry
        .files
        .iter()
        .partition(|f| f.0.extension().is_some_and(|e| e == "json"));
    for (path, len, _) in meta.into_iter().chain(bodies) {
        if fs::remove_file(path).is_ok() {
            freed += len;
        }
    }
    freed
}

/// Removes the files of an entry with no metadata that are past the grace period.
fn remove_past_grace(entry: &OnDisk) -> u64 {
    entry
        .files
        .iter()
        .filter(|f| f.2.is_some_and(|age| age > SUPERSEDED_BODY_GRACE))
        .filter(|f| fs::remove_file(&f.0).is_ok())
        .map(|f| f.1)
        .sum()
}
