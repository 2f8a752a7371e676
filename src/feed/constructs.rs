//! The value shapes feeds share: text constructs, person names, enclosures, dates, links.

use base64::Engine;
use url::Url;

use super::Body;
use super::render::to_plain;
use super::xml::{Element, Node, Ns};
use crate::model::Enclosure;
use crate::text::{collapse_ws, non_empty};
use crate::urls::resolve;

pub(super) const RSSISH: [Ns; 3] = [Ns::None, Ns::Rss, Ns::Root];

pub(super) fn is_atomish(e: &Element, atom_mode: bool) -> bool {
    e.ns == Ns::Atom || (atom_mode && matches!(e.ns, Ns::None | Ns::Root))
}

/// Reads `c` into `out` when it is a category of a channel or an item (Atom's `term` or
/// `label`, RSS's text, `dc:subject`, `media:category`, `itunes:category`); whether it was.
pub(super) fn category(c: &Element, atomish: bool, rssish: bool, out: &mut Vec<String>) -> bool {
    match (c.ns, &*c.lname) {
        (_, "category") if atomish => {
            push_unique(out, c.attr("term").or(c.attr("label")).and_then(non_empty))
        }
        (_, "category") if rssish => push_unique(out, category_text(c)),
        (Ns::Dc, "subject") | (Ns::Media, "category") => push_unique(out, category_text(c)),
        (Ns::Itunes, "category") => itunes_categories(c, out),
        _ => return false,
    }
    true
}

/// A category element's words: its own text (a child element's words only when it has
/// none), and markup written escaped inside it read as text (`&lt;b&gt;News&lt;/b&gt;` is
/// `News`).
fn category_text(c: &Element) -> Option<String> {
    let own = c.own_text();
    let text = if own.trim().is_empty() { c.text() } else { own };
    if text.contains(['<', '&']) {
        non_empty(to_plain(&text))
    } else {
        non_empty(collapse_ws(&text))
    }
}

/// The categories an `itunes:category` carries in its `text` attribute, its nested ones
/// included (`Technology` › `Software How-To`).
pub(super) fn itunes_categories(e: &Element, out: &mut Vec<String>) {
    push_unique(out, e.attr("text").and_then(non_empty));
    for c in e.elements() {
        if c.ns == Ns::Itunes && c.name.eq_ignore_ascii_case("category") {
            itunes_categories(c, out);
        }
    }
}

/// A `<link>`'s relation, lowercased: `alternate` when it names none (Atom's default).
pub(super) fn link_rel(e: &Element) -> String {
    e.attr("rel")
        .unwrap_or("alternate")
        .trim()
        .to_ascii_lowercase()
}

/// Whether a `<link>` points at the page itself (`rel` absent or `alternate`).
pub(super) fn is_alternate(e: &Element) -> bool {
    e.attr("rel")
        .is_none_or(|r| r.trim().eq_ignore_ascii_case("alternate"))
}

