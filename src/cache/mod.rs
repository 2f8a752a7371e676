//! The file cache: per feed URL one file holding its metadata and the raw body, written
//! atomically.
//!
//! Layout under the cache directory: `<kind>/<XX>/<key>.entry`, where `<kind>` is `feeds`,
//! `pages` or `robots`, `<key>` 32 hex digits of the URL's hash and `XX` its first two (256
//! folders: a file system creates a file slower the more files, and the more files lately
//! deleted, its folder holds, and creations in one folder wait on each other). The file is
//! the metadata ([`Meta`]) as one line of JSON, a newline, then the body. It is written
//! through a temporary file in the same folder and a rename, so a reader sees an old
//! complete entry or a new complete entry, never a torn one (a reader that opened the old
//! file reads it to its end). One file an entry: one file created per write, which is what
//! a write costs a file system most. Anything that does not check out (bad JSON, wrong
//! length or hash) is a miss with a warning, never a crash.
//!
//! Every change of an entry (a new body, a `304`'s touch, an eviction) is a
//! read-modify-write under the entry's lock (`locks/XX.lock`, one of 256 shared by the
//! entries whose key starts with `XX`, held only meanwhile), so writers in several
//! processes never undo each other: an older response never replaces a newer one, a touch
//! changes the entry only if it still holds the body that was validated, and an eviction
//! removes it only if it is still the entry that was listed. A write never lists the
//! directory, so it costs the same with ten entries as with a hundred thousand.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;
use sha2::{Digest, Sha256};

mod credential_key;
mod entry;
pub(crate) mod flight;
pub(crate) mod freshness;
pub(crate) mod shared;
mod size;

pub use credential_key::CredentialKey;
use entry::fresh_until;
pub(crate) use entry::now_ms;
pub use entry::{CacheError, Entry, Lookup, Meta, StoreRequest};

use crate::date;
use crate::error::{Error, Result};
use crate::lockfile;
use crate::model::CacheEntryInfo;
use crate::payload::Payload;

const META_VERSION: u32 = 2;

/// How long a file that is no entry (a write's temporary file, a file of an older layout)
/// is left alone before a clear or an eviction removes it (a write may still be under way).
const ORPHAN_GRACE: Duration = Duration::from_secs(60);
/// The longest a change of an entry waits for another process's change of the same entry.
const ENTRY_LOCK_WAIT: Duration = Duration::from_secs(5);
/// The longest metadata line an entry file may start with.
const META_MAX_BYTES: usize = 1 << 20;

/// What a cache entry holds; each kind has its own folder (`rss show` never reads a page
/// as a feed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A feed (`feeds/`).
    Feed,
    /// A page read as an article (`pages/`).
    Page,
    /// A robots.txt (`robots/`).
    Robots,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 3] = [Kind::Feed, Kind::Page, Kind::Robots];

    /// The kind's folder under the cache directory.
    fn dir_name(self) -> &'static str {
        match self {
            Kind::Feed => "feeds",
            Kind::Page => "pages",
            Kind::Robots => "robots",
        }
    }

    /// The kind as `rss cache list` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Feed => "feed",
            Kind::Page => "page",
            Kind::Robots => "robots",
        }
    }
}

/// The file cache (one kind of entry at a time: [`Cache::of`] gives another kind's).
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    /// The cap on bytes on disk (`None` or 0: no cap).
    max_bytes: Option<u64>,
    /// The kind of entry this handle reads and writes.
    kind: Kind,
    /// The shared count's lock and file, opened once and kept.
    count: std::sync::Arc<size::CountFiles>,
    /// The key of credential fingerprints, read (or drawn) on first use.
    credential_key: std::sync::Arc<std::sync::OnceLock<Option<CredentialKey>>>,
}

fn key(feed_url: &str) -> String {
    let mut k = hex::encode(Sha256::digest(feed_url.as_bytes()));
    k.truncate(32);
    k
}

