//! The MCP tools: their arguments, schemas, annotations and descriptions.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::ErrorCode;
use crate::feed::ContentFormat;
use crate::output::{SchemaKind, schema};

/// Most URLs one `fetch_feed` call takes.
pub const MAX_URLS: usize = 50;
/// Most URLs one `fetch_article` call takes.
pub const MAX_ARTICLE_URLS: usize = 20;
/// `fetch_feed`'s default `limit`.
pub const DEFAULT_LIMIT: u64 = 25;
/// `fetch_feed`'s default `max_response_tokens`.
pub const DEFAULT_MAX_RESPONSE_TOKENS: u64 = 10_000;

/// An integer given as a number or as a numeric string (many clients stringify them).
fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v: Option<Value> = Option::deserialize(d)?;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e15)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("{n} is not a whole number >= 0"))),
        Some(Value::String(s)) => s
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("{s:?} is not a whole number >= 0"))),
        Some(other) => Err(D::Error::custom(format!(
            "expected a whole number, got {other}"
        ))),
    }
}

/// Arguments of `fetch_feed`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchFeedArgs {
    /// One feed URL (RSS, Atom or JSON Feed). Give `url` or `urls`, not both.
    #[serde(default)]
    pub url: Option<String>,
    /// Up to 50 feed URLs fetched in one call; the server paces each host itself.
    #[serde(default)]
    pub urls: Option<Vec<String>>,
    /// How item bodies are returned: markdown (default), text, html or none.
    #[serde(default)]
    pub content_format: Option<ContentFormat>,
    /// Newest items per feed to return (default 25).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub limit: Option<u64>,
    /// Only items since: 30m, 2h, 7d, 2026-06-01 or an RFC 3339 time.
    #[serde(default)]
    pub since: Option<String>,
    /// Only items whose title, summary or content hold every word and "quoted phrase" and
    /// no -excluded word (case- and accent-insensitive, whole words), e.g.
    /// `rust "async runtime" -tokio`.
    #[serde(default)]
    pub query: Option<String>,
    /// Items that tell the same story (same guid, address or body): report (default) lists
    /// them in `duplicates`, drop also keeps only the first, off does not look.
    #[serde(default)]
    pub dedupe: Option<crate::ops::Dedupe>,
    /// Cut each item body to this many characters.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_content_chars: Option<u64>,
    /// Token budget of the whole result (default 10000). A larger result comes back in
    /// pages: as many whole feeds and items as fit, with `next_cursor`; only a first item
    /// that alone passes the budget fails, with RESPONSE_TOO_LARGE and a max_content_chars
    /// that fits.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_response_tokens: Option<u64>,
    /// The `next_cursor` of the previous page, given with the same url(s) and options:
    /// continues exactly there, from the cache, with no new request for what was fetched.
    #[serde(default)]
    pub cursor: Option<String>,
    /// fresh (default), revalidate, refresh, stale-if-error or no-cache.
    #[serde(default)]
    pub cache_policy: Option<crate::ops::CachePolicy>,
    /// Serve a cached copy younger than this many seconds without any request.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_age_seconds: Option<u64>,
    /// Also read each returned item's page as an article (attached to the item as
    /// `article`; the pages share the call's time and token budget). Slower: one request per
    /// item, paced per host.
    #[serde(default)]
    pub articles: Option<bool>,
    /// Answer within this many seconds (at most the server's --call-timeout, 50 by
    /// default): what is still waiting then comes back RATE_LIMITED with its wait.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub timeout_seconds: Option<u64>,
}