/// A text construct as a body: Atom `type`/`mode`, or RSS's HTML-by-default.
pub(super) fn text_construct(e: &Element, text_by_default: bool) -> Option<Body> {
    let ty = e.attr("type").unwrap_or("").trim().to_ascii_lowercase();
    let mode = e.attr("mode").unwrap_or("").trim().to_ascii_lowercase();
    let markup_or_text = |e: &Element| {
        if e.has_element_children() {
            e.inner_markup()
        } else {
            e.text()
        }
    };
    // A media type that is neither text nor XML is base64 (RFC 4287 §4.1.3.3), as is
    // Atom 0.3's `mode="base64"`; what does not decode to text is read as the text it is.
    let media = ty.contains('/') && !ty.starts_with("text/") && !ty.ends_with("xml");
    let decoded = (mode == "base64" || media)
        .then(|| {
            let raw: String = e.text().split_whitespace().collect();
            base64::engine::general_purpose::STANDARD
                .decode(raw.as_bytes())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
        })
        .flatten();
    let known = matches!(ty.as_str(), "" | "text" | "html" | "xhtml")
        || ty.starts_with("text/")
        || ty.ends_with("xml");
    let body = if let Some(s) = decoded {
        if ty.contains("html") {
            Body::Html(s)
        } else {
            Body::Text(s)
        }
    } else if !known || mode == "base64" {
        // A type we do not know (`custom`, `application/octet-stream` that is not base64):
        // its text, as the publisher wrote it.
        if e.has_element_children() {
            Body::Html(e.inner_markup())
        } else {
            Body::Text(e.text())
        }
    } else if ty == "xhtml" || ty.ends_with("xhtml+xml") || mode == "xml" {
        let wrapper = e
            .elements()
            .filter(|c| c.name.eq_ignore_ascii_case("div"))
            .collect::<Vec<_>>();
        let only_div = wrapper.len() == 1
            && e.elements().count() == 1
            && e.text().trim() == wrapper[0].text().trim();
        Body::Html(if only_div {
            wrapper[0].inner_markup()
        } else {
            e.inner_markup()
        })
    } else if ty == "html" || ty == "text/html" || mode == "escaped" {
        Body::Html(markup_or_text(e))
    } else if ty == "text" || ty.starts_with("text/") || (ty.is_empty() && text_by_default) {
        if e.has_element_children() {
            Body::Html(e.inner_markup())
        } else {
            Body::Text(e.text())
        }
    } else {
        Body::Html(markup_or_text(e))
    };
    (!body.is_blank()).then_some(body)
}

/// [`text_construct`], moving the text out of `e` when it is one plain text child of a
/// text or HTML type (a body: the common case, and the largest copy a parse would make).
pub(super) fn text_construct_take(e: &mut Element, text_by_default: bool) -> Option<Body> {
    let ty = e.attr("type").unwrap_or("").trim();
    let plain_kind = e.attr("mode").is_none()
        && (ty.is_empty()
            || ["html", "text", "text/html", "text/plain"]
                .iter()
                .any(|t| ty.eq_ignore_ascii_case(t)));
    if !plain_kind || !matches!(e.children.as_slice(), [Node::Text(_)]) {
        return text_construct(e, text_by_default);
    }
    let html = ty.eq_ignore_ascii_case("html")
        || ty.eq_ignore_ascii_case("text/html")
        || (ty.is_empty() && !text_by_default);
    let text = e.take_text();
    let body = if html {
        Body::Html(text)
    } else {
        Body::Text(text)
    };
    (!body.is_blank()).then_some(body)
}

/// A title without the control characters U+0000–U+001F (a tab or a line break is a
/// space by then): they are no text, and break what displays it.
pub(super) fn without_controls(title: Option<String>) -> Option<String> {
    let t = title?;
    if !t.contains(|c: char| c < ' ') {
        return Some(t);
    }
    non_empty(collapse_ws(&t.replace(
        |c: char| c < ' ' && !matches!(c, '\t' | '\n' | '\r'),
        "",
    )))
}

pub(super) fn plain(body: Option<Body>) -> Option<String> {
    match body? {
        Body::Html(h) => non_empty(to_plain(&h)),
        Body::Text(t) => non_empty(collapse_ws(&t)),
    }
}

/// Whether `s` is an e-mail address (or a `mailto:` URI of one), not a name.
fn is_address(s: &str) -> bool {
    let s = strip_mailto(s);
    !s.contains(char::is_whitespace)
        && s.split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty())
}

fn strip_mailto(s: &str) -> &str {
    let s = s.trim();
    match s.get(..7) {
        Some(p) if p.eq_ignore_ascii_case("mailto:") => s[7..].trim(),
        _ => s,
    }
}

