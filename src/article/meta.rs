//! A page's metadata from its own words, read in one pass over its HTML.
//!
//! Each field takes the first source that has it, in this order: Open Graph and `article:*`
//! meta tags; JSON-LD (`NewsArticle`, `BlogPosting`, `Article` and their kin: `headline`,
//! `author`, `datePublished`, `publisher`, `image`, `description`; read with serde_json);
//! `<meta name="author">` / `<meta name="description">`; the first `<time datetime>`;
//! `<html lang>`; `<link rel="canonical">`; `<title>`. The extractor's own findings come
//! last. URLs are made absolute against the page's `<base href>` or its final URL.

use serde_json::Value;
use url::Url;

use crate::html::{Token, Tokenizer, attr};
use crate::stop::{Stop, Stopped};

/// What the page says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PageMeta {
    /// `og:title`, then JSON-LD `headline`, then `<title>`.
    pub title: Option<String>,
    /// `article:author` names, then JSON-LD `author`, then `<meta name="author">`.
    pub authors: Vec<String>,
    /// `article:published_time`, then JSON-LD `datePublished`, then `<time datetime>`.
    pub published: Option<String>,
    /// `og:site_name`, then JSON-LD `publisher.name`.
    pub site_name: Option<String>,
    /// `<html lang>`, then `og:locale`.
    pub language: Option<String>,
    /// `<link rel="canonical">`, then `og:url`, then JSON-LD `url`.
    pub canonical_url: Option<String>,
    /// `og:description`, then JSON-LD `description`, then `<meta name="description">`.
    pub excerpt: Option<String>,
    /// `og:image`, then JSON-LD `image`.
    pub lead_image: Option<String>,
    /// `<base href>`, resolved: the base for the page's relative links.
    pub base: Option<Url>,
}

/// Every source, as found; combined in [`PageMeta`]'s order at the end.
#[derive(Default)]
struct Found {
    og: std::collections::HashMap<String, String>,
    og_authors: Vec<String>,
    ld: Vec<Value>,
    meta_author: Option<String>,
    meta_description: Option<String>,
    time: Option<String>,
    lang: Option<String>,
    canonical: Option<String>,
    title: Option<String>,
    base: Option<String>,
}

fn clean(s: &str) -> Option<String> {
    let s = crate::text::collapse_ws(&crate::text::unescape_html(s));
    (!s.is_empty()).then_some(s)
}

/// The JSON-LD types that describe an article.
fn is_article_type(t: &Value) -> bool {
    let is = |s: &str| {
        matches!(
            s,
            "Article"
                | "NewsArticle"
                | "BlogPosting"
                | "ReportageNewsArticle"
                | "AnalysisNewsArticle"
                | "OpinionNewsArticle"
                | "TechArticle"
                | "ScholarlyArticle"
                | "SocialMediaPosting"
                | "LiveBlogPosting"
        )
    };
    match t {
        Value::String(s) => is(s),
        Value::Array(a) => a.iter().any(|v| v.as_str().is_some_and(is)),
        _ => false,
    }
}

/// Every JSON-LD object in `v` (top level, arrays, `@graph`).
fn ld_objects(v: Value, out: &mut Vec<Value>) {
    match v {
        Value::Array(a) => a.into_iter().for_each(|v| ld_objects(v, out)),
        Value::Object(mut o) => {
            if let Some(g) = o.remove("@graph") {
                ld_objects(g, out);
            }
            out.push(Value::Object(o));
        }
        _ => {}
    }
}

/// Names in a JSON-LD `author` (a string, a Person, or a list of them).
fn ld_names(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => clean(s).into_iter().collect(),
        Value::Object(o) => o
            .get("name")
            .and_then(Value::as_str)
            .and_then(clean)
            .into_iter()
            .collect(),
        Value::Array(a) => a.iter().flat_map(ld_names).collect(),
        _ => Vec::new(),
    }
}

/// A URL in a JSON-LD `image` or `url` (a string, an object with `url`, or a list).
fn ld_url(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => clean(s),
        Value::Object(o) => o.get("url").and_then(ld_url),
        Value::Array(a) => a.iter().find_map(ld_url),
        _ => None,
    }
}

fn ld_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).and_then(clean)
}

/// The largest JSON-LD block read (real ones are a few KiB, with an article's text some
/// tens; a larger one is left out: its objects cost many times its size in memory).
const MAX_LD_BYTES: usize = 1 << 20;