impl Cache {
    /// Opens (creating) the cache in `dir`; an error if it cannot be written.
    pub fn open(dir: &Path) -> Result<Cache> {
        for kind in Kind::ALL {
            let sub = dir.join(kind.dir_name());
            fs::create_dir_all(&sub)
                .map_err(|e| Error::io("cannot create the cache directory", &sub, e))?;
        }
        let feeds = dir.join(Kind::Feed.dir_name());
        let probe = tempfile::NamedTempFile::new_in(&feeds)
            .map_err(|e| Error::io("cannot write in the cache directory", &feeds, e))?;
        drop(probe);
        let locks = dir.join("locks");
        fs::create_dir_all(&locks)
            .map_err(|e| Error::io("cannot create the cache directory", &locks, e))?;
        Ok(Cache {
            dir: dir.to_path_buf(),
            max_bytes: Some(crate::config::DEFAULT_CACHE_MAX_BYTES),
            kind: Kind::Feed,
            count: Default::default(),
            credential_key: Default::default(),
        })
    }

    /// The key this cache fingerprints credentials with ([`CredentialKey`]), read from
    /// the cache directory (or drawn and kept there) on first use; `None` when the system
    /// gives no randomness (then no private body is cached). Blocking: call off the async
    /// threads.
    pub(crate) fn credential_key(&self) -> Option<CredentialKey> {
        self.credential_key
            .get_or_init(|| credential_key::load_or_draw(&self.dir))
            .clone()
    }

    /// The same cache, reading and writing entries of `kind`.
    pub fn of(&self, kind: Kind) -> Cache {
        Cache {
            kind,
            ..self.clone()
        }
    }

    /// This cache with a cap of `max` bytes on disk (0: no cap).
    pub fn with_max_bytes(mut self, max: u64) -> Cache {
        self.max_bytes = (max > 0).then_some(max);
        self
    }