/// A name from `Name (email)`, `email (Name)`, `Name <email>`, their `mailto:` forms, or
/// the text itself; an address (without `mailto:`) only when no name is given.
pub(super) fn person_name(s: &str) -> Option<String> {
    let s = collapse_ws(s);
    if let (Some(open), true) = (s.find('('), s.ends_with(')')) {
        let inner = s[open + 1..s.len() - 1].trim();
        let outer = s[..open].trim().trim_matches('"').trim();
        let pick = match (inner.is_empty(), outer.is_empty()) {
            (true, _) => outer,
            (false, true) => inner,
            // `email (Name)` and `Name (email)` alike: the part that is not an address.
            (false, false) if is_address(inner) && !is_address(outer) => outer,
            (false, false) if is_address(outer) => inner,
            // Neither is an address: a name with a remark, kept whole.
            (false, false) => s.as_str(),
        };
        if !pick.is_empty() {
            return non_empty(strip_mailto(pick));
        }
    }
    if let Some(lt) = s.find('<') {
        let name = s[..lt].trim().trim_matches('"').trim();
        if !name.is_empty() {
            return Some(strip_mailto(name).to_owned());
        }
        return non_empty(strip_mailto(s[lt + 1..].trim_end_matches('>')));
    }
    non_empty(strip_mailto(&s))
}

pub(super) fn person(e: &Element) -> Option<String> {
    if e.has_element_children() {
        let name = e
            .elements()
            .find(|c| c.name.eq_ignore_ascii_case("name"))
            .and_then(|c| non_empty(collapse_ws(&c.text())));
        name.or_else(|| {
            e.elements()
                .find(|c| c.name.eq_ignore_ascii_case("email"))
                .and_then(|c| non_empty(c.text()))
        })
    } else {
        person_name(&e.text())
    }
}

pub(super) fn push_unique(list: &mut Vec<String>, value: Option<String>) {
    if let Some(v) = value
        && !list.contains(&v)
    {
        list.push(v);
    }
}

pub(super) fn enclosure(
    url: Option<&str>,
    ty: Option<&str>,
    len: Option<&str>,
    base: Option<&Url>,
) -> Option<Enclosure> {
    Some(Enclosure {
        url: resolve(url?, base)?,
        mime_type: ty.and_then(non_empty),
        length: len
            .and_then(|l| l.trim().parse::<u64>().ok())
            .filter(|n| *n > 0),
    })
}

pub(super) fn push_enclosure(list: &mut Vec<Enclosure>, e: Option<Enclosure>) {
    if let Some(e) = e
        && !list.iter().any(|x| x.url == e.url)
    {
        list.push(e);
    }
}

/// Date candidates in priority order; the first that parses wins.
#[derive(Default)]
pub(super) struct Dates {
    pub(super) published: [Option<String>; 6],
    pub(super) updated: [Option<String>; 3],
}

pub(super) fn first_date(candidates: &[Option<String>]) -> Option<chrono::DateTime<chrono::Utc>> {
    candidates
        .iter()
        .flatten()
        .find_map(|s| super::dates::parse(s))
}

pub(super) fn set_once(slot: &mut Option<String>, value: String) {
    if slot.is_none() {
        *slot = Some(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn person_names_come_out_of_every_shape() {
        assert_eq!(
            person_name("jo@example.com (Jo Doe)").as_deref(),
            Some("Jo Doe")
        );
        assert_eq!(
            person_name("Jo Doe <jo@example.com>").as_deref(),
            Some("Jo Doe")
        );
        assert_eq!(
            person_name("jo@example.com").as_deref(),
            Some("jo@example.com")
        );
        assert_eq!(person_name("  Jo  Doe ").as_deref(), Some("Jo Doe"));
    }

    #[test]
    fn issue_40_a_name_beside_an_address_is_the_name_in_either_order() {
        for shape in [
            "Jo Doe (jo@example.com)",
            "jo@example.com (Jo Doe)",
            "mailto:jo@example.com (Jo Doe)",
            "Jo Doe (mailto:jo@example.com)",
            "Jo Doe <mailto:jo@example.com>",
            "\"Jo Doe\" <jo@example.com>",
        ] {
            assert_eq!(person_name(shape).as_deref(), Some("Jo Doe"), "{shape}");
        }
        assert_eq!(
            person_name("mailto:jo@example.com").as_deref(),
            Some("jo@example.com")
        );
        assert_eq!(
            person_name("<mailto:jo@example.com>").as_deref(),
            Some("jo@example.com")
        );
        // A name with a remark in brackets is kept whole.
        assert_eq!(
            person_name("Jo Doe (editor)").as_deref(),
            Some("Jo Doe (editor)")
        );
    }
}
