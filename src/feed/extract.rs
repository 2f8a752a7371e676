//! RSS (0.9x, 1.0/RDF, 2.0) and Atom (0.3, 1.0) element trees mapped to [`RawFeed`].

use std::cell::RefCell;

use crate::model::WarningCode;
use url::Url;

use super::channel::{channel_meta, site_link};
use super::constructs::{
    Dates, RSSISH, category, enclosure, first_date, is_alternate, is_atomish, link_rel, person,
    person_name, plain, push_enclosure, push_unique, set_once, text_construct, text_construct_take,
    without_controls,
};
use super::handout::Handout;
use super::xml::{self, Element, Node, Ns};
use super::{Body, RawFeed, RawItem, items_capped_message};
use crate::error::{Error, Result};
use crate::text::{collapse_ws, non_empty};
use crate::urls::resolve;

/// Parses an XML feed, handing each item to `sink` as it closes.
pub(super) fn parse_xml(
    text: impl std::io::BufRead,
    base: Option<&Url>,
    sink: &mut dyn FnMut(RawItem),
) -> Result<RawFeed> {
    let mut text = Some(text);
    read_xml(base, sink, &mut |b, _| {
        if let Some(t) = text.take() {
            b.run(t, 0);
        }
    })
}

/// Parses an XML feed held whole (UTF-8), its items read on all of rayon's threads in
/// stretches of about `step` bytes when the document allows (see [`super::split`]), handed
/// to `sink` in document order: the same feed, items and warnings as [`parse_xml`].
pub(super) fn parse_xml_whole(
    text: &[u8],
    base: Option<&Url>,
    sink: &mut dyn FnMut(RawItem),
    step: usize,
) -> Result<RawFeed> {
    read_xml(base, sink, &mut |b, handout| {
        super::split::drive(b, text, base, handout, step)
    })
}

/// One item element read into an item; `site`: what a local file's item resolves against.
pub(super) fn convert(el: &mut Element, atom_mode: bool, site: Option<&Url>) -> RawItem {
    let mut it = item(el, atom_mode);
    if let Some(site) = site {
        rebase(&mut it, site);
    }
    // Podcast links resolve like the item's own (against the site for a local file).
    it.podcast = super::podcast::episode(el, it.base.as_ref());
    it
}

/// `drive` reads the document into the builder it is given, items handed out through the
/// handout.
type Drive<'d> = dyn FnMut(&mut xml::Builder<'_>, &RefCell<Handout<'_>>) + 'd;

fn read_xml(
    base: Option<&Url>,
    sink: &mut dyn FnMut(RawItem),
    drive: &mut Drive<'_>,
) -> Result<RawFeed> {
    let handout = RefCell::new(Handout::new(sink));
    let mut on_item = |mut el: Element, cx: &xml::ItemContext<'_>| {
        let mut h = handout.borrow_mut();
        if h.full() {
            return h.beyond();
        }
        let top = cx.parent.is_none() && cx.root.is_empty();
        h.root_entry = top && el.name.eq_ignore_ascii_case("entry");
        let atom_mode = cx.root.eq_ignore_ascii_case("feed") || h.root_entry;
        // Only an item element with nothing in it at all (no text, no attribute, no child
        // that has either) is not an item: anything else is the publisher's item.
        if !carries_data(&el) {
            return h.give(None);
        }
        let h = &mut *h;
        let site = match base {
            Some(_) => None,
            None => h
                .site
                .get_or_insert_with(|| cx.parent.and_then(|p| site_link(p, atom_mode)))
                .as_ref(),
        };
        let it = convert(&mut el, atom_mode, site);
        h.give(Some(it));
    };
    let doc = {
        let mut b = xml::Builder::new(base, &mut on_item);
        drive(&mut b, &handout);
        b.finish()
    };
    let Handout {
        handed,
        beyond_cap,
        empty_items,
        root_entry,
        ..
    } = handout.into_inner();
    let root = doc.root.or_else(|| {
        root_entry.then(|| Element {
            ns: Ns::Atom,
            name: "feed".into(),
            lname: "feed".into(),
            attrs: Vec::new(),
            children: Vec::new(),
            base: None,
        })
    });
    let Some(root) = root else {
        return Err(Error::parse(
            "no XML element could be read, so this is not a feed",
        ));
    };
    let root_lower = root.lname.to_string();
    let atom_mode = root_lower == "feed";
    if root_lower == "html" {
        return Err(Error::HtmlPage { content_type: None });
    }
    let format = match root_lower.as_str() {
        "rss" | "channel" => "rss",
        "rdf" => "rdf",
        "feed" => "atom",
        _ => "xml",
    };
    let channel = if format == "atom" {
        &root
    } else {
        root.elements()
            .find(|e| e.name.eq_ignore_ascii_case("channel"))
            .unwrap_or(&root)
    };
    let mut feed = RawFeed {
        format,
        ..RawFeed::default()
    };
    channel_meta(channel, &root, atom_mode, &mut feed);
    let repaired = !doc.repairs.is_empty() || doc.truncated;
    if format == "xml" && feed.title.is_none() && handed == 0 {
        return Err(Error::parse(format!(
            "the root element <{}> is not RSS, RDF or Atom, so this is not a feed",
            root.name
        )));
    }
    // A feed root makes a feed, empty or not; a document that had to be repaired and
    // still gave nothing at all is a broken download, not an empty feed.
    if repaired && handed == 0 && !feed.has_metadata() {
        return Err(Error::parse(format!(
            "the document is malformed and no feed data could be read from it ({})",
            doc.repairs
                .first()
                .map_or("it is cut short", String::as_str)
        )));
    }
    if empty_items > 0 {
        feed.warnings.push((
            WarningCode::ElementSkipped,
            format!("{empty_items} empty item element(s) (no text, attribute or child with data) were left out"),
        ));
    }
    if !doc.repairs.is_empty() || doc.truncated {
        let mut msg = doc.repairs.join("; ");
        if doc.truncated {
            msg.push_str("; reading stopped early, later items may be missing");
        }
        feed.warnings.push((WarningCode::FeedRepaired, msg));
    }
    if beyond_cap > 0 {
        feed.warnings
            .push((WarningCode::ItemsCapped, items_capped_message(beyond_cap)));
    }
    Ok(feed)
}

