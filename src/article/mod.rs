//! A fetched page → its readable article and metadata. The extraction is one function of a
//! kept crate ([`extract`]); the metadata is read from the page's own words ([`meta`]); the
//! article goes through the same safe renderers as item bodies, with links and images made
//! absolute against the page's `<base href>` or final URL. What is not an article is said
//! so: a feed (`NOT_AN_ARTICLE`), a body that is not a web page (`UNSUPPORTED_CONTENT`,
//! refused from its headers or first bytes before the rest is read), a page with no
//! article (`NO_READABLE_CONTENT`). `robots` holds the robots.txt rules for reads a model
//! asks for. This module does no I/O.

mod extract;
mod meta;
mod tree;
pub(crate) use meta::PageMeta;
pub(crate) mod robots;
pub(crate) use crate::stop::{EXTRACTION_BUDGET, Stop, Stopped};
#[cfg(test)]
pub(crate) use extract::CHECKED_MAX_COST;

use sha2::{Digest, Sha256};
use url::Url;

use crate::error::{Error, Result};
use crate::feed::{self, ContentFormat, RenderOptions};
use crate::payload::Payload;

/// Fewer words than this on a page Readability does not find readable is no article: a
/// login wall or an error page says a dozen or two; the shortest news brief, three or four
/// times that.
const MIN_WORDS: usize = 30;

/// More of the article's words than this share inside links, on a page Readability does not
/// find readable, is an index page or a list of links.
const MAX_LINK_SHARE: f64 = 0.5;

/// The most characters of a title, site name or excerpt a page gets to say about itself (a
/// page's "excerpt" can be its whole text).
const META_MAX_CHARS: usize = 1_000;

/// The most authors a page is said to have, and the most characters of each.
const MAX_AUTHORS: usize = 16;
const AUTHOR_MAX_CHARS: usize = 200;

/// A language tag longer than this is cut (real ones are a few characters).
const LANGUAGE_MAX_CHARS: usize = 64;

/// A canonical or image URL longer than this is left out.
const META_MAX_URL_BYTES: usize = 4_096;

/// `s` cut to `max` characters (with `…` when cut).
fn clipped(mut s: String, max: usize) -> String {
    if feed::truncate_chars(&mut s, max) {
        s.push('…');
    }
    s
}

/// A page read as an article: what the page says about itself (merged with what the
/// extractor found), and the article.
#[derive(Debug, Clone, Default)]
pub(crate) struct Article {
    /// Title, authors, date, site, language, canonical URL, excerpt and lead image, final.
    pub meta: PageMeta,
    /// The article rendered as asked (`None` for `ContentFormat::None`).
    pub content: Option<String>,
    /// 16 hex of sha256 of the extracted article HTML.
    pub content_hash: String,
    /// Words in the article.
    pub word_count: usize,
}

/// The `Content-Type` essence: `text/html` of `text/html; charset=utf-8`.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// What the first bytes of a body say it is, when they say something other than text. A
/// body declared HTML is read as HTML whatever stray bytes it holds (a NUL near its start,
/// as browsers read it): only a known binary format's signature outranks the declaration.
fn sniff(first: &[u8], declared_html: bool) -> Option<&'static str> {
    let magic: [(&[u8], &str); 14] = [
        (b"%PDF-", "application/pdf"),
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"ID3", "audio/mpeg"),
        (b"OggS", "audio/ogg"),
        (b"fLaC", "audio/flac"),
        (b"PK\x03\x04", "application/zip"),
        (b"\x1f\x8b", "application/gzip"),
        (b"%!PS", "application/postscript"),
        (b"\x1a\x45\xdf\xa3", "video/webm"),
        (b"wOFF", "font/woff"),
        (b"wOF2", "font/woff2"),
    ];
    if let Some((_, t)) = magic.iter().find(|(m, _)| first.starts_with(m)) {
        return Some(t);
    }
    if first.len() >= 12 && &first[4..8] == b"ftyp" {
        return Some("video/mp4");
    }
    if first.len() >= 12 && first.starts_with(b"RIFF") {
        return Some(match &first[8..12] {
            b"WEBP" => "image/webp",
            b"WAVE" => "audio/wav",
            b"AVI " => "video/x-msvideo",
            _ => "application/octet-stream",
        });
    }
    // Text has no NUL bytes in its first bytes, but for UTF-16, which says so with a BOM.
    if declared_html || first.starts_with(&[0xff, 0xfe]) || first.starts_with(&[0xfe, 0xff]) {
        return None;
    }
    first
        .iter()
        .take(1024)
        .any(|&b| b == 0)
        .then_some("application/octet-stream")
}

