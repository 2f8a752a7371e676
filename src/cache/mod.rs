//! The file cache: per feed URL a metadata file and the raw body, written atomically.
//!
//! Layout under the cache directory: `feeds/<key>.json` (metadata, [`Meta`]) and
//! `feeds/<key>-<hash>.body` (the body, named by its content hash). A body is written
//! first, then the metadata that names it, each through a temporary file in the same
//! folder and a rename, so a reader sees an old complete entry or a new complete entry,
//! never a torn one. Anything that does not check out (bad JSON, wrong length or hash,
//! missing body) is a miss with a warning, never a crash.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod size;

pub use size::DEFAULT_MAX_BYTES;

use crate::error::{Error, Result};
use crate::feed::date;
use crate::model::CacheEntryInfo;
use crate::payload::Payload;

const META_VERSION: u32 = 1;

/// How long a superseded body is kept for readers that saw the previous metadata.
const SUPERSEDED_BODY_GRACE: Duration = Duration::from_secs(60);

/// What the cache keeps about one feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// Layout version.
    pub version: u32,
    /// The feed URL as requested.
    pub feed_url: String,
    /// The URL the body came from, after redirects.
    pub final_url: String,
    /// The origin's `ETag`.
    pub etag: Option<String>,
    /// The origin's `Last-Modified`.
    pub last_modified: Option<String>,
    /// The origin's `Content-Type`.
    pub content_type: Option<String>,
    /// When the body was fetched or last revalidated (UTC RFC 3339).
    pub fetched_at: String,
    /// The body's file name.
    pub body_file: String,
    /// The body's length in bytes.
    pub body_len: u64,
    /// sha256 of the body, hex.
    pub body_sha256: String,
}

impl Meta {
    /// When the body was fetched or last revalidated.
    pub fn fetched_at(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.fetched_at)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// Age of the entry at `now` (zero if it claims to come from the future).
    pub fn age(&self, now: DateTime<Utc>) -> Option<Duration> {
        let at = self.fetched_at()?;
        Some((now - at).to_std().unwrap_or(Duration::ZERO))
    }
}

/// A complete, verified cache entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its metadata.
    pub meta: Meta,
    /// The raw body.
    pub body: Payload,
}

/// The result of a lookup.
#[derive(Debug)]
pub enum Lookup {
    /// A complete, verified entry.
    Hit(Box<Entry>),
    /// Nothing cached.
    Miss,
    /// Something was there but did not check out.
    Corrupt(CacheError),
}

/// Why a cache entry did not check out.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// A file of the entry could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The metadata is not valid JSON of the current layout.
    #[error("cache metadata {} is unreadable: {source}", path.display())]
    BadMeta {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The metadata belongs to another entry or layout, or names a bad body file.
    #[error("cache metadata {} {why}", path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The body is missing.
    #[error("cache body {} is missing: {source}", path.display())]
    NoBody {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The body's length is not the one recorded.
    #[error("cache body {} is {got} bytes, expected {expected}", path.display())]
    Length {
        /// The file.
        path: PathBuf,
        /// Its length.
        got: u64,
        /// The recorded length.
        expected: u64,
    },
    /// The body's hash is not the one recorded.
    #[error("cache body {} does not match its hash", path.display())]
    Hash {
        /// The file.
        path: PathBuf,
    },
}

/// What a fresh body is stored with.
#[derive(Debug, Clone, Default)]
pub struct StoreRequest<'a> {
    /// The feed URL as requested.
    pub feed_url: &'a str,
    /// The URL the body came from.
    pub final_url: &'a str,
    /// The origin's `ETag`.
    pub etag: Option<&'a str>,
    /// The origin's `Last-Modified`.
    pub last_modified: Option<&'a str>,
    /// The origin's `Content-Type`.
    pub content_type: Option<&'a str>,
}

/// The file cache.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    /// The cap on bytes on disk (`None` or 0: no cap).
    max_bytes: Option<u64>,
    /// What this process knows of the cache's size since it last measured it.
    size: std::sync::Arc<std::sync::Mutex<size::Known>>,
}

fn key(feed_url: &str) -> String {
    let mut k = hex::encode(Sha256::digest(feed_url.as_bytes()));
    k.truncate(32);
    k
}

impl Cache {
    /// Opens (creating) the cache in `dir`; an error if it cannot be written.
    pub fn open(dir: &Path) -> Result<Cache> {
        let feeds = dir.join("feeds");
        fs::create_dir_all(&feeds)
            .map_err(|e| Error::io("cannot create the cache directory", &feeds, e))?;
        let probe = tempfile::NamedTempFile::new_in(&feeds)
            .map_err(|e| Error::io("cannot write in the cache directory", &feeds, e))?;
        drop(probe);
        Ok(Cache {
            dir: dir.to_path_buf(),
            max_bytes: Some(DEFAULT_MAX_BYTES),
            size: Default::default(),
        })
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
        self.dir.join("feeds")
    }

