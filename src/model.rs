//! The output contract: every type `rss` prints or returns over MCP.
//!
//! # Wire format
//!
//! `rss fetch --format json` prints one [`FetchOutput`]. `--format ndjson` prints one
//! [`NdjsonItem`] a line; with `--ndjson-records` every line is an [`NdjsonRecord`] tagged
//! by `type` (`item`, `error`, `summary`). `rss discover` prints a [`DiscoverOutput`],
//! `rss show` a [`ShowOutput`], `rss cache list` a [`CacheListOutput`], `rss hosts` a
//! [`HostsOutput`].
//!
//! Rules that hold for every type here:
//! - optional fields serialize as `null`, never omitted (the generated schemas list every
//!   property as required);
//! - timestamps are UTC RFC 3339 (`2026-06-01T10:00:00Z`);
//! - `code` strings are the stable part of an error; messages may change;
//! - new fields may be added within a [`SCHEMA_VERSION`]; none is removed or renamed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The version of this contract; bumped only by an incompatible change.
pub const SCHEMA_VERSION: &str = "1";

/// The result of `rss fetch` (and of the MCP `fetch_feed` tool).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FetchOutput {
    /// Contract version, always "1" for this shape.
    pub schema_version: String,
    /// When this run started (UTC RFC 3339).
    pub fetched_at: String,
    /// Items returned across all feeds.
    pub total_items: usize,
    /// Estimated tokens of all returned content (ceil(chars / 4)).
    pub total_content_tokens_est: usize,
    /// One entry per requested feed, in request order.
    pub feeds: Vec<FeedResult>,
    /// Every feed error, mirrored from `feeds[].error`, in request order.
    pub errors: Vec<ErrorObject>,
    /// Non-fatal findings (a repaired feed, an undated feed, a stale copy served, ...).
    pub warnings: Vec<Warning>,
    /// What `--limit`, `--since` and `--max-content-chars` left out.
    pub truncation: Truncation,
}

/// How one requested feed went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeedStatus {
    /// Fetched (or read from a file) and parsed.
    Ok,
    /// The origin answered `304 Not Modified`; items come from the cache.
    NotModified,
    /// The origin failed and a cached copy was served instead (`--stale-if-error`).
    Stale,
    /// Nothing could be returned; see `error`.
    Error,
}

/// One requested feed and its items.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FeedResult {
    /// The feed as requested (URL or local path).
    pub feed_url: String,
    /// The URL the body was finally read from, after redirects.
    pub final_url: Option<String>,
    /// Outcome of this feed.
    pub status: FeedStatus,
    /// Whether the items were read from the local cache.
    pub from_cache: bool,
    /// What the feed says about itself.
    #[serde(flatten)]
    pub meta: FeedMeta,
    /// Items returned for this feed (after `--since` and `--limit`).
    pub item_count: usize,
    /// Sum of `content_tokens_est` over the returned items.
    pub content_tokens_est_total: usize,
    /// The items, newest first; undated items follow in feed order.
    pub items: Vec<Item>,
    /// Why this feed failed, when `status` is `error`.
    pub error: Option<ErrorObject>,
    /// Network sends made for this feed (0 for a file or a fresh cache hit).
    pub attempts: u32,
    /// Time spent waiting on the per-host gate before sending, in milliseconds.
    pub gate_wait_ms: u64,
    /// When the served cached copy was fetched (UTC RFC 3339), for cached answers.
    pub cached_at: Option<String>,
    /// Age of the served cached copy in seconds, for cached answers.
    pub cache_age_seconds: Option<u64>,
}

/// What a feed says about itself (flattened into [`FeedResult`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FeedMeta {
    /// Feed format detected: rss, rdf, atom or json.
    pub format: Option<String>,
    /// Feed title, plain text.
    pub title: Option<String>,
    /// The site's address (the channel link), absolute.
    pub site_url: Option<String>,
    /// Feed description or subtitle, plain text.
    pub description: Option<String>,
    /// When the feed says it last changed (UTC RFC 3339).
    pub updated: Option<String>,
    /// Feed language tag, as given.
    pub language: Option<String>,
    /// Feed icon or logo URL, absolute.
    pub icon: Option<String>,
    /// The feed's authors or managing editor (names; an address only when no name is
    /// given).
    pub authors: Vec<String>,
    /// The feed's categories (RSS `category`, Atom `category`, `itunes:category` with its
    /// subcategories, `dc:subject`).
    pub categories: Vec<String>,
}