/// The most JSON-LD objects kept from a page (an article is among the first few).
const MAX_LD_OBJECTS: usize = 64;

/// How many tokens pass between two checks of the call's stop.
const CHECK_EVERY: usize = 4096;

/// Reads the metadata of `html`, a page read from `page_url`, until `stop` says to stop.
pub(crate) fn read(html: &str, page_url: &Url, stop: &Stop) -> Result<PageMeta, Stopped> {
    let mut f = Found::default();
    let mut open: Option<(String, String)> = None;
    for (n, tok) in Tokenizer::new(html).enumerate() {
        if n % CHECK_EVERY == CHECK_EVERY - 1 {
            stop.check()?;
        }
        match tok {
            Token::Start { name, attrs, .. } => {
                match &*name {
                    "html" if f.lang.is_none() => {
                        f.lang = attr(attrs, "lang").and_then(|l| clean(&l))
                    }
                    "base" if f.base.is_none() => {
                        f.base = attr(attrs, "href").map(|h| h.into_owned())
                    }
                    "meta" => meta_tag(attrs, &mut f),
                    "link" if f.canonical.is_none() => {
                        let rel = attr(attrs, "rel").unwrap_or_default().to_ascii_lowercase();
                        if rel.split_ascii_whitespace().any(|r| r == "canonical") {
                            f.canonical = attr(attrs, "href").map(|h| h.into_owned());
                        }
                    }
                    "time" if f.time.is_none() => {
                        f.time = attr(attrs, "datetime").and_then(|t| clean(&t));
                    }
                    _ => {}
                }
                open = Some((name.into_owned(), attrs.to_owned()));
            }
            Token::RawText(text) => {
                if let Some((name, attrs)) = open.take() {
                    if name == "title" && f.title.is_none() {
                        f.title = clean(text);
                    } else if name == "script"
                        && attr(&attrs, "type")
                            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"))
                        && f.ld.len() < MAX_LD_OBJECTS
                        && text.len() <= MAX_LD_BYTES
                        && let Ok(v) = serde_json::from_str::<Value>(text.trim())
                    {
                        ld_objects(v, &mut f.ld);
                        f.ld.truncate(MAX_LD_OBJECTS);
                    }
                }
            }
            _ => open = None,
        }
    }
    Ok(combine(f, page_url))
}

fn meta_tag(attrs: &str, f: &mut Found) {
    let key = attr(attrs, "property")
        .or_else(|| attr(attrs, "name"))
        .map(|k| k.trim().to_ascii_lowercase());
    let (Some(key), Some(content)) = (key, attr(attrs, "content").and_then(|c| clean(&c))) else {
        return;
    };
    match key.as_str() {
        "article:author" | "og:article:author" => f.og_authors.push(content),
        "author" => {
            f.meta_author.get_or_insert(content);
        }
        "description" => {
            f.meta_description.get_or_insert(content);
        }
        k if k.starts_with("og:") || k.starts_with("article:") => {
            f.og.entry(k.to_owned()).or_insert(content);
        }
        _ => {}
    }
}