    fn meta_path(&self, feed_url: &str) -> PathBuf {
        self.feeds().join(format!("{}.json", key(feed_url)))
    }

    /// Looks `feed_url` up and verifies what it finds.
    pub fn load(&self, feed_url: &str) -> Lookup {
        // A concurrent writer may replace the body between our two reads; the metadata
        // then names a newer body, so read again.
        let mut last = Lookup::Miss;
        for _ in 0..3 {
            match self.load_once(feed_url) {
                Ok(Some(entry)) => return Lookup::Hit(Box::new(entry)),
                Ok(None) => return Lookup::Miss,
                Err(e) => last = Lookup::Corrupt(e),
            }
        }
        last
    }

    fn load_once(&self, feed_url: &str) -> std::result::Result<Option<Entry>, CacheError> {
        let path = self.meta_path(feed_url);
        let raw = match fs::read(&path) {
            Ok(raw) => raw,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CacheError::Read { path, source }),
        };
        let meta: Meta = match serde_json::from_slice(&raw) {
            Ok(m) => m,
            Err(source) => return Err(CacheError::BadMeta { path, source }),
        };
        if meta.version != META_VERSION || meta.feed_url != feed_url {
            return Err(CacheError::Foreign {
                path,
                why: "belongs to another entry",
            });
        }
        if meta.body_file.contains(['/', '\\']) || meta.body_file.starts_with('.') {
            return Err(CacheError::Foreign {
                path,
                why: "names a bad body file",
            });
        }
        let path = self.feeds().join(&meta.body_file);
        let body = match read_chunked(&path) {
            Ok(b) => b,
            Err(source) => return Err(CacheError::NoBody { path, source }),
        };
        if body.len() as u64 != meta.body_len {
            return Err(CacheError::Length {
                path,
                got: body.len() as u64,
                expected: meta.body_len,
            });
        }
        if sha256_hex(&body) != meta.body_sha256 {
            return Err(CacheError::Hash { path });
        }
        Ok(Some(Entry { meta, body }))
    }

    /// Stores a fresh body and its metadata.
    pub fn store(&self, req: &StoreRequest<'_>, body: &Payload) -> Result<Meta> {
        let sha = sha256_hex(body);
        let k = key(req.feed_url);
        let body_file = format!("{k}-{}.body", &sha[..16]);
        let feeds = self.feeds();
        write_atomic(&feeds.join(&body_file), body)?;
        let meta = Meta {
            version: META_VERSION,
            feed_url: req.feed_url.to_owned(),
            final_url: req.final_url.to_owned(),
            etag: req.etag.map(str::to_owned),
            last_modified: req.last_modified.map(str::to_owned),
            content_type: req.content_type.map(str::to_owned),
            fetched_at: date::format(&Utc::now()),
            body_file: body_file.clone(),
            body_len: body.len() as u64,
            body_sha256: sha,
        };
        self.write_meta(&meta)?;
        // Older bodies of this feed are no longer named by the metadata, but a reader that
        // read the previous metadata a moment ago may still be opening one: only bodies
        // replaced a while ago go.
        if let Ok(dir) = fs::read_dir(&feeds) {
            let prefix = format!("{k}-");
            for entry in dir.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let old = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > SUPERSEDED_BODY_GRACE);
                if old && name.starts_with(&prefix) && name.ends_with(".body") && name != body_file
                {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        self.enforce_cap(&k, body.len() as u64);
        Ok(meta)
    }

    /// Records a successful revalidation (`304`): the entry is fresh as of now.
    pub fn touch(
        &self,
        meta: &Meta,
        etag: Option<&str>,
        last_modified: Option<&str>,
    ) -> Result<Meta> {
        let mut meta = meta.clone();
        meta.fetched_at = date::format(&Utc::now());
        if let Some(e) = etag {
            meta.etag = Some(e.to_owned());
        }
        if let Some(lm) = last_modified {
            meta.last_modified = Some(lm.to_owned());
        }
        self.write_meta(&meta)?;
        Ok(meta)
    }

    fn write_meta(&self, meta: &Meta) -> Result<()> {
        let json = serde_json::to_vec_pretty(meta)
            .map_err(|e| Error::internal_from("cache metadata", e))?;
        write_atomic(&self.meta_path(&meta.feed_url), &Payload::from(json))
    }

    /// Every entry's metadata with its bytes on disk (metadata, current body and bodies
    /// awaiting their sweep), unreadable ones as warnings, sorted by feed URL; and the bytes
    /// of the whole cache directory (host state included).
    pub fn list(&self) -> (Vec<(Meta, CacheEntryInfo)>, Vec<String>, u64) {
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        for (_, entry) in self.on_disk() {
            let disk_bytes = entry.bytes();
            match entry.meta {
                Some(meta) => {
                    let info = CacheEntryInfo {
                        feed_url: meta.feed_url.clone(),
                        fetched_at: meta.fetched_at.clone(),
                        bytes: meta.body_len,
                        disk_bytes,
                        etag: meta.etag.clone(),
                        last_modified: meta.last_modified.clone(),
                    };
                    out.push((meta, info));
                }
                None => {
                    if let Some((path, _, _)) = entry
                        .files
                        .iter()
                        .find(|f| f.0.extension().is_some_and(|e| e == "json"))
                    {
                        warnings.push(format!("unreadable cache metadata {}", path.display()));
                    }
                }
            }
        }
        out.sort_by(|a, b| a.0.feed_url.cmp(&b.0.feed_url));
        (out, warnings, size::dir_bytes(&self.dir))
    }

    /// Removes entries (all, or those older than `older_than`); returns how many.
    pub fn clear(&self, older_than: Option<Duration>) -> Result<usize> {
        let now = Utc::now();
        let feeds = self.feeds();
        let Ok(dir) = fs::read_dir(&feeds) else {
            return Ok(0);
        };
        let mut removed = 0;
        let mut keep_bodies = Vec::new();
        let mut files = Vec::new();
        for entry in dir.flatten() {
            files.push(entry.path());
        }
        for path in files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
        {
            let meta = fs::read(path)
                .ok()
                .and_then(|raw| serde_json::from_slice::<Meta>(&raw).ok());
            let old_enough = match (&meta, older_than) {
                (_, None) | (None, _) => true,
                (Some(m), Some(limit)) => m.age(now).is_none_or(|age| age >= limit),
            };
            if old_enough {
                fs::remove_file(path).map_err(|e| Error::io("cannot remove", path, e))?;
                removed += 1;
            } else if let Some(m) = meta {
                keep_bodies.push(m.body_file);
            }
        }
        for path in files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "body"))
        {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !keep_bodies.contains(&name) {
                let _ = fs::remove_file(path);
            }
        }
        Ok(removed)
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename.
fn sha256_hex(body: &Payload) -> String {
    let mut h = Sha256::new();
    for c in body.chunks() {
        h.update(c);
    }
    hex::encode(h.finalize())
}