/// Types a page may be read as: HTML, what might turn out to be a feed (XML, JSON), and
/// `text/plain` (HTML served under a careless type is common). Every other `text/*` type
/// names a body that is not a page to read (`text/javascript`, `text/css`, `text/csv`,
/// `text/calendar`, …): reading its code or data as an article would pass it off as one.
fn readable_type(mime: &str) -> bool {
    let media = ["image/", "audio/", "video/", "font/", "model/"];
    if media.iter().any(|m| mime.starts_with(m)) {
        // An SVG image is XML, and still an image.
        return false;
    }
    matches!(
        mime,
        "text/html"
            | "text/plain"
            | "application/xhtml+xml"
            | "application/xml"
            | "text/xml"
            | "application/json"
    ) || mime.ends_with("+xml")
        || mime.ends_with("+json")
}

/// The body check of a page fetch ([`crate::http::Refuse`]): a type that is not a web page
/// is refused from the header alone (a PDF is never downloaded), a body whose first bytes
/// are a known binary format from those bytes.
pub(crate) fn refuse(content_type: Option<&str>, first: &[u8]) -> Option<String> {
    let mime = content_type.map(essence).filter(|m| !m.is_empty());
    if let Some(m) = &mime
        && !readable_type(m)
    {
        return Some(m.clone());
    }
    if first.is_empty() {
        return None;
    }
    let declared_html = matches!(mime.as_deref(), Some("text/html" | "application/xhtml+xml"));
    sniff(first, declared_html).map(|t| match &mime {
        // The bytes outrank a text type that does not fit them.
        Some(m) if m != t => format!("{t} (served as {m})"),
        _ => t.to_owned(),
    })
}

/// Whether `body` starts like a feed document (so it is worth trying to parse as one).
fn looks_like_feed(body: &Payload, content_type: Option<&str>) -> bool {
    let mime = content_type.map(essence).unwrap_or_default();
    if mime.contains("rss")
        || mime.contains("atom")
        || mime.contains("feed")
        || mime.contains("xml")
        || mime.contains("json")
    {
        return true;
    }
    let head = body.head(512);
    let text = String::from_utf8_lossy(&head);
    let t = text.trim_start_matches('\u{feff}').trim_start();
    t.starts_with("<?xml")
        || t.starts_with("<rss")
        || t.starts_with("<feed")
        || t.starts_with("<rdf")
        || t.starts_with('{')
}

/// Counts the words of plain text by Unicode word segmentation (UAX #29); each character of a
/// script written without spaces between words (CJK, Thai, …) counts as one, as `--query`
/// splits them.
fn words(text: &str) -> usize {
    use unicode_segmentation::UnicodeSegmentation;
    text.unicode_words()
        .map(|w| {
            let cjk = w.chars().filter(|&c| feed::query::is_cjk(c)).count();
            let rest = w
                .chars()
                .any(|c| c.is_alphanumeric() && !feed::query::is_cjk(c));
            if cjk == 0 { 1 } else { cjk + usize::from(rest) }
        })
        .sum()
}

/// `html` without its images: a text rendering carries the article's words, and an image's
/// alt text is a description of a picture (often its file name), not one of them.
fn without_images(html: &str) -> std::borrow::Cow<'_, str> {
    use crate::html::{Token, Tokenizer};
    if !html
        .as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"<img"))
    {
        return html.into();
    }
    let mut out = String::with_capacity(html.len());
    let mut tokens = Tokenizer::new(html);
    let mut from = 0;
    while let Some(tok) = tokens.next() {
        let to = tokens.offset();
        if !matches!(&tok, Token::Start { name, .. } if name == "img") {
            out.push_str(&html[from..to]);
        }
        from = to;
    }
    out.push_str(&html[from..]);
    out.into()
}

/// The share of an article's text that is link text (an index page is mostly links).
fn link_share(html: &str) -> f64 {
    use crate::html::{Token, Tokenizer};
    let (mut all, mut linked, mut depth) = (0usize, 0usize, 0usize);
    for tok in Tokenizer::new(html) {
        match tok {
            Token::Start {
                name, self_closing, ..
            } if name == "a" && !self_closing => depth += 1,
            Token::End(name) if name == "a" => depth = depth.saturating_sub(1),
            Token::Text(t) => {
                let n = words(t);
                all += n;
                if depth > 0 {
                    linked += n;
                }
            }
            _ => {}
        }
    }
    if all == 0 {
        1.0
    } else {
        linked as f64 / all as f64
    }
}

/// The error of a read that `stop` cut: cut by its budget, it says the CPU time the read
/// actually spent; cut by its call, how long the read ran.
fn cut(url: &Url, stopped: Stopped, stop: &Stop, started: std::time::Instant) -> Error {
    Error::ExtractionTimeout {
        url: url.to_string(),
        cut_by: match stopped {
            Stopped::OverBudget => crate::error::ExtractionCut::Budget,
            Stopped::Cancelled => crate::error::ExtractionCut::Call,
        },
        elapsed: match stopped {
            Stopped::OverBudget => stop.spent(),
            Stopped::Cancelled => started.elapsed(),
        },
    }
}