/// How an item's `id` was derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdSource {
    /// From the item's link.
    Link,
    /// From the feed's own guid / id / rdf:about.
    Guid,
    /// From title + "|" + published.
    TitlePublished,
    /// From the hash of the item's body (no link, guid or title).
    Content,
    /// From the item's position in the feed (nothing else to go on).
    Position,
}

/// One feed item.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Item {
    /// Stable id: 16 hex of sha256(feed_url + "\n" + key).
    pub id: String,
    /// Which key `id` was built from.
    pub id_source: IdSource,
    /// The feed's own guid / Atom id / rdf:about, verbatim; never invented.
    pub guid: Option<String>,
    /// The item's address (its alternate link), absolute.
    pub url: Option<String>,
    /// Title, plain text.
    pub title: Option<String>,
    /// Author names.
    pub authors: Vec<String>,
    /// Publication time (UTC RFC 3339).
    pub published: Option<String>,
    /// Last update time (UTC RFC 3339).
    pub updated: Option<String>,
    /// The feed's summary, plain text.
    pub summary: Option<String>,
    /// The body in `content_format`; `null` with `--content none` or when the item has none.
    pub content: Option<String>,
    /// The rendering of `content`: markdown, text, html or none.
    pub content_format: String,
    /// Estimated tokens of `content` as returned (ceil(chars / 4)).
    pub content_tokens_est: usize,
    /// 16 hex of sha256 of the full body as the feed gave it (before rendering).
    pub content_hash: Option<String>,
    /// Whether `content` was cut at `--max-content-chars`.
    pub content_truncated: bool,
    /// Category terms.
    pub categories: Vec<String>,
    /// Attached media (RSS enclosures, Atom enclosure links, media:content, JSON attachments).
    pub enclosures: Vec<Enclosure>,
}

/// One attached media file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Enclosure {
    /// Absolute URL of the file.
    pub url: String,
    /// MIME type, as given.
    #[serde(rename = "type")]
    pub mime_type: Option<String>,
    /// Size in bytes, as given.
    pub length: Option<u64>,
}

/// A structured error: `code` is the contract, `message` is for people.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorObject {
    /// The feed this error belongs to, or `null` for a run-level error.
    pub feed_url: Option<String>,
    /// Stable error code (see the README).
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Machine-readable specifics (`http_status`, `retry_after_seconds`, `kind`, ...).
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// A warning's stable code: the one list (its wire names, `as_str` and `all` derive from
/// it).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum WarningCode {
    /// The feed needed repairs to be read (undeclared prefixes, bad entities, missing end tags, a body cut short).
    FeedRepaired,
    /// An element of the feed was skipped (an item with nothing in it, an unreadable JSON Feed item).
    ElementSkipped,
    /// The feed has more items than are read from one feed.
    ItemsCapped,
    /// No returned item has a date: order is the feed's own and `since` cannot filter.
    UndatedItems,
    /// An item's HTML body was given as stripped text instead.
    ContentExtractionFallback,
    /// The run had no cache (no directory, or it cannot be written).
    CacheUnavailable,
    /// A cache entry did not check out and was treated as a miss.
    CacheEntryCorrupt,
    /// A fresh body could not be written to the cache.
    CacheWriteFailed,
    /// The origin failed and the cached copy was served (`stale-if-error`).
    ServedStale,
    /// Discovery found no advertised feed and lists links whose address names one.
    FeedsGuessedFromLinks,
    /// Discovery found no feed on the page.
    NoFeedsFound,
    /// The shared host-state store could not be used; pacing went on without it.
    GateStoreUnavailable,
    /// A host's stored state was unreadable and was ignored.
    HostStateCorrupt,
    /// A shared send slot lapsed while its request was on the wire (the process was
    /// stalled past the slot's lifetime): another worker may have sent beside it.
    GateSlotLost,
}

impl WarningCode {
    /// Every code, in the order the README lists them.
    pub fn all() -> impl Iterator<Item = WarningCode> {
        <WarningCode as strum::IntoEnumIterator>::iter()
    }

    /// The code as it appears in the output.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl std::fmt::Display for WarningCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for WarningCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A non-fatal finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Warning {
    /// The feed it concerns, or `null` for the run.
    pub feed_url: Option<String>,
    /// Stable warning code.
    pub code: WarningCode,
    /// Human-readable explanation.
    pub message: String,
}

impl Warning {
    /// A warning about `feed_url` (`None`: the run).
    pub fn new(feed_url: Option<String>, code: WarningCode, message: impl Into<String>) -> Warning {
        Warning {
            feed_url,
            code,
            message: message.into(),
        }
    }
}

