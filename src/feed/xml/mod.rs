//! A liberal streaming tree builder on quick-xml.
//!
//! It builds small element trees, hands every item/entry to a callback as soon as it
//! closes (so a large feed is never held as one tree), and recovers from what real feeds
//! get wrong: undeclared prefixes, HTML entities, bare `&`, mismatched or missing end tags,
//! a body cut short. What it had to repair is reported as warnings.

use std::collections::HashMap;
use std::io::BufRead;
use std::rc::Rc;

use quick_xml::Reader;
use quick_xml::events::{BytesCData, BytesStart, Event};
use url::Url;

use crate::text::unescape_attr;

use super::dtd::Entities;
pub(crate) use super::tree::{Attr, Element, Node, Ns};
#[cfg(test)]
pub(crate) use cdata::PLAIN as PLAIN_CDATA;
use cdata::SliceEvents;
pub(crate) use stretch::Template;

mod cdata;
mod stretch;

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
    el.is(&[Ns::None, Ns::Rss, Ns::Root, Ns::Other, Ns::Atom], "item")
        || el.is(&[Ns::Atom, Ns::None, Ns::Root], "entry")
}

struct Frame {
    el: Element,
    qname: Rc<str>,
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

pub(crate) struct Builder<'f> {
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
    /// Names seen so far, each made once: qualified name → (qualified, local, lowercase
    /// local). A feed repeats a few names thousands of times. foldhash, seeded per process:
    /// a few times SipHash's speed on short names.
    names: HashMap<Box<str>, Names, foldhash::fast::RandomState>,
    errors: usize,
    last_error_pos: u64,
    truncated: bool,
    /// For a builder of one stretch of items: the depth the items stand at (see
    /// [`Builder::from_template`]).
    fence: Option<usize>,
    /// Whether the run stopped at the fence.
    fenced: bool,
    fence_text: String,
}

/// A name as made once: (qualified, local, lowercase local).
type Names = (Rc<str>, Rc<str>, Rc<str>);

/// Names interned at most (a hostile document of endless distinct names allocates as
/// before past it).
const MAX_NAMES: usize = 4096;

const MAX_DEPTH: usize = 512;
const MAX_ERRORS: usize = 64;

/// Parses the UTF-8 `xml` stream, calling `on_item` for each item/entry as it closes (the
/// input is read front to back once, so a reader that frees what it has read keeps a large
/// feed out of memory).
#[cfg(test)]
pub(crate) fn parse<'f>(
    xml: impl BufRead,
    doc_base: Option<&Url>,
    on_item: &'f mut OnItem<'f>,
) -> Document {
    let mut b = Builder::new(doc_base, on_item);
    b.run(xml, 0);
    b.finish()
}

/// quick-xml's reader as every stretch of a document is read: liberal.
fn reader_of<R: BufRead>(xml: R) -> Reader<R> {
    let mut reader = Reader::from_reader(xml);
    let c = reader.config_mut();
    c.allow_dangling_amp = true;
    c.allow_unmatched_ends = true;
    c.check_end_names = false;
    c.check_comments = false;
    c.expand_empty_elements = false;
    c.trim_markup_names_in_closing_tags = true;
    reader
}

/// Where a reader stands after an error.
trait Source {
    /// Where the error was, in the reader's positions.
    fn error_position(&self) -> u64;
    /// Whether nothing is left to read.
    fn at_end(&mut self) -> bool;
}

impl<R: BufRead> Source for Reader<R> {
    fn error_position(&self) -> u64 {
        Reader::error_position(self)
    }

    fn at_end(&mut self) -> bool {
        self.get_mut().fill_buf().map_or(true, |b| b.is_empty())
    }
}

/// How a run over one stretch of a document ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The stretch was read to its end.
    End,
    /// A builder with a fence met something other than an item where items stand, at this
    /// byte of the document; nothing of it was read, and every item before it closed.
    Fence(u64),
    /// [`Builder::run_slice_to`] stopped before this byte of the document.
    Cut(u64),
}

