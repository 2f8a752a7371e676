//! Feeds: parsing to model types, stable ids, content rendering, since/limit/sort.
//!
//! [`parse`] turns a body into a [`RawFeed`] (nothing rendered yet); [`build`] selects,
//! identifies and renders its items into the contract's [`FeedResult`] parts.

mod channel;
mod codepages;
mod constructs;
mod content;
mod dates;
pub(crate) mod decode;
mod dtd;
mod extract;
mod handout;
mod ids;
mod json;
mod pipeline;
mod podcast;
pub(crate) mod query;
pub(crate) mod render;
mod select;
mod split;
pub(crate) mod transcript;
mod tree;
mod xml;

use crate::model::WarningCode;
use chrono::{DateTime, Utc};
use url::Url;

use crate::error::{Error, Result};
use crate::model::Enclosure;
use crate::payload::Payload;

pub(crate) use channel::day_of;
pub use content::{ContentFormat, RenderOptions, estimate_tokens, truncate_chars};
pub use ids::item_id;
pub use pipeline::{Built, parallel, process};
pub(crate) use pipeline::{add_truncation, find_item};
pub use query::Query;
pub use select::{Seen, Selection, id_key, parse_since};

/// A body as the feed gave it: HTML (the usual case) or plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    Html(String),
    Text(String),
}

impl Body {
    fn source(&self) -> &str {
        match self {
            Body::Html(s) | Body::Text(s) => s,
        }
    }

    fn is_blank(&self) -> bool {
        self.source().trim().is_empty()
    }
}

/// One item as parsed, before selection and rendering.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawItem {
    pub title: Option<String>,
    pub url: Option<String>,
    pub guid: Option<String>,
    pub authors: Vec<String>,
    pub published: Option<DateTime<Utc>>,
    pub updated: Option<DateTime<Utc>>,
    pub summary: Option<Body>,
    pub content: Option<Body>,
    pub categories: Vec<String>,
    pub enclosures: Vec<Enclosure>,
    /// The item's comments page (RSS `<comments>`), absolute.
    pub comments: Option<String>,
    /// Where the item came from (RSS `<source>`, Atom `<source>`).
    pub source: Option<crate::model::ItemSource>,
    /// `itunes:duration`, in seconds.
    pub duration_seconds: Option<u64>,
    /// `itunes:*` and `podcast:*` of an episode.
    pub podcast: Option<Box<crate::model::PodcastEpisode>>,
    /// What relative links inside the bodies resolve against.
    pub base: Option<Url>,
}

impl RawItem {
    /// The date used for `--since` and ordering: published, else updated.
    pub fn date(&self) -> Option<DateTime<Utc>> {
        self.published.or(self.updated)
    }
}

/// A parsed feed, before selection and rendering.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawFeed {
    pub format: &'static str,
    pub title: Option<String>,
    pub site_url: Option<String>,
    pub description: Option<String>,
    pub updated: Option<DateTime<Utc>>,
    pub language: Option<String>,
    pub icon: Option<String>,
    pub authors: Vec<String>,
    pub categories: Vec<String>,
    /// How often the feed says it changes: RSS `<ttl>` (minutes), or the syndication
    /// module's `updatePeriod` / `updateFrequency`; in seconds.
    pub ttl_seconds: Option<u64>,
    /// `itunes:*` and `podcast:*` of the show.
    pub podcast: Option<Box<crate::model::PodcastFeed>>,
    /// Which of the two `ttl_seconds` came from.
    pub ttl_rule: Option<crate::model::FreshBy>,
    /// RSS `skipHours`: hours of the day (UTC, 0-23), ascending.
    pub skip_hours: Vec<u32>,
    /// RSS `skipDays`: days (0 Monday ... 6 Sunday), ascending.
    pub skip_days: Vec<u32>,
    pub items: Vec<RawItem>,
    /// Non-fatal findings: (code, message).
    pub warnings: Vec<(WarningCode, String)>,
}

impl RawFeed {
    /// Whether the feed says anything about itself.
    fn has_metadata(&self) -> bool {
        self.title.is_some()
            || self.site_url.is_some()
            || self.description.is_some()
            || self.updated.is_some()
            || self.language.is_some()
            || self.icon.is_some()
            || !self.authors.is_empty()
            || !self.categories.is_empty()
    }
}

/// Items read from one feed at most: far beyond any real feed, and a bound on what a
/// hostile body of empty items can cost in memory.
pub const MAX_ITEMS: usize = 50_000;

fn items_capped_message(beyond: usize) -> String {
    format!("the feed has {beyond} items beyond the first {MAX_ITEMS}; they were not read")
}

/// Parses a feed body. `doc_url` is where it was read from (relative links resolve
/// against it); `content_type` supplies a charset.
pub(crate) fn parse(
    body: Payload,
    content_type: Option<&str>,
    doc_url: Option<&Url>,
) -> Result<RawFeed> {
    let mut items = Vec::new();
    // Every item is held here: a large body is held whole too and its items are read on
    // every thread (a streaming reader's gain, the body freed as read, is small beside the
    // items kept).
    let mut feed = read(
        body,
        content_type,
        doc_url,
        &mut |it| items.push(it),
        Some(split::STEP),
    )?;
    feed.items = items;
    Ok(feed)
}

