//! What the cache costs on disk, and the cap that keeps it there: whole entries are evicted,
//! least recently fetched first, when a write passes `--cache-max-bytes`.
//!
//! Measuring the directory costs a `stat` per file, so a write never measures it: every
//! process adds what it writes to one shared count (`size.json`, changed under an advisory
//! lock on `.evict.lock`), and only a count past the cap — or one older than an hour, or
//! missing — is checked against the directory itself. A measured cache over its cap is
//! brought down to seven eighths of it, so the next measurement waits for an eighth of the
//! cap in new writes: a write costs the same with ten entries as with a hundred thousand.
//! An entry goes under its lock and only if it is still the entry that was listed, so a
//! reader meets a whole entry or a miss, and another process's just-written entry stays. A
//! file that is no entry (a write's temporary file, a file of an older layout) is kept
//! through a grace period and counted meanwhile.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::{Cache, Kind, Meta, ORPHAN_GRACE, now_ms};

/// How old the shared count may be before a write checks it against the directory.
const REMEASURE_AFTER: Duration = Duration::from_secs(3600);

/// The shared count of the cache's bytes on disk.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Counted {
    /// Bytes on disk, as counted.
    bytes: u64,
    /// When the directory itself was last measured (Unix ms).
    measured_ms: u64,
}

/// The shared count's lock file and count file, opened once per process and kept.
#[derive(Debug, Default)]
pub(crate) struct CountFiles(std::sync::Mutex<Option<(fs::File, fs::File)>>);

/// One entry's files as found on disk: its entry file, or (with no metadata) a file that
/// is no entry.
#[derive(Debug, Default)]
pub(crate) struct OnDisk {
    /// The metadata, when the entry file is there and readable.
    pub meta: Option<Meta>,
    /// Its files with their sizes and ages.
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
    /// Every entry's files, of every kind, by kind and key (the first 32 hex digits of
    /// each entry file's name; a file that is no entry by its own name).
    pub(crate) fn on_disk(&self) -> HashMap<(Kind, String), OnDisk> {
        let mut out: HashMap<(Kind, String), OnDisk> = HashMap::new();
        for kind in Kind::ALL {
            self.of(kind).on_disk_into(kind, &mut out);
        }
        out
    }

