//! A liberal streaming tree builder on quick-xml.
//!
//! It builds small element trees, hands every item/entry to a callback as soon as it
//! closes (so a large feed is never held as one tree), and recovers from what real feeds
//! get wrong: undeclared prefixes, HTML entities, bare `&`, mismatched or missing end tags,
//! a body cut short. What it had to repair is reported as warnings.

use std::io::BufRead;
use std::rc::Rc;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use url::Url;

use crate::text::{resolve_entity, unescape_attr};

/// The namespaces that carry feed content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ns {
    /// No namespace (plain RSS 0.9x/2.0, or an Atom feed that forgot xmlns).
    None,
    /// RSS 0.90, RSS 1.0 and the old Userland / Harvard RSS 2.0 namespaces.
    Rss,
    /// Atom 1.0 and Atom 0.3.
    Atom,
    /// RDF syntax (`rdf:RDF`, `rdf:about`).
    Rdf,
    /// `content:encoded`.
    Content,
    /// Dublin Core elements.
    Dc,
    /// Dublin Core terms.
    Dcterms,
    /// Media RSS.
    Media,
    /// iTunes podcast tags.
    Itunes,
    /// The RSS 1.0 syndication module (`sy:updatePeriod`, `sy:updateFrequency`).
    Sy,
    /// XHTML (inline Atom content).
    Xhtml,
    /// The `xml:` prefix.
    Xml,
    /// The root element's own namespace when it is none of the above (RSS under an unknown
    /// URI, Atom under a draft's): the feed's vocabulary all the same.
    Root,
    /// Anything else.
    Other,
}

impl Ns {
    fn from_uri(uri: &str) -> Ns {
        let u = uri.trim().trim_end_matches(['/', '#']).to_ascii_lowercase();
        let u = u
            .strip_prefix("http://")
            .or_else(|| u.strip_prefix("https://"))
            .unwrap_or(&u);
        if u.starts_with("purl.org/atom/ns") || u.starts_with("www.w3.org/2005/atom") {
            // Atom 0.3 and the pre-1.0 drafts (`…/ns#draft-ietf-atompub-format-08`).
            return Ns::Atom;
        }
        match u {
            "purl.org/rss/1.0" | "my.netscape.com/rdf/simple/0.9" => Ns::Rss,
            "backend.userland.com/rss2" | "backend.userland.com/rss" => Ns::Rss,
            "blogs.law.harvard.edu/tech/rss" => Ns::Rss,
            "www.w3.org/1999/02/22-rdf-syntax-ns" => Ns::Rdf,
            "purl.org/rss/1.0/modules/content" => Ns::Content,
            "purl.org/dc/elements/1.1" => Ns::Dc,
            "purl.org/dc/terms" => Ns::Dcterms,
            "search.yahoo.com/mrss" | "video.search.yahoo.com/mrss" => Ns::Media,
            "www.itunes.com/dtds/podcast-1.0.dtd" => Ns::Itunes,
            "purl.org/rss/1.0/modules/syndication" => Ns::Sy,
            "www.w3.org/1999/xhtml" => Ns::Xhtml,
            "www.w3.org/xml/1998/namespace" => Ns::Xml,
            _ => Ns::Other,
        }
    }

    /// The conventional namespace of an undeclared prefix.
    fn from_prefix(prefix: &str) -> Ns {
        match prefix.to_ascii_lowercase().as_str() {
            "atom" | "atom03" | "atom10" => Ns::Atom,
            "rdf" => Ns::Rdf,
            "rss" => Ns::Rss,
            "content" => Ns::Content,
            "dc" => Ns::Dc,
            "dcterms" => Ns::Dcterms,
            "media" => Ns::Media,
            "itunes" => Ns::Itunes,
            "sy" => Ns::Sy,
            "xhtml" | "html" => Ns::Xhtml,
            "xml" => Ns::Xml,
            _ => Ns::Other,
        }
    }
}

/// An attribute with its namespace classified.
#[derive(Debug, Clone)]
pub(crate) struct Attr {
    pub ns: Ns,
    pub name: String,
    pub value: String,
}

/// A child of an element.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Elem(Element),
    Text(String),
}

/// An element with its children.
#[derive(Debug, Clone)]
pub(crate) struct Element {
    pub ns: Ns,
    /// Local name, as written.
    pub name: String,
    pub attrs: Vec<Attr>,
    pub children: Vec<Node>,
    /// The effective `xml:base` here (resolved), if any.
    pub base: Option<Rc<Url>>,
}

