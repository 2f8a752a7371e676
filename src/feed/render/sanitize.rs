//! Sanitized HTML: ammonia (an HTML5 parser and an allowlist) decides what passes.
//!
//! Only the content elements feeds use pass, with a few attributes each; links and images
//! keep `http`, `https` and `mailto` URLs only, resolved against the item's base first;
//! links get `rel="noopener noreferrer nofollow"`; every text node is escaped on output.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use ammonia::{Builder, UrlRelative};
use url::Url;

use crate::html::{Token, Tokenizer, attributes};
use crate::text::escape_html;
use crate::urls;

/// Elements that pass (their content passes too; other elements are dropped, their text
/// kept, except those in [`DROPPED_WITH_CONTENT`]).
pub(crate) const ALLOWED_TAGS: &[&str] = &[
    "a",
    "abbr",
    "b",
    "bdi",
    "bdo",
    "blockquote",
    "br",
    "caption",
    "cite",
    "code",
    "col",
    "colgroup",
    "dd",
    "del",
    "details",
    "dfn",
    "div",
    "dl",
    "dt",
    "em",
    "figcaption",
    "figure",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "ins",
    "kbd",
    "li",
    "mark",
    "ol",
    "p",
    "pre",
    "q",
    "rp",
    "rt",
    "ruby",
    "s",
    "samp",
    "small",
    "span",
    "strike",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "time",
    "tr",
    "u",
    "ul",
    "var",
    "wbr",
];

/// Elements removed together with everything inside them.
const DROPPED_WITH_CONTENT: &[&str] = &[
    "script", "style", "svg", "math", "template", "iframe", "object", "applet", "noembed",
    "noframes", "textarea", "select", "title", "head",
];

/// Attributes that pass, per element (`*`: on every allowed element). `rel` on links is set
/// by the sanitizer, never copied.
pub(crate) const ALLOWED_ATTRIBUTES: &[(&str, &[&str])] = &[
    ("*", &["title", "lang", "dir"]),
    ("a", &["href", "hreflang"]),
    ("img", &["src", "alt", "width", "height"]),
    ("td", &["colspan", "rowspan", "align"]),
    ("th", &["colspan", "rowspan", "align", "scope"]),
    ("col", &["span"]),
    ("colgroup", &["span"]),
    ("ol", &["start", "reversed", "type"]),
    ("li", &["value"]),
    ("time", &["datetime"]),
    ("details", &["open"]),
    ("code", &["class"]),
    ("pre", &["class"]),
];

/// The `rel` every link carries.
pub(crate) const LINK_REL: &str = "noopener noreferrer nofollow";

struct Policy {
    tags: HashSet<&'static str>,
    attributes: HashMap<&'static str, HashSet<&'static str>>,
    generic: HashSet<&'static str>,
    dropped: HashSet<&'static str>,
}

static POLICY: LazyLock<Policy> = LazyLock::new(|| Policy {
    tags: ALLOWED_TAGS.iter().copied().collect(),
    attributes: ALLOWED_ATTRIBUTES
        .iter()
        .filter(|(t, _)| *t != "*")
        .map(|(t, a)| (*t, a.iter().copied().collect()))
        .collect(),
    generic: ALLOWED_ATTRIBUTES
        .iter()
        .filter(|(t, _)| *t == "*")
        .flat_map(|(_, a)| a.iter().copied())
        .collect(),
    dropped: DROPPED_WITH_CONTENT.iter().copied().collect(),
});

/// Keeps only `language-*` / `lang-*` classes (code highlighting), nothing else.
fn filter_attribute<'u>(element: &str, attribute: &str, value: &'u str) -> Option<Cow<'u, str>> {
    if attribute != "class" {
        return Some(value.into());
    }
    let kept: Vec<&str> = value
        .split_ascii_whitespace()
        .filter(|c| {
            matches!(element, "code" | "pre")
                && (c.starts_with("language-") || c.starts_with("lang-"))
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'+' | b'.'))
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join(" ").into())
}

