//! What one cache entry is: its metadata, a verified entry, a lookup's result, why an
//! entry did not check out, and what a fresh body is stored with.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::payload::Payload;

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
    /// The body's length in bytes.
    pub body_len: u64,
    /// sha256 of the body, hex.
    pub body_sha256: String,
    /// When the response this entry records (its `200`, or the last `304` that confirmed
    /// it) arrived, in Unix ms: an older response never replaces a newer one.
    #[serde(default)]
    pub received_ms: u64,
    /// Until when (Unix ms) the server said the copy stays fresh (`Cache-Control: max-age`,
    /// `Expires`), as of its last response; `None`: it said nothing, or `no-cache`.
    #[serde(default)]
    pub fresh_until_ms: Option<u64>,
    /// The freshness came from `Expires` (a fixed instant), not `max-age` (a span that a
    /// `304` starts again).
    #[serde(default)]
    pub fresh_from_expires: bool,
    /// The server said `must-revalidate`: a stale copy is never served without asking.
    #[serde(default)]
    pub must_revalidate: bool,
    /// The body is one user's: fetched with credentials, or marked `Cache-Control: private`.
    #[serde(default)]
    pub private: bool,
    /// A fingerprint of the credentials it was fetched with, keyed by the cache's own
    /// secret (`CredentialKey`): it is served only to a request made with the same ones
    /// (never printed).
    #[serde(default)]
    pub credential_id: Option<String>,
    /// A hop between `feed_url` and `final_url` was https: a plain-http link the body
    /// gives is a downgrade from it (`http::Lineage`).
    #[serde(default)]
    pub via_https: bool,
    /// The server said `no-cache`: never served without asking, whatever the feed declares.
    #[serde(default)]
    pub no_cache: bool,
    /// The feed's declared schedule (`<ttl>`, `sy:*`), as its body was last read.
    #[serde(default)]
    pub declared: Option<crate::cache::freshness::Declared>,
}

impl Meta {
    /// Whether the copy is still fresh at Unix ms `now` — by the server's own freshness or
    /// the feed's declared schedule, whichever is later — capped at `cap` after the
    /// response (a server's "a year" is not taken at its word): until when, if it is.
    pub fn is_fresh(&self, now: u64, cap: Duration) -> Option<u64> {
        let (until, _) = self.basis().until(cap)?;
        (now < until).then_some(until)
    }

    /// What the copy's freshness is made of.
    pub fn basis(&self) -> crate::cache::freshness::Basis {
        crate::cache::freshness::Basis {
            received_ms: self.received_ms,
            server_until_ms: self.fresh_until_ms,
            from_expires: self.fresh_from_expires,
            no_cache: self.no_cache,
            declared: self.declared,
        }
    }
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
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The metadata is not valid JSON of the current layout.
    #[error("cache metadata {} is unreadable: {source}", path.display())]
    BadMeta {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The entry belongs to another URL or layout, or has no metadata line.
    #[error("cache metadata {} {why}", path.display())]
    Foreign {
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The body's length is not the one recorded.
    #[error("cache body {} is {got} bytes, expected {expected}", path.display())]
    Length {
        path: PathBuf,
        /// Its length.
        got: u64,
        /// The recorded length.
        expected: u64,
    },
    /// The body's hash is not the one recorded.
    #[error("cache body {} does not match its hash", path.display())]
    Hash { path: PathBuf },
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
    /// When the response arrived (Unix ms); 0: now.
    pub received_ms: u64,
    /// What the response said of its freshness.
    pub freshness: crate::cache::freshness::Freshness,
    /// Fetched with credentials.
    pub credentialed: bool,
    /// The fingerprint of those credentials.
    pub credential_id: Option<&'a str>,
    /// A hop of the chain that fetched it was https.
    pub via_https: bool,
    /// The feed's declared schedule, as far as it is known when the body is stored.
    pub declared: Option<crate::cache::freshness::Declared>,
}

/// Until when (Unix ms) a response that arrived at `received` stays fresh.
pub(super) fn fresh_until(received: u64, f: &crate::cache::freshness::Freshness) -> Option<u64> {
    if f.no_cache {
        return None;
    }
    f.lifetime
        .map(|l| received.saturating_add(l.as_millis().min(u64::MAX as u128) as u64))
}

/// Unix milliseconds now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
