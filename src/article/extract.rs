//! The one extraction function: a page's HTML to its readable article, by a kept crate
//! ([dom_smoothie](https://crates.io/crates/dom_smoothie), a port of Mozilla's Readability,
//! chosen by measurement: `benches/extract-compare`). Swap the crate here and nowhere else.

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

/// Extracts the article of `html`, a page read from `url`; `None` when the extractor finds
/// none. Also whether the page looks like it has an article at all (Readability's
/// `isProbablyReaderable`), either way.
pub(crate) fn extract(html: &str, url: &Url) -> (Option<Extracted>, bool) {
    let Ok(mut r) = dom_smoothie::Readability::new(html, Some(url.as_str()), None) else {
        return (None, false);
    };
    let readerable = r.is_probably_readable();
    let Ok(a) = r.parse() else {
        return (None, readerable);
    };
    let some = |s: Option<String>| s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
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
    (Some(extracted), readerable)
}