impl Element {
    /// Whether this element is `name` (case-insensitive) in one of `nss`.
    pub fn is(&self, nss: &[Ns], name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name) && nss.contains(&self.ns)
    }

    /// The first attribute called `name` (any namespace unless given).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(name) && a.ns != Ns::Xml)
            .map(|a| a.value.as_str())
    }

    /// The attribute `name` in namespace `ns`.
    pub fn attr_ns(&self, ns: Ns, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|a| a.ns == ns && a.name.eq_ignore_ascii_case(name))
            .map(|a| a.value.as_str())
    }

    /// Child elements.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|c| match c {
            Node::Elem(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// The element's own text, without its child elements' (a `<category>` with markup
    /// inside keeps only its words).
    pub fn own_text(&self) -> String {
        let mut out = String::new();
        for c in &self.children {
            if let Node::Text(t) = c {
                out.push_str(t);
            }
        }
        out
    }

    /// Whether any child is an element.
    pub fn has_element_children(&self) -> bool {
        self.elements().next().is_some()
    }

    /// All text below this element, concatenated.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.collect_text(&mut out);
        out
    }

    fn collect_text(&self, out: &mut String) {
        for c in &self.children {
            match c {
                Node::Text(t) => out.push_str(t),
                Node::Elem(e) => e.collect_text(out),
            }
        }
    }

    /// The children re-serialised as markup (text escaped).
    pub fn inner_markup(&self) -> String {
        let mut out = String::new();
        for c in &self.children {
            write_node(c, &mut out);
        }
        out
    }
}

fn write_node(node: &Node, out: &mut String) {
    match node {
        Node::Text(t) => crate::text::escape_html(t, out),
        Node::Elem(e) => {
            out.push('<');
            out.push_str(&e.name);
            for a in &e.attrs {
                if a.name.eq_ignore_ascii_case("xmlns") || a.ns == Ns::Xml {
                    continue;
                }
                out.push(' ');
                out.push_str(&a.name);
                out.push_str("=\"");
                crate::text::escape_html(&a.value, out);
                out.push('"');
            }
            if e.children.is_empty() && crate::html::is_void(&e.name.to_ascii_lowercase()) {
                out.push_str(" />");
                return;
            }
            out.push('>');
            for c in &e.children {
                write_node(c, out);
            }
            out.push_str("</");
            out.push_str(&e.name);
            out.push('>');
        }
    }
}

/// What a parse produced besides the items handed to the callback.
#[derive(Debug)]
pub(crate) struct Document {
    /// The root element, without the items.
    pub root: Option<Element>,
    /// Repairs made, for the feed's warnings.
    pub repairs: Vec<String>,
    /// Whether reading stopped early on an error it could not get past.
    pub truncated: bool,
}

/// Whether `el` (just opened) is an item or entry.
pub(crate) fn is_item(el: &Element) -> bool {
    el.is(&[Ns::None, Ns::Rss, Ns::Root, Ns::Other], "item")
        || el.is(&[Ns::Atom, Ns::None, Ns::Root], "entry")
}

/// Longest replacement text of one entity declared in a document's DTD.
const MAX_ENTITY_BYTES: usize = 4 * 1024;
/// Most replacement text all of a document's entity references may add.
const MAX_EXPANSION_BYTES: usize = 1 << 20;

/// The general entities a document declares in its internal DTD subset. External
/// entities (`SYSTEM`, `PUBLIC`) are never read; every expansion counts against a
/// per-entity and a per-document cap, so nested declarations (billion laughs) cost nothing.
#[derive(Debug, Default)]
struct Entities {
    declared: std::collections::HashMap<String, String>,
    spent: usize,
}

