//! The page cut from a whole run: its items taken in turns across feeds, as many as fit a
//! token budget; on the first page every feed (slimmed to its title when even that is too
//! much), and a page's one item cut at a paragraph when it alone is too much.

use super::budget::{self, tokens_of};
use crate::error::{Error, Result};
use crate::model::{FeedMeta, FeedResult, FetchOutput};

/// The `next_cursor` of the page after one that leaves each feed at these counts.
pub(super) type CursorFor<'a> = dyn Fn(&[usize]) -> String + 'a;

/// Cuts from `full` (of which each feed gave `counts` items on earlier pages; `first`: none)
/// the page that fits `budget` tokens with `overhead` more, its `next_cursor` (made by
/// `cursor`) and counts included: the most items that fit, taken in turns ([`turns`]), or
/// the page's first item cut at a paragraph when it alone does not fit
/// (`budget::fit_fetch`); with every feed's metadata on the first page, else only their
/// titles. `RESPONSE_TOO_LARGE` (its `estimated_tokens` only) when not even that fits.
pub(super) fn cut(
    full: &FetchOutput,
    counts: &[usize],
    first: bool,
    (budget, overhead): (usize, usize),
    cursor: &CursorFor<'_>,
) -> Result<FetchOutput> {
    let order = turns(full, counts);
    let fits = |p: &FetchOutput| tokens_of(p) + overhead <= budget;
    let mut estimated = None;
    // With every feed's metadata, else (on the first page) with only their titles.
    for cut in Cut::each(full, counts, &order, first, cursor) {
        match budget::largest_fitting(order.len(), |m| fits(&cut.page(m))) {
            Some(m) if m > 0 || order.is_empty() => {
                return Ok(cut.page(m));
            }
            Some(_) => {
                // Not even the page's first item fits: cut its article and content.
                let mut one = cut.page(1);
                let whole = tokens_of(&one);
                if budget::fit_fetch(&mut one, budget, overhead) {
                    return Ok(one);
                }
                estimated.get_or_insert(whole);
            }
            None => {
                estimated.get_or_insert(tokens_of(&cut.page(0)));
            }
        }
    }
    Err(Error::OverBudget {
        estimated_tokens: estimated.unwrap_or(0) + overhead,
        budget_tokens: budget,
        suggested_limit: None,
        suggested_max_content_chars: None,
        suggested_max_response_tokens: None,
    })
}

/// Budgets at which [`cut`] may first succeed on `full`: the page with its first item
/// whole, and with every text of it cut to one character (as `budget::fit_fetch` would cut
/// it), with every feed's metadata or (on the first page) only their titles; the page of
/// no item when there is none to give. `overhead` and `cursor` as [`cut`] takes them.
pub(super) fn budgets_to_try(
    full: &FetchOutput,
    counts: &[usize],
    first: bool,
    overhead: usize,
    cursor: &CursorFor<'_>,
) -> Vec<usize> {
    let order = turns(full, counts);
    let mut out = Vec::new();
    for cut in Cut::each(full, counts, &order, first, cursor) {
        let bare = tokens_of(&cut.page(0)) + overhead;
        if order.is_empty() {
            out.push(bare);
            continue;
        }
        let one = cut.page(1);
        out.push(tokens_of(&one) + overhead);
        let least = budget::cut_to_one(&one);
        out.push(bare.max(budget::budget_for(tokens_of(&least), overhead)));
    }
    out
}

/// The items left after `counts`, in the order pages give them: in turns, the feed that
/// has given the fewest first (the earliest in the request among equals). Each entry is
/// (feed, item index).
pub(super) fn turns(full: &FetchOutput, counts: &[usize]) -> Vec<(usize, usize)> {
    use std::cmp::Reverse;
    let mut heap: std::collections::BinaryHeap<Reverse<(usize, usize)>> = full
        .feeds
        .iter()
        .zip(counts)
        .enumerate()
        .filter(|(_, (f, n))| **n < f.items.len())
        .map(|(i, (_, &n))| Reverse((n, i)))
        .collect();
    let mut order = Vec::new();
    while let Some(Reverse((n, f))) = heap.pop() {
        order.push((f, n));
        if n + 1 < full.feeds[f].items.len() {
            heap.push(Reverse((n + 1, f)));
        }
    }
    order
}