/// Attributes lazy-loading scripts keep an image's real address in.
const LAZY_SOURCES: [&str; 3] = ["data-src", "data-lazy-src", "data-original"];

/// What the sanitizer should see of `html`: `<noscript>` unwrapped (it holds the real image
/// of a lazy-loaded page, and a page shown without scripts shows it), and a lazy image's real
/// address in its `src`. Whatever this produces is sanitized afterwards.
fn unlazy(html: &str) -> Cow<'_, str> {
    if !html.contains("noscript") && !LAZY_SOURCES.iter().any(|a| html.contains(a)) {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut tokens = Tokenizer::new(html);
    let mut from = 0;
    while let Some(tok) = tokens.next() {
        let to = tokens.offset();
        match tok {
            Token::Start { name, .. } | Token::End(name) if name == "noscript" => {}
            Token::Start { name, attrs, .. } if name == "img" => {
                let all: Vec<_> = attributes(attrs).collect();
                let src = all.iter().find(|(k, _)| k == "src").map(|(_, v)| v.trim());
                let lazy = all
                    .iter()
                    .find(|(k, _)| LAZY_SOURCES.contains(&k.as_ref()))
                    .map(|(_, v)| v.trim());
                match lazy {
                    Some(lazy) if src.is_none_or(|s| s.is_empty() || s.starts_with("data:")) => {
                        out.push_str("<img src=\"");
                        escape_html(lazy, &mut out);
                        out.push('"');
                        for (k, v) in all.iter().filter(|(k, _)| k == "alt" || k == "title") {
                            out.push(' ');
                            out.push_str(k);
                            out.push_str("=\"");
                            escape_html(v, &mut out);
                            out.push('"');
                        }
                        out.push('>');
                    }
                    _ => out.push_str(&html[from..to]),
                }
            }
            _ => out.push_str(&html[from..to]),
        }
        from = to;
    }
    Cow::Owned(out)
}

/// Sanitizes `html` against the allowlist, with relative URLs resolved against `base` (and
/// dropped when there is none).
pub(crate) fn sanitize_html(html: &str, base: Option<&Url>) -> String {
    let p = &*POLICY;
    let mut b = Builder::empty();
    b.tags(p.tags.clone())
        .tag_attributes(p.attributes.clone())
        .generic_attributes(p.generic.clone())
        .clean_content_tags(p.dropped.clone())
        .url_schemes(urls::CONTENT_SCHEMES.iter().copied().collect())
        .link_rel(Some(LINK_REL))
        .strip_comments(true)
        .attribute_filter(filter_attribute)
        .url_relative(match base {
            Some(b) => UrlRelative::RewriteWithBase(b.clone()),
            None => UrlRelative::Deny,
        });
    // The sanitizer builds a tree: a body nested past the shape bounds (200,000 `<div>` in
    // one description) is written again within them first, its text kept.
    let shaped =
        crate::shape::bounded(html, &crate::stop::Stop::never()).unwrap_or(Cow::Borrowed(html));
    let out = b.clean(&unlazy(&shaped)).to_string();
    debug_assert!(!out.contains("<script"));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn issue_27_a_body_nested_past_the_bounds_is_sanitized_within_them() {
        // 200,000 nested `<div>` took the sanitizer's tree builder minutes; 20,000 show the
        // depth that reaches it.
        for open in ["<div>", "<ul><li>", "<blockquote>"] {
            let html = format!("{}hello at the bottom", open.repeat(20_000));
            let out = super::sanitize_html(&html, None);
            assert!(out.contains("hello at the bottom"), "{open}");
            let depth = crate::shape::tree_depth(&out);
            assert!(
                depth <= crate::shape::tree_builder_allowance(crate::shape::MAX_DEPTH),
                "{open}: {depth}"
            );
        }
        // An ordinary body is sanitized as it is.
        let plain = "<p>one <b>two</b></p><ul><li>three</li></ul>";
        assert_eq!(super::sanitize_html(plain, None), plain);
    }
}