impl Entities {
    /// The replacement text of `&name;`: the five XML entities, then the document's own,
    /// then HTML's; `None` when unknown or over the document's budget.
    fn expand(&mut self, name: &str) -> Option<std::borrow::Cow<'static, str>> {
        if name.starts_with('#') || matches!(name, "amp" | "lt" | "gt" | "quot" | "apos") {
            return resolve_entity(name);
        }
        if let Some(v) = self.declared.get(name) {
            if self.spent + v.len() > MAX_EXPANSION_BYTES {
                return None;
            }
            self.spent += v.len();
            return Some(std::borrow::Cow::Owned(v.clone()));
        }
        resolve_entity(name)
    }

    /// Reads `<!ENTITY name "value">` declarations from a DOCTYPE's text.
    fn declare_from(&mut self, doctype: &str) {
        let mut rest = doctype;
        while let Some(at) = rest.find("<!ENTITY") {
            rest = &rest[at + 8..];
            let decl = rest.trim_start();
            // Parameter entities (`%`) are for the DTD itself.
            if decl.starts_with('%') {
                continue;
            }
            let name_end = decl.find(|c: char| c.is_whitespace()).unwrap_or(decl.len());
            let name = &decl[..name_end];
            let after = decl[name_end..].trim_start();
            let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue; // SYSTEM or PUBLIC: external, never fetched
            };
            let Some(len) = after[1..].find(quote) else {
                break;
            };
            let raw = &after[1..1 + len];
            if name.is_empty() || self.declared.contains_key(name) {
                continue;
            }
            if let Some(value) = self.replacement(raw) {
                self.declared.insert(name.to_owned(), value);
            }
        }
    }

    /// An entity value with its references expanded, or `None` when it grows past the cap.
    fn replacement(&mut self, raw: &str) -> Option<String> {
        let mut out = String::new();
        let mut rest = raw;
        while let Some(amp) = rest.find('&') {
            out.push_str(&rest[..amp]);
            let after = &rest[amp + 1..];
            match after.find(';') {
                Some(end) if end > 0 && !after[..end].contains(['&', ' ']) => {
                    let name = &after[..end];
                    match self.expand(name) {
                        Some(v) => out.push_str(&v),
                        None => {
                            out.push('&');
                            out.push_str(name);
                            out.push(';');
                        }
                    }
                    rest = &after[end + 1..];
                }
                _ => {
                    out.push('&');
                    rest = after;
                }
            }
            if out.len() > MAX_ENTITY_BYTES {
                return None;
            }
        }
        out.push_str(rest);
        (out.len() <= MAX_ENTITY_BYTES).then_some(out)
    }
}

struct Frame {
    el: Element,
    qname: String,
    ns_mark: usize,
}

/// Where an item closed: the root element's local name, and the item's parent (the
/// channel, or the Atom feed) as read so far.
pub(crate) struct ItemContext<'a> {
    pub root: &'a str,
    pub parent: Option<&'a Element>,
}

/// Called with each item or entry as it closes.
pub(crate) type OnItem<'f> = dyn FnMut(Element, &ItemContext<'_>) + 'f;

struct Builder<'f> {
    stack: Vec<Frame>,
    /// Declared prefixes: (prefix, namespace, URI).
    scopes: Vec<(String, Ns, String)>,
    /// The root element's namespace URI, when it is not a known one.
    root_uri: Option<String>,
    entities: Entities,
    root: Option<Element>,
    item_at: Option<usize>,
    doc_base: Option<Rc<Url>>,
    on_item: &'f mut OnItem<'f>,
    repairs: Vec<String>,
    too_deep: usize,
}

const MAX_DEPTH: usize = 512;
const MAX_ERRORS: usize = 64;

/// Parses the UTF-8 `xml` stream, calling `on_item` for each item/entry as it closes (the
/// input is read front to back once, so a reader that frees what it has read keeps a large
/// feed out of memory).
pub(crate) fn parse<'f>(
    xml: impl BufRead,
    doc_base: Option<&Url>,
    on_item: &'f mut OnItem<'f>,
) -> Document {
    let mut reader = Reader::from_reader(xml);
    {
        let c = reader.config_mut();
        c.allow_dangling_amp = true;
        c.allow_unmatched_ends = true;
        c.check_end_names = false;
        c.check_comments = false;
        c.expand_empty_elements = false;
        c.trim_markup_names_in_closing_tags = true;
    }
    let mut b = Builder {
        stack: Vec::new(),
        scopes: Vec::new(),
        root_uri: None,
        entities: Entities::default(),
        root: None,
        item_at: None,
        doc_base: doc_base.cloned().map(Rc::new),
        on_item,
        repairs: Vec::new(),
        too_deep: 0,
    };
    let mut errors = 0usize;
    let mut truncated = false;
    let mut last_error_pos = u64::MAX;
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => b.start(&e, false),
            Ok(Event::Empty(e)) => b.start(&e, true),
            Ok(Event::End(e)) => b.end(e.name().into_inner()),
            Ok(Event::Text(t)) => b.text(&t.xml10_content()),
            Ok(Event::CData(t)) => b.text(&t.xml10_content()),
            Ok(Event::GeneralRef(r)) => {
                let name = r.into_inner();
                match b.entities.expand(&name) {
                    Some(s) => b.text(&s),
                    None => b.text(&format!("&{name};")),
                }
            }
            Ok(Event::DocType(d)) => b.entities.declare_from(d.as_ref()),
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => {
                errors += 1;
                let pos = reader.error_position();
                b.repair(format!("malformed XML at byte {pos}: {e}"));
                let at_end = reader.get_mut().fill_buf().map_or(true, |b| b.is_empty());
                if errors > MAX_ERRORS || pos == last_error_pos || at_end {
                    truncated = !at_end;
                    break;
                }
                last_error_pos = pos;
            }
        }
    }
    if !b.stack.is_empty() {
        let open: Vec<&str> = b.stack.iter().map(|f| f.qname.as_str()).collect();
        let msg = format!(
            "the document ended with elements still open: {}",
            open.join(" > ")
        );
        b.repair(msg);
        while !b.stack.is_empty() {
            b.close_top();
        }
    }
    Document {
        root: b.root,
        repairs: b.repairs,
        truncated,
    }
}

