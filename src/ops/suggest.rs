//! Suggestions that fit: the `suggested_max_response_tokens` a `RESPONSE_TOO_LARGE` over a
//! call's token budget carries is the least budget found at which the same call succeeds,
//! checked by running the cut that call runs on the result it would get. That result is
//! taken at its widest where a call of the same arguments can come out otherwise
//! ([`widen_feed`]: a copy served from the cache, with its time and age; a wait at the gate;
//! a retry), with room for a summary line a few words longer ([`SLACK`]); `null` when no
//! budget is found. No `suggested_max_content_chars` or `suggested_limit` is made: a result
//! is refused only once its texts are cut to a character, which no cap of them can beat,
//! and a page's first item is the same whatever the limit.

use super::budget::{self, Offsets, tokens_of};
use super::cut;
use crate::error::Error;
use crate::model::{ArticleOutput, ArticleResult, FeedResult, FeedStatus, FetchOutput, ShowOutput};

/// Tokens of room for what the summary line of the call that follows may add (" (from
/// cache)", a count one digit longer).
const SLACK: usize = 16;

/// The widest cache age (seconds) and gate wait (ms) a follow-up call is taken to report.
const WIDE_AGE: u64 = 99_999_999;
const WIDE_WAIT_MS: u64 = 9_999_999;

/// A budget and the overhead (the summary line's tokens) a call cut its result to.
pub(super) type Budget = (usize, usize);

/// What a call of the same arguments may report wider of one result (a feed's or an
/// article's): served from the cache, with a long age, a long wait at the gate, a retry.
struct Reported<'a> {
    status: &'a mut FeedStatus,
    from_cache: &'a mut bool,
    cached_at: &'a mut Option<String>,
    age: &'a mut Option<u64>,
    wait_ms: &'a mut u64,
    attempts: &'a mut u32,
}

impl Reported<'_> {
    /// At its widest (a failed result stays as it is).
    fn widen(self, stamp: &str) {
        if *self.status == FeedStatus::Error {
            return;
        }
        *self.status = FeedStatus::NotModified;
        *self.from_cache = true;
        self.cached_at.get_or_insert_with(|| stamp.to_owned());
        *self.age = Some(
            self.age
                .map_or(WIDE_AGE, |a| a.saturating_mul(10).max(WIDE_AGE)),
        );
        *self.wait_ms = self.wait_ms.saturating_mul(10).max(WIDE_WAIT_MS);
        *self.attempts = (*self.attempts).max(2);
    }
}

/// `f` (and its items' articles) as a call of the same arguments may give it at its widest.
fn widen_feed(f: &mut FeedResult, stamp: &str) {
    Reported {
        status: &mut f.status,
        from_cache: &mut f.from_cache,
        cached_at: &mut f.cached_at,
        age: &mut f.cache_age_seconds,
        wait_ms: &mut f.gate_wait_ms,
        attempts: &mut f.attempts,
    }
    .widen(stamp);
    for a in f.items.iter_mut().filter_map(|i| i.article.as_deref_mut()) {
        widen_article(a, stamp);
    }
}

/// `a` as a call of the same arguments may give it at its widest.
fn widen_article(a: &mut ArticleResult, stamp: &str) {
    Reported {
        status: &mut a.status,
        from_cache: &mut a.from_cache,
        cached_at: &mut a.cached_at,
        age: &mut a.cache_age_seconds,
        wait_ms: &mut a.gate_wait_ms,
        attempts: &mut a.attempts,
    }
    .widen(stamp);
}

/// The least of `candidates` at which `fits` holds; else, from the largest, the first of
/// its doublings that does (a bounded number); `None` when none does.
fn least_fitting(mut candidates: Vec<usize>, fits: impl Fn(usize) -> bool) -> Option<usize> {
    candidates.sort_unstable();
    candidates.dedup();
    if let Some(&b) = candidates.iter().find(|&&b| fits(b)) {
        return Some(b);
    }
    let mut b = candidates.last().copied().unwrap_or(1).max(1);
    for _ in 0..24 {
        b = b.saturating_mul(2);
        if fits(b) {
            return Some(b);
        }
    }
    None
}

