//! Response budgets: whether a result fits in a token budget, and how its texts are cut at
//! a paragraph to make it fit (what a result that cannot is suggested: `super::suggest`).

use serde::Serialize;

use crate::error::{Error, Result};
use crate::feed::{estimate_tokens, truncate_chars};
use crate::model::{ArticleOutput, ArticleResult, FetchOutput, Item, ShowOutput};

/// Estimated tokens of `value` as a model gets it: its compact view
/// ([`crate::output::compact`]) as JSON, every error's message with its hint, by
/// [`estimate_tokens`].
pub fn tokens_of<T: Serialize>(value: &T) -> usize {
    let mut v = crate::output::compact::compact_value(value);
    crate::output::hint::advise_all(&mut v);
    serde_json::to_string(&v).map_or(usize::MAX, |s| estimate_tokens(&s))
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

/// Room for the fields a re-run changes (timestamps, truncation counts, flags).
fn target(budget: usize, overhead: usize) -> usize {
    budget.saturating_sub(overhead).saturating_mul(9) / 10
}

/// The smallest budget whose share for a result ([`target`], with `overhead`) holds
/// `tokens`.
pub(super) fn budget_for(tokens: usize, overhead: usize) -> usize {
    overhead.saturating_add(tokens.saturating_mul(10).div_ceil(9))
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

/// A text that may be cut, with the fields that say so: an item's content or an
/// article's, which starts `offset` characters into the whole.
pub(crate) struct Body<'a> {
    content: &'a mut Option<String>,
    truncated: &'a mut bool,
    next_offset: &'a mut Option<usize>,
    tokens: &'a mut usize,
    offset: usize,
    /// An item's summary, cut with its content (a feed's only body often doubles as its
    /// summary); it is not continued.
    summary: Option<&'a mut Option<String>>,
}

impl Body<'_> {
    fn of_article(a: &mut ArticleResult, offset: usize) -> Body<'_> {
        Body {
            content: &mut a.content,
            truncated: &mut a.content_truncated,
            next_offset: &mut a.next_offset,
            tokens: &mut a.content_tokens_est,
            offset,
            summary: None,
        }
    }

    fn of_item(i: &mut Item, offset: usize) -> Body<'_> {
        Body {
            content: &mut i.content,
            truncated: &mut i.content_truncated,
            next_offset: &mut i.next_offset,
            tokens: &mut i.content_tokens_est,
            offset,
            summary: Some(&mut i.summary),
        }
    }

    fn len(&self) -> usize {
        let summary = self
            .summary
            .as_deref()
            .and_then(Option::as_ref)
            .map_or(0, |s| s.chars().count());
        self.content
            .as_ref()
            .map_or(0, |c| c.chars().count())
            .max(summary)
    }

    /// Starts the text `offset` characters in (the part after what an earlier call gave);
    /// a `USAGE_ERROR` saying where the end is when that is past it. A `next_offset` it
    /// had is moved along.
    fn skip(&mut self, what: &str, arg: &str) -> Result<()> {
        let offset = self.offset;
        if offset == 0 {
            return Ok(());
        }
        let total = self.content.as_ref().map_or(0, |c| c.chars().count());
        if offset >= total {
            return Err(Error::usage(format!(
                "`{arg}` {offset} is past the end of the {what}: it is {total} characters long{}",
                if total == 0 {
                    String::new()
                } else {
                    format!(" (offsets 0 to {})", total - 1)
                }
            )));
        }
        if let Some(c) = self.content.as_mut() {
            *c = c.chars().skip(offset).collect();
            *self.tokens = estimate_tokens(c);
        }
        Ok(())
    }

    /// Cuts the text to exactly `max` characters (as `max_content_chars` does), saying where
    /// the rest starts.
    fn cap(&mut self, max: usize) {
        if let Some(c) = self.content.as_mut()
            && truncate_chars(c, max)
        {
            *self.tokens = estimate_tokens(c);
            *self.truncated = true;
            *self.next_offset = Some(self.offset + max);
        }
    }

    /// Cuts the text to at most `max` characters at a paragraph break, saying where the
    /// rest starts.
    fn cut(&mut self, max: usize) {
        if let Some(Some(s)) = self.summary.as_deref_mut() {
            truncate_chars(s, max);
        }
        let Some(c) = self.content.as_ref() else {
            return;
        };
        if c.chars().count() <= max {
            return;
        }
        let (kept, n) = cut_at_paragraph(c, max);
        let kept = kept.to_owned();
        *self.tokens = estimate_tokens(&kept);
        *self.content = Some(kept);
        *self.truncated = true;
        *self.next_offset = Some(self.offset + n);
    }
}