/// Resets a page's totals, errors, warnings and duplicates to its own feeds.
fn settle(page: &mut FetchOutput, full: &FetchOutput) {
    for f in &mut page.feeds {
        f.item_count = f.items.len();
        f.content_tokens_est_total = f.items.iter().map(|i| i.content_tokens_est).sum();
    }
    page.total_items = page.feeds.iter().map(|f| f.item_count).sum();
    page.total_content_tokens_est = page.feeds.iter().map(|f| f.content_tokens_est_total).sum();
    page.errors = page.feeds.iter().filter_map(|f| f.error.clone()).collect();
    let here = |url: &str| page.feeds.iter().any(|f| f.feed_url == url);
    page.warnings = full
        .warnings
        .iter()
        .filter(|w| w.feed_url.as_deref().is_none_or(here))
        .cloned()
        .collect();
    let holds = |feed_url: &str, id: &str| {
        page.feeds
            .iter()
            .any(|f| f.feed_url == feed_url && f.items.iter().any(|i| i.id == id))
    };
    page.duplicates = full
        .duplicates
        .iter()
        .filter(|d| d.items.iter().any(|i| holds(&i.feed_url, &i.id)))
        .cloned()
        .collect();
}

/// What a page holds: the feeds it shows, each with how many of its items from where.
struct Cut<'a> {
    full: &'a FetchOutput,
    counts: &'a [usize],
    order: &'a [(usize, usize)],
    first: bool,
    slim: bool,
    cursor: &'a CursorFor<'a>,
}

impl<'a> Cut<'a> {
    /// The cuts a page is tried as, in order: with every feed's metadata, then (on the
    /// first page only) with only the feeds' titles.
    fn each(
        full: &'a FetchOutput,
        counts: &'a [usize],
        order: &'a [(usize, usize)],
        first: bool,
        cursor: &'a CursorFor<'a>,
    ) -> impl Iterator<Item = Cut<'a>> {
        [false, true]
            .into_iter()
            .filter(move |slim| !slim || first)
            .map(move |slim| Cut {
                full,
                counts,
                order,
                first,
                slim,
                cursor,
            })
    }

    /// The page with the first `m` items of the order.
    fn page(&self, m: usize) -> FetchOutput {
        let mut taken = vec![0usize; self.full.feeds.len()];
        for &(f, _) in &self.order[..m] {
            taken[f] += 1;
        }
        let full = self.full;
        let mut page = FetchOutput {
            schema_version: full.schema_version.clone(),
            fetched_at: full.fetched_at.clone(),
            total_items: 0,
            total_content_tokens_est: 0,
            feeds: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            truncation: full.truncation.clone(),
            duplicates: Vec::new(),
            next_cursor: None,
            delivery: None,
        };
        for (f, feed) in self.full.feeds.iter().enumerate() {
            if !self.first && taken[f] == 0 {
                continue;
            }
            let from = self.counts[f];
            let mut shown = FeedResult {
                feed_url: feed.feed_url.clone(),
                final_url: feed.final_url.clone(),
                status: feed.status,
                from_cache: feed.from_cache,
                meta: feed.meta.clone(),
                item_count: 0,
                content_tokens_est_total: 0,
                items: feed.items[from..from + taken[f]].to_vec(),
                error: feed.error.clone(),
                attempts: feed.attempts,
                gate_wait_ms: feed.gate_wait_ms,
                cached_at: feed.cached_at.clone(),
                cache_age_seconds: feed.cache_age_seconds,
                fresh_until: feed.fresh_until.clone(),
                fresh_by: feed.fresh_by,
            };
            if self.slim && taken[f] == 0 {
                slim(&mut shown);
            }
            page.feeds.push(shown);
        }
        settle(&mut page, self.full);
        page.truncation.items_on_later_pages = self.order.len() - m;
        if m < self.order.len() {
            let next: Vec<usize> = self.counts.iter().zip(&taken).map(|(c, t)| c + t).collect();
            page.next_cursor = Some((self.cursor)(&next));
        }
        page
    }
}

/// A feed's entry cut to what says how it went: its metadata beyond the title goes.
fn slim(feed: &mut FeedResult) {
    let title = feed.meta.title.take();
    feed.meta = FeedMeta {
        title,
        ..FeedMeta::default()
    };
}