    /// The cap on bytes on disk, if any.
    pub fn max_bytes(&self) -> Option<u64> {
        self.max_bytes
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn feeds(&self) -> PathBuf {
        self.dir.join(self.kind.dir_name())
    }

    /// The folder of the entries whose key starts like `key`'s: one of 256 under the kind's
    /// folder. Creating a file costs a file system more the more files (and the more files
    /// lately deleted) its folder holds, and creations in one folder wait on each other.
    fn entry_dir(&self, key: &str) -> PathBuf {
        self.feeds().join(key.get(..2).unwrap_or("00"))
    }

    fn entry_path(&self, feed_url: &str) -> PathBuf {
        let k = key(feed_url);
        self.entry_dir(&k).join(format!("{k}.entry"))
    }

    /// Whether an entry for `feed_url` exists (one `stat`).
    pub fn has_entry(&self, feed_url: &str) -> bool {
        self.entry_path(feed_url).exists()
    }

    /// Looks `feed_url` up and verifies what it finds.
    pub fn load(&self, feed_url: &str) -> Lookup {
        match self.load_once(feed_url) {
            Ok(Some(entry)) => Lookup::Hit(Box::new(entry)),
            Ok(None) => Lookup::Miss,
            Err(e) => Lookup::Corrupt(e),
        }
    }

    fn load_once(&self, feed_url: &str) -> std::result::Result<Option<Entry>, CacheError> {
        let path = self.entry_path(feed_url);
        let file = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CacheError::Read { path, source }),
        };
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
        let meta = read_meta_line(&mut reader, &path)?;
        if meta.version != META_VERSION || meta.feed_url != feed_url {
            return Err(CacheError::Foreign {
                path,
                why: "belongs to another entry",
            });
        }
        let body = read_chunked(&mut reader).map_err(|source| CacheError::Read {
            path: path.clone(),
            source,
        })?;
        // Entries are renamed into place whole: a wrong body is damage, and the entry goes
        // (the next store writes it again).
        if body.len() as u64 != meta.body_len {
            let _ = fs::remove_file(&path);
            return Err(CacheError::Length {
                path,
                got: body.len() as u64,
                expected: meta.body_len,
            });
        }
        if sha256_hex(&body) != meta.body_sha256 {
            let _ = fs::remove_file(&path);
            return Err(CacheError::Hash { path });
        }
        Ok(Some(Entry { meta, body }))
    }

    /// The lock of the entries whose key starts like `key`'s: one of 256 files that stay (a
    /// file created and deleted per write costs the file system more than the write).
    fn lock_path(&self, key: &str) -> PathBuf {
        let bucket = key.get(..2).unwrap_or("00");
        self.dir.join("locks").join(format!("{bucket}.lock"))
    }

    /// Runs `f` holding `feed_url`'s entry lock (taken from a blocking thread).
    fn with_entry_lock<T>(&self, key: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let path = self.lock_path(key);
        let take = |path: &Path| lockfile::take_blocking(path, ENTRY_LOCK_WAIT);
        let held = match take(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The lock folder was cleared away: make it again.
                fs::create_dir_all(self.dir.join("locks"))
                    .map_err(|e| Error::io("cannot create", self.dir.join("locks"), e))?;
                take(&path)
            }
            r => r,
        }
        .map_err(|e| Error::io("cannot lock", &path, e))?;
        let Some(_held) = held else {
            return Err(Error::io(
                "cannot lock",
                &path,
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("another process held the entry for over {ENTRY_LOCK_WAIT:?}"),
                ),
            ));
        };
        f()
    }

    /// The entry's current metadata, if it is there and readable.
    fn current_meta(&self, feed_url: &str) -> Option<Meta> {
        let path = self.entry_path(feed_url);
        let file = fs::File::open(&path).ok()?;
        read_meta_line(&mut std::io::BufReader::new(file), &path)
            .ok()
            .filter(|m| m.version == META_VERSION && m.feed_url == feed_url)
    }

    /// Stores a fresh body and its metadata (unless another process meanwhile stored or
    /// confirmed a later response, which stays).
    pub fn store(&self, req: &StoreRequest<'_>, body: &Payload) -> Result<Meta> {
        let k = key(req.feed_url);
        let now = Utc::now();
        let received_ms = if req.received_ms == 0 {
            now_ms()
        } else {
            req.received_ms
        };
        let meta = Meta {
            version: META_VERSION,
            feed_url: req.feed_url.to_owned(),
            final_url: req.final_url.to_owned(),
            etag: req.etag.map(str::to_owned),
            last_modified: req.last_modified.map(str::to_owned),
            content_type: req.content_type.map(str::to_owned),
            fetched_at: date::format(&now),
            body_len: body.len() as u64,
            body_sha256: sha256_hex(body),
            received_ms,
            fresh_until_ms: fresh_until(received_ms, &req.freshness),
            fresh_from_expires: req.freshness.from_expires,
            must_revalidate: req.freshness.must_revalidate,
            private: req.credentialed || req.freshness.private,
            credential_id: req.credential_id.map(str::to_owned),
            via_https: req.via_https,
            no_cache: req.freshness.no_cache,
            declared: req.declared,
        };
        // Written before the lock is taken; put in place (or dropped) under it.
        let written = self.write_temp(&k, &meta, body)?;
        let kept = self.with_entry_lock(&k, || {
            if let Some(p) = self
                .current_meta(req.feed_url)
                .filter(|p| p.received_ms > received_ms)
            {
                return Ok(p);
            }
            written
                .persist(self.entry_path(req.feed_url))
                .map_err(|e| Error::io("cannot rename into place", e.file.path(), e.error))?;
            Ok(meta)
        })?;
        self.enforce_cap(&k, body.len() as u64, 0);
        Ok(kept)
    }

    /// Keeps `entry` (a copy another node fetched, from the fleet's shared tier) as this
    /// URL's entry, unless the entry here records a response as late or later; whether it
    /// was kept.
    pub fn adopt(&self, entry: &Entry) -> Result<bool> {
        let k = key(&entry.meta.feed_url);
        let written = self.write_temp(&k, &entry.meta, &entry.body)?;
        let kept = self.with_entry_lock(&k, || {
            if self
                .current_meta(&entry.meta.feed_url)
                .is_some_and(|p| p.received_ms >= entry.meta.received_ms)
            {
                return Ok(false);
            }
            written
                .persist(self.entry_path(&entry.meta.feed_url))
                .map_err(|e| Error::io("cannot rename into place", e.file.path(), e.error))?;
            Ok(true)
        })?;
        if kept {
            self.enforce_cap(&k, entry.body.len() as u64, 0);
        }
        Ok(kept)
    }

    /// Records a successful revalidation (`304`, arrived at Unix ms `received_ms`) of the
    /// entry `validated`: it is fresh as of then. When the entry meanwhile holds another
    /// body, or records a later response (another process stored or confirmed it), it is
    /// left as it is and `None` comes back.
    pub fn touch(
        &self,
        validated: &Entry,
        etag: Option<&str>,
        last_modified: Option<&str>,
        received_ms: u64,
        freshness: &crate::cache::freshness::Freshness,
    ) -> Result<Option<Meta>> {
        let k = key(&validated.meta.feed_url);
        self.with_entry_lock(&k, || {
            let Some(mut meta) = self.current_meta(&validated.meta.feed_url).filter(|m| {
                m.body_sha256 == validated.meta.body_sha256 && m.received_ms <= received_ms
            }) else {
                return Ok(None);
            };
            meta.fetched_at = date::format(&Utc::now());
            if freshness.stated {
                meta.fresh_until_ms = fresh_until(received_ms, freshness);
                meta.fresh_from_expires = freshness.from_expires;
                meta.must_revalidate = freshness.must_revalidate;
                meta.no_cache = freshness.no_cache;
            } else if !meta.fresh_from_expires {
                // A 304 that says nothing of freshness keeps the stored `max-age` (and
                // `must-revalidate`), counted again from this response (RFC 9111 §4.3.4);
                // a stored `Expires` stays the instant it was.
                let lifetime = meta
                    .fresh_until_ms
                    .map(|until| until.saturating_sub(meta.received_ms));
                meta.fresh_until_ms = lifetime.map(|l| received_ms.saturating_add(l));
            }
            meta.received_ms = received_ms;
            if let Some(e) = etag {
                meta.etag = Some(e.to_owned());
            }
            if let Some(lm) = last_modified {
                meta.last_modified = Some(lm.to_owned());
            }
            self.write_temp(&k, &meta, &validated.body)?
                .persist(self.entry_path(&meta.feed_url))
                .map_err(|e| Error::io("cannot rename into place", e.file.path(), e.error))?;
            Ok(Some(meta))
        })
    }

    /// Records `declared` as the schedule the feed of `feed_url` declares, in its entry —
    /// only while the entry still records the response that arrived at `received_ms`, the
    /// one whose body was read (another process may have stored a newer one). The entry as
    /// rewritten, when it was.
    pub fn note_declared(
        &self,
        feed_url: &str,
        received_ms: u64,
        declared: Option<crate::cache::freshness::Declared>,
    ) -> Result<Option<Entry>> {
        let k = key(feed_url);
        self.with_entry_lock(&k, || {
            let Ok(Some(entry)) = self.load_once(feed_url) else {
                return Ok(None);
            };
            if entry.meta.received_ms != received_ms || entry.meta.declared == declared {
                return Ok(None);
            }
            let meta = Meta {
                declared,
                ..entry.meta
            };
            self.write_temp(&k, &meta, &entry.body)?
                .persist(self.entry_path(feed_url))
                .map_err(|e| Error::io("cannot rename into place", e.file.path(), e.error))?;
            Ok(Some(Entry {
                meta,
                body: entry.body,
            }))
        })
    }

    /// The entry `meta` + `body` written to a temporary file in its folder (made on its
    /// first write, or again after a clear) and flushed to disk, not yet in place.
    fn write_temp(
        &self,
        key: &str,
        meta: &Meta,
        body: &Payload,
    ) -> Result<tempfile::NamedTempFile> {
        let dir = self.entry_dir(key);
        let tmp = match tempfile::NamedTempFile::new_in(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir_all(&dir).and_then(|()| tempfile::NamedTempFile::new_in(&dir))
            }
            r => r,
        };
        let mut tmp = tmp.map_err(|e| Error::io("cannot create a temporary file in", &dir, e))?;
        let mut line =
            serde_json::to_vec(meta).map_err(|e| Error::internal_from("cache metadata", e))?;
        line.push(b'\n');
        // Flushed to disk here, before any lock is taken, so that the rename into place
        // (the caller's, under the entry's lock) never names data the disk did not get.
        std::iter::once(line.as_slice())
            .chain(body.chunks())
            .try_for_each(|c| tmp.write_all(c))
            .and_then(|()| crate::durable::flush(&tmp))
            .map_err(|e| Error::io("cannot write", tmp.path().to_path_buf(), e))?;
        Ok(tmp)
    }

    /// Every entry's metadata (of every kind) with its bytes on disk, unreadable ones as
    /// warnings, sorted by kind and URL; and the bytes of the whole cache directory (host
    /// state included).
    pub fn list(&self) -> (Vec<(Meta, CacheEntryInfo)>, Vec<String>, u64) {
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        for ((kind, _), entry) in self.on_disk() {
            let disk_bytes = entry.bytes();
            match entry.meta {
                Some(meta) => {
                    let info = CacheEntryInfo {
                        kind: kind.as_str().to_owned(),
                        feed_url: meta.feed_url.clone(),
                        fetched_at: meta.fetched_at.clone(),
                        bytes: meta.body_len,
                        disk_bytes,
                        etag: meta.etag.clone(),
                        last_modified: meta.last_modified.clone(),
                        private: meta.private,
                    };
                    out.push((meta, info));
                }
                None => {
                    if let Some((path, _, _)) = entry
                        .files
                        .iter()
                        .find(|f| f.0.extension().is_some_and(|e| e == "entry"))
                    {
                        warnings.push(format!("unreadable cache entry {}", path.display()));
                    }
                }
            }
        }
        out.sort_by(|a, b| (&a.1.kind, &a.0.feed_url).cmp(&(&b.1.kind, &b.0.feed_url)));
        (out, warnings, size::dir_bytes(&self.dir))
    }

    /// Removes `url`'s entry (a response said `no-store`).
    pub fn forget(&self, url: &str) -> Result<()> {
        if let Some(meta) = self.current_meta(url) {
            self.remove_entry_if_unchanged(&key(url), &meta)?;
        }
        Ok(())
    }

    /// Removes entries (all, or those older than `older_than`); returns how many. Each
    /// goes under its lock; a file that is no entry (a temporary file, an older layout's)
    /// is removed once it is past its grace period (a younger one may be a write under way).
    pub fn clear(&self, older_than: Option<Duration>) -> Result<usize> {
        let now = Utc::now();
        let mut removed = 0;
        for ((kind, key), entry) in self.on_disk() {
            size::remove_orphans_past_grace(&entry);
            let Some(listed) = entry.meta.as_ref() else {
                continue;
            };
            let old_enough =
                older_than.is_none_or(|limit| listed.age(now).is_none_or(|age| age >= limit));
            if old_enough && self.of(kind).remove_entry_if_unchanged(&key, listed)? > 0 {
                removed += 1;
            }
        }
        self.recount();
        Ok(removed)
    }

    /// Removes the entry `listed` describes, under the entry's lock, only if it is still
    /// that entry (another process may have written it since it was listed). Returns the
    /// bytes freed.
    pub(crate) fn remove_entry_if_unchanged(&self, _key: &str, listed: &Meta) -> Result<u64> {
        self.with_entry_lock(&key(&listed.feed_url), || {
            let Some(current) = self.current_meta(&listed.feed_url) else {
                return Ok(0);
            };
            if current.body_sha256 != listed.body_sha256 || current.fetched_at != listed.fetched_at
            {
                return Ok(0);
            }
            let path = self.entry_path(&current.feed_url);
            let len = fs::metadata(&path).map_or(0, |m| m.len());
            fs::remove_file(&path).map_err(|e| Error::io("cannot remove", &path, e))?;
            Ok(len)
        })
    }
}

