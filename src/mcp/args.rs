//! The tools' arguments: what each takes, read strictly. An argument a tool does not take
//! is a `USAGE_ERROR` naming it and the nearest one the tool does take.

use schemars::JsonSchema;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::feed::ContentFormat;

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
    /// One feed URL (RSS, Atom or JSON Feed). Give `url` or `urls`.
    #[serde(default)]
    pub url: Option<String>,
    /// Up to 50 feed URLs, fetched in one call.
    #[serde(default)]
    pub urls: Option<Vec<String>>,
    /// Item bodies: markdown (default), text, html or none. With `articles: true` the
    /// default is none (the article is the body).
    #[serde(default)]
    pub content_format: Option<ContentFormat>,
    /// With `articles: true`: markdown (default), text or html.
    #[serde(default)]
    pub article_format: Option<ContentFormat>,
    /// Newest items per feed (default 25).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub limit: Option<u64>,
    /// Only items since: 30m, 2h, 7d, 2026-06-01 or an RFC 3339 time.
    #[serde(default)]
    pub since: Option<String>,
    /// Items whose title, summary or content match: words and "phrases" are all required;
    /// OR, AND, NOT (or -word) and parentheses combine them. Whole words, case- and
    /// accent-insensitive.
    #[serde(default)]
    pub query: Option<String>,
    /// Items telling the same story: report (default) lists them in `duplicates`, drop
    /// keeps the first, off.
    #[serde(default)]
    pub dedupe: Option<crate::ops::Dedupe>,
    /// Cut each item body to this many characters (`next_offset` says where the rest
    /// starts: get_item's `offset`).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_content_chars: Option<u64>,
    /// Token budget of the result (default 10000, at most the server's cap); more comes
    /// in pages.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_response_tokens: Option<u64>,
    /// A page's `next_cursor`, given with the same other arguments: the next page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// fresh (default), revalidate, refresh, stale-if-error or no-cache.
    #[serde(default)]
    pub cache_policy: Option<crate::ops::CachePolicy>,
    /// Serve a cached copy younger than this many seconds without a request.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_age_seconds: Option<u64>,
    /// Also read each item's page as its `article` (one paced request per item).
    #[serde(default)]
    pub articles: Option<bool>,
    /// Also read each podcast episode's transcript (`podcast:transcript`: SRT, WebVTT,
    /// JSON or HTML) as plain text, as its `transcript` (one paced request per episode).
    #[serde(default)]
    pub transcripts: Option<bool>,
    /// Answer within this many seconds (at most the server's limit).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub timeout_seconds: Option<u64>,
    /// Who reads these items (1-64 of A-Za-z0-9._-, e.g. `digest`): the result carries a
    /// `delivery_token` for ack_delivery.
    #[serde(default)]
    pub reader: Option<String>,
    /// With `reader`: only items it has not acknowledged. Reading marks nothing.
    #[serde(default)]
    pub unseen: Option<bool>,
}

/// Arguments of `ack_delivery`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AckDeliveryArgs {
    /// The `delivery_token` of a fetch_feed result whose items are handled.
    pub delivery_token: String,
}

/// Arguments of `fetch_article`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArticleArgs {
    /// One page URL (an item's `url`). Give `url` or `urls`.
    #[serde(default)]
    pub url: Option<String>,
    /// Up to 20 page URLs.
    #[serde(default)]
    pub urls: Option<Vec<String>>,
    /// markdown (default), text or html.
    #[serde(default)]
    pub content_format: Option<ContentFormat>,
    /// Cut each article to this many characters.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_content_chars: Option<u64>,
    /// Token budget of the result (default 10000, at most the server's cap).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_response_tokens: Option<u64>,
    /// A cut article's `next_offset`, with its `url` (one page per continuation).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub offset: Option<u64>,
    /// fresh (default), revalidate, refresh, stale-if-error or no-cache.
    #[serde(default)]
    pub cache_policy: Option<crate::ops::CachePolicy>,
    /// Serve a cached copy younger than this many seconds without a request.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_age_seconds: Option<u64>,
    /// Answer within this many seconds (at most the server's limit).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub timeout_seconds: Option<u64>,
}

/// Arguments of `discover_feeds`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoverArgs {
    /// The web page whose feeds to find.
    pub site_url: String,
    /// Answer within this many seconds (at most the server's limit).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub timeout_seconds: Option<u64>,
}