/// Reads the page `body` (served as `content_type`, finally from `final_url`) as an article
/// rendered by `render`, until `stop` says to stop. Its content is not cut here (callers cut
/// it: characters, or a token budget at a paragraph). The page reaches the extractors within
/// the bounds of [`shape`] (nesting, elements, attribute text).
pub(crate) fn read(
    body: Payload,
    content_type: Option<&str>,
    final_url: &Url,
    render: RenderOptions,
    stop: &Stop,
) -> Result<Article> {
    let started = std::time::Instant::now();
    let check = || stop.check().map_err(|s| cut(final_url, s, stop, started));
    if let Some(ct) = refuse(content_type, &body.head(1024)) {
        return Err(Error::UnsupportedContent {
            url: final_url.to_string(),
            content_type: ct,
        });
    }
    if looks_like_feed(&body, content_type)
        && let Ok(feed) = feed::parse(body.clone(), content_type, Some(final_url))
    {
        return Err(Error::NotAnArticle {
            url: final_url.to_string(),
            format: feed.format.to_owned(),
        });
    }
    check()?;
    let html = feed::decode::to_utf8(body, content_type);
    let meta = meta::read(&html, final_url, stop).map_err(|s| cut(final_url, s, stop, started))?;
    let base = meta.base.clone().unwrap_or_else(|| final_url.clone());
    check()?;
    let (shaped, cost) =
        crate::shape::measured(&html, stop).map_err(|s| cut(final_url, s, stop, started))?;
    let (found, readerable) = extract::extract(&shaped, cost, &base, stop)
        .map_err(|s| cut(final_url, s, stop, started))?;
    drop(shaped);
    check()?;
    let no_article = |title: Option<String>| Error::NoReadableContent {
        url: final_url.to_string(),
        title,
    };
    let Some(x) = found else {
        return Err(no_article(meta.title.clone()));
    };
    let text = feed::render::to_plain(&x.html);
    let word_count = words(&text);
    if !readerable && (word_count < MIN_WORDS || link_share(&x.html) > MAX_LINK_SHARE) {
        return Err(no_article(meta.title.clone().or(x.title)));
    }
    if word_count == 0 {
        return Err(no_article(meta.title.clone().or(x.title)));
    }
    // The article as text: what a reader is shown of it. Words only a renderer leaves out
    // (an SVG's text, an image's alt) are no article to hand back.
    let shown = feed::render::to_text(&without_images(&x.html), Some(&base)).unwrap_or(text);
    if shown.trim().is_empty() {
        return Err(no_article(meta.title.clone().or(x.title)));
    }
    let content = match render.format {
        ContentFormat::None => None,
        ContentFormat::Html => Some(feed::render::sanitize_html(&x.html, Some(&base))),
        ContentFormat::Text => Some(shown),
        ContentFormat::Markdown => Some(
            feed::render::to_markdown(&x.html, Some(&base))
                .unwrap_or_else(|_| feed::render::text_to_markdown(&shown)),
        ),
    };
    let plain = |s: Option<String>| {
        s.map(|s| clipped(feed::render::to_plain(&s), META_MAX_CHARS))
            .filter(|s| !s.is_empty())
    };
    let absolute = |s: Option<String>| s.and_then(|u| crate::urls::http_link(&u, Some(&base)));
    let url_field = |u: Option<String>| u.filter(|u| u.len() <= META_MAX_URL_BYTES);
    let published = meta
        .published
        .or(x.published)
        .and_then(|p| crate::date::parse(&p))
        .map(|t| crate::date::format(&t));
    let authors = if meta.authors.is_empty() {
        plain(x.byline).into_iter().collect()
    } else {
        meta.authors
            .into_iter()
            .take(MAX_AUTHORS)
            .map(|a| clipped(a, AUTHOR_MAX_CHARS))
            .collect()
    };
    Ok(Article {
        meta: PageMeta {
            title: plain(meta.title.or(x.title)),
            authors,
            published,
            site_name: plain(meta.site_name.or(x.site_name)),
            language: meta
                .language
                .or(x.lang)
                .map(|l| clipped(l, LANGUAGE_MAX_CHARS)),
            canonical_url: url_field(meta.canonical_url),
            excerpt: plain(meta.excerpt.or(x.excerpt)),
            lead_image: url_field(meta.lead_image.or_else(|| absolute(x.image))),
            base: Some(base),
        },
        content,
        content_hash: hex::encode(&Sha256::digest(x.html.as_bytes())[..8]),
        word_count,
    })
}

#[cfg(test)]
mod tests;
