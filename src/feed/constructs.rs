//! The value shapes feeds share: text constructs, person names, enclosures, dates, links.

use base64::Engine;
use url::Url;

use super::Body;
use super::render::to_plain;
use super::xml::{Element, Ns};
use crate::date;
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
    match (c.ns, c.name.to_ascii_lowercase().as_str()) {
        (_, "category") if atomish => {
            push_unique(out, c.attr("term").or(c.attr("label")).and_then(non_empty))
        }
        (_, "category") if rssish => push_unique(out, non_empty(collapse_ws(&c.own_text()))),
        (Ns::Dc, "subject") | (Ns::Media, "category") => {
            push_unique(out, non_empty(collapse_ws(&c.own_text())))
        }
        (Ns::Itunes, "category") => itunes_categories(c, out),
        _ => return false,
    }
    true
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
pub(super) fn text_construct(
    e: &Element,
    text_by_default: bool,
    skipped: &mut Vec<String>,
) -> Option<Body> {
    let ty = e.attr("type").unwrap_or("").trim().to_ascii_lowercase();
    let mode = e.attr("mode").unwrap_or("").trim().to_ascii_lowercase();
    let markup_or_text = |e: &Element| {
        if e.has_element_children() {
            e.inner_markup()
        } else {
            e.text()
        }
    };
    let binary = !ty.is_empty()
        && !matches!(ty.as_str(), "text" | "html" | "xhtml")
        && !ty.starts_with("text/")
        && !ty.ends_with("xml");
    let body = if mode == "base64" || binary {
        let raw: String = e.text().split_whitespace().collect();
        match base64::engine::general_purpose::STANDARD
            .decode(raw.as_bytes())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        {
            Some(s) if ty.contains("html") => Body::Html(s),
            Some(s) => Body::Text(s),
            None => {
                skipped.push(format!(
                    "<{}> of type {ty:?} is not base64-encoded text and was skipped",
                    e.name
                ));
                return None;
            }
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

pub(super) fn plain(body: Option<Body>) -> Option<String> {
    match body? {
        Body::Html(h) => non_empty(to_plain(&h)),
        Body::Text(t) => non_empty(collapse_ws(&t)),
    }
}

/// A name from `Name <email>`, `email (Name)`, or the text itself.
pub(super) fn person_name(s: &str) -> Option<String> {
    let s = collapse_ws(s);
    if let (Some(open), true) = (s.find('('), s.ends_with(')')) {
        let inner = s[open + 1..s.len() - 1].trim();
        if !inner.is_empty() {
            return Some(inner.to_owned());
        }
    }
    if let Some(lt) = s.find('<') {
        let name = s[..lt].trim().trim_matches('"');
        if !name.is_empty() {
            return Some(name.to_owned());
        }
        return non_empty(s[lt + 1..].trim_end_matches('>'));
    }
    non_empty(s)
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
    pub(super) published: [Option<String>; 4],
    pub(super) updated: [Option<String>; 2],
}

pub(super) fn first_date(candidates: &[Option<String>]) -> Option<chrono::DateTime<chrono::Utc>> {
    candidates.iter().flatten().find_map(|s| date::parse(s))
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
}