/// [`parse`] with no document URL (the benchmarks' measure of parsing alone).
pub(crate) fn parse_held(body: Payload, content_type: Option<&str>) -> Result<RawFeed> {
    parse(body, content_type, None)
}

/// Like [`parse`], but hands each item to `sink` as soon as it is read (the returned feed
/// has none), so items can be worked on while the rest of the body is still being parsed.
pub(crate) fn parse_into(
    body: Payload,
    content_type: Option<&str>,
    doc_url: Option<&Url>,
    sink: &mut dyn FnMut(RawItem),
) -> Result<RawFeed> {
    // Read as a stream, the body freed as it is read: the items go to a caller that frees
    // them as it goes (the pipeline renders them on the other threads meanwhile).
    read(body, content_type, doc_url, sink, None)
}

/// [`parse_into`]; with `split`, a large body in UTF-8 is held whole and its items read on
/// every thread, in stretches of about that many bytes.
fn read(
    body: Payload,
    content_type: Option<&str>,
    doc_url: Option<&Url>,
    sink: &mut dyn FnMut(RawItem),
    split: Option<usize>,
) -> Result<RawFeed> {
    const SNIFF: usize = 4096;
    let sample = decode::to_utf8(Payload::from(body.head(SNIFF)), content_type);
    let head = sample.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if head.is_empty() && body.len() <= SNIFF {
        return Err(Error::parse("the body is empty"));
    }
    let base = doc_url.filter(|u| matches!(u.scheme(), "http" | "https"));
    if head.starts_with('{') || head.starts_with('[') {
        let text = decode::to_utf8(body, content_type);
        let text = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
        let mut feed = json::parse(text, base)?;
        std::mem::take(&mut feed.items).into_iter().for_each(sink);
        return Ok(feed);
    }
    if !head.starts_with('<') {
        return Err(Error::parse(
            "the body is neither XML nor JSON, so it is not a feed",
        ));
    }
    if looks_like_html(head) {
        return Err(Error::HtmlPage {
            content_type: content_type.map(str::to_owned),
        });
    }
    let body = match split {
        Some(step) if pipeline::parallel(body.len()) && rayon::current_num_threads() > 1 => {
            match decode::whole_utf8(body, content_type) {
                Ok((text, skip)) => {
                    let feed = extract::parse_xml_whole(&text[skip..], base, sink, step);
                    // Unmapping a large body takes a while (35 MB: ~1.5 ms): done off the
                    // caller's path, which has its items by now.
                    rayon::spawn(move || drop(text));
                    return feed;
                }
                Err(body) => body,
            }
        }
        _ => body,
    };
    // Decoded and parsed as a stream: the body is freed as it is read.
    extract::parse_xml(decode::reader(body, content_type), base, sink)
}

fn looks_like_html(head: &str) -> bool {
    let start: String = head
        .chars()
        .take(512)
        .collect::<String>()
        .to_ascii_lowercase();
    let start = start.trim_start();
    if start.starts_with("<html") {
        return true;
    }
    let mut html_doctype = false;
    // An XML prolog or comments may come first; look at the first real element.
    let mut rest = start;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("<?") {
            rest = r.split_once("?>").map_or("", |(_, a)| a);
        } else if let Some(r) = rest.strip_prefix("<!--") {
            rest = r.split_once("-->").map_or("", |(_, a)| a);
        } else if let Some(r) = rest.strip_prefix("<!doctype") {
            html_doctype |= r.trim_start().starts_with("html");
            rest = r.split_once('>').map_or("", |(_, a)| a);
        } else if rest.starts_with("<html")
            || rest.starts_with("<head")
            || rest.starts_with("<body")
        {
            return true;
        } else {
            // An HTML doctype in front of a feed root is the feed's mistake, not a page.
            let feed_root = ["<rss", "<feed", "<rdf:rdf", "<channel"]
                .iter()
                .any(|r| rest.starts_with(r));
            return html_doctype && !feed_root;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_pages_point_at_discover() {
        for page in [
            "<!DOCTYPE html><html><body>x</body></html>",
            "<?xml version=\"1.0\"?>\n<!-- c --><html xmlns=\"http://www.w3.org/1999/xhtml\"></html>",
        ] {
            let err = parse(page.as_bytes().to_vec().into(), None, None).unwrap_err();
            assert_eq!(err.code().as_str(), "FEED_PARSE_FAILED");
            assert_eq!(err.details()["content_type"], "text/html");
        }
    }

    #[test]
    fn a_body_of_endless_empty_items_is_capped() {
        let mut body = String::from("<rss><channel><title>t</title>");
        body.push_str(&"<item><title>i</title></item>".repeat(MAX_ITEMS + 10));
        body.push_str("</channel></rss>");
        let feed = parse(body.into_bytes().into(), None, None).unwrap();
        assert_eq!(feed.items.len(), MAX_ITEMS);
        assert!(
            feed.warnings
                .iter()
                .any(|(c, m)| *c == WarningCode::ItemsCapped && m.contains("10 items"))
        );
    }

    #[test]
    fn non_feeds_fail_clearly() {
        for body in ["", "   ", "hello world", "<<<<"] {
            let err = parse(body.as_bytes().to_vec().into(), None, None).unwrap_err();
            assert_eq!(err.code().as_str(), "FEED_PARSE_FAILED", "{body:?}");
        }
    }
}
