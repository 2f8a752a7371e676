//! What the cache costs on disk, and the cap that keeps it there: whole entries are evicted,
//! least recently fetched first, when a write passes `--cache-max-bytes`.
//!
//! Measuring the directory costs a `stat` per file, so a write does not always measure it:
//! while the size this process last measured, plus what it wrote since, stays under three
//! quarters of the cap, and for at most [`WRITES_UNMEASURED`] writes, the write is only
//! counted. Nearer the cap every write measures, under an advisory lock on `.evict.lock`
//! (one process evicts at a time; each waits its turn), so the cap holds when the writers
//! are done. An entry goes metadata first, then its
//! bodies, under the entry's lock and only if it is still the entry that was listed, so a
//! reader meets a whole entry or a miss, and another process's just-written entry stays. A
//! body no metadata names (a writer between its two renames) is kept through its grace
//! period and counted meanwhile.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Cache, Meta, SUPERSEDED_BODY_GRACE};

/// The default cap on the cache's bytes on disk: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Writes counted without measuring the directory, at most, between two measurements.
const WRITES_UNMEASURED: u32 = 32;

/// The cache's size as this process last measured it, and what it wrote since.
#[derive(Debug, Default)]
pub(crate) struct Known {
    /// Bytes at the last measurement plus bytes written since (`None`: never measured).
    bytes: Option<u64>,
    /// Writes since the last measurement.
    writes: u32,
}

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
    pub(crate) fn enforce_cap(&self, keep: &str, written: u64) -> Vec<String> {
        let Some(max) = self.max_bytes.filter(|m| *m > 0) else {
            return Vec::new();
        };
        {
            let mut known = self.size.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(bytes) = known.bytes
                && bytes.saturating_add(written) <= max - max / 4
                && known.writes < WRITES_UNMEASURED
            {
                known.bytes = Some(bytes + written);
                known.writes += 1;
                return Vec::new();
            }
        }
        let lock_path = self.dir.join(".evict.lock");
        let Ok(lock) = fs::File::create(&lock_path) else {
            return Vec::new();
        };
        if lock.lock().is_err() {
            return Vec::new();
        }
        let mut total = dir_bytes(&self.dir);
        let evicted = if total > max {
            self.evict(keep, max, &mut total)
        } else {
            Vec::new()
        };
        *self.size.lock().unwrap_or_else(|e| e.into_inner()) = Known {
            bytes: Some(total),
            writes: 0,
        };
        drop(lock);
        evicted
    }

    /// Evicts entries (never `keep`) until `total` is within `max`; the feed URLs evicted.
    fn evict(&self, keep: &str, max: u64, total: &mut u64) -> Vec<String> {
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
            if *total <= max {
                break;
            }
            if key == keep {
                continue;
            }
            let mut freed = remove_unnamed_past_grace(&entry);
            if let Some(meta) = &entry.meta {
                let gone = self.remove_entry_if_unchanged(&key, meta).unwrap_or(0);
                if gone > 0 {
                    tracing::info!(
                        feed_url = %meta.feed_url,
                        bytes = gone,
                        "cache: evicted to stay under {max} bytes"
                    );
                    evicted.push(meta.feed_url.clone());
                }
                freed += gone;
            }
            *total = total.saturating_sub(freed);
        }
        evicted
    }
}

/// Removes the files of an entry that its metadata does not name (current or superseded
/// body) and that are past the grace period: a write that never finished, an older layout.
/// Returns the bytes freed.
pub(crate) fn remove_unnamed_past_grace(entry: &OnDisk) -> u64 {
    let named = |p: &Path| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        match (&entry.meta, name) {
            (_, None) => true,
            (_, Some(n)) if n.ends_with(".json") => true,
            (None, Some(_)) => false,
            (Some(m), Some(n)) => m.body_file == n || m.superseded.iter().any(|s| s.file == n),
        }
    };
    entry
        .files
        .iter()
        .filter(|f| !named(&f.0) && f.2.is_some_and(|age| age > SUPERSEDED_BODY_GRACE))
        .filter(|f| fs::remove_file(&f.0).is_ok())
        .map(|f| f.1)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::StoreRequest;
    use crate::payload::Payload;

    fn store(cache: &Cache, url: &str, len: usize) {
        let req = StoreRequest {
            feed_url: url,
            final_url: url,
            etag: None,
            last_modified: None,
            content_type: None,
            received_ms: 0,
        };
        cache.store(&req, &Payload::from(vec![b'x'; len])).unwrap();
    }

    fn writes_unmeasured(cache: &Cache) -> u32 {
        cache.size.lock().unwrap().writes
    }

    #[test]
    fn far_below_the_cap_writes_are_counted_and_near_it_each_one_measures() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap().with_max_bytes(100_000);
        store(&cache, "http://a/0", 10_000);
        assert_eq!(writes_unmeasured(&cache), 0, "the first write measures");
        store(&cache, "http://a/1", 10_000);
        store(&cache, "http://a/2", 10_000);
        assert_eq!(writes_unmeasured(&cache), 2);
        // Past three quarters of the cap (by what was counted), every write measures.
        for i in 3..12 {
            store(&cache, &format!("http://a/{i}"), 10_000);
        }
        assert_eq!(writes_unmeasured(&cache), 0);
        assert!(dir_bytes(dir.path()) <= 100_000);
    }
}
