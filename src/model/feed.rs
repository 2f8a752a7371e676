//! The feed contract: `rss fetch`, its NDJSON lines, `rss discover` and `rss show`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ArticleResult, ErrorObject, Warning};

/// The result of `rss fetch` (and of the MCP `fetch_feed` tool).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FetchOutput {
    /// Contract version, always "1" for this shape.
    pub schema_version: String,
    /// When this run started (UTC RFC 3339).
    pub fetched_at: String,
    /// Items returned across all feeds.
    pub total_items: usize,
    /// Estimated tokens of all returned content (the README's token estimate).
    pub total_content_tokens_est: usize,
    /// One entry per requested feed, in request order.
    pub feeds: Vec<FeedResult>,
    /// Every feed error, mirrored from `feeds[].error`, in request order.
    pub errors: Vec<ErrorObject>,
    /// Non-fatal findings (a repaired feed, an undated feed, a stale copy served, ...).
    pub warnings: Vec<Warning>,
    /// What `--limit`, `--since`, `--query`, `--dedupe drop` and `--max-content-chars` left
    /// out.
    pub truncation: Truncation,
    /// Items of this run that tell the same story (`--dedupe report|drop`), each group in
    /// input order; empty with `--dedupe off`.
    pub duplicates: Vec<Duplicate>,
    /// More of this result is on later pages: pass this as `cursor` (with the same `urls`
    /// and options) to get the next one. MCP `fetch_feed` only; always `null` in the CLI.
    pub next_cursor: Option<String>,
    /// The delivery of this output's items to a reader (`--reader`); `null` without one.
    pub delivery: Option<super::Delivery>,
}

/// One story told by several items of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Duplicate {
    /// What the items share: the guid, the normalised address or the content hash.
    pub key: String,
    /// Which of those `key` is.
    pub kind: DuplicateKind,
    /// The items, in input order; with `--dedupe drop` only the first is still in `feeds`.
    pub items: Vec<DuplicateItem>,
}

/// What a duplicate group's items share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateKind {
    /// The same guid (one that looks globally unique: a URI or a long token).
    Guid,
    /// The same address after normalisation (scheme, case, default port, trailing slash,
    /// fragment and tracking parameters set aside).
    Url,
    /// The same body (`content_hash`).
    ContentHash,
}

/// One item of a duplicate group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DuplicateItem {
    /// The feed it came from, as requested.
    pub feed_url: String,
    /// Its `id` in that feed.
    pub id: String,
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
    /// Until when the copy may be served with no request (UTC RFC 3339): the later of the
    /// server's own freshness (`Cache-Control: max-age`, `Expires`) and the feed's declared
    /// schedule (`<ttl>`, `sy:updatePeriod` / `sy:updateFrequency`), capped by
    /// `--max-freshness`; `null` when neither says anything (or the server said `no-cache`).
    pub fresh_until: Option<String>,
    /// Which rule set `fresh_until`; `null` when it is `null`.
    pub fresh_by: Option<FreshBy>,
}

/// The rule that set a feed's `fresh_until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FreshBy {
    /// The server's `Cache-Control: max-age`.
    CacheControl,
    /// The server's `Expires` (less its `Date`).
    Expires,
    /// The feed's RSS `<ttl>`.
    Ttl,
    /// The feed's `sy:updatePeriod` / `sy:updateFrequency`.
    SyUpdatePeriod,
    /// `--max-freshness` (or a config rule's `max_freshness`): what the server or the feed
    /// said was longer.
    MaxFreshness,
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
    /// How often the feed says it changes, in seconds: RSS `<ttl>`, or the syndication
    /// module's `sy:updatePeriod` / `sy:updateFrequency`. It counts as freshness (see
    /// `fresh_until`) and spaces a watch's checks.
    pub declared_ttl_seconds: Option<u64>,
    /// Hours of the day (UTC, 0-23) in which the feed asks not to be read (RSS
    /// `skipHours`), ascending; a watch makes no check in them.
    pub skip_hours: Vec<u32>,
    /// Days (UTC: `Monday` ... `Sunday`) on which the feed asks not to be read (RSS
    /// `skipDays`), Monday first; a watch makes no check on them.
    pub skip_days: Vec<String>,
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
    /// Estimated tokens of `content` as returned (the README's token estimate).
    pub content_tokens_est: usize,
    /// 16 hex of sha256 of the full body as the feed gave it (before rendering).
    pub content_hash: Option<String>,
    /// Whether `content` was cut (`--max-content-chars`, or an MCP token budget).
    pub content_truncated: bool,
    /// Where the rest of a cut `content` starts (characters of the rendered content): MCP
    /// `get_item` takes it as `offset`; `null` when nothing was cut.
    pub next_offset: Option<usize>,
    /// Category terms.
    pub categories: Vec<String>,
    /// Attached media (RSS enclosures, Atom enclosure links, media:content, JSON attachments).
    pub enclosures: Vec<Enclosure>,
    /// The item's comments page (RSS `<comments>`), absolute.
    pub comments: Option<String>,
    /// The feed the item came from (RSS `<source>`, Atom `<source>`).
    pub source: Option<ItemSource>,
    /// The episode's length in seconds (`itunes:duration`).
    pub duration_seconds: Option<u64>,
    /// The page at `url` read as an article, when asked for (`--articles`, `articles: true`);
    /// `null` otherwise.
    pub article: Option<Box<ArticleResult>>,
}

/// The feed an item was taken from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ItemSource {
    /// Its title, plain text.
    pub title: Option<String>,
    /// Its address, absolute.
    pub url: Option<String>,
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
    /// The `--query` applied (as given), if any.
    pub query: Option<String>,
    /// Items left out by `--query`.
    pub items_omitted_by_query: usize,
    /// Items left out as duplicates of an earlier one (`--dedupe drop`).
    pub items_omitted_as_duplicates: usize,
    /// Items left out because the reader has acknowledged them (`--unseen`).
    pub items_omitted_as_seen: usize,
    /// Items of this result left for later pages (see `next_cursor`).
    pub items_on_later_pages: usize,
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
    /// The delivery of the printed items to a reader (`--reader`); `null` without one.
    pub delivery: Option<super::Delivery>,
}

/// One line of `--ndjson-records`, tagged by `type`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NdjsonRecord {
    /// An item.
    Item(Box<NdjsonItem>),
    /// A feed that failed.
    Error(ErrorObject),
    /// The last line: totals for the run.
    Summary(Box<NdjsonSummary>),
}

/// One line of `rss watch`, tagged by `type`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WatchRecord {
    /// A new item of a watched feed, printed once, as it appears.
    Item(Box<NdjsonItem>),
    /// With `--reader`: the delivery of the items printed since the last such line (of one
    /// feed's check); `rss ack` takes its `token`.
    Delivery(super::Delivery),
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
    /// The item (with its `article` when asked for).
    pub item: Item,
    /// Non-fatal findings.
    pub warnings: Vec<Warning>,
}