/// What selection and truncation left out of the output.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Truncation {
    /// The `--limit` applied per feed, if any.
    pub limit: Option<usize>,
    /// The `--since` cutoff applied (UTC RFC 3339), if any.
    pub since: Option<String>,
    /// The `--max-content-chars` applied, if any.
    pub max_content_chars: Option<usize>,
    /// Items left out by `--limit`.
    pub items_omitted_by_limit: usize,
    /// Items left out by `--since`.
    pub items_omitted_by_since: usize,
    /// Items whose content was cut at `--max-content-chars`.
    pub items_content_truncated: usize,
}

/// One line of `--format ndjson`: an item with the feed it came from.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NdjsonItem {
    /// The feed as requested.
    pub feed_url: String,
    /// The item's fields.
    #[serde(flatten)]
    pub item: Item,
}

/// The run summary that ends `--ndjson-records` output.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NdjsonSummary {
    /// Contract version.
    pub schema_version: String,
    /// When this run started (UTC RFC 3339).
    pub fetched_at: String,
    /// Feeds requested.
    pub feeds: usize,
    /// Feeds that returned items (ok, not_modified or stale).
    pub feeds_ok: usize,
    /// Feeds that failed.
    pub feeds_failed: usize,
    /// Items printed.
    pub total_items: usize,
    /// Estimated tokens of all printed content.
    pub total_content_tokens_est: usize,
    /// Non-fatal findings.
    pub warnings: Vec<Warning>,
    /// What selection and truncation left out.
    pub truncation: Truncation,
}

/// One line of `--ndjson-records`, tagged by `type`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NdjsonRecord {
    /// An item.
    Item(NdjsonItem),
    /// A feed that failed.
    Error(ErrorObject),
    /// The last line: totals for the run.
    Summary(NdjsonSummary),
}

/// The result of `rss discover`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DiscoverOutput {
    /// Contract version.
    pub schema_version: String,
    /// The page as requested.
    pub site_url: String,
    /// The URL the page was finally read from, after redirects.
    pub final_url: Option<String>,
    /// Whether the page is itself a feed (then `feeds` holds just it).
    pub is_feed: bool,
    /// Feeds the page advertises, in page order, de-duplicated.
    pub feeds: Vec<DiscoveredFeed>,
    /// Non-fatal findings.
    pub warnings: Vec<Warning>,
}

/// A feed found by discovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiscoveredFeed {
    /// Absolute feed URL.
    pub url: String,
    /// The link's title attribute (or the feed's title when the page is a feed).
    pub title: Option<String>,
    /// The advertised MIME type.
    #[serde(rename = "type")]
    pub mime_type: Option<String>,
    /// rss, atom or json, from the type.
    pub format: Option<String>,
}

/// The result of `rss show` (and the MCP `get_item` tool).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ShowOutput {
    /// Contract version.
    pub schema_version: String,
    /// The feed as requested.
    pub feed_url: String,
    /// Whether the item came from the local cache (read without a request, or confirmed
    /// by a `304`).
    pub from_cache: bool,
    /// When the feed body it came from was fetched (UTC RFC 3339).
    pub fetched_at: Option<String>,
    /// The item.
    pub item: Item,
    /// Non-fatal findings.
    pub warnings: Vec<Warning>,
}

/// The result of `rss cache list`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CacheListOutput {
    /// Contract version.
    pub schema_version: String,
    /// The cache directory.
    pub cache_dir: String,
    /// One entry per cached feed.
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
    /// The feed URL.
    pub feed_url: String,
    /// When the body was fetched (UTC RFC 3339).
    pub fetched_at: String,
    /// Body size in bytes.
    pub bytes: u64,
    /// Bytes this entry takes on disk: metadata, body, and superseded bodies awaiting
    /// their sweep.
    pub disk_bytes: u64,
    /// The origin's ETag.
    pub etag: Option<String>,
    /// The origin's Last-Modified.
    pub last_modified: Option<String>,
}

/// The result of `rss hosts`: what the gate has learned about each host, as shared by every
/// process that uses the same store.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HostsOutput {
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
    /// The learned floor in milliseconds: no request goes sooner than this after the last
    /// admitted one (the host once refused a narrower gap); `null` when none is enforced.
    pub floor_ms: Option<u64>,
    /// When the floor stops being enforced (a floor lifetime after the last refusal).
    pub floor_until: Option<String>,
    /// The host's last `Retry-After` while warm, in milliseconds (it sets the spacing).
    pub last_retry_after_ms: Option<u64>,
    /// The last HTTP status the host answered.
    pub last_status: Option<u16>,
    /// When the state last changed (UTC RFC 3339).
    pub updated_at: String,
    /// When every part has lapsed and the entry is deleted.
    pub lapses_at: Option<String>,
}