/// Arguments of `get_item`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetItemArgs {
    /// The feed the item belongs to.
    pub feed_url: String,
    /// The item's `id`, guid or URL.
    pub id: String,
    /// markdown (default), text, html or none. With `article: true` the default is none.
    #[serde(default)]
    pub content_format: Option<ContentFormat>,
    /// Cut the body to this many characters.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_content_chars: Option<u64>,
    /// The item's `next_offset`: its body from there.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub offset: Option<u64>,
    /// Also read the item's page as its `article`.
    #[serde(default)]
    pub article: Option<bool>,
    /// Also read the episode's transcript (`podcast:transcript`) as plain text, as its
    /// `transcript`.
    #[serde(default)]
    pub transcript: Option<bool>,
    /// The article's format: markdown (default), text or html.
    #[serde(default)]
    pub article_format: Option<ContentFormat>,
    /// The article's `next_offset`: the article from there.
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub article_offset: Option<u64>,
    /// Fetch the feed live instead of looking in the cache first.
    #[serde(default)]
    pub refresh: Option<bool>,
    /// Token budget of the result (default 10000, at most the server's cap).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub max_response_tokens: Option<u64>,
    /// Answer within this many seconds (at most the server's limit).
    #[serde(default, deserialize_with = "lenient_u64")]
    #[schemars(with = "Option<u64>")]
    pub timeout_seconds: Option<u64>,
}

/// The tools whose result `get_schema` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SchemaTool {
    /// `fetch_feed`.
    FetchFeed,
    /// `fetch_article`.
    FetchArticle,
    /// `discover_feeds`.
    DiscoverFeeds,
    /// `get_item`.
    GetItem,
    /// `ack_delivery`.
    AckDelivery,
}

/// Arguments of `get_schema`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSchemaArgs {
    /// The tool whose result to describe.
    pub tool: SchemaTool,
}

/// Names models reach for that a tool calls something else, each with the arguments it
/// may mean (the first that the tool takes is suggested).
const SYNONYMS: &[(&str, &[&str])] = &[
    ("max_results", &["limit"]),
    ("max_items", &["limit"]),
    ("num_results", &["limit"]),
    ("count", &["limit"]),
    ("n", &["limit"]),
    ("top", &["limit"]),
    ("top_n", &["limit"]),
    ("page_size", &["limit"]),
    ("per_feed", &["limit"]),
    ("items", &["limit"]),
    ("feed", &["url", "feed_url"]),
    ("feed_url", &["url"]),
    ("link", &["url", "feed_url", "site_url"]),
    ("uri", &["url", "feed_url", "site_url"]),
    ("url", &["feed_url", "site_url"]),
    ("site", &["site_url", "url"]),
    ("feeds", &["urls"]),
    ("feed_urls", &["urls"]),
    ("links", &["urls"]),
    ("format", &["content_format"]),
    ("output_format", &["content_format"]),
    ("body_format", &["content_format"]),
    ("search", &["query"]),
    ("q", &["query"]),
    ("keywords", &["query"]),
    ("filter", &["query"]),
    ("page", &["cursor"]),
    ("page_token", &["cursor"]),
    ("next_cursor", &["cursor"]),
    ("max_tokens", &["max_response_tokens"]),
    ("token_budget", &["max_response_tokens"]),
    ("max_chars", &["max_content_chars"]),
    ("max_length", &["max_content_chars"]),
    ("next_offset", &["offset"]),
    ("start", &["offset"]),
    ("skip", &["offset"]),
    ("after", &["since"]),
    ("newer_than", &["since"]),
    ("timeout", &["timeout_seconds"]),
    ("item_id", &["id"]),
    ("guid", &["id"]),
    ("article", &["articles"]),
    ("articles", &["article"]),
    ("include_articles", &["articles", "article"]),
    ("full_text", &["articles", "article"]),
    ("name", &["tool"]),
    ("command", &["tool"]),
    ("schema", &["tool"]),
    ("token", &["delivery_token"]),
    ("ack_token", &["delivery_token"]),
    ("seen", &["unseen"]),
    ("new_only", &["unseen"]),
    ("only_new", &["unseen"]),
    ("reader_name", &["reader"]),
];

