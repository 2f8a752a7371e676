//! Item bodies rendered in the requested format, hashed, estimated and truncated.

use rayon::prelude::*;

use super::render::{
    Unconvertible, sanitize_html, text_to_markdown, to_markdown, to_plain, to_text,
};
use super::{Body, RawItem, ids};
use crate::date;
use crate::model::{IdSource, Item};
use crate::text::{collapse_ws, escape_html};

/// How item bodies are returned.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ContentFormat {
    /// Markdown (links and images absolute).
    #[default]
    Markdown,
    /// Plain text with paragraph breaks.
    Text,
    /// Sanitized HTML (no scripts, styles or event handlers).
    Html,
    /// No body at all (titles, links, dates, summaries only): the cheapest listing.
    None,
}

impl ContentFormat {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentFormat::Markdown => "markdown",
            ContentFormat::Text => "text",
            ContentFormat::Html => "html",
            ContentFormat::None => "none",
        }
    }
}

/// How to render bodies.
#[derive(Debug, Clone, Copy, Default)]
pub struct RenderOptions {
    /// The format of `content`.
    pub format: ContentFormat,
    /// Cut `content` (and `summary`) to this many characters.
    pub max_content_chars: Option<usize>,
}

/// Estimated tokens of `s`: ceil(chars / 4).
pub fn estimate_tokens(s: &str) -> usize {
    s.chars().count().div_ceil(4)
}

/// Renders a body; `Err` when HTML could not be converted (the caller falls back).
fn render_body(
    body: &Body,
    format: ContentFormat,
    base: Option<&url::Url>,
) -> Result<String, Unconvertible> {
    match (body, format) {
        (_, ContentFormat::None) => Ok(String::new()),
        (Body::Html(h), ContentFormat::Markdown) => to_markdown(h, base),
        (Body::Html(h), ContentFormat::Text) => to_text(h, base),
        (Body::Html(h), ContentFormat::Html) => Ok(sanitize_html(h, base)),
        (Body::Text(t), ContentFormat::Html) => {
            let mut out = String::with_capacity(t.len());
            escape_html(t, &mut out);
            Ok(out)
        }
        (Body::Text(t), ContentFormat::Markdown) => Ok(text_to_markdown(t)),
        (Body::Text(t), ContentFormat::Text) => Ok(t.trim().to_owned()),
    }
}

/// Cuts `s` to `max` characters, on a char boundary; whether anything was cut.
pub fn truncate_chars(s: &mut String, max: usize) -> bool {
    match s.char_indices().nth(max) {
        Some((at, _)) => {
            s.truncate(at);
            true
        }
        None => false,
    }
}

pub(super) fn render_one(
    raw: RawItem,
    id: String,
    id_source: IdSource,
    opts: &RenderOptions,
) -> (Item, bool) {
    let base = raw.base.as_ref();
    let body = raw.content.as_ref().or(raw.summary.as_ref());
    let mut fell_back = false;
    let mut content = None;
    let mut content_truncated = false;
    let mut next_offset = None;
    if let Some(body) = body
        && opts.format != ContentFormat::None
    {
        let mut rendered = match render_body(body, opts.format, base) {
            Ok(s) => s,
            Err(_) => {
                fell_back = true;
                let plain = match body {
                    Body::Html(h) => to_plain(h),
                    Body::Text(t) => collapse_ws(t),
                };
                // The fallback is still what the caller asked for: markdown with no markup.
                if opts.format == ContentFormat::Markdown {
                    text_to_markdown(&plain)
                } else {
                    plain
                }
            }
        };
        if let Some(max) = opts.max_content_chars {
            content_truncated = truncate_chars(&mut rendered, max);
            next_offset = content_truncated.then_some(max);
        }
        content = Some(rendered).filter(|s| !s.is_empty());
    }
    let mut summary = match &raw.summary {
        Some(Body::Html(h)) => Some(to_plain(h)),
        Some(Body::Text(t)) => Some(collapse_ws(t)),
        None => None,
    }
    .filter(|s| !s.is_empty());
    // The cap bounds the whole item: a feed's only body often doubles as its summary.
    if let (Some(max), Some(s)) = (opts.max_content_chars, summary.as_mut()) {
        truncate_chars(s, max);
    }
    let item = Item {
        article: None,
        id,
        id_source,
        guid: raw.guid,
        url: raw.url,
        title: raw.title,
        authors: raw.authors,
        published: raw.published.as_ref().map(date::format),
        updated: raw.updated.as_ref().map(date::format),
        summary,
        content_format: opts.format.as_str().to_owned(),
        content_tokens_est: content.as_deref().map_or(0, estimate_tokens),
        content_hash: body.map(|b| ids::short_hash(b.source())),
        content,
        content_truncated,
        next_offset,
        categories: raw.categories,
        enclosures: raw.enclosures,
        comments: raw.comments,
        source: raw.source,
        duration_seconds: raw.duration_seconds,
    };
    (item, fell_back)
}

/// Renders every item (in parallel: the work per item is independent), keeping order.
pub(super) fn render_all(
    items: Vec<(RawItem, String, IdSource)>,
    opts: &RenderOptions,
) -> Vec<(Item, bool)> {
    if items.len() < 64 {
        return items
            .into_iter()
            .map(|(raw, id, src)| render_one(raw, id, src, opts))
            .collect();
    }
    items
        .into_par_iter()
        .map(|(raw, id, src)| render_one(raw, id, src, opts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(html: &str) -> RawItem {
        RawItem {
            title: Some("t".into()),
            content: Some(Body::Html(html.into())),
            ..RawItem::default()
        }
    }

    #[test]
    fn truncation_is_on_a_char_boundary() {
        let opts = RenderOptions {
            format: ContentFormat::Text,
            max_content_chars: Some(3),
        };
        let (item, _) = render_one(raw("<p>héllo</p>"), "id".into(), IdSource::Link, &opts);
        assert_eq!(item.content.as_deref(), Some("hél"));
        assert!(item.content_truncated);
        assert_eq!(item.next_offset, Some(3));
        assert_eq!(item.content_tokens_est, 1);
        assert_eq!(
            item.content_hash.as_deref(),
            Some(&ids::short_hash("<p>héllo</p>")[..])
        );
    }

    #[test]
    fn unconvertible_html_falls_back_to_stripped_text() {
        let html = "<blockquote>".repeat(100) + "deep";
        let (item, fell_back) = render_one(
            raw(&html),
            "id".into(),
            IdSource::Link,
            &RenderOptions::default(),
        );
        assert!(fell_back);
        assert_eq!(item.content.as_deref(), Some("deep"));
    }

    #[test]
    fn none_returns_no_body_but_keeps_the_hash() {
        let opts = RenderOptions {
            format: ContentFormat::None,
            max_content_chars: None,
        };
        let (item, _) = render_one(raw("<p>x</p>"), "id".into(), IdSource::Link, &opts);
        assert_eq!(item.content, None);
        assert!(item.content_hash.is_some());
        assert_eq!(item.content_format, "none");
    }
}
