//! Response budgets: whether a result fits in a token budget, and what limit or content
//! length would make it fit.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::feed::{estimate_tokens, truncate_chars};
use crate::model::{FetchOutput, Item, ShowOutput};

/// Estimated tokens of `value` as sent: ceil(chars / 4) of its JSON.
pub fn tokens_of<T: Serialize>(value: &T) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |s| estimate_tokens(&s))
}

/// A copy of `out` with at most `limit` items per feed.
fn with_limit(out: &FetchOutput, limit: usize) -> FetchOutput {
    let mut o = out.clone();
    for f in &mut o.feeds {
        f.items.truncate(limit);
    }
    o
}

/// A copy of `out` with every content and summary cut to `chars` characters.
fn with_content_chars(out: &FetchOutput, chars: usize) -> FetchOutput {
    let mut o = out.clone();
    for f in &mut o.feeds {
        for it in &mut f.items {
            cut_item(it, chars);
        }
    }
    o
}

/// The largest `n` in `0..=hi` for which `fits(n)` holds (`fits` is monotone), or `None`
/// when not even 0 fits.
fn largest_fitting(hi: usize, fits: impl Fn(usize) -> bool) -> Option<usize> {
    if fits(hi) {
        return Some(hi);
    }
    if !fits(0) {
        return None;
    }
    let (mut lo, mut hi) = (0usize, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    Some(lo)
}

/// The longest content or summary among `items`, in characters.
fn longest_body<'a>(items: impl Iterator<Item = &'a Item>) -> usize {
    items
        .flat_map(|i| [&i.content, &i.summary])
        .filter_map(|c| c.as_ref().map(|c| c.chars().count()))
        .max()
        .unwrap_or(0)
}

/// Cuts an item's content and summary to `chars` characters.
fn cut_item(it: &mut Item, chars: usize) {
    if let Some(c) = &mut it.content
        && truncate_chars(c, chars)
    {
        it.content_truncated = true;
    }
    if let Some(s) = &mut it.summary {
        truncate_chars(s, chars);
    }
}

/// Room for the fields a re-run changes (timestamps, truncation counts, flags).
fn target(budget: usize, overhead: usize) -> usize {
    budget.saturating_sub(overhead).saturating_mul(9) / 10
}

/// `Ok` when `out` (plus `overhead` tokens of summary text) fits in `budget` tokens;
/// otherwise `RESPONSE_TOO_LARGE` with a per-feed `limit` and a `max_content_chars` that
/// each, followed alone, make the same result fit (with a margin for the fields that
/// change when they are applied); a suggestion that cannot make it fit alone is `None`.
pub fn check(out: &FetchOutput, budget: usize, overhead: usize) -> Result<()> {
    let estimated = tokens_of(out) + overhead;
    if estimated <= budget {
        return Ok(());
    }
    let target = target(budget, overhead);
    let most_items = out.feeds.iter().map(|f| f.items.len()).max().unwrap_or(0);
    let suggested_limit = largest_fitting(most_items, |l| tokens_of(&with_limit(out, l)) <= target);
    let longest = longest_body(out.feeds.iter().flat_map(|f| f.items.iter()));
    let suggested_max_content_chars = largest_fitting(longest, |c| {
        tokens_of(&with_content_chars(out, c)) <= target
    });
    Err(Error::OverBudget {
        estimated_tokens: estimated,
        budget_tokens: budget,
        suggested_limit,
        suggested_max_content_chars,
    })
}

/// Like [`check`] for one item (`get_item`): only `max_content_chars` can be suggested.
pub fn check_item(out: &ShowOutput, budget: usize, overhead: usize) -> Result<()> {
    let estimated = tokens_of(out) + overhead;
    if estimated <= budget {
        return Ok(());
    }
    let target = target(budget, overhead);
    let longest = longest_body(std::iter::once(&out.item));
    let suggested_max_content_chars = largest_fitting(longest, |c| {
        let mut o = out.clone();
        cut_item(&mut o.item, c);
        tokens_of(&o) <= target
    });
    Err(Error::OverBudget {
        estimated_tokens: estimated,
        budget_tokens: budget,
        suggested_limit: None,
        suggested_max_content_chars,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_fitting_finds_the_boundary() {
        assert_eq!(largest_fitting(100, |n| n <= 37), Some(37));
        assert_eq!(largest_fitting(100, |_| true), Some(100));
        assert_eq!(largest_fitting(100, |_| false), None);
        assert_eq!(largest_fitting(0, |_| false), None);
    }
}