/// Reads a file into a chunked body.
fn read_chunked(path: &Path) -> std::io::Result<Payload> {
    use std::io::Read;
    let mut file = fs::File::open(path)?;
    let mut body = Payload::default();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&buf[..n]);
    }
}

fn write_atomic(path: &Path, bytes: &Payload) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| Error::io("cannot create a temporary file in", dir, e))?;
    bytes
        .chunks()
        .try_for_each(|c| tmp.write_all(c))
        .and_then(|_| tmp.as_file().sync_data())
        .map_err(|e| Error::io("cannot write", tmp.path().to_path_buf(), e))?;
    tmp.persist(path)
        .map_err(|e| Error::io("cannot rename into place", path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str) -> StoreRequest<'_> {
        StoreRequest {
            feed_url: url,
            final_url: url,
            etag: Some("\"v1\""),
            last_modified: None,
            content_type: Some("application/rss+xml"),
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
        let meta = cache
            .store(
                &req("http://a/feed"),
                &Payload::from(&b"<rss>body</rss>"[..]),
            )
            .unwrap();
        let body_path = dir.path().join("feeds").join(&meta.body_file);
        fs::write(&body_path, b"<rss>bo").unwrap();
        assert!(matches!(
            cache.load("http://a/feed"),
            Lookup::Corrupt(CacheError::Length { .. })
        ));
        fs::write(&body_path, b"<rss>BODY</rss>").unwrap();
        assert!(matches!(
            cache.load("http://a/feed"),
            Lookup::Corrupt(CacheError::Hash { .. })
        ));
        fs::write(cache.meta_path("http://a/feed"), b"{garbage").unwrap();
        assert!(matches!(
            cache.load("http://a/feed"),
            Lookup::Corrupt(CacheError::BadMeta { .. })
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
        assert_eq!(fs::read_dir(dir.path().join("feeds")).unwrap().count(), 0);
    }
}