/// `s` trimmed, kept as it is when it needs no trimming; `None` when empty.
fn owned_non_empty(s: String) -> Option<String> {
    let t = s.trim();
    if t.is_empty() {
        None
    } else if t.len() == s.len() {
        Some(s)
    } else {
        Some(t.to_owned())
    }
}

/// Whether `s` starts with a URL scheme (`http:`, `mailto:`, …).
fn has_scheme(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Items of a local file have no request URL: resolve what is relative against the site.
fn rebase(it: &mut RawItem, site: &Url) {
    if it.base.is_some() {
        return;
    }
    let fix = |s: &mut String| {
        // An address with a scheme stays as it is (joining it gives it back or fails too).
        if !has_scheme(s)
            && Url::parse(s).is_err()
            && let Ok(u) = site.join(s)
        {
            *s = u.into();
        }
    };
    if let Some(u) = &mut it.url {
        fix(u);
    }
    if let Some(u) = &mut it.comments {
        fix(u);
    }
    for e in &mut it.enclosures {
        fix(&mut e.url);
    }
    it.base = Some(site.clone());
}

/// Whether `el` holds anything: text, an attribute with a value (other than `xml:*`), or a
/// child that holds something.
pub(super) fn carries_data(el: &Element) -> bool {
    el.attrs
        .iter()
        .any(|a| a.ns != Ns::Xml && !a.value.trim().is_empty())
        || el.children.iter().any(|n| match n {
            Node::Text(t) => !t.trim().is_empty(),
            Node::Elem(e) => carries_data(e),
        })
}

/// An item's `<source>`: RSS's (`url` attribute, title as text) or Atom's (a feed's
/// `title` and alternate `link`).
fn source(c: &Element, atomish: bool) -> Option<crate::model::ItemSource> {
    let s = if atomish {
        crate::model::ItemSource {
            title: c
                .elements()
                .find(|e| e.name.eq_ignore_ascii_case("title"))
                .and_then(|t| non_empty(collapse_ws(&t.text()))),
            url: c
                .elements()
                .filter(|e| e.name.eq_ignore_ascii_case("link"))
                .find(|e| is_alternate(e))
                .and_then(|e| e.attr("href"))
                .and_then(|h| resolve(h, c.base.as_deref())),
        }
    } else {
        crate::model::ItemSource {
            title: non_empty(collapse_ws(&c.text())),
            url: c.attr("url").and_then(|u| resolve(u, c.base.as_deref())),
        }
    };
    (s.title.is_some() || s.url.is_some()).then_some(s)
}

/// `itunes:duration` in seconds: `H:MM:SS`, `MM:SS` or seconds (fractions dropped).
fn duration(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut total = 0u64;
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() > 3 {
        return None;
    }
    for p in parts {
        let n = p.trim().split('.').next()?.parse::<u64>().ok()?;
        total = total.checked_mul(60)?.checked_add(n)?;
    }
    Some(total)
}

fn item(el: &mut Element, atom_mode: bool) -> RawItem {
    let base = el.base.as_deref();
    let mut it = RawItem {
        base: base.cloned(),
        ..RawItem::default()
    };
    let mut dates = Dates::default();
    let mut title = None;
    let mut title_fallback = None;
    let mut rss_link = None;
    let mut alternate: Option<(bool, String)> = None;
    let mut permalink_guid = None;
    let mut summary_fallback = None;
    let mut dc_description = None;
    let mut rss_summary = None;
    let mut author_fallback = None;
    if let Some(about) = el.attr_ns(Ns::Rdf, "about") {
        it.guid = non_empty(about);
    }
    let mut media: Vec<&Element> = Vec::new();
    let mut content_base = None;
    // Children mutably: a body is moved out of the tree, not copied (`text_construct_take`).
    let children = el.children.iter_mut().filter_map(|n| match n {
        Node::Elem(e) => Some(e),
        Node::Text(_) => None,
    });
    for c in children {
        let atomish = is_atomish(c, atom_mode);
        let rssish = RSSISH.contains(&c.ns) && !atomish;
        if category(c, atomish, rssish, &mut it.categories) {
            continue;
        }
        let name = &*c.lname;
        match (c.ns, name) {
            (_, "title") if (atomish || rssish) && title.is_none() => {
                title = plain(text_construct_take(c, atomish));
            }
            (Ns::Dc, "title") | (Ns::Media, "title") if title_fallback.is_none() => {
                title_fallback = non_empty(collapse_ws(&c.text()));
            }
            (_, "link") if atomish || rssish => {
                if let Some(href) = c.attr("href") {
                    let rel = link_rel(c);
                    let href = resolve(href, c.base.as_deref());
                    match rel.as_str() {
                        "alternate" => {
                            let html = c.attr("type").is_none_or(|t| t.contains("html"));
                            if let Some(h) = href
                                && alternate
                                    .as_ref()
                                    .is_none_or(|(was_html, _)| html && !was_html)
                            {
                                alternate = Some((html, h));
                            }
                        }
                        "enclosure" => push_enclosure(
                            &mut it.enclosures,
                            enclosure(
                                c.attr("href"),
                                c.attr("type"),
                                c.attr("length"),
                                c.base.as_deref(),
                            ),
                        ),
                        _ => {}
                    }
                } else if rss_link.is_none() {
                    rss_link = resolve(&c.take_text(), c.base.as_deref());
                }
            }
            (_, "guid") if rssish => {
                let g = owned_non_empty(c.take_text());
                let permalink = !c
                    .attr("isPermaLink")
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"));
                // A permalink guid is the item's address: resolved like any link, kept when
                // it is a web address.
                if permalink && let Some(g) = &g {
                    // Resolved only when the item has no link to be its address.
                    permalink_guid = Some((g.clone(), c.base.clone()));
                }
                if g.is_some() {
                    it.guid = g;
                }
            }
            (_, "comments") if rssish && it.comments.is_none() => {
                it.comments = resolve(c.take_text().trim(), c.base.as_deref())
            }
            (_, "source") if (rssish || atomish) && it.source.is_none() => {
                it.source = source(c, atomish);
            }
            (Ns::Itunes, "duration") => it.duration_seconds = duration(&c.take_text()),
            (_, "id") if atomish => it.guid = owned_non_empty(c.take_text()).or(it.guid.take()),
            // Atom's names in an RSS item (no namespace): what they mean in Atom, after the
            // item's own RSS elements.
            (_, "id") if rssish && it.guid.is_none() => it.guid = owned_non_empty(c.take_text()),
            (_, "author") if atomish || rssish => push_unique(&mut it.authors, person(c)),
            (Ns::Dc, "creator") | (Ns::Dc, "author") => {
                push_unique(&mut it.authors, person_name(&c.take_text()))
            }
            (Ns::Itunes, "author") => author_fallback = person_name(&c.take_text()),
            (_, "pubdate") if rssish => set_once(&mut dates.published[0], c.take_text()),
            (_, "published") if atomish => set_once(&mut dates.published[1], c.take_text()),
            (_, "issued") if atomish => set_once(&mut dates.published[2], c.take_text()),
            (Ns::Dc, "date") => set_once(&mut dates.published[3], c.take_text()),
            (Ns::Dcterms, "issued") | (Ns::Dcterms, "created") => {
                set_once(&mut dates.published[4], c.take_text())
            }
            // Atom 0.3's date of creation, when the entry says neither when it was issued
            // nor published.
            (_, "created") if atomish => set_once(&mut dates.published[4], c.take_text()),
            (_, "published") if rssish => set_once(&mut dates.published[5], c.take_text()),
            (_, "updated") | (_, "modified") if atomish => {
                set_once(&mut dates.updated[0], c.take_text())
            }
            (Ns::Dcterms, "modified") => set_once(&mut dates.updated[1], c.take_text()),
            (_, "updated") if rssish => set_once(&mut dates.updated[2], c.take_text()),
            (_, "description") if rssish && it.summary.is_none() => {
                it.summary = text_construct_take(c, false);
            }
            (_, "summary") if atomish && it.summary.is_none() => {
                it.summary = text_construct(c, true);
            }
            (_, "summary") | (_, "abstract") if rssish && rss_summary.is_none() => {
                rss_summary = text_construct(c, true);
            }
            (Ns::Dc, "description") if dc_description.is_none() => {
                dc_description = text_construct(c, false);
            }
            (Ns::Content, "encoded") if it.content.is_none() => {
                it.content = text_construct_take(c, false);
                content_base = c.base.as_deref().cloned();
            }
            (_, "content") if atomish && it.content.is_none() && c.attr("src").is_none() => {
                it.content = text_construct_take(c, true);
                content_base = c.base.as_deref().cloned();
            }
            (Ns::Xhtml, "body") | (Ns::Xhtml, "div") if it.content.is_none() => {
                it.content = Some(Body::Html(c.inner_markup())).filter(|b| !b.is_blank());
            }
            // The full item as HTML (`<body>`, Userland's `<fullitem>`).
            (_, "body") | (_, "fullitem") if rssish && it.content.is_none() => {
                it.content = text_construct(c, false);
                content_base = c.base.as_deref().cloned();
            }
            (_, "enclosure") if rssish => push_enclosure(
                &mut it.enclosures,
                enclosure(
                    c.attr("url"),
                    c.attr("type"),
                    c.attr("length"),
                    c.base.as_deref(),
                ),
            ),
            (Ns::Media, "content") | (Ns::Media, "group") => media.push(c),
            (Ns::Media, "description") | (Ns::Itunes, "summary") | (Ns::Itunes, "subtitle")
                if summary_fallback.is_none() =>
            {
                summary_fallback = text_construct(c, c.ns == Ns::Itunes);
            }
            _ => {}
        }
    }
    for m in media {
        let contents: Vec<&Element> = if m.name.eq_ignore_ascii_case("group") {
            m.elements().collect()
        } else {
            vec![m]
        };
        for c in contents {
            if c.ns != Ns::Media {
                continue;
            }
            match &*c.lname {
                "content" => push_enclosure(
                    &mut it.enclosures,
                    enclosure(
                        c.attr("url"),
                        c.attr("type"),
                        c.attr("fileSize"),
                        c.base.as_deref(),
                    ),
                ),
                "title" if title_fallback.is_none() => {
                    title_fallback = non_empty(collapse_ws(&c.text()))
                }
                "description" if summary_fallback.is_none() => {
                    summary_fallback = text_construct(c, true);
                }
                _ => {}
            }
        }
    }
    // Links inside the body resolve against the body's own xml:base.
    if it.content.is_some() && content_base.is_some() {
        it.base = content_base;
    }
    it.title = without_controls(title.or(title_fallback));
    // A CDF item's address and date are its attributes (`<ITEM HREF=… LASTMOD=…>`).
    let cdf_href = el.attr("href").and_then(|h| resolve(h, base));
    it.url = alternate
        .map(|(_, h)| h)
        .or(rss_link)
        .or(cdf_href)
        .or_else(|| {
            let (g, base) = permalink_guid?;
            resolve(&g, base.as_deref()).filter(|u| {
                let u = u.to_ascii_lowercase();
                u.starts_with("http://") || u.starts_with("https://") || Url::parse(&u).is_err()
            })
        });
    if let Some(m) = el.attr("lastmod") {
        set_once(&mut dates.updated[2], m.to_owned());
    }
    it.published = first_date(&dates.published);
    it.updated = first_date(&dates.updated);
    if it.summary.is_none() {
        it.summary = dc_description.or(rss_summary).or(summary_fallback);
    }
    if it.authors.is_empty() {
        push_unique(&mut it.authors, author_fallback);
    }
    it
}