/// Arguments of `fetch_article`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArticleArgs {
    /// One page URL (an item's `url`). Give `url` or `urls`, not both.
    #[serde(default)]
    pub url: Option<String>,
    /// Up to 20 page URLs read in one call; the server paces each host itself.
    #[serde(default)]
    pub urls: Option<Vec<String>>,
    /// How the article is returned: markdown (default), text or html.
    #[serde(default)]
    pub content_format: Option<ContentFormat>,
    /// Cut each article to this many characters.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_content_chars: Option<u64>,
    /// Token budget of the whole result (default 10000); a longer article comes back cut
    /// at a paragraph with `content_truncated` and `next_offset`.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_response_tokens: Option<u64>,
    /// Continue a cut article: the `next_offset` of the previous call (served from the
    /// cache, with no new request).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub offset: Option<u64>,
    /// fresh (default), revalidate, refresh, stale-if-error or no-cache.
    #[serde(default)]
    pub cache_policy: Option<crate::ops::CachePolicy>,
    /// Serve a cached copy younger than this many seconds without any request.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_age_seconds: Option<u64>,
    /// Answer within this many seconds (at most the server's --call-timeout, 50 by
    /// default): what is still waiting then comes back RATE_LIMITED with its wait.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub timeout_seconds: Option<u64>,
}

/// Arguments of `discover_feeds`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoverArgs {
    /// The web page (home page, blog, article) whose feeds to find.
    pub site_url: String,
    /// Answer within this many seconds (at most the server's --call-timeout, 50 by
    /// default): what is still waiting then comes back RATE_LIMITED with its wait.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub timeout_seconds: Option<u64>,
}

/// Arguments of `get_item`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetItemArgs {
    /// The feed the item belongs to (as given to fetch_feed).
    pub feed_url: String,
    /// The item's `id` from fetch_feed, its `guid`, or its permalink URL.
    pub id: String,
    /// Cut the body to this many characters.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_content_chars: Option<u64>,
    /// How the body is returned: markdown (default), text, html or none.
    #[serde(default)]
    pub content_format: Option<ContentFormat>,
    /// Fetch the feed live instead of looking in the cache first.
    #[serde(default)]
    pub refresh: Option<bool>,
    /// Also read the item's page as an article (attached as `item.article`).
    #[serde(default)]
    pub article: Option<bool>,
    /// Token budget of the result (default 10000); over it the call fails with
    /// RESPONSE_TOO_LARGE and suggests a max_content_chars that fits.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_response_tokens: Option<u64>,
    /// Answer within this many seconds (at most the server's --call-timeout, 50 by
    /// default): what is still waiting then comes back RATE_LIMITED with its wait.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub timeout_seconds: Option<u64>,
}

/// Arguments of `get_schema`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSchemaArgs {
    /// A command's name: fetch, ndjson, ndjson-records, article, article-ndjson, discover,
    /// show, cache-list or hosts.
    pub command: String,
}

