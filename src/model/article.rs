//! The article contract: `rss article`, the MCP `fetch_article` tool, and the `article`
//! attached to an item by `fetch --articles` / `get_item` with `article: true`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ErrorObject, FeedStatus, Warning, WarningCode};

/// The result of `rss article` (and of the MCP `fetch_article` tool).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ArticleOutput {
    /// Contract version.
    pub schema_version: String,
    /// When this run started (UTC RFC 3339).
    pub fetched_at: String,
    /// Estimated tokens of all returned content (the README's token estimate).
    pub total_content_tokens_est: usize,
    /// One entry per requested page, in request order.
    pub articles: Vec<ArticleResult>,
    /// Every page error, mirrored from `articles[].error`, in request order.
    pub errors: Vec<PageError>,
    /// Non-fatal findings.
    pub warnings: Vec<PageWarning>,
}

/// One requested page, reduced to its readable article.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ArticleResult {
    /// The page as requested.
    pub url: String,
    /// The URL the page was finally read from, after redirects.
    pub final_url: Option<String>,
    /// ok, not_modified (a `304` confirmed the cached copy), stale (the origin failed and
    /// the cached copy was served), or error.
    pub status: FeedStatus,
    /// Whether the page came from the local cache.
    pub from_cache: bool,
    /// The article's title, plain text.
    pub title: Option<String>,
    /// Author names.
    pub authors: Vec<String>,
    /// Publication time (UTC RFC 3339).
    pub published: Option<String>,
    /// The site's name.
    pub site_name: Option<String>,
    /// The page's language (BCP 47, as the page gives it).
    pub language: Option<String>,
    /// The page's canonical address, absolute.
    pub canonical_url: Option<String>,
    /// A short description, plain text.
    pub excerpt: Option<String>,
    /// The article's lead image, absolute.
    pub lead_image: Option<String>,
    /// The article in `content_format`; `null` when there is none.
    pub content: Option<String>,
    /// The rendering of `content`: markdown, text or html.
    pub content_format: String,
    /// Estimated tokens of `content` as returned (the README's token estimate).
    pub content_tokens_est: usize,
    /// 16 hex of sha256 of the extracted article (before rendering).
    pub content_hash: Option<String>,
    /// Whether `content` was cut (`--max-content-chars`, or an MCP token budget).
    pub content_truncated: bool,
    /// Words in the article.
    pub word_count: usize,
    /// Where the next part of a cut article starts (characters of the rendered content):
    /// give it back as `offset` to read on; `null` when nothing was left out.
    pub next_offset: Option<usize>,
    /// Why nothing could be returned, if so.
    pub error: Option<PageError>,
    /// Requests sent (a refused request and its retry count 2; each redirect hop counts).
    pub attempts: u32,
    /// Time waited before sending (host permit and pacing, other processes' sends).
    pub gate_wait_ms: u64,
    /// When the cached copy served was fetched (UTC RFC 3339), if one was.
    pub cached_at: Option<String>,
    /// Age in seconds of the cached copy served, if one was.
    pub cache_age_seconds: Option<u64>,
    /// Until when the server's own freshness lets the copy be served with no request (UTC
    /// RFC 3339); `null` when it says nothing.
    pub fresh_until: Option<String>,
}

/// A structured error about a page: `code` is the contract, `message` is for people.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PageError {
    /// The page this error belongs to, or `null` for a run-level error.
    pub url: Option<String>,
    /// Stable error code (see the README).
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Machine-readable specifics (`http_status`, `retry_after_seconds`, `content_type`, ...).
    pub details: serde_json::Map<String, serde_json::Value>,
}

impl From<ErrorObject> for PageError {
    fn from(e: ErrorObject) -> PageError {
        PageError {
            url: e.feed_url,
            code: e.code,
            message: e.message,
            details: e.details,
        }
    }
}

/// A non-fatal finding about a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PageWarning {
    /// The page it concerns, or `null` for the whole run.
    pub url: Option<String>,
    /// Stable code.
    pub code: WarningCode,
    /// Human-readable explanation.
    pub message: String,
}

impl From<Warning> for PageWarning {
    fn from(w: Warning) -> PageWarning {
        PageWarning {
            url: w.feed_url,
            code: w.code,
            message: w.message,
        }
    }
}