/// The argument of `known` that `name` most likely means: a known synonym, else the most
/// similar name (by Jaro-Winkler, when it is close).
/// Whether `name` asks for what only the server's owner sets (headers, credentials, a
/// proxy, a User-Agent): no tool takes it, and no other argument is "nearest" to it.
fn owner_only(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace(['-', ' '], "_");
    const WORDS: &[&str] = &[
        "header",
        "cookie",
        "proxy",
        "user_agent",
        "useragent",
        "auth",
        "credential",
        "password",
        "token",
        "bearer",
        "api_key",
        "apikey",
        "secret",
    ];
    n != "delivery_token" && WORDS.iter().any(|w| n.contains(w))
}

pub fn nearest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    if let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(&lower)) {
        return Some(k);
    }
    if let Some((_, means)) = SYNONYMS.iter().find(|(s, _)| *s == lower)
        && let Some(k) = means.iter().find_map(|m| known.iter().find(|k| *k == m))
    {
        return Some(k);
    }
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(&lower, k), *k))
        // Close enough to be a misspelling: `contentformat`, `max_content_char`; not
        // `headers` for `reader`.
        .filter(|(score, _)| *score >= 0.86)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The property names of `T`'s schema.
fn properties<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::schema_for!(T);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Reads `tool`'s arguments strictly: every argument must be one the tool takes (a
/// `USAGE_ERROR` names the first that is not, and the nearest that is), every value of its
/// type.
pub fn parse<T: DeserializeOwned + JsonSchema>(tool: &str, args: Value) -> Result<T> {
    let known = properties::<T>();
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    if let Value::Object(map) = &args
        && let Some(unknown) = map.keys().find(|k| !names.contains(&k.as_str()))
    {
        let shown = crate::error::echo(unknown);
        let guess = if owner_only(unknown) {
            "; headers, credentials, cookies, a proxy and the User-Agent are the server \
             owner's settings (its config file), never a call's"
                .to_owned()
        } else {
            match nearest(unknown, &names) {
                Some(k) => format!("; did you mean `{k}`?"),
                None => String::new(),
            }
        };
        return Err(Error::usage(format!(
            "{tool} takes no argument `{shown}`{guess} (it takes {})",
            names.join(", ")
        )));
    }
    serde_json::from_value(args).map_err(|e| Error::usage(format!("invalid arguments: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_may_come_as_strings() {
        let a: FetchFeedArgs = parse(
            "fetch_feed",
            serde_json::json!({"url": "http://x/", "limit": "5", "max_content_chars": 100}),
        )
        .unwrap();
        assert_eq!(a.limit, Some(5));
        assert_eq!(a.max_content_chars, Some(100));
        let err = parse::<FetchFeedArgs>(
            "fetch_feed",
            serde_json::json!({"url": "http://x/", "limit": "-1"}),
        )
        .unwrap_err();
        assert_eq!(err.code().as_str(), "USAGE_ERROR");
    }

    #[test]
    fn an_unknown_argument_is_refused_naming_the_nearest() {
        let err = parse::<FetchFeedArgs>(
            "fetch_feed",
            serde_json::json!({"url": "http://x/", "max_results": 3}),
        )
        .unwrap_err();
        assert_eq!(err.code().as_str(), "USAGE_ERROR");
        let m = err.to_string();
        assert!(
            m.contains("`max_results`") && m.contains("did you mean `limit`?"),
            "{m}"
        );
        let known = [
            "url",
            "urls",
            "limit",
            "max_content_chars",
            "feed_url",
            "site_url",
        ];
        assert_eq!(nearest("limt", &known), Some("limit"));
        assert_eq!(nearest("URL", &known), Some("url"));
        assert_eq!(nearest("feed", &["feed_url", "id"]), Some("feed_url"));
        assert_eq!(nearest("url", &["site_url"]), Some("site_url"));
        assert_eq!(nearest("zzzzzz", &known), None);
        assert_eq!(
            nearest("max_content_char", &known),
            Some("max_content_chars")
        );
        // Not a misspelling of anything a tool takes.
        assert_eq!(nearest("headers", &["reader", "unseen"]), None);
        assert_eq!(nearest("user_agent", &["reader", "unseen"]), None);
        for asked in [
            "headers",
            "User-Agent",
            "proxy",
            "cookies",
            "api_key",
            "auth",
        ] {
            let m = parse::<FetchFeedArgs>(
                "fetch_feed",
                serde_json::json!({"url": "http://x/", asked: "v"}),
            )
            .unwrap_err()
            .to_string();
            assert!(m.contains("server owner's settings"), "{m}");
            assert!(!m.contains("did you mean"), "{m}");
        }
    }
}