impl Builder<'_> {
    /// Notes a repair (the first few, each once).
    fn repair(&mut self, msg: String) {
        if self.repairs.len() < 5 && !self.repairs.contains(&msg) {
            self.repairs.push(msg);
        }
    }

    fn lookup(&self, prefix: &str) -> Ns {
        if prefix == "xml" {
            return Ns::Xml;
        }
        match self.scopes.iter().rev().find(|(p, _, _)| p == prefix) {
            Some((_, Ns::Other, uri)) if self.root_uri.as_deref() == Some(uri.as_str()) => Ns::Root,
            Some((_, ns, _)) => *ns,
            None if prefix.is_empty() => Ns::None,
            None => Ns::from_prefix(prefix),
        }
    }

    fn start(&mut self, e: &BytesStart<'_>, empty: bool) {
        if self.stack.len() >= MAX_DEPTH {
            if self.too_deep == 0 {
                self.repair(format!(
                    "elements nested deeper than {MAX_DEPTH} were dropped"
                ));
            }
            if !empty {
                self.too_deep += 1;
            }
            return;
        }
        let qname = e.name().into_inner().to_owned();
        let ns_mark = self.scopes.len();
        let mut raw_attrs: Vec<(String, String)> = Vec::new();
        let mut attrs_iter = e.html_attributes();
        attrs_iter.with_checks(false);
        for a in attrs_iter.flatten() {
            let key = a.key.into_inner();
            let value = unescape_attr(&a.value).into_owned();
            if key == "xmlns" {
                self.scopes
                    .push((String::new(), Ns::from_uri(&value), value.clone()));
            } else if let Some(p) = key.strip_prefix("xmlns:") {
                self.scopes
                    .push((p.to_owned(), Ns::from_uri(&value), value.clone()));
            }
            raw_attrs.push((key.to_owned(), value));
        }
        let (prefix, local) = split_qname(&qname);
        if self.root.is_none() && self.stack.is_empty() {
            // The root's own namespace, unknown as it may be, is the feed's vocabulary.
            let prefix = prefix.unwrap_or("");
            self.root_uri = self
                .scopes
                .iter()
                .rev()
                .find(|(p, _, _)| p == prefix)
                .filter(|(_, ns, _)| *ns == Ns::Other)
                .map(|(_, _, uri)| uri.clone());
        }
        let ns = self.lookup(prefix.unwrap_or(""));
        let attrs: Vec<Attr> = raw_attrs
            .into_iter()
            .map(|(key, value)| {
                let (p, l) = split_qname(&key);
                // Unprefixed attributes belong to no namespace.
                let ns = p.map_or(Ns::None, |p| self.lookup(p));
                Attr {
                    ns,
                    name: l.to_owned(),
                    value,
                }
            })
            .collect();
        let parent_base = self
            .stack
            .last()
            .and_then(|f| f.el.base.clone())
            .or_else(|| self.doc_base.clone());
        let base = match attrs.iter().find(|a| a.ns == Ns::Xml && a.name == "base") {
            Some(a) => {
                let joined = match &parent_base {
                    Some(pb) => pb.join(a.value.trim()).ok(),
                    None => Url::parse(a.value.trim()).ok(),
                };
                joined.map(Rc::new).or(parent_base)
            }
            None => parent_base,
        };
        let el = Element {
            ns,
            name: local.to_owned(),
            attrs,
            children: Vec::new(),
            base,
        };
        if self.item_at.is_none() && is_item(&el) {
            self.item_at = Some(self.stack.len());
        }
        self.stack.push(Frame { el, qname, ns_mark });
        if empty {
            self.close_top();
        }
    }

    fn end(&mut self, qname: &str) {
        let found = self
            .stack
            .iter()
            .rposition(|f| f.qname == qname)
            .or_else(|| {
                self.stack
                    .iter()
                    .rposition(|f| f.qname.eq_ignore_ascii_case(qname))
            });
        match found {
            Some(i) => {
                if i + 1 < self.stack.len() {
                    let msg = format!("</{qname}> closed unclosed <{}>", self.stack[i + 1].qname);
                    self.repair(msg);
                }
                while self.stack.len() > i {
                    self.close_top();
                }
            }
            // The end tag of an element dropped for depth.
            None if self.too_deep > 0 => self.too_deep -= 1,
            None => self.repair(format!("ignored a stray </{qname}>")),
        }
    }

    fn close_top(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        self.scopes.truncate(frame.ns_mark);
        let depth = self.stack.len();
        if self.item_at == Some(depth) {
            self.item_at = None;
            let cx = ItemContext {
                root: self.stack.first().map_or("", |f| f.el.name.as_str()),
                parent: self.stack.last().map(|f| &f.el),
            };
            (self.on_item)(frame.el, &cx);
            return;
        }
        match self.stack.last_mut() {
            Some(parent) => parent.el.children.push(Node::Elem(frame.el)),
            None => {
                if self.root.is_none() {
                    self.root = Some(frame.el);
                } else if let Some(root) = &mut self.root {
                    // A second top-level element: keep its content reachable.
                    root.children.push(Node::Elem(frame.el));
                }
            }
        }
    }

    fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let Some(top) = self.stack.last_mut() else {
            return;
        };
        if let Some(Node::Text(t)) = top.el.children.last_mut() {
            t.push_str(s);
        } else {
            top.el.children.push(Node::Text(s.to_owned()));
        }
    }
}

