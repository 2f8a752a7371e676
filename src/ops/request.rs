//! What a caller asks of a fetch, as the CLI and the MCP tools both receive it, turned
//! into [`FetchOptions`] in one place.

use std::time::Duration;

use super::{ArticleOptions, CacheMode, FetchOptions};
use crate::error::{Error, Result};
use crate::feed::{ContentFormat, Query, RenderOptions, Selection, parse_since};

/// How the cache is used, as both front ends name it (`--cache-policy`, MCP `cache_policy`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum CachePolicy {
    /// Serve a copy the server's own freshness (max-age, Expires) still covers with no
    /// request; otherwise ask (default).
    #[default]
    Fresh,
    /// Always ask the origin (a conditional GET).
    Revalidate,
    /// Ask the origin now, whatever the copy's freshness.
    Refresh,
    /// Like fresh, but when the origin fails serve the cached copy as `stale`.
    StaleIfError,
    /// Neither read nor write the cache.
    NoCache,
}

/// A fetch as asked for: flags of `rss fetch`, or the arguments of `fetch_feed`.
#[derive(Debug, Clone, Default)]
pub struct FetchRequest {
    /// Only items newer than this (`2024-05-01`, an RFC 3339 time, or `1d` ago).
    pub since: Option<String>,
    /// At most this many items per feed, newest first.
    pub limit: Option<usize>,
    /// Only items that hold these words and phrases and none of the `-excluded`.
    pub query: Option<String>,
    /// What is done with items that tell the same story.
    pub dedupe: super::Dedupe,
    /// How item bodies are rendered.
    pub content: ContentFormat,
    /// Cut each item's content to this many characters.
    pub max_content_chars: Option<usize>,
    /// Bypass the cache entirely.
    pub no_cache: bool,
    /// Fetch again even when the cached copy is fresh (still revalidating).
    pub refresh: bool,
    /// Serve a cached copy younger than this without asking the origin.
    pub max_age: Option<Duration>,
    /// Serve a cached copy when the origin fails.
    pub stale_if_error: bool,
    /// Ask the origin every time, however fresh the cached copy (`--cache-policy
    /// revalidate`).
    pub revalidate: bool,
    /// Read each returned item's page as an article too.
    pub articles: bool,
    /// How those articles are rendered (`None`: as `content`).
    pub article_content: Option<ContentFormat>,
    /// Honour robots.txt for those page reads.
    pub respect_robots: bool,
    /// Read each returned podcast episode's transcript as text too.
    pub transcripts: bool,
    /// The call's deadline (the MCP server's `--call-timeout`).
    pub deadline: Option<tokio::time::Instant>,
    /// The reader the items are delivered to (`--reader`, MCP `reader`).
    pub reader: Option<String>,
    /// Leave out what the reader has acknowledged (`--unseen`, MCP `unseen`).
    pub unseen: bool,
}

impl FetchRequest {
    /// This request with `policy` added to whatever cache flags it already has.
    pub fn with_policy(mut self, policy: CachePolicy) -> FetchRequest {
        match policy {
            CachePolicy::Fresh => {}
            CachePolicy::Revalidate => self.revalidate = true,
            CachePolicy::Refresh => self.refresh = true,
            CachePolicy::StaleIfError => self.stale_if_error = true,
            CachePolicy::NoCache => self.no_cache = true,
        }
        self
    }

    /// The options of `ops::fetch_articles` (the same cache and rendering flags).
    pub fn article_options(&self) -> Result<ArticleOptions> {
        let o = self.options()?;
        Ok(ArticleOptions {
            render: RenderOptions {
                format: self.article_content.unwrap_or(self.content),
                ..o.render
            },
            cache: o.cache,
            stale_if_error: o.stale_if_error,
            respect_robots: self.respect_robots,
            deadline: self.deadline,
            started: None,
        })
    }

