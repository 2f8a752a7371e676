//! The one extraction function: a page's HTML to its readable article, by two kept crates
//! that look for it in different ways, each checking the other:
//! [dom_smoothie](https://crates.io/crates/dom_smoothie) (a port of Mozilla's Readability:
//! the best-scoring container, kept whole with its structure, links and images) and
//! [trafilatura](https://crates.io/crates/trafilatura) (a port of trafilatura: text blocks
//! judged one by one, its own fallbacks left out). The article is dom_smoothie's,
//! less each block of text that trafilatura did not find ([`agree`]); trafilatura's own when
//! dom_smoothie found none, or the two chose different parts of the page. Chosen by measurement:
//! `benches/extract-compare`.

use std::collections::HashSet;

use url::Url;

/// What the extractor found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extracted {
    /// The article's HTML (not yet sanitized).
    pub html: String,
    /// The extractor's title for the page.
    pub title: Option<String>,
    /// The extractor's byline.
    pub byline: Option<String>,
    /// The extractor's excerpt.
    pub excerpt: Option<String>,
    /// The extractor's site name.
    pub site_name: Option<String>,
    /// The extractor's language.
    pub lang: Option<String>,
    /// The extractor's publication time, as written.
    pub published: Option<String>,
    /// The extractor's lead image, as written.
    pub image: Option<String>,
}

/// A block of dom_smoothie's article is kept when at least this share of its word 4-grams
/// are in trafilatura's text (a share, not all: the two crates space and join words a
/// little differently at inline markup).
const AGREEMENT: f64 = 0.3;

/// The largest page (as the extractors read it) whose article trafilatura checks; a larger
/// one is dom_smoothie's alone. trafilatura takes about 55 MB and half a second of CPU for
/// every MiB of an ordinary page (a page of 4 MiB: 232 MB, 2 s; one of 4.3 MiB read by dom_smoothie
/// alone, 49 MB), and a window of pages holds several at once; no page of the corpora is over
/// 2 MiB.
pub(crate) const CHECKED_MAX_BYTES: usize = 2 << 20;

/// The most nesting cost ([`crate::shape::measured`]: the sum of every element's depth) of
/// a page trafilatura checks; a costlier one is dom_smoothie's alone. trafilatura's memory
/// grows with it, about 290 bytes a unit (8,000 paragraphs under 120 nested `<span>`, cost
/// 968,000, took 273 MB whether the page was 0.2 or 2 MB); the 181 pages of the extraction
/// benchmark cost at most 36,000 (a median 9,000), Readability's test pages at most 162,000.
pub(crate) const CHECKED_MAX_COST: u64 = 200_000;

/// Elements that hold a block of text; only the innermost are judged.
const BLOCKS: &str =
    "p, li, h1, h2, h3, h4, h5, h6, blockquote, pre, figcaption, dd, dt, td, th, div";

/// Extracts the article of `html`, a page read from `url` (within the bounds of
/// [`super::shape`]); `None` when neither crate finds one. Also whether the page looks like
/// it has an article at all (Readability's `isProbablyReaderable`), either way. `stop` is
/// checked between the crates.
pub(crate) fn extract(
    html: &str,
    cost: u64,
    url: &Url,
    stop: &super::Stop,
) -> Result<(Option<Extracted>, bool), super::Stopped> {
    let doc = super::tree::build(html, stop)?;
    let (readability, readerable) = readability(doc, url);
    stop.check()?;
    // trafilatura costs memory and time with a page's size and its nesting (see the two
    // bounds): past either it is left out, and dom_smoothie's article stands alone.
    let blocks = if html.len() <= CHECKED_MAX_BYTES && cost <= CHECKED_MAX_COST {
        trafilatura(html, url)
    } else {
        None
    };
    stop.check()?;
    let found = match (readability, blocks) {
        (Some(mut r), Some((text, tr_html, title))) => {
            let theirs = tokens(&text);
            let ours = tokens(&crate::feed::render::to_plain(&r.html)).len();
            // trafilatura found under half of what a Readability found: where its own
            // fallback (left out) would have taken that Readability's article, dom_smoothie's
            // (the same kind) stands as it is.
            if theirs.len() * 2 < ours {
                return Ok((Some(r), readerable));
            }
            let kept = agree(&r.html, &theirs);
            let agreed = tokens(&crate::feed::render::to_plain(&kept)).len();
            // Most of dom_smoothie's article is not in trafilatura's, and what agrees is less
            // than half of trafilatura's: the two chose different parts of the page, and
            // trafilatura, which judges each block, is the more precise of the two.
            if agreed * 2 < ours && agreed * 2 < theirs.len() {
                r.html = tr_html;
                r.title = r.title.or(title);
            } else {
                r.html = kept;
            }
            Some(r)
        }
        (Some(r), None) => Some(r),
        (None, Some((_, tr_html, title))) => Some(Extracted {
            html: tr_html,
            title,
            ..Extracted::default()
        }),
        (None, None) => None,
    };
    Ok((found, readerable))
}