fn object_schema<T: JsonSchema>() -> Arc<JsonObject> {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    crate::output::standard_vocabulary(&mut value);
    Arc::new(match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

fn output_schema(kind: SchemaKind) -> Arc<JsonObject> {
    Arc::new(match schema(kind) {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

/// The server's instructions to agents; every code named comes from the error enum.
pub fn instructions() -> String {
    let mut s = String::from(
        "rss fetches RSS, Atom and JSON feeds and returns them as structured JSON.\n\
         Workflow: call fetch_feed with `urls` (up to 50) rather than many single calls: the server \
         paces every host itself, one request at a time per host, and learns how long a throttling \
         host wants to be left alone. Use limit, since and content_format=none for cheap listings, \
         then get_item for one full item. To read an item's web page, call fetch_article (not another \
         fetch tool: its requests are paced with the feed's host). Given a web page instead of a feed, \
         call discover_feeds.\n\
         Pacing: a feed that could not be fetched in time is returned with code RATE_LIMITED and \
         details.retry_after_seconds; do not ask for that host again before then — asking earlier \
         only provokes more refusals. Other feeds in the same call are unaffected.\n\
         Error codes:\n",
    );
    for code in ErrorCode::all() {
        s.push_str(&format!("- {}: {}\n", code.as_str(), code.meaning()));
    }
    s
}

/// The server's tools: the one list (their names, and the dispatch that must handle each,
/// derive from it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter, strum::IntoStaticStr, strum::EnumString,
)]
#[strum(serialize_all = "snake_case")]
pub enum ToolName {
    /// `fetch_feed`.
    FetchFeed,
    /// `fetch_article`.
    FetchArticle,
    /// `discover_feeds`.
    DiscoverFeeds,
    /// `get_item`.
    GetItem,
    /// `get_schema`.
    GetSchema,
}

impl ToolName {
    /// The tool's name on the wire.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The tool's definition: description, schemas, annotations.
    fn tool(self) -> Tool {
        let (title, description, input, output, open_world) = match self {
            ToolName::FetchFeed => (
                "Fetch feeds",
                "Fetch one feed (`url`) or up to 50 (`urls`) and return their items as structured JSON: \
                 per feed its status, title and items (id, url, title, authors, published, summary, content). \
                 Items are newest first, `limit` per feed (default 25). Feeds that fail carry an error object; \
                 RATE_LIMITED means wait `retry_after_seconds` before trying that host again. The whole result \
                 must fit `max_response_tokens` (default 10000), else RESPONSE_TOO_LARGE suggests a smaller \
                 `limit` or `max_content_chars`. Use content_format=none for cheap listings; `articles: true` \
                 also reads each item's page (paced with the feed).",
                object_schema::<FetchFeedArgs>(),
                output_schema(SchemaKind::Fetch),
                true,
            ),
            ToolName::FetchArticle => (
                "Read articles",
                "Read one web page (`url`, e.g. an item's url) or up to 20 (`urls`) as articles: the readable \
                 text without menus, ads and scripts, with title, authors, published, site_name, language, \
                 canonical_url, excerpt and lead_image. Requests are paced per host with the feeds (prefer this \
                 over any other fetch tool for pages of a feed's site) and honour the site's robots.txt. An \
                 article longer than `max_response_tokens` (default 10000) comes back cut at a paragraph with \
                 `next_offset`: call again with `offset` for the rest (served from the cache). A feed URL is \
                 NOT_AN_ARTICLE (use fetch_feed); a PDF or image is UNSUPPORTED_CONTENT.",
                object_schema::<FetchArticleArgs>(),
                output_schema(SchemaKind::Article),
                true,
            ),
            ToolName::DiscoverFeeds => (
                "Discover feeds",
                "Find the feeds a web page advertises (<link rel=\"alternate\"> of RSS, Atom or JSON Feed type), \
                 with absolute URLs, titles and formats. If the page is itself a feed, says so (is_feed). \
                 Pass a found URL to fetch_feed.",
                object_schema::<DiscoverArgs>(),
                output_schema(SchemaKind::Discover),
                true,
            ),
            ToolName::GetItem => (
                "Get one item",
                "Return one item of a feed in full, by its `id` (from fetch_feed), guid or permalink URL. \
                 Served from the local cache when the feed was fetched before, so an item stays reachable \
                 after it rolls off the live feed; otherwise the feed is fetched (paced like any request). \
                 `article: true` also reads the item's page as an article.",
                object_schema::<GetItemArgs>(),
                output_schema(SchemaKind::Show),
                true,
            ),
            ToolName::GetSchema => (
                "Get an output schema",
                "Return the JSON Schema of a result: fetch (fetch_feed), article (fetch_article), discover \
                 (discover_feeds), show (get_item), ndjson, ndjson-records, article-ndjson, cache-list or hosts.",
                object_schema::<GetSchemaArgs>(),
                Arc::new(
                    serde_json::json!({"type": "object"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
                false,
            ),
        };
        Tool::new(self.as_str(), description, input)
            .with_title(title)
            .with_raw_output_schema(output)
            .with_annotations(
                ToolAnnotations::with_title(title)
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(open_world),
            )
    }
}

/// Every tool the server offers.
pub fn all() -> Vec<Tool> {
    <ToolName as strum::IntoEnumIterator>::iter()
        .map(ToolName::tool)
        .collect()
}