fn combine(f: Found, page_url: &Url) -> PageMeta {
    let base = f
        .base
        .as_deref()
        .and_then(|b| page_url.join(b.trim()).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"));
    let base_ref = Some(base.as_ref().unwrap_or(page_url));
    let article =
        f.ld.iter()
            .find(|o| o.get("@type").is_some_and(is_article_type))
            .or_else(|| {
                f.ld.iter()
                    .find(|o| o.get("@type").and_then(Value::as_str) == Some("WebPage"))
            });
    let og = |k: &str| f.og.get(k).cloned();
    let ld = |k: &str| article.and_then(|a| ld_str(a, k));
    // A profile URL is not a name.
    let og_authors: Vec<String> = f
        .og_authors
        .iter()
        .filter(|a| !a.starts_with("http://") && !a.starts_with("https://"))
        .cloned()
        .collect();
    let authors = if !og_authors.is_empty() {
        og_authors
    } else {
        let from_ld = article
            .and_then(|a| a.get("author"))
            .map(ld_names)
            .unwrap_or_default();
        if !from_ld.is_empty() {
            from_ld
        } else {
            f.meta_author.clone().into_iter().collect()
        }
    };
    let locale = og("og:locale").map(|l| l.replace('_', "-"));
    PageMeta {
        title: og("og:title")
            .or_else(|| ld("headline"))
            .or(f.title.clone()),
        authors,
        published: og("article:published_time")
            .or_else(|| ld("datePublished"))
            .or(f.time.clone()),
        site_name: og("og:site_name").or_else(|| {
            article
                .and_then(|a| a.get("publisher"))
                .and_then(|p| ld_str(p, "name"))
        }),
        language: f.lang.clone().or(locale),
        canonical_url: f
            .canonical
            .as_deref()
            .and_then(|c| crate::urls::http_link(c, base_ref))
            .or_else(|| og("og:url").and_then(|u| crate::urls::http_link(&u, base_ref)))
            .or_else(|| {
                article
                    .and_then(|a| a.get("url"))
                    .and_then(ld_url)
                    .and_then(|u| crate::urls::http_link(&u, base_ref))
            }),
        excerpt: og("og:description")
            .or_else(|| ld("description"))
            .or(f.meta_description.clone()),
        lead_image: og("og:image")
            .or_else(|| og("og:image:url"))
            .or_else(|| article.and_then(|a| a.get("image")).and_then(ld_url))
            .and_then(|u| crate::urls::http_link(&u, base_ref)),
        base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Url {
        Url::parse("https://news.example/2026/12/story.html").unwrap()
    }

    #[test]
    fn open_graph_comes_first_then_json_ld_then_plain_tags() {
        let html = r#"<html lang="en-GB"><head>
            <title>Plain title | Site</title>
            <meta property="og:title" content="OG &amp; title">
            <meta name="author" content="Meta Author">
            <meta name="description" content="Meta description">
            <link rel="canonical" href="/story">
            <script type="application/ld+json">{"@context":"https://schema.org","@graph":[
              {"@type":"WebSite","name":"Ignored"},
              {"@type":"NewsArticle","headline":"LD headline","datePublished":"2026-12-01T08:00:00Z",
               "author":[{"@type":"Person","name":"Ada"},{"name":"Grace"}],
               "publisher":{"name":"The Example"},"image":{"url":"/img/lead.jpg"},
               "description":"LD description"}]}</script>
            </head><body><time datetime="2020-01-01">old</time></body></html>"#;
        let m = read(html, &page(), &Stop::never()).unwrap();
        assert_eq!(m.title.as_deref(), Some("OG & title"));
        assert_eq!(m.authors, ["Ada", "Grace"]);
        assert_eq!(m.published.as_deref(), Some("2026-12-01T08:00:00Z"));
        assert_eq!(m.site_name.as_deref(), Some("The Example"));
        assert_eq!(m.language.as_deref(), Some("en-GB"));
        assert_eq!(
            m.canonical_url.as_deref(),
            Some("https://news.example/story")
        );
        assert_eq!(m.excerpt.as_deref(), Some("LD description"));
        assert_eq!(
            m.lead_image.as_deref(),
            Some("https://news.example/img/lead.jpg")
        );
    }

    #[test]
    fn plain_tags_fill_what_nothing_else_gives_and_base_href_resolves() {
        let html = r#"<head><base href="https://cdn.example/a/"><title> Just a  title </title>
            <meta name="author" content="Meta Author"><meta property="og:locale" content="fr_FR">
            <meta property="og:image" content="lead.png">
            <meta property="article:author" content="https://facebook.example/someone">
            </head><body><time datetime="2026-11-30">yesterday</time></body>"#;
        let m = read(html, &page(), &Stop::never()).unwrap();
        assert_eq!(m.title.as_deref(), Some("Just a title"));
        assert_eq!(m.authors, ["Meta Author"]);
        assert_eq!(m.published.as_deref(), Some("2026-11-30"));
        assert_eq!(m.language.as_deref(), Some("fr-FR"));
        assert_eq!(
            m.lead_image.as_deref(),
            Some("https://cdn.example/a/lead.png")
        );
        assert_eq!(m.base.unwrap().as_str(), "https://cdn.example/a/");
    }

    #[test]
    fn broken_json_ld_and_hostile_links_are_ignored() {
        let html = r#"<head><script type="application/ld+json">{"@type": "Article", "headline": </script>
            <link rel="canonical" href="javascript:alert(1)"><meta property="og:image" content="data:image/png;base64,AAAA">
            </head>"#;
        let m = read(html, &page(), &Stop::never()).unwrap();
        assert_eq!(m.title, None);
        assert_eq!(m.canonical_url, None);
        assert_eq!(m.lead_image, None);
    }
}