fn some(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// dom_smoothie's article and metadata from the page's tree, and its `is_probably_readable`.
fn readability(doc: dom_query::Document, url: &Url) -> (Option<Extracted>, bool) {
    let Ok(mut r) = dom_smoothie::Readability::with_document(doc, Some(url.as_str()), None) else {
        return (None, false);
    };
    let readerable = r.is_probably_readable();
    let Ok(a) = r.parse() else {
        return (None, readerable);
    };
    let found = !a.text_content.trim().is_empty();
    let extracted = Extracted {
        html: a.content.to_string(),
        title: some(Some(a.title)),
        byline: some(a.byline),
        excerpt: some(a.excerpt),
        site_name: some(a.site_name),
        lang: some(a.lang),
        published: some(a.published_time),
        image: some(a.image),
    };
    (found.then_some(extracted), readerable)
}

/// trafilatura's text, its HTML and its title; `None` when it finds no text.
///
/// Its own fallbacks are left out: they check its extraction against a second Readability
/// (dom_smoothie is the first, and the article this one checks) and jusText, whose stop
/// words are per language (with no language known, every language's: about 70 ms of each
/// process, most of the time of a page with no article). Measured on the extraction
/// benchmark, they cost a third of a page's time and leave the combination's F1 as it was
/// (precision up, recall down by as much). Its date search is left out too: its date is
/// never read (the page's own metadata gives one).
fn trafilatura(html: &str, url: &Url) -> Option<(String, String, Option<String>)> {
    let opts = trafilatura::Options::default()
        .with_url(url.clone())
        .with_fallback(false)
        .with_html_date_mode(trafilatura::HtmlDateMode::Disabled);
    let r = trafilatura::extract(html, &opts).ok()?;
    if r.content_text.trim().is_empty() {
        return None;
    }
    Some((r.content_text, r.content_html, some(Some(r.metadata.title))))
}

/// Word tokens, lower-cased (letters and digits; anything else separates).
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `article` less its innermost text blocks that `theirs` (another extractor's tokens) does
/// not hold: a block of four words or more by the share of its 4-grams found there, a
/// shorter one (a heading, a list item) by its words appearing there in order.
fn agree(article: &str, theirs: &[String]) -> String {
    let grams: HashSet<&[String]> = theirs.windows(4.min(theirs.len().max(1))).collect();
    // Every run of one to three words of theirs, so a short block is looked up, not searched
    // for (a search per block costs blocks × text on a page of many short blocks).
    let short: HashSet<&[String]> = (1..4).flat_map(|n| theirs.windows(n)).collect();
    let doc = dom_query::Document::fragment(article);
    for block in doc.select(BLOCKS).iter() {
        if block.select(BLOCKS).length() > 0 {
            continue;
        }
        let t = tokens(&block.text());
        if t.is_empty() {
            continue;
        }
        let found = if t.len() < 4 {
            short.contains(t.as_slice())
        } else {
            let windows = t.len() - 3;
            let hits = t.windows(4).filter(|g| grams.contains(g)).count();
            hits as f64 >= AGREEMENT * windows as f64
        };
        if !found {
            block.remove();
        }
    }
    doc.html_root().inner_html().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_the_other_extractor_did_not_find_is_dropped() {
        let article = "<div><h2>The keepers</h2><p>For ninety-one years the light was kept by one family.</p>\
            <p>Sign up for our newsletter and get the best stories every week.</p>\
            <ul><li>Share this</li><li>The last keeper left in 2012</li></ul></div>";
        let theirs = tokens(
            "The keepers. For ninety-one years the light was kept by one family. \
             The last keeper left in 2012.",
        );
        let out = agree(article, &theirs);
        assert!(out.contains("For ninety-one years"), "{out}");
        assert!(out.contains("<h2>The keepers</h2>"), "{out}");
        assert!(out.contains("The last keeper left in 2012"), "{out}");
        assert!(!out.contains("newsletter"), "{out}");
        assert!(!out.contains("Share this"), "{out}");
    }
}