    /// The options of `ops::fetch_feeds`, or a usage error naming what is wrong.
    pub fn options(&self) -> Result<FetchOptions> {
        let since = self
            .since
            .as_deref()
            .map(|s| parse_since(s, chrono::Utc::now()))
            .transpose()?;
        let cache = match (self.no_cache, self.refresh, self.max_age) {
            (true, true, _) => {
                return Err(Error::usage(
                    "no cache and a refresh of it exclude each other",
                ));
            }
            (true, _, _) => CacheMode::Off,
            (_, true, _) => CacheMode::Refresh,
            (_, _, Some(age)) => CacheMode::MaxAge(age),
            _ if self.revalidate => CacheMode::Revalidate,
            _ => CacheMode::Fresh,
        };
        let render = RenderOptions {
            format: self.content,
            max_content_chars: self.max_content_chars,
        };
        Ok(FetchOptions {
            selection: Selection {
                since,
                limit: self.limit,
                query: self.query.as_deref().map(Query::parse).transpose()?,
                seen: None,
            },
            dedupe: self.dedupe,
            render,
            cache,
            stale_if_error: self.stale_if_error,
            articles: self.articles.then_some(super::ArticleOptions {
                render: RenderOptions {
                    format: self.article_content.unwrap_or(self.content),
                    ..render
                },
                cache,
                stale_if_error: self.stale_if_error,
                respect_robots: self.respect_robots,
                deadline: self.deadline,
                started: None,
            }),
            transcripts: self.transcripts.then_some(super::ArticleOptions {
                render,
                cache,
                stale_if_error: self.stale_if_error,
                respect_robots: self.respect_robots,
                deadline: self.deadline,
                started: None,
            }),
            deadline: self.deadline,
            unseen: None,
        })
    }

    /// The reader asked for, in `scope` (a bearer token's, over MCP HTTP), or a usage error:
    /// a name that is not one, or `unseen` without a reader.
    pub fn reader_request(
        &self,
        scope: Option<crate::readers::Scope>,
    ) -> Result<Option<super::ReaderRequest>> {
        match &self.reader {
            Some(name) => Ok(Some(super::ReaderRequest {
                reader: crate::readers::ReaderId::new(name, scope)?,
                unseen: self.unseen,
            })),
            None if self.unseen => Err(Error::usage(
                "--unseen (MCP `unseen`) needs a reader: give --reader NAME (MCP `reader`)",
            )),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_adds_to_the_flags_given() {
        let o = |r: FetchRequest| r.options().unwrap();
        assert!(matches!(
            o(FetchRequest::default().with_policy(CachePolicy::Revalidate)).cache,
            CacheMode::Revalidate
        ));
        assert!(o(FetchRequest::default().with_policy(CachePolicy::StaleIfError)).stale_if_error);
        let refresh = FetchRequest {
            refresh: true,
            ..FetchRequest::default()
        };
        assert!(matches!(
            o(refresh.with_policy(CachePolicy::Fresh)).cache,
            CacheMode::Refresh
        ));
        let off = FetchRequest::default().with_policy(CachePolicy::NoCache);
        assert!(matches!(o(off).cache, CacheMode::Off));
    }

    #[test]
    fn the_cache_mode_follows_the_strongest_request() {
        let mut r = FetchRequest::default();
        assert!(matches!(r.options().unwrap().cache, CacheMode::Fresh));
        r.revalidate = true;
        assert!(matches!(r.options().unwrap().cache, CacheMode::Revalidate));
        r.max_age = Some(Duration::from_secs(60));
        assert!(matches!(r.options().unwrap().cache, CacheMode::MaxAge(_)));
        r.refresh = true;
        assert!(matches!(r.options().unwrap().cache, CacheMode::Refresh));
        r.no_cache = true;
        assert!(r.options().is_err());
        r.refresh = false;
        assert!(matches!(r.options().unwrap().cache, CacheMode::Off));
        r.since = Some("not a date".into());
        assert_eq!(r.options().unwrap_err().code().as_str(), "USAGE_ERROR");
    }
}