    fn on_disk_into(&self, kind: Kind, out: &mut HashMap<(Kind, String), OnDisk>) {
        let Ok(dir) = fs::read_dir(self.feeds()) else {
            return;
        };
        let mut files = Vec::new();
        for entry in dir.flatten() {
            let name = entry.file_name();
            let shard = name.len() == 2
                && name
                    .to_str()
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_hexdigit()));
            if shard && entry.file_type().is_ok_and(|t| t.is_dir()) {
                if let Ok(inner) = fs::read_dir(entry.path()) {
                    files.extend(inner.flatten());
                }
            } else if entry.file_type().is_ok_and(|t| t.is_file()) {
                // A file of the layout before the folders by key.
                files.push(entry);
            }
        }
        let now = SystemTime::now();
        for entry in files {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(md) = entry.metadata() else { continue };
            let age = md.modified().ok().and_then(|t| now.duration_since(t).ok());
            let keyed = name
                .strip_suffix(".entry")
                .filter(|k| k.len() == 32 && k.bytes().all(|b| b.is_ascii_hexdigit()));
            let slot = out
                .entry((kind, keyed.map_or_else(|| name.clone(), str::to_owned)))
                .or_default();
            if keyed.is_some() {
                slot.meta = fs::File::open(entry.path()).ok().and_then(|f| {
                    super::read_meta_line(&mut std::io::BufReader::new(f), &entry.path()).ok()
                });
            }
            slot.files.push((entry.path(), md.len(), age));
        }
    }

    /// Runs `f` on the shared count's file, holding the count's lock: this process's (a
    /// mutex) and every process's (an advisory lock on `.evict.lock`). Both files are
    /// opened once and kept, never truncated or made again; opened afresh only when the
    /// file at the path is no longer the one held (the cache directory was removed).
    fn with_count<T>(&self, f: impl FnOnce(&fs::File) -> T) -> Option<T> {
        use std::os::unix::fs::MetadataExt;
        let mut held = self.count.0.lock().unwrap_or_else(|e| e.into_inner());
        let (lock_path, count_path) = (self.dir.join(".evict.lock"), self.dir.join("size.json"));
        let same = |file: &fs::File, path: &Path| {
            let (Ok(a), Ok(b)) = (file.metadata(), fs::metadata(path)) else {
                return false;
            };
            a.ino() == b.ino() && a.dev() == b.dev()
        };
        if !held
            .as_ref()
            .is_some_and(|(l, c)| same(l, &lock_path) && same(c, &count_path))
        {
            let open = |p: &Path, read: bool| {
                fs::OpenOptions::new()
                    .create(true)
                    .read(read)
                    .write(true)
                    .truncate(false)
                    .open(p)
            };
            *held = Some((open(&lock_path, false).ok()?, open(&count_path, true).ok()?));
        }
        let (lock, count) = held.as_ref()?;
        lock.lock().ok()?;
        let out = f(count);
        let _ = lock.unlock();
        Some(out)
    }

    fn read_count(file: &fs::File) -> Option<Counted> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 512];
        let n = file.read_at(&mut buf, 0).ok()?;
        serde_json::from_slice(&buf[..n]).ok()
    }

    /// Writes the count in place (under the count's lock, so no reader sees it
    /// half-written but after a crash, when it does not parse and is measured afresh).
    fn write_count(file: &fs::File, c: Counted) {
        use std::os::unix::fs::FileExt;
        let Ok(json) = serde_json::to_vec(&c) else {
            return;
        };
        if file.write_all_at(&json, 0).is_ok() {
            let _ = file.set_len(json.len() as u64);
        }
    }

    /// Measures the directory and records it as the shared count (after a clear).
    pub(crate) fn recount(&self) {
        self.with_count(|file| {
            Self::write_count(
                file,
                Counted {
                    bytes: dir_bytes(&self.dir),
                    measured_ms: now_ms(),
                },
            );
        });
    }

    /// Counts a write of `written` bytes that freed `freed`, and
    /// brings the cache under its cap when the count passes it: evicts whole entries, least
    /// recently fetched first, never `keep`, down to seven eighths of the cap. Returns the
    /// feed URLs evicted.
    pub(crate) fn enforce_cap(&self, keep: &str, written: u64, freed: u64) -> Vec<String> {
        let Some(max) = self.max_bytes.filter(|m| *m > 0) else {
            return Vec::new();
        };
        self.with_count(|file| self.count_and_cap(file, keep, written, freed, max))
            .unwrap_or_default()
    }

    fn count_and_cap(
        &self,
        file: &fs::File,
        keep: &str,
        written: u64,
        freed: u64,
        max: u64,
    ) -> Vec<String> {
        let now = now_ms();
        let fresh = Self::read_count(file)
            .filter(|c| now.saturating_sub(c.measured_ms) < REMEASURE_AFTER.as_millis() as u64);
        let mut count = match fresh {
            Some(c) => Counted {
                bytes: (c.bytes + written).saturating_sub(freed),
                ..c
            },
            None => Counted {
                bytes: dir_bytes(&self.dir),
                measured_ms: now,
            },
        };
        let mut evicted = Vec::new();
        if count.bytes > max {
            count = Counted {
                bytes: dir_bytes(&self.dir),
                measured_ms: now,
            };
            if count.bytes > max {
                evicted = self.evict(keep, max - max / 8, &mut count.bytes);
            }
        }
        Self::write_count(file, count);
        evicted
    }

    /// Evicts entries (never `keep`) until `total` is within `max`; the feed URLs evicted.
    fn evict(&self, keep: &str, max: u64, total: &mut u64) -> Vec<String> {
        let mut entries: Vec<((Kind, String), OnDisk)> = self.on_disk().into_iter().collect();
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
                .find(|f| f.0.extension().is_some_and(|x| x == "entry"))
                .and_then(|f| f.2)
                .unwrap_or_default();
            (fetched, std::cmp::Reverse(meta_age))
        });
        let mut evicted = Vec::new();
        for (key, entry) in entries {
            if *total <= max {
                break;
            }
            if key.0 == self.kind && key.1 == keep {
                continue;
            }
            let mut freed = remove_orphans_past_grace(&entry);
            if let Some(meta) = &entry.meta {
                let gone = self
                    .of(key.0)
                    .remove_entry_if_unchanged(&key.1, meta)
                    .unwrap_or(0);
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

/// Removes the files of an `entry` with no readable metadata (a write's temporary file, an
/// older layout's files, a damaged entry) that are past the grace period. Returns the bytes
/// freed.
pub(crate) fn remove_orphans_past_grace(entry: &OnDisk) -> u64 {
    if entry.meta.is_some() {
        return 0;
    }
    entry
        .files
        .iter()
        .filter(|f| f.2.is_some_and(|age| age > ORPHAN_GRACE))
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
            freshness: Default::default(),
            ..StoreRequest::default()
        };
        cache.store(&req, &Payload::from(vec![b'x'; len])).unwrap();
    }

    fn count(cache: &Cache) -> u64 {
        cache.with_count(Cache::read_count).flatten().unwrap().bytes
    }

    #[test]
    fn writes_are_counted_and_only_a_count_past_the_cap_measures() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap().with_max_bytes(100_000);
        store(&cache, "http://a/0", 10_000);
        let first = count(&cache);
        // The first write measures (all but the count's own file, written after).
        assert!(first > 10_000 && first <= dir_bytes(dir.path()), "{first}");
        // Bytes that are not the cache's own: no write sees them until a measurement.
        fs::write(dir.path().join("feeds").join("stray"), vec![b'x'; 50_000]).unwrap();
        store(&cache, "http://a/1", 10_000);
        assert!(
            count(&cache) < dir_bytes(dir.path()),
            "counted, not measured"
        );
        // Past the cap, the directory is measured and brought to 7/8 of the cap.
        for i in 2..12 {
            store(&cache, &format!("http://a/{i}"), 10_000);
        }
        assert!(
            dir_bytes(dir.path()) <= 100_000,
            "{}",
            dir_bytes(dir.path())
        );
        assert!(count(&cache) <= 100_000);
    }
}
