//! One check of a watched feed: a fetch like any other (`ops::fetch_feeds`, through the
//! cache and the gate: a fresh copy is read with no request, a stale one is revalidated
//! with a conditional GET), read as what the schedule needs and a digest of the items.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use super::schedule::{self, Findings};
use crate::feed::RenderOptions;
use crate::model::{ErrorObject, FeedResult, FeedStatus, Item};
use crate::ops::{CacheMode, Context, FetchOptions};

/// What one check gave.
#[derive(Debug, Clone, Default)]
pub(crate) struct Checked {
    /// What the schedule reads.
    pub findings: Findings,
    /// A digest of the items (each one's id and what it says), `None` when none could be
    /// read: two checks that read the same items have the same digest, whatever else of
    /// the document changed.
    pub digest: Option<u64>,
    /// The items, when the watch keeps them (a foreground `rss watch` prints them).
    pub items: Option<Arc<Vec<Item>>>,
    /// Why the check failed, when it did.
    pub error: Option<ErrorObject>,
}

/// Checks feeds. The watch's one way to the network, so that its scheduling can be tested
/// on paused time.
pub(crate) trait Checker: Send + Sync + 'static {
    /// Checks `uri` now.
    fn check<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Checked>;
    /// The wall clock, Unix ms.
    fn now_ms(&self) -> u64;
}

/// The checker of a running `rss`: `ops::fetch_feeds` through the process's one client,
/// gate and cache.
pub(crate) struct FetchChecker {
    ctx: Arc<Context>,
    render: RenderOptions,
    keep_items: bool,
}

impl FetchChecker {
    /// Checks through `ctx`, rendering bodies as `render`; `keep_items` hands the items
    /// on with each check.
    pub(crate) fn new(ctx: Arc<Context>, render: RenderOptions, keep_items: bool) -> Self {
        FetchChecker {
            ctx,
            render,
            keep_items,
        }
    }
}

impl Checker for FetchChecker {
    fn check<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Checked> {
        Box::pin(async move {
            let opts = FetchOptions {
                render: self.render,
                cache: CacheMode::Fresh,
                dedupe: crate::ops::Dedupe::Off,
                ..FetchOptions::default()
            };
            let input = crate::inputs::classify(uri);
            let host_wait = {
                let ctx = self.ctx.clone();
                let url = match &input.source {
                    crate::inputs::Source::Http(u) => Some(u.clone()),
                    _ => None,
                };
                move || host_wait(&ctx, url.as_ref())
            };
            let mut out = crate::ops::fetch_feeds(&self.ctx, vec![input], &opts, &|_, _| {}).await;
            let Some(feed) = out.feeds.pop() else {
                return Checked::default();
            };
            let mut c = read(feed, self.now_ms(), self.keep_items);
            c.findings.host_wait = host_wait();
            c
        })
    }

    fn now_ms(&self) -> u64 {
        crate::cache::now_ms()
    }
}

/// How long from now the gate holds `url`'s host.
fn host_wait(ctx: &Context, url: Option<&url::Url>) -> Duration {
    url.and_then(|u| ctx.client.key_of(u))
        .map(|key| {
            ctx.client
                .gate()
                .state_of(&key)
                .pacing(tokio::time::Instant::now())
        })
        .unwrap_or_default()
}

/// A feed's result as a check's findings, at Unix ms `now`.
pub(crate) fn read(feed: FeedResult, now: u64, keep_items: bool) -> Checked {
    let at = |t: &Option<String>| {
        t.as_deref()
            .and_then(crate::date::parse)
            .and_then(|t| u64::try_from(t.timestamp_millis()).ok())
    };
    let failed = feed.status == FeedStatus::Error;
    let retry_after = feed
        .error
        .as_ref()
        .filter(|e| e.code == crate::error::ErrorCode::RateLimited.as_str())
        .and_then(|e| e.details.get("retry_after_ms"))
        .and_then(serde_json::Value::as_u64)
        .map(Duration::from_millis);
    let recent = now.saturating_sub(schedule::RATE_WINDOW.as_millis() as u64);
    let dated_recently = feed
        .items
        .iter()
        .filter_map(|i| at(&i.published).or_else(|| at(&i.updated)))
        .filter(|t| *t >= recent && *t <= now)
        .count();
    let findings = Findings {
        now_ms: now,
        fresh_until_ms: at(&feed.fresh_until),
        declared: feed
            .meta
            .declared_ttl_seconds
            .map(Duration::from_secs)
            .filter(|_| !failed),
        confirmed_ms: if feed.from_cache {
            at(&feed.cached_at).unwrap_or(now)
        } else {
            now
        },
        skip_hours: schedule::hours_mask(&feed.meta.skip_hours),
        skip_days: schedule::days_mask(&feed.meta.skip_days),
        host_wait: Duration::ZERO,
        retry_after,
        failed,
        dated_recently,
    };
    Checked {
        findings,
        digest: (!failed).then(|| digest(&feed.items)),
        items: (keep_items && !failed).then(|| Arc::new(feed.items)),
        error: feed.error,
    }
}

/// A digest of `items`, in any order: each item's id and what it says (title, link,
/// dates, summary, the hash of its body, enclosures).
pub(crate) fn digest(items: &[Item]) -> u64 {
    let mut lines: Vec<Vec<u8>> = items
        .iter()
        .map(|i| {
            let fields = serde_json::json!([
                i.id,
                i.title,
                i.url,
                i.published,
                i.updated,
                i.summary,
                i.content_hash,
                i.enclosures,
            ]);
            fields.to_string().into_bytes()
        })
        .collect();
    lines.sort_unstable();
    let mut h = Sha256::new();
    for l in &lines {
        h.update(l);
        h.update(b"\n");
    }
    let d = h.finalize();
    u64::from_be_bytes(d[..8].try_into().unwrap_or_default())
}
