//! `show_item`: one item by id, guid or permalink, cache first.

use crate::model::WarningCode;
use url::Url;

use super::cached::{CachedGet, Got};
use super::{CacheMode, Context, blocking};
use crate::cache::Kind;
use crate::error::{Error, Result};
use crate::feed::{self, RenderOptions};
use crate::http::{ACCEPT_FEEDS, Lineage};
use crate::inputs::{Source, classify};
use crate::model::{Item, SCHEMA_VERSION, ShowOutput, Warning};
use crate::payload::Payload;

/// Options of `show_item`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShowOptions {
    /// Skip the cache and fetch the feed live.
    pub refresh: bool,
    /// How the item's body is rendered.
    pub render: RenderOptions,
}

/// A body to search, and where it came from.
struct FeedBody {
    body: Payload,
    content_type: Option<String>,
    doc_url: Option<Url>,
    from_cache: bool,
    fetched_at: Option<String>,
    /// The chain it was read through (what its items' links lead to follows it).
    lineage: Lineage,
}

async fn search(
    feed_url: &str,
    src: FeedBody,
    key: &str,
    render: RenderOptions,
) -> Result<Option<(Item, bool)>> {
    let (f, k) = (feed_url.to_owned(), key.to_owned());
    blocking(move || {
        let raw = feed::parse(src.body, src.content_type.as_deref(), src.doc_url.as_ref())?;
        Ok(feed::find_item(&f, raw.items, &k, &render))
    })
    .await?
}

/// Finds the item `key` (its id, guid or permalink URL) of `feed_url`. The cached copy is
/// searched first with no network call; the live feed only when the cache lacks it or
/// `refresh` is set.
pub async fn show_item(
    ctx: &Context,
    feed_url: &str,
    key: &str,
    opts: ShowOptions,
) -> Result<ShowOutput> {
    show_item_traced(ctx, feed_url, key, opts)
        .await
        .map(|(out, _)| out)
}

/// [`show_item`], with the chain the item's feed was read through (for
/// [`super::read_item_article`]: its page is a request that chain led to).
pub async fn show_item_traced(
    ctx: &Context,
    feed_url: &str,
    key: &str,
    opts: ShowOptions,
) -> Result<(ShowOutput, Lineage)> {
    let input = classify(feed_url);
    let feed_url = input.feed_url.clone();
    let mut warnings = ctx.standing_warnings();
    let mut warn = |code: WarningCode, message: String| {
        warnings.push(Warning::new(Some(feed_url.clone()), code, message))
    };
    let url = match input.source {
        Source::Invalid(e) => return Err(e),
        Source::File(path) => {
            let body = ctx.read_local(&feed_url, &path).await?;
            let file = Url::from_file_path(std::path::absolute(&path).unwrap_or(path))
                .unwrap_or_else(|_| Url::parse("file:///").expect("a valid URL"));
            let src = FeedBody {
                body,
                content_type: None,
                doc_url: None,
                from_cache: false,
                fetched_at: None,
                lineage: Lineage::none().then(&file),
            };
            return finish(&feed_url, key, src, opts, warnings).await;
        }
        Source::Http(url) => url,
    };
    let feeds = ctx.cache.as_ref().map(|c| c.of(Kind::Feed));
    let (cached, corrupt) = super::cached::load(feeds.as_ref(), &feed_url).await;
    if let Some(m) = corrupt {
        warn(WarningCode::CacheEntryCorrupt, m);
    }
    // A private copy is served only to the credentials it was fetched with (none that
    // can be fingerprinted: none).
    let credential_id = ctx.credential_id(&url, &Lineage::none()).await;
    let cached = cached.filter(|e| {
        !opts.refresh
            && credential_id
                .as_ref()
                .is_ok_and(|id| e.meta.credential_id == *id)
    });
    if let Some(entry) = cached {
        let fetched_at = entry.meta.fetched_at.clone();
        let lineage = super::cached::lineage_of(&Lineage::none(), &entry);
        let src = FeedBody {
            doc_url: Url::parse(&entry.meta.final_url).ok(),
            content_type: entry.meta.content_type,
            body: entry.body,
            from_cache: true,
            fetched_at: Some(fetched_at.clone()),
            lineage: lineage.clone(),
        };
        if let Some(found) = search(&feed_url, src, key, opts.render).await? {
            let out = output(&feed_url, found, true, Some(fetched_at), warnings);
            return Ok((out, lineage));
        }
    }
    let f = ctx
        .cached_get(CachedGet {
            kind: Kind::Feed,
            key: &feed_url,
            url,
            mode: CacheMode::Refresh,
            stale_if_error: false,
            since: None,
            deadline: ctx.client.deadline(),
            accept: ACCEPT_FEEDS,
            refuse: None,
            hops: None,
            window: None,
            led_by: Lineage::none(),
        })
        .await;
    for (code, msg) in f.warnings {
        warn(code, msg);
    }
    let src = match f.got {
        Got::Cached(entry, _) | Got::Stale(entry) => FeedBody {
            body: entry.body,
            content_type: entry.meta.content_type,
            doc_url: Url::parse(&entry.meta.final_url).ok(),
            from_cache: true,
            fetched_at: Some(entry.meta.fetched_at),
            lineage: f.lineage,
        },
        Got::Fresh(resp) => FeedBody {
            body: resp.body,
            content_type: resp.content_type,
            doc_url: Some(resp.final_url),
            from_cache: false,
            fetched_at: Some(crate::date::format(&chrono::Utc::now())),
            lineage: f.lineage,
        },
        Got::Failed(e) => return Err(e),
    };
    finish(&feed_url, key, src, opts, warnings).await
}

async fn finish(
    feed_url: &str,
    key: &str,
    src: FeedBody,
    opts: ShowOptions,
    warnings: Vec<Warning>,
) -> Result<(ShowOutput, Lineage)> {
    let (from_cache, fetched_at) = (src.from_cache, src.fetched_at.clone());
    let lineage = src.lineage.clone();
    match search(feed_url, src, key, opts.render).await? {
        Some(found) => Ok((
            output(feed_url, found, from_cache, fetched_at, warnings),
            lineage,
        )),
        None => Err(Error::NotFound {
            feed_url: crate::error::echo(feed_url),
            key: crate::error::echo(key),
        }),
    }
}

fn output(
    feed_url: &str,
    found: (Item, bool),
    from_cache: bool,
    fetched_at: Option<String>,
    mut warnings: Vec<Warning>,
) -> ShowOutput {
    let (item, fell_back) = found;
    if fell_back {
        warnings.push(Warning::new(
            Some(feed_url.to_owned()),
            WarningCode::ContentExtractionFallback,
            "the item's body could not be converted and is given as stripped text",
        ));
    }
    ShowOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        feed_url: feed_url.to_owned(),
        from_cache,
        fetched_at,
        item,
        warnings,
    }
}
