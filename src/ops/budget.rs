//! Response budgets: whether a result fits in a token budget, and what limit or content
//! length would make it fit.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::feed::{estimate_tokens, truncate_chars};
use crate::model::{ArticleOutput, ArticleResult, FetchOutput, Item, ShowOutput};

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
    super::dedupe::retain_present(&mut o);
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
pub(crate) fn largest_fitting(hi: usize, fits: impl Fn(usize) -> bool) -> Option<usize> {
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

/// The longest prefix of `s` of at most `max` characters that ends at a paragraph break
/// (else a line break, else a space, else anywhere); and its length in characters.
pub fn cut_at_paragraph(s: &str, max: usize) -> (&str, usize) {
    let end = match s.char_indices().nth(max) {
        None => return (s, s.chars().count()),
        Some((at, _)) => at,
    };
    let head = &s[..end];
    let at = head
        .rfind("\n\n")
        .map(|i| i + 2)
        .or_else(|| head.rfind('\n').map(|i| i + 1))
        .or_else(|| head.rfind(' ').map(|i| i + 1))
        .filter(|&i| i > 0)
        .unwrap_or(end);
    let kept = &s[..at];
    (kept, kept.chars().count())
}

/// Starts `a`'s content `offset` characters in (the part after what an earlier call gave).
pub fn skip_to(a: &mut ArticleResult, offset: usize) {
    if offset == 0 {
        return;
    }
    if let Some(c) = &mut a.content {
        *c = c.chars().skip(offset).collect();
        a.content_tokens_est = estimate_tokens(c);
    }
}

/// Cuts `a`'s content (which starts `offset` characters into the article) to at most `max`
/// characters at a paragraph break, saying where the rest starts.
fn cut_article(a: &mut ArticleResult, max: usize, offset: usize) {
    let Some(c) = &a.content else { return };
    let total = c.chars().count();
    if total <= max {
        return;
    }
    let (kept, n) = cut_at_paragraph(c, max);
    let kept = kept.to_owned();
    a.content_tokens_est = estimate_tokens(&kept);
    a.content = Some(kept);
    a.content_truncated = true;
    a.next_offset = Some(offset + n);
}

/// Fits `articles` (each starting `offset` characters in) into what `tokens` says is left
/// of `target`, by cutting every content to one length at paragraph breaks: the longest
/// that fits. `false` when not even empty contents fit.
fn fit_contents<T: Clone + Serialize>(
    out: &mut T,
    target: usize,
    offset: usize,
    articles: fn(&mut T) -> Vec<&mut ArticleResult>,
) -> bool {
    let longest = {
        let mut probe = out.clone();
        articles(&mut probe)
            .iter()
            .filter_map(|a| a.content.as_ref().map(|c| c.chars().count()))
            .max()
            .unwrap_or(0)
    };
    let cut = |o: &T, max: usize| {
        let mut o = o.clone();
        for a in articles(&mut o) {
            cut_article(a, max, offset);
        }
        o
    };
    match largest_fitting(longest, |c| tokens_of(&cut(out, c)) <= target) {
        Some(c) => {
            *out = cut(out, c);
            true
        }
        None => false,
    }
}

fn articles_of(out: &mut ArticleOutput) -> Vec<&mut ArticleResult> {
    out.articles.iter_mut().collect()
}

fn item_articles(out: &mut FetchOutput) -> Vec<&mut ArticleResult> {
    out.feeds
        .iter_mut()
        .flat_map(|f| f.items.iter_mut())
        .filter_map(|i| i.article.as_deref_mut())
        .collect()
}

fn show_article(out: &mut ShowOutput) -> Vec<&mut ArticleResult> {
    out.item.article.as_deref_mut().into_iter().collect()
}

/// Fits an article result (plus `overhead` tokens) into `budget`: articles longer than
/// their share come back cut at a paragraph, with `next_offset`; `RESPONSE_TOO_LARGE` when
/// not even that fits.
pub fn fit_articles(
    out: &mut ArticleOutput,
    budget: usize,
    overhead: usize,
    offset: usize,
) -> Result<()> {
    let estimated = tokens_of(out) + overhead;
    if estimated <= budget {
        return Ok(());
    }
    if fit_contents(out, target(budget, overhead), offset, articles_of) {
        out.total_content_tokens_est = out.articles.iter().map(|a| a.content_tokens_est).sum();
        return Ok(());
    }
    Err(Error::OverBudget {
        estimated_tokens: estimated,
        budget_tokens: budget,
        suggested_limit: None,
        suggested_max_content_chars: None,
    })
}

/// Fits a fetch whose items carry articles: the articles are cut first (they share the
/// feed's budget); then [`check`] as for any fetch.
pub fn fit_fetch(out: &mut FetchOutput, budget: usize, overhead: usize) -> Result<()> {
    if tokens_of(out) + overhead > budget && !item_articles(out).is_empty() {
        fit_contents(out, target(budget, overhead), 0, item_articles);
    }
    check(out, budget, overhead)
}

/// Fits `get_item` with its article: the article is cut first, then [`check_item`].
pub fn fit_item(out: &mut ShowOutput, budget: usize, overhead: usize) -> Result<()> {
    if tokens_of(out) + overhead > budget && out.item.article.is_some() {
        fit_contents(out, target(budget, overhead), 0, show_article);
    }
    check_item(out, budget, overhead)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_ends_at_a_paragraph_then_a_line_then_a_word() {
        let s = "one two\n\nthree four\nfive six";
        assert_eq!(cut_at_paragraph(s, 100), (s, 28));
        assert_eq!(cut_at_paragraph(s, 20), ("one two\n\n", 9));
        assert_eq!(cut_at_paragraph("one two\nthree", 10), ("one two\n", 8));
        assert_eq!(cut_at_paragraph("one two three", 10), ("one two ", 8));
        assert_eq!(cut_at_paragraph("abcdefghij", 4), ("abcd", 4));
        assert_eq!(cut_at_paragraph("ééé ééé", 5), ("ééé ", 4));
    }

    #[test]
    fn largest_fitting_finds_the_boundary() {
        assert_eq!(largest_fitting(100, |n| n <= 37), Some(37));
        assert_eq!(largest_fitting(100, |_| true), Some(100));
        assert_eq!(largest_fitting(100, |_| false), None);
        assert_eq!(largest_fitting(0, |_| false), None);
    }
}
