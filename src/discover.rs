//! Feed autodiscovery: the feeds an HTML page advertises with `<link rel="alternate">`.

use std::collections::HashSet;

use url::Url;

use crate::html::{Token, Tokenizer, attributes};
use crate::model::DiscoveredFeed;

/// The feed format a `type` advertises, if it is a feed type.
fn format_of(mime: &str, title: Option<&str>) -> Option<&'static str> {
    let m = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match m.as_str() {
        "application/rss+xml" | "application/rdf+xml" | "application/x.atom+xml" => Some("rss"),
        "application/atom+xml" => Some("atom"),
        "application/feed+json" => Some("json"),
        // Plain JSON alternates are usually APIs (WordPress posts); only a titled feed counts.
        "application/json" if title.is_some_and(|t| t.to_ascii_lowercase().contains("feed")) => {
            Some("json")
        }
        _ => None,
    }
}

/// The format a plain link's path suggests, for pages that advertise no feed: only paths
/// that name a feed outright.
fn format_of_path(url: &Url) -> Option<&'static str> {
    let path = url.path().trim_end_matches('/').to_ascii_lowercase();
    let last = path.rsplit('/').next().unwrap_or("");
    match last {
        "feed" | "rss" | "rss.xml" | "feed.xml" | "index.xml" | "feed.rss" | "rss2" => Some("rss"),
        "atom" | "atom.xml" | "feed.atom" => Some("atom"),
        "feed.json" => Some("json"),
        _ if last.ends_with(".rss") => Some("rss"),
        _ if last.ends_with(".atom") => Some("atom"),
        _ => None,
    }
}

/// Feeds advertised by `html` (`<link rel="alternate">` of a feed type), resolved against
/// `<base href>` or `page_url`, in page order, de-duplicated. A page that advertises none
/// gets the `<a href>` links whose path names a feed (`/feed`, `rss.xml`, `atom.xml`, …),
/// flagged by the second value.
pub fn find_feeds(html: &str, page_url: &Url) -> (Vec<DiscoveredFeed>, bool) {
    let mut base = page_url.clone();
    let mut saw_base = false;
    let mut out: Vec<DiscoveredFeed> = Vec::new();
    let mut anchors: Vec<DiscoveredFeed> = Vec::new();
    // Seen URLs, so that de-duplication stays linear in the number of links.
    let mut seen_out: HashSet<String> = HashSet::new();
    let mut seen_anchors: HashSet<String> = HashSet::new();
    for tok in Tokenizer::new(html) {
        let Token::Start { name, attrs, .. } = tok else {
            continue;
        };
        if name == "a" {
            if let Some((_, href)) = attributes(attrs).find(|(k, _)| k == "href")
                && let Ok(url) = base.join(href.trim())
                && matches!(url.scheme(), "http" | "https")
                && let Some(format) = format_of_path(&url)
                && seen_anchors.insert(url.to_string())
            {
                anchors.push(DiscoveredFeed {
                    url: url.into(),
                    title: None,
                    mime_type: None,
                    format: Some(format.to_owned()),
                });
            }
            continue;
        }
        if name == "base" && !saw_base {
            if let Some((_, href)) = attributes(attrs).find(|(k, _)| k == "href")
                && let Ok(b) = page_url.join(href.trim())
            {
                base = b;
            }
            saw_base = true;
            continue;
        }
        if name != "link" {
            continue;
        }
        let (mut rel, mut ty, mut href, mut title) = (None, None, None, None);
        for (k, v) in attributes(attrs) {
            match k.as_ref() {
                "rel" => rel = Some(v.into_owned()),
                "type" => ty = Some(v.into_owned()),
                "href" => href = Some(v.into_owned()),
                "title" => title = Some(v.trim().to_owned()).filter(|t| !t.is_empty()),
                _ => {}
            }
        }
        let is_alternate = rel.as_deref().is_some_and(|r| {
            r.split_ascii_whitespace()
                .any(|t| t.eq_ignore_ascii_case("alternate"))
        });
        let (Some(ty), Some(href)) = (ty, href) else {
            continue;
        };
        let Some(format) = format_of(&ty, title.as_deref()).filter(|_| is_alternate) else {
            continue;
        };
        let Ok(url) = base.join(href.trim()) else {
            continue;
        };
        if !matches!(url.scheme(), "http" | "https" | "file") || !seen_out.insert(url.to_string()) {
            continue;
        }
        out.push(DiscoveredFeed {
            url: url.into(),
            title,
            mime_type: Some(ty.trim().to_owned()),
            format: Some(format.to_owned()),
        });
    }
    if out.is_empty() && !anchors.is_empty() {
        return (anchors, true);
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternate_feed_links_are_found_and_resolved() {
        let page = r#"<html><head><title>Blog</title>
            <link rel="stylesheet" href="/s.css">
            <link rel="alternate" type="application/rss+xml" title="RSS" href="/feed.xml">
            <LINK REL="Alternate" TYPE="application/atom+xml" HREF="atom.xml" title="Atom">
            <link rel="alternate" type="application/feed+json" href="https://cdn.example.com/feed.json">
            <link rel="alternate" type="application/json" href="/wp-json/wp/v2/posts/1">
            <link rel="alternate" type="application/rss+xml" href="/feed.xml">
            <link rel="alternate" type="text/html" hreflang="fr" href="/fr/">
        </head><body></body></html>"#;
        let (feeds, guessed) = find_feeds(page, &Url::parse("https://example.com/blog/").unwrap());
        assert!(!guessed);
        let urls: Vec<_> = feeds
            .iter()
            .map(|f| (f.url.as_str(), f.format.as_deref()))
            .collect();
        assert_eq!(
            urls,
            vec![
                ("https://example.com/feed.xml", Some("rss")),
                ("https://example.com/blog/atom.xml", Some("atom")),
                ("https://cdn.example.com/feed.json", Some("json")),
            ]
        );
        assert_eq!(feeds[0].title.as_deref(), Some("RSS"));
    }

    #[test]
    fn base_href_is_honoured() {
        let page = r#"<head><base href="https://other.example/x/"><link rel="alternate" type="application/atom+xml" href="a.xml"></head>"#;
        let (feeds, _) = find_feeds(page, &Url::parse("https://example.com/").unwrap());
        assert_eq!(feeds[0].url, "https://other.example/x/a.xml");
    }

    #[test]
    fn a_page_without_alternates_offers_links_that_name_a_feed() {
        let page = r#"<body><a href="/about">About</a><a href="/feed/">Subscribe</a><a href="https://x.example/atom.xml">Atom</a><a href="/feedback">x</a></body>"#;
        let (feeds, guessed) = find_feeds(page, &Url::parse("https://example.com/").unwrap());
        assert!(guessed);
        let urls: Vec<_> = feeds.iter().map(|f| f.url.as_str()).collect();
        assert_eq!(
            urls,
            vec!["https://example.com/feed/", "https://x.example/atom.xml"]
        );
    }

    #[test]
    fn many_distinct_links_are_found_in_linear_time() {
        // 200,000 distinct feed links: quadratic de-duplication would take minutes.
        let mut page = String::with_capacity(10_000_000);
        for i in 0..200_000 {
            page.push_str(&format!("<a href=\"/f{i}/feed/\">x</a>"));
        }
        let started = std::time::Instant::now();
        let (feeds, guessed) = find_feeds(&page, &Url::parse("https://example.com/").unwrap());
        assert!(guessed);
        assert_eq!(feeds.len(), 200_000);
        // Generous for a debug build on a busy machine; quadratic is far beyond it.
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }
}