/// Reads an entry file's first line, its metadata.
fn read_meta_line<R: std::io::BufRead>(
    reader: &mut R,
    path: &Path,
) -> std::result::Result<Meta, CacheError> {
    use std::io::{BufRead, Read};
    let mut line = Vec::new();
    reader
        .by_ref()
        .take(META_MAX_BYTES as u64)
        .read_until(b'\n', &mut line)
        .map_err(|source| CacheError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if line.pop() != Some(b'\n') {
        return Err(CacheError::Foreign {
            path: path.to_path_buf(),
            why: "has no metadata line",
        });
    }
    serde_json::from_slice(&line).map_err(|source| CacheError::BadMeta {
        path: path.to_path_buf(),
        source,
    })
}

fn sha256_hex(body: &Payload) -> String {
    let mut h = Sha256::new();
    for c in body.chunks() {
        h.update(c);
    }
    hex::encode(h.finalize())
}

/// Reads the rest of `reader` into a chunked body.
fn read_chunked(reader: &mut impl std::io::Read) -> std::io::Result<Payload> {
    let mut body = Payload::default();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files under `dir`, in its folders too.
    fn files_under(dir: &Path) -> usize {
        fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                if e.file_type().unwrap().is_dir() {
                    files_under(&e.path())
                } else {
                    1
                }
            })
            .sum()
    }

    fn req(url: &str) -> StoreRequest<'_> {
        StoreRequest {
            feed_url: url,
            final_url: url,
            etag: Some("\"v1\""),
            last_modified: None,
            content_type: Some("application/rss+xml"),
            received_ms: 0,
            freshness: Default::default(),
            credentialed: false,
            credential_id: None,
            via_https: false,
            declared: None,
        }
    }

    #[test]
    fn a_stored_entry_loads_back_verified() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        assert!(matches!(cache.load("http://a/feed"), Lookup::Miss));
        cache
            .store(&req("http://a/feed"), &Payload::from(&b"<rss/>"[..]))
            .unwrap();
        let Lookup::Hit(e) = cache.load("http://a/feed") else {
            panic!("expected a hit")
        };
        assert_eq!(e.body.into_vec(), b"<rss/>");
        assert_eq!(e.meta.etag.as_deref(), Some("\"v1\""));
        cache
            .store(&req("http://a/feed"), &Payload::from(&b"<rss>2</rss>"[..]))
            .unwrap();
        let Lookup::Hit(e) = cache.load("http://a/feed") else {
            panic!("expected a hit")
        };
        assert_eq!(e.body.into_vec(), b"<rss>2</rss>");
    }

    #[test]
    fn damaged_entries_are_misses_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let url = "http://a/feed";
        let body = Payload::from(&b"<rss>body</rss>"[..]);
        cache.store(&req(url), &body).unwrap();
        let path = cache.entry_path(url);
        let whole = fs::read(&path).unwrap();
        fs::write(&path, &whole[..whole.len() - 4]).unwrap();
        assert!(matches!(
            cache.load(url),
            Lookup::Corrupt(CacheError::Length { .. })
        ));
        assert!(!path.exists(), "a damaged entry goes");
        let mut changed = whole.clone();
        let last = changed.len() - 2;
        changed[last] = b'X';
        fs::write(&path, &changed).unwrap();
        assert!(matches!(
            cache.load(url),
            Lookup::Corrupt(CacheError::Hash { .. })
        ));
        // The damaged entry went: the next store writes it again.
        assert!(!path.exists());
        cache.store(&req(url), &body).unwrap();
        assert!(matches!(cache.load(url), Lookup::Hit(_)));
        fs::write(&path, b"{garbage\nbody").unwrap();
        assert!(matches!(
            cache.load(url),
            Lookup::Corrupt(CacheError::BadMeta { .. })
        ));
        fs::write(&path, b"no line at all").unwrap();
        assert!(matches!(
            cache.load(url),
            Lookup::Corrupt(CacheError::Foreign { .. })
        ));
    }

    #[test]
    fn clear_respects_older_than() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        cache
            .store(&req("http://a/1"), &Payload::from(&b"1"[..]))
            .unwrap();
        cache
            .store(&req("http://a/2"), &Payload::from(&b"2"[..]))
            .unwrap();
        assert_eq!(cache.clear(Some(Duration::from_secs(3600))).unwrap(), 0);
        assert_eq!(cache.list().0.len(), 2);
        assert_eq!(cache.clear(None).unwrap(), 2);
        assert_eq!(files_under(&dir.path().join("feeds")), 0);
    }

    fn at(url: &str, received_ms: u64) -> StoreRequest<'_> {
        StoreRequest {
            received_ms,
            ..req(url)
        }
    }

    fn body_of(cache: &Cache, url: &str) -> Vec<u8> {
        match cache.load(url) {
            Lookup::Hit(e) => e.body.into_vec(),
            other => panic!("expected a hit, got {other:?}"),
        }
    }

    #[test]
    fn a_304_never_puts_back_a_body_another_process_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let url = "http://a/feed";
        let meta = cache
            .store(&at(url, 1_000), &Payload::from(&b"old"[..]))
            .unwrap();
        let old = Entry {
            meta,
            body: Payload::from(&b"old"[..]),
        };
        // Another process stores a newer body after this one loaded `old`...
        cache
            .store(&at(url, 2_000), &Payload::from(&b"new"[..]))
            .unwrap();
        // ...and this one's 304 (for `old`) arrives later still.
        assert_eq!(
            cache
                .touch(&old, None, None, 3_000, &Default::default())
                .unwrap(),
            None
        );
        assert_eq!(body_of(&cache, url), b"new");
    }

    #[test]
    fn issue_27_a_bare_304_keeps_the_stored_freshness_and_must_revalidate() {
        use crate::cache::freshness::Freshness;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let url = "http://a/feed";
        let stored = Freshness {
            lifetime: Some(Duration::from_secs(300)),
            must_revalidate: true,
            stated: true,
            ..Freshness::default()
        };
        let meta = cache
            .store(
                &StoreRequest {
                    freshness: stored,
                    ..at(url, 1_000)
                },
                &Payload::from(&b"v1"[..]),
            )
            .unwrap();
        assert_eq!(meta.fresh_until_ms, Some(301_000));
        let entry = |meta: Meta, body: &[u8]| Entry {
            meta,
            body: Payload::from(body),
        };
        // A 304 with no Cache-Control or Expires: the stored max-age counts from it.
        let touched = cache
            .touch(
                &entry(meta, b"v1"),
                None,
                None,
                5_000,
                &Freshness::default(),
            )
            .unwrap()
            .unwrap();
        assert_eq!(touched.fresh_until_ms, Some(305_000));
        assert!(touched.must_revalidate);
        // A 304 that says something replaces what it says.
        let said = Freshness {
            lifetime: Some(Duration::from_secs(10)),
            stated: true,
            ..Freshness::default()
        };
        let touched = cache
            .touch(&entry(touched, b"v1"), None, None, 6_000, &said)
            .unwrap()
            .unwrap();
        assert_eq!(touched.fresh_until_ms, Some(16_000));
        assert!(!touched.must_revalidate);
        // A stored Expires is an instant: a bare 304 does not move it.
        let expires = Freshness {
            lifetime: Some(Duration::from_secs(100)),
            stated: true,
            from_expires: true,
            ..Freshness::default()
        };
        let meta = cache
            .store(
                &StoreRequest {
                    freshness: expires,
                    ..at(url, 7_000)
                },
                &Payload::from(&b"v2"[..]),
            )
            .unwrap();
        let touched = cache
            .touch(
                &entry(meta, b"v2"),
                None,
                None,
                9_000,
                &Freshness::default(),
            )
            .unwrap()
            .unwrap();
        assert_eq!(touched.fresh_until_ms, Some(107_000));
        assert_eq!(
            body_of(&cache, url),
            b"v2",
            "the body stays with its new metadata"
        );
    }

    #[test]
    fn an_older_response_never_replaces_a_newer_one() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let url = "http://a/feed";
        cache
            .store(&at(url, 2_000), &Payload::from(&b"v2"[..]))
            .unwrap();
        // A response that arrived earlier is stored later: it does not win.
        let kept = cache
            .store(&at(url, 1_000), &Payload::from(&b"v1"[..]))
            .unwrap();
        assert_eq!(kept.received_ms, 2_000);
        assert_eq!(body_of(&cache, url), b"v2");
        // Its file did not stay behind.
        assert_eq!(files_under(&dir.path().join("feeds")), 1, "one entry file");
        // A 304 that confirms the current body moves it on.
        let Lookup::Hit(cur) = cache.load(url) else {
            panic!("a hit")
        };
        let touched = cache
            .touch(&cur, Some("\"v3\""), None, 3_000, &Default::default())
            .unwrap()
            .unwrap();
        assert_eq!(touched.received_ms, 3_000);
        assert_eq!(touched.etag.as_deref(), Some("\"v3\""));
    }

    #[test]
    fn each_write_of_an_entry_leaves_one_file_and_a_reader_of_the_old_one_reads_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let url = "http://a/feed";
        cache.store(&req(url), &Payload::from(&b"one"[..])).unwrap();
        // A reader opens the entry...
        let mut reader = std::io::BufReader::new(fs::File::open(cache.entry_path(url)).unwrap());
        // ...a writer replaces it...
        cache.store(&req(url), &Payload::from(&b"two"[..])).unwrap();
        cache
            .store(&req(url), &Payload::from(&b"three"[..]))
            .unwrap();
        // ...and the reader still reads the entry it opened, whole.
        let meta = read_meta_line(&mut reader, Path::new("x")).unwrap();
        assert_eq!(read_chunked(&mut reader).unwrap().into_vec(), b"one");
        assert_eq!(meta.body_len, 3);
        assert_eq!(body_of(&cache, url), b"three");
        assert_eq!(files_under(&dir.path().join("feeds")), 1);
        // A temporary file a crashed write left goes once past its grace, with a clear.
        let stray = cache.entry_dir(&key(url)).join(".tmpCRASHED");
        fs::write(&stray, b"half").unwrap();
        let old = std::time::SystemTime::now() - ORPHAN_GRACE * 2;
        fs::File::options()
            .write(true)
            .open(&stray)
            .unwrap()
            .set_modified(old)
            .unwrap();
        cache.clear(Some(Duration::from_secs(3600))).unwrap();
        assert!(!stray.exists());
        assert_eq!(body_of(&cache, url), b"three", "a young entry stays");
        // The entry locks are a fixed set of files.
        assert!(fs::read_dir(dir.path().join("locks")).unwrap().count() <= 256);
    }

    #[test]
    fn an_entry_rewritten_after_it_was_listed_is_not_removed_by_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let url = "http://a/feed";
        let listed = cache
            .store(&at(url, 1_000), &Payload::from(&b"one"[..]))
            .unwrap();
        cache
            .store(&at(url, 2_000), &Payload::from(&b"two"[..]))
            .unwrap();
        assert_eq!(
            cache.remove_entry_if_unchanged(&key(url), &listed).unwrap(),
            0
        );
        assert_eq!(body_of(&cache, url), b"two");
        let current = cache.current_meta(url).unwrap();
        assert!(
            cache
                .remove_entry_if_unchanged(&key(url), &current)
                .unwrap()
                > 0
        );
        assert!(matches!(cache.load(url), Lookup::Miss));
    }
}