fn split_qname(q: &str) -> (Option<&str>, &str) {
    match q.split_once(':') {
        Some((p, l)) if !p.is_empty() && !l.is_empty() => (Some(p), l),
        _ => (None, q),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(xml: &str) -> (Document, Vec<Element>) {
        let mut items = Vec::new();
        let doc = parse(xml.as_bytes(), None, &mut |e, _| items.push(e));
        (doc, items)
    }

    #[test]
    fn items_are_handed_out_and_the_channel_is_kept() {
        let (doc, items) = parse_all(
            r#"<rss><channel><title>T</title><item><title>A</title></item><item><title>B</title></item></channel></rss>"#,
        );
        assert_eq!(items.len(), 2);
        let root = doc.root.unwrap();
        let channel = root.elements().next().unwrap();
        assert_eq!(channel.elements().count(), 1);
        assert!(doc.repairs.is_empty());
    }

    #[test]
    fn namespaces_resolve_declared_and_undeclared_prefixes() {
        let (_, items) = parse_all(
            r#"<rss xmlns:c="http://purl.org/rss/1.0/modules/content/"><channel><item><c:encoded>x</c:encoded><dc:creator>Me</dc:creator></item></channel></rss>"#,
        );
        let kids: Vec<_> = items[0]
            .elements()
            .map(|e| (e.ns, e.name.clone()))
            .collect();
        assert_eq!(
            kids,
            vec![(Ns::Content, "encoded".into()), (Ns::Dc, "creator".into())]
        );
    }

    #[test]
    fn html_entities_and_bare_ampersands_survive() {
        let (_, items) =
            parse_all("<rss><item><title>AT&T &mdash; caf&eacute; &bogus;</title></item></rss>");
        assert_eq!(
            items[0].elements().next().unwrap().text(),
            "AT&T \u{2014} café &bogus;"
        );
    }

    #[test]
    fn mismatched_and_missing_end_tags_are_repaired() {
        let (doc, items) =
            parse_all("<rss><channel><title>T</title><item><title>A</item><item><title>B</title>");
        assert_eq!(items.len(), 2);
        assert!(!doc.repairs.is_empty());
        assert_eq!(items[1].elements().next().unwrap().text(), "B");
    }

    #[test]
    fn xml_base_resolves_down_the_tree() {
        let base = Url::parse("http://example.com/feeds/rss.xml").unwrap();
        let mut items = Vec::new();
        parse(
            r#"<feed xml:base="/blog/"><entry xml:base="2026/"><id>x</id></entry></feed>"#
                .as_bytes(),
            Some(&base),
            &mut |e, _| items.push(e),
        );
        assert_eq!(
            items[0].base.as_deref().map(Url::as_str),
            Some("http://example.com/blog/2026/")
        );
    }
}