/// Where the texts of a result start: an item's content (`offset`) and its article's
/// (`article_offset`), or each article of `fetch_article` (`offset`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Offsets {
    /// Into an item's content, or each article of `fetch_article`.
    pub content: usize,
    /// Into the article attached to an item.
    pub article: usize,
}

/// Fits `out` into `target` by cutting every text `bodies` gives to one length at
/// paragraph breaks: the longest that fits. `false` when no length of one character or
/// more fits.
fn fit_bodies<T: Clone + Serialize>(
    out: &mut T,
    target: usize,
    at: Offsets,
    bodies: fn(&mut T, Offsets) -> Vec<Body<'_>>,
) -> bool {
    let longest = {
        let mut probe = out.clone();
        bodies(&mut probe, at)
            .iter()
            .map(Body::len)
            .max()
            .unwrap_or(0)
    };
    if longest == 0 {
        return false;
    }
    let cut = |o: &T, max: usize| {
        let mut o = o.clone();
        for mut b in bodies(&mut o, at) {
            b.cut(max);
        }
        o
    };
    match largest_fitting(longest, |c| tokens_of(&cut(out, c)) <= target) {
        Some(c) if c > 0 => {
            *out = cut(out, c);
            true
        }
        _ => false,
    }
}

fn articles_of(out: &mut ArticleOutput, at: Offsets) -> Vec<Body<'_>> {
    out.articles
        .iter_mut()
        .map(|a| Body::of_article(a, at.content))
        .collect()
}

fn item_articles(out: &mut FetchOutput, _: Offsets) -> Vec<Body<'_>> {
    out.feeds
        .iter_mut()
        .flat_map(|f| f.items.iter_mut())
        .filter_map(|i| i.article.as_deref_mut())
        .map(|a| Body::of_article(a, 0))
        .collect()
}

fn item_texts(out: &mut FetchOutput, _: Offsets) -> Vec<Body<'_>> {
    out.feeds
        .iter_mut()
        .flat_map(|f| f.items.iter_mut())
        .flat_map(|i| {
            let (content, truncated, next_offset, tokens, summary, article) = (
                &mut i.content,
                &mut i.content_truncated,
                &mut i.next_offset,
                &mut i.content_tokens_est,
                &mut i.summary,
                i.article.as_deref_mut(),
            );
            let item = Body {
                content,
                truncated,
                next_offset,
                tokens,
                offset: 0,
                summary: Some(summary),
            };
            std::iter::once(item).chain(article.map(|a| Body::of_article(a, 0)))
        })
        .collect()
}

fn show_article(out: &mut ShowOutput, at: Offsets) -> Vec<Body<'_>> {
    out.item
        .article
        .as_deref_mut()
        .map(|a| Body::of_article(a, at.article))
        .into_iter()
        .collect()
}

fn show_texts(out: &mut ShowOutput, at: Offsets) -> Vec<Body<'_>> {
    let item = &mut out.item;
    let article = item
        .article
        .as_deref_mut()
        .map(|a| Body::of_article(a, at.article));
    let body = Body {
        content: &mut item.content,
        truncated: &mut item.content_truncated,
        next_offset: &mut item.next_offset,
        tokens: &mut item.content_tokens_est,
        offset: at.content,
        summary: Some(&mut item.summary),
    };
    std::iter::once(body).chain(article).collect()
}

/// Starts each article of `out` `offset` characters in; past the end of one, a
/// `USAGE_ERROR` saying where it ends.
pub fn skip_articles(out: &mut ArticleOutput, offset: usize) -> Result<()> {
    for a in &mut out.articles {
        if a.content.is_some() {
            Body::of_article(a, offset).skip("article", "offset")?;
        }
    }
    Ok(())
}

/// Starts `get_item`'s texts where `at` says: the item's content at `at.content`, its
/// article's at `at.article`; past either end, a `USAGE_ERROR` saying where it is.
pub fn skip_item(out: &mut ShowOutput, at: Offsets) -> Result<()> {
    if at.content > 0 {
        Body::of_item(&mut out.item, at.content).skip("item's content", "offset")?;
    }
    if at.article > 0 {
        let Some(a) = out.item.article.as_deref_mut() else {
            return Err(Error::usage(
                "`article_offset` continues an article: give it with `article: true`",
            ));
        };
        if a.content.is_some() {
            Body::of_article(a, at.article).skip("article", "article_offset")?;
        }
    }
    Ok(())
}

/// Cuts each article (which starts `offset` characters in) to `max` characters, with
/// `next_offset`.
pub fn cap_articles(out: &mut ArticleOutput, max: usize, offset: usize) {
    for a in &mut out.articles {
        Body::of_article(a, offset).cap(max);
    }
}