impl<'f> Builder<'f> {
    pub(crate) fn new(doc_base: Option<&Url>, on_item: &'f mut OnItem<'f>) -> Builder<'f> {
        Builder {
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
            names: HashMap::default(),
            errors: 0,
            last_error_pos: u64::MAX,
            truncated: false,
            fence: None,
            fenced: false,
            fence_text: String::new(),
        }
    }

    /// Whether no element is open beyond the fence (a stretch of items ended between items).
    pub(crate) fn at_fence(&self) -> bool {
        self.fence == Some(self.stack.len()) && self.item_at.is_none() && self.too_deep == 0
    }

    /// The parent the items close into, as read so far.
    pub(crate) fn parent(&self) -> Option<&Element> {
        self.stack.last().map(|f| &f.el)
    }

    /// Reads the UTF-8 stream `xml`, which starts at byte `offset` of the document.
    pub(crate) fn run(&mut self, mut xml: impl BufRead, offset: u64) -> Ended {
        let mut buf = Vec::with_capacity(64 * 1024);
        let mut section = String::new();
        // Where the current reader started: each reads on after a CDATA section found here
        // (see `cdata`); after an error, quick-xml's reader reads every section itself.
        let mut base = offset;
        let mut fast = true;
        'readers: loop {
            let mut reader = reader_of(&mut xml);
            loop {
                let before = base + reader.buffer_position();
                if fast && let Some(len) = cdata::take_buffered(reader.get_mut(), &mut section) {
                    let event = Ok(Event::CData(BytesCData::new(section.as_str())));
                    if let Some(ended) = self.take(event, &mut reader, before, base) {
                        return ended;
                    }
                    base = before + len as u64;
                    continue 'readers;
                }
                buf.clear();
                let event = reader.read_event_into(&mut buf);
                fast &= event.is_ok();
                if let Some(ended) = self.take(event, &mut reader, before, base) {
                    return ended;
                }
            }
        }
    }

    /// [`Builder::run`] over a stretch held in memory: its events borrow from it (nothing
    /// is copied to be read).
    pub(crate) fn run_slice(&mut self, xml: &[u8], offset: u64) -> Ended {
        let mut reader = SliceEvents::new(xml);
        loop {
            let before = reader.position();
            let event = reader.next();
            if let Some(ended) = self.take(event, &mut reader, offset + before, offset) {
                return ended;
            }
        }
    }

    /// Takes one event read at byte `at` of the document; `Some` when the run ends.
    fn take(
        &mut self,
        event: quick_xml::Result<Event<'_>>,
        reader: &mut impl Source,
        at: u64,
        offset: u64,
    ) -> Option<Ended> {
        match event {
            Ok(Event::Start(e)) => self.start(&e, false),
            Ok(Event::Empty(e)) => self.start(&e, true),
            Ok(Event::End(e)) => self.end(e.name().into_inner()),
            Ok(Event::Text(t)) => self.fenced_text(&t.xml10_content(), true),
            Ok(Event::CData(t)) => self.fenced_text(&t.xml10_content(), false),
            Ok(Event::GeneralRef(r)) => {
                if self.at_fence() {
                    self.fenced = true;
                } else {
                    let name = r.into_inner();
                    match self.entities.expand(&name) {
                        Some(s) => self.text(&s),
                        None => self.text(&format!("&{name};")),
                    }
                }
            }
            Ok(Event::DocType(d)) => {
                if self.fence.is_some() {
                    // Its entities would be the whole document's.
                    self.fenced = true;
                    if !self.at_fence() {
                        self.repair("a DOCTYPE among the items".to_owned());
                    }
                } else {
                    self.entities.declare_from(d.as_ref())
                }
            }
            Ok(Event::Eof) => return Some(Ended::End),
            Ok(_) => {}
            Err(e) => {
                self.errors += 1;
                let pos = reader.error_position() + offset;
                self.repair(format!("malformed XML at byte {pos}: {e}"));
                let at_end = reader.at_end();
                if self.errors > MAX_ERRORS || pos == self.last_error_pos || at_end {
                    self.truncated = !at_end;
                    return Some(Ended::End);
                }
                self.last_error_pos = pos;
            }
        }
        self.fenced.then_some(Ended::Fence(at))
    }

    /// What a run gives when the document has been read: the root, and the repairs made
    /// (elements still open are closed here).
    pub(crate) fn finish(mut self) -> Document {
        if !self.stack.is_empty() {
            let open: Vec<&str> = self.stack.iter().map(|f| &*f.qname).collect();
            let msg = format!(
                "the document ended with elements still open: {}",
                open.join(" > ")
            );
            self.repair(msg);
            while !self.stack.is_empty() {
                self.close_top();
            }
        }
        Document {
            root: self.root,
            repairs: self.repairs,
            truncated: self.truncated,
        }
    }

    /// Text or CDATA: kept, unless the builder has a fence and it stands there (whitespace
    /// there is set aside for the reader of the whole; anything else stops the run).
    fn fenced_text(&mut self, s: &str, plain: bool) {
        if self.at_fence() {
            if plain && s.bytes().all(|b| b.is_ascii_whitespace()) {
                self.fence_text.push_str(s);
            } else if !s.is_empty() {
                self.fenced = true;
            }
            return;
        }
        self.text(s);
    }
}

