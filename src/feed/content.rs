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

/// Estimated tokens of `s`, by weights fitted to the BPE tokenizer of today's models
/// (o200k) on the corpora's pages, in many languages and scripts, and on JSON results. In
/// hundredths of a token: an ASCII word (a run of letters) 110, and 22 more per letter past
/// its sixth; a number 100 per three digits (150 for the first three after a space); an
/// ASCII punctuation mark 75, and 20 for each that follows it directly (`":"` is one
/// token); a line break 60 (a run of them once); a letter of another Latin script 30;
/// Greek, Cyrillic, Armenian, Hebrew or Arabic 25; kana 60; CJK or Hangul 85; any other
/// character 80; white space nothing. Rounded up. Within 30 % of the tokenizer on every
/// page tested (`tests/integration/tokens.rs`), where characters / 4 was off by up to four
/// times for Chinese.
pub fn estimate_tokens(s: &str) -> usize {
    // Hundredths of a token.
    let mut cents: usize = 0;
    // The length of the run of ASCII letters, of digits, of punctuation and of line breaks
    // the current character continues.
    let (mut letters, mut digits, mut marks, mut breaks) = (0usize, 0usize, 0usize, 0usize);
    let mut spaced = false;
    for c in s.chars() {
        let after_space = std::mem::replace(&mut spaced, c == ' ');
        let (l, d, m, b) = (letters, digits, marks, breaks);
        (letters, digits, marks, breaks) = (0, 0, 0, 0);
        cents += if c.is_ascii_alphabetic() {
            letters = l + 1;
            match letters {
                1 => 110,
                2..=6 => 0,
                _ => 22,
            }
        } else if c.is_ascii_digit() {
            digits = d + 1;
            // Numbers are read three digits at a time, apart from the space before them.
            match (digits % 3 == 1, digits == 1 && after_space) {
                (true, true) => 150,
                (true, false) => 100,
                _ => 0,
            }
        } else if c.is_ascii_punctuation() {
            marks = m + 1;
            if marks == 1 { 75 } else { 20 }
        } else if c == '\n' {
            breaks = b + 1;
            if breaks == 1 { 60 } else { 0 }
        } else {
            match c as u32 {
                _ if c.is_whitespace() => 0,
                0x80..0x250 => 30,
                0x370..0x700 => 25,
                0x3040..0x3100 => 60,
                0x2E80..0xA000 | 0xAC00..0xD7B0 | 0xF900..0xFB00 | 0xFF00..0xFFF0 => 85,
                _ => 80,
            }
        };
    }
    cents.div_ceil(100)
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
        podcast: raw.podcast,
        transcript: None,
    };
    (item, fell_back)
}

/// Renders every item (in parallel when asked: the work per item is independent), keeping
/// order.
pub(super) fn render_all(
    items: Vec<(RawItem, String, IdSource)>,
    opts: &RenderOptions,
    parallel: bool,
) -> Vec<(Item, bool)> {
    if !parallel || items.len() < 64 {
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
        assert_eq!(item.content_tokens_est, 3);
        assert_eq!(
            item.content_hash.as_deref(),
            Some(&ids::short_hash("<p>héllo</p>")[..])
        );
    }

    #[test]
    fn token_estimates_count_words_and_scripts() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("hello world"), 3);
        assert_eq!(estimate_tokens("东京都的天气"), 6);
        assert_eq!(estimate_tokens("Привет мир"), 3);
        assert_eq!(estimate_tokens("{\"a\":1}"), 5);
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