/// `RESPONSE_TOO_LARGE` of `estimated` tokens over `budget`, suggesting `tokens` (the
/// only suggestion a result over its token budget carries: see the module's doc).
fn over_budget(estimated: usize, budget: usize, tokens: Option<usize>) -> Error {
    Error::OverBudget {
        estimated_tokens: estimated,
        budget_tokens: budget,
        suggested_limit: None,
        suggested_max_content_chars: None,
        suggested_max_response_tokens: tokens,
    }
}

/// `RESPONSE_TOO_LARGE` for a fetch page that does not fit `(budget, overhead)`: the page of
/// `full` after `counts` (`first`: the first page) would have needed `estimated` tokens, its
/// cursor made by `cursor`. The least budget at which the page gives its first item (the
/// least at which it gives any). No `max_content_chars` is suggested: the page already cuts
/// its one item's texts down to a character before it gives up, so no cap of them could
/// make it fit.
pub(super) fn for_page(
    full: &FetchOutput,
    counts: &[usize],
    first: bool,
    (budget, overhead): Budget,
    (estimated, cursor): (usize, &cut::CursorFor<'_>),
) -> Error {
    let mut wide = full.clone();
    for f in &mut wide.feeds {
        widen_feed(f, &full.fetched_at);
    }
    let overhead = overhead + SLACK;
    let fits = |b: usize| cut::cut(&wide, counts, first, (b, overhead), cursor).is_ok();
    let tokens = least_fitting(
        cut::budgets_to_try(&wide, counts, first, overhead, cursor),
        fits,
    );
    over_budget(estimated, budget, tokens)
}

/// `RESPONSE_TOO_LARGE` for an article result that does not fit `(budget, overhead)` even
/// cut (its articles starting `offset` characters in), `estimated` tokens whole: the least
/// budget at which it fits, whole or cut.
pub(super) fn for_articles(
    out: &ArticleOutput,
    (budget, overhead): Budget,
    offset: usize,
    estimated: usize,
) -> Error {
    let mut wide = out.clone();
    for a in &mut wide.articles {
        widen_article(a, &out.fetched_at);
    }
    let overhead = overhead + SLACK;
    let fits = |b: usize| budget::fits_articles(&mut wide.clone(), b, overhead, offset);
    let whole = tokens_of(&wide) + overhead;
    let least = tokens_of(&budget::articles_cut_to_one(&wide, offset));
    let tokens = least_fitting(vec![whole, budget::budget_for(least, overhead)], fits);
    over_budget(estimated, budget, tokens)
}

/// `RESPONSE_TOO_LARGE` for `get_item` that does not fit `(budget, overhead)` even cut (its
/// texts starting where `at` says), `estimated` tokens whole: the least budget at which it
/// fits (no `max_content_chars`, as for a page).
pub(super) fn for_item(
    out: &ShowOutput,
    (budget, overhead): Budget,
    at: Offsets,
    estimated: usize,
) -> Error {
    let mut wide = out.clone();
    let stamp = crate::date::format(&chrono::Utc::now());
    wide.from_cache = true;
    wide.fetched_at.get_or_insert(stamp.clone());
    if let Some(a) = wide.item.article.as_deref_mut() {
        widen_article(a, &stamp);
    }
    let overhead = overhead + SLACK;
    let fits = |b: usize| budget::fits_item(&mut wide.clone(), b, overhead, at);
    let mut candidates = vec![tokens_of(&wide) + overhead];
    for article_only in [true, false] {
        let least = tokens_of(&budget::item_cut_to_one(&wide, at, article_only));
        candidates.push(budget::budget_for(least, overhead));
    }
    let tokens = least_fitting(candidates, fits);
    over_budget(estimated, budget, tokens)
}