impl Builder<'_> {
    /// Notes a repair (the first few, each once).
    fn repair(&mut self, msg: String) {
        if self.repairs.len() < 5 && !self.repairs.contains(&msg) {
            self.repairs.push(msg);
        }
    }

    /// The qualified name, local name and lowercase local name of `qname`, each made once.
    fn intern(&mut self, qname: &str) -> Names {
        if let Some(n) = self.names.get(qname) {
            return n.clone();
        }
        let (_, local) = split_qname(qname);
        let made: Names = (
            Rc::from(qname),
            Rc::from(local),
            Rc::from(local.to_ascii_lowercase().as_str()),
        );
        if self.names.len() < MAX_NAMES {
            self.names.insert(Box::from(qname), made.clone());
        }
        made
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
        let (qname, name, lname) = self.intern(e.name().into_inner());
        let ns_mark = self.scopes.len();
        let mut raw_attrs: Vec<(Rc<str>, Rc<str>, String)> = Vec::new();
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
            let (key, local, _) = self.intern(key);
            raw_attrs.push((key, local, value));
        }
        let (prefix, _) = split_qname(&qname);
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
            .map(|(key, local, value)| {
                let (p, _) = split_qname(&key);
                // Unprefixed attributes belong to no namespace.
                let ns = p.map_or(Ns::None, |p| self.lookup(p));
                Attr {
                    ns,
                    name: local,
                    value,
                }
            })
            .collect();
        let parent_base = self
            .stack
            .last()
            .and_then(|f| f.el.base.clone())
            .or_else(|| self.doc_base.clone());
        let base = match attrs.iter().find(|a| a.ns == Ns::Xml && &*a.name == "base") {
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
            name,
            lname,
            attrs,
            children: Vec::new(),
            base,
        };
        if self.item_at.is_none() && is_item(&el) {
            self.item_at = Some(self.stack.len());
        } else if self.at_fence() {
            // Not an item where items stand: the reader of the whole goes on from here.
            self.fenced = true;
            return;
        }
        self.stack.push(Frame { el, qname, ns_mark });
        if empty {
            self.close_top();
        }
    }

    fn end(&mut self, qname: &str) {
        if self.at_fence() {
            self.fenced = true;
            return;
        }
        let found = self
            .stack
            .iter()
            .rposition(|f| &*f.qname == qname)
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
                root: self.stack.first().map_or("", |f| &*f.el.name),
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
        } else if top.el.children.is_empty() {
            // Most elements hold one text and nothing else: room for exactly that.
            top.el.children = vec![Node::Text(s.to_owned())];
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
