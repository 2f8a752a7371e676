//! What `rss cache list` and `rss hosts` print.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Warning;

/// The result of `rss cache list`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CacheListOutput {
    /// Contract version.
    pub schema_version: String,
    /// The cache directory.
    pub cache_dir: String,
    /// One entry per cached feed, page and robots.txt.
    pub entries: Vec<CacheEntryInfo>,
    /// Bytes of everything under the cache directory (entries, bodies awaiting their
    /// sweep, host state).
    pub total_bytes: u64,
    /// The cap on `total_bytes` (`--cache-max-bytes`; `null`: no cap).
    pub max_bytes: Option<u64>,
    /// Entries that could not be read.
    pub warnings: Vec<Warning>,
}

/// One cached feed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CacheEntryInfo {
    /// What the entry holds: `feed`, `page` (an article's page) or `robots` (a robots.txt).
    pub kind: String,
    /// The URL it was fetched for (named `feed_url` for every kind, as before pages were
    /// cached).
    pub feed_url: String,
    /// When the body was fetched (UTC RFC 3339).
    pub fetched_at: String,
    /// Body size in bytes.
    pub bytes: u64,
    /// Bytes this entry takes on disk: its one file (metadata and body).
    pub disk_bytes: u64,
    /// The origin's ETag.
    pub etag: Option<String>,
    /// The origin's Last-Modified.
    pub last_modified: Option<String>,
    /// The body is one user's: fetched with credentials (a config rule's, or the URL's
    /// own), or marked `Cache-Control: private` by its server. It is served only to
    /// requests made with the same credentials.
    pub private: bool,
}

/// The result of `rss hosts`: what the gate has learned about each host, as shared by every
/// process that uses the same store.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HostsOutput {
    /// What the gate keys requests on: `host` (each `host:port`) or `site` (registrable
    /// domains: `--host-key site`).
    pub host_key: String,
    /// Contract version.
    pub schema_version: String,
    /// Where the state is kept (`file:/…/hosts`, `redis://…`), or `null` when host state is
    /// kept inside each process only.
    pub store: Option<String>,
    /// One entry per host with live state, sorted by host.
    pub hosts: Vec<HostInfo>,
    /// Entries that could not be read, or a store that could not be used.
    pub warnings: Vec<Warning>,
}

/// One host's learned state: exactly what the gate enforces, each part with when it lapses.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HostInfo {
    /// The host key: lowercased `host:port`.
    pub host: String,
    /// No request goes to the host before this time (UTC RFC 3339); `null` when it may be
    /// sent to now.
    pub cooling_down_until: Option<String>,
    /// Requests are spaced until this time, after a recent refusal; `null` when not warm.
    pub warm_until: Option<String>,
    /// Refusals in a row while warm (each success steps it down by one); 0 when not warm.
    pub depth: u32,
    /// The learned floor in milliseconds: the widest gap after an admitted request that the
    /// host refused, so no request goes at this gap or sooner after the last admitted one;
    /// `null` when none is enforced.
    pub floor_ms: Option<u64>,
    /// When the floor stops being enforced (a floor lifetime after the refusal that taught it).
    pub floor_until: Option<String>,
    /// The spacing known to work, in milliseconds: the narrowest gap between two requests'
    /// starts that a host refusing without `Retry-After` admitted since; requests are spaced
    /// by it. `null` when none is known.
    pub spacing_ms: Option<u64>,
    /// When the known spacing is forgotten (a window lifetime after the last refusal).
    pub spacing_until: Option<String>,
    /// Admitted requests still to go at the known spacing before one probes a shorter gap;
    /// `null` when no probe is planned (nothing known, or the window is known closely).
    pub probe_after: Option<u32>,
    /// The host's last `Retry-After` while warm, in milliseconds (it sets the spacing).
    pub last_retry_after_ms: Option<u64>,
    /// The last HTTP status the host answered.
    pub last_status: Option<u16>,
    /// The host's robots.txt `Crawl-delay` in milliseconds: the least gap between two
    /// requests' starts, for feeds and articles alike; `null` when none applies.
    pub crawl_delay_ms: Option<u64>,
    /// When the crawl delay stops applying (the robots.txt is read again by then).
    pub crawl_delay_until: Option<String>,
    /// Requests left of the quota the host announced (`RateLimit`, `X-RateLimit-*`); `null`
    /// when it announced none, or it has refilled.
    pub quota_remaining: Option<u64>,
    /// When the announced quota refills.
    pub quota_resets_at: Option<String>,
    /// When the state last changed (UTC RFC 3339).
    pub updated_at: String,
    /// When every part has lapsed and the entry is deleted.
    pub lapses_at: Option<String>,
}