/// Cuts `get_item`'s texts (which start where `at` says) to `max` characters each, with
/// `next_offset`; the summary too.
pub fn cap_item(out: &mut ShowOutput, max: usize, at: Offsets) {
    Body::of_item(&mut out.item, at.content).cap(max);
    if let Some(s) = &mut out.item.summary {
        truncate_chars(s, max);
    }
    if let Some(a) = out.item.article.as_deref_mut() {
        Body::of_article(a, at.article).cap(max);
    }
}

/// Whether an article result (plus `overhead` tokens) fits into `budget`, once articles
/// longer than their share are cut at a paragraph (with `next_offset`), as they are then.
pub(super) fn fits_articles(
    out: &mut ArticleOutput,
    budget: usize,
    overhead: usize,
    offset: usize,
) -> bool {
    if tokens_of(out) + overhead <= budget {
        return true;
    }
    let at = Offsets {
        content: offset,
        article: 0,
    };
    if fit_bodies(out, target(budget, overhead), at, articles_of) {
        out.total_content_tokens_est = out.articles.iter().map(|a| a.content_tokens_est).sum();
        return true;
    }
    false
}

/// Fits an article result (plus `overhead` tokens) into `budget`: articles longer than
/// their share come back cut at a paragraph, with `next_offset`; `RESPONSE_TOO_LARGE`
/// when not even that fits, with a budget that does ([`super::suggest::for_articles`]).
pub fn fit_articles(
    out: &mut ArticleOutput,
    budget: usize,
    overhead: usize,
    offset: usize,
) -> Result<()> {
    let estimated = tokens_of(out) + overhead;
    if fits_articles(out, budget, overhead, offset) {
        return Ok(());
    }
    Err(super::suggest::for_articles(
        out,
        (budget, overhead),
        offset,
        estimated,
    ))
}

/// Fits a fetch (the one item a page could not do without): its article is cut first, then
/// its content, each at a paragraph with `next_offset`. Whether it fits then.
pub(super) fn fit_fetch(out: &mut FetchOutput, budget: usize, overhead: usize) -> bool {
    let target = target(budget, overhead);
    let at = Offsets::default();
    if tokens_of(out) + overhead > budget {
        let articles = !item_articles(out, at).is_empty();
        if !(articles && fit_bodies(out, target, at, item_articles)) {
            fit_bodies(out, target, at, item_texts);
        }
    }
    tokens_of(out) + overhead <= budget
}

/// `out` with every text of its items (content, summary, article) cut to one character
/// at most, as [`fit_fetch`] cuts them at the least.
pub(super) fn cut_to_one(out: &FetchOutput) -> FetchOutput {
    let mut o = out.clone();
    for mut b in item_texts(&mut o, Offsets::default()) {
        b.cut(1);
    }
    o
}

/// Whether `get_item` (plus `overhead` tokens) fits into `budget` once its article, then its
/// content too, are cut at a paragraph (the texts start where `at` says), as they are then.
pub(super) fn fits_item(out: &mut ShowOutput, budget: usize, overhead: usize, at: Offsets) -> bool {
    if tokens_of(out) + overhead <= budget {
        return true;
    }
    let target = target(budget, overhead);
    (out.item.article.is_some() && fit_bodies(out, target, at, show_article))
        || fit_bodies(out, target, at, show_texts)
}

/// `get_item` with its article alone (`article_only`), or every text, cut to one character
/// at most, as [`fits_item`] cuts them at the least.
pub(super) fn item_cut_to_one(out: &ShowOutput, at: Offsets, article_only: bool) -> ShowOutput {
    let mut o = out.clone();
    let bodies = if article_only {
        show_article(&mut o, at)
    } else {
        show_texts(&mut o, at)
    };
    for mut b in bodies {
        b.cut(1);
    }
    o
}

/// Fits `get_item` into `budget`: its article is cut first, then its content too, each at
/// a paragraph with `next_offset` (the texts start where `at` says); `RESPONSE_TOO_LARGE`
/// with what would fit ([`super::suggest::for_item`]) when not even that does.
pub fn fit_item(out: &mut ShowOutput, budget: usize, overhead: usize, at: Offsets) -> Result<()> {
    let estimated = tokens_of(out) + overhead;
    if fits_item(out, budget, overhead, at) {
        return Ok(());
    }
    Err(super::suggest::for_item(
        out,
        (budget, overhead),
        at,
        estimated,
    ))
}

/// `articles` (starting `offset` characters in) with every text cut to one character at
/// most, as [`fits_articles`] cuts them at the least.
pub(super) fn articles_cut_to_one(out: &ArticleOutput, offset: usize) -> ArticleOutput {
    let mut o = out.clone();
    let at = Offsets {
        content: offset,
        article: 0,
    };
    for mut b in articles_of(&mut o, at) {
        b.cut(1);
    }
    o
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
