//! `discover`: the feeds a page advertises, or the page itself when it is a feed.

use super::{Context, blocking};
use crate::error::{Error, Result};
use crate::http::{ACCEPT_PAGES, GetRequest};
use crate::inputs::{Source, classify};
use crate::model::WarningCode;
use crate::model::{DiscoverOutput, DiscoveredFeed, SCHEMA_VERSION, Warning};

/// Finds the feeds `site_url` advertises. Goes through the gate like every send.
pub async fn discover(ctx: &Context, site_url: &str) -> Result<DiscoverOutput> {
    let input = classify(site_url);
    let mut exchange = Vec::new();
    let (body, content_type, page_url) = match input.source {
        Source::Invalid(e) => return Err(e),
        Source::File(path) => {
            let body = ctx.read_local(site_url, &path).await?;
            let url = url::Url::from_file_path(std::path::absolute(&path).unwrap_or(path.clone()))
                .map_err(|_| Error::internal("a local path could not be made a file URL"))?;
            (body, None, url)
        }
        Source::Http(url) => {
            let mut ex = ctx
                .client
                .get(GetRequest {
                    url,
                    validators: None,
                    deadline: ctx.client.deadline(),
                    accept: ACCEPT_PAGES,
                    refuse: None,
                    hops: None,
                    window: None,
                    // A site the caller named: nothing led to it.
                    led_by: crate::http::Lineage::none(),
                })
                .await;
            exchange = super::exchange_warnings(&input.feed_url, &mut ex);
            let resp = ex.result?;
            (resp.body, resp.content_type, resp.final_url)
        }
    };
    let final_url = page_url.to_string();
    let feed_url = input.feed_url.clone();
    let (is_feed, found, guessed) = blocking(move || -> (bool, Vec<DiscoveredFeed>, bool) {
        let mime = content_type
            .as_deref()
            .map(|c| c.split(';').next().unwrap_or("").trim().to_owned());
        if let Ok(feed) = crate::feed::parse(body.clone(), content_type.as_deref(), Some(&page_url))
        {
            let me = DiscoveredFeed {
                url: page_url.to_string(),
                title: feed.title,
                mime_type: mime,
                format: Some(feed.format.to_owned()),
            };
            return (true, vec![me], false);
        }
        let text = crate::feed::decode::to_utf8(body, content_type.as_deref());
        let (feeds, guessed) = crate::discover::find_feeds(&text, &page_url);
        (false, feeds, guessed)
    })
    .await?;
    let mut warnings = ctx.standing_warnings();
    warnings.extend(exchange);
    if guessed {
        warnings.push(Warning::new(
            Some(feed_url.clone()),
            WarningCode::FeedsGuessedFromLinks,
            "the page advertises no feed with <link rel=\"alternate\">; \
             these are links on it whose address names a feed",
        ));
    }
    if found.is_empty() {
        warnings.push(Warning::new(
            Some(feed_url.clone()),
            WarningCode::NoFeedsFound,
            "the page advertises no RSS, Atom or JSON feed with <link rel=\"alternate\">",
        ));
    }
    Ok(DiscoverOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        site_url: feed_url,
        final_url: Some(final_url),
        is_feed,
        feeds: found,
        warnings,
    })
}
