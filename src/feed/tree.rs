//! The small element trees the XML reader builds: classified namespaces, attributes,
//! children, and the text and markup read back out of them.

use std::rc::Rc;

use url::Url;

use crate::text::escape_html;

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
    /// Podcasting 2.0 (`podcast:transcript`, …).
    Podcast,
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
    pub(super) fn from_uri(uri: &str) -> Ns {
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
            "podcastindex.org/namespace/1.0"
            | "github.com/podcastindex-org/podcast-namespace/blob/main/docs/1.0.md" => Ns::Podcast,
            "purl.org/rss/1.0/modules/syndication" => Ns::Sy,
            "www.w3.org/1999/xhtml" => Ns::Xhtml,
            "www.w3.org/xml/1998/namespace" => Ns::Xml,
            _ => Ns::Other,
        }
    }

    /// The conventional namespace of an undeclared prefix.
    pub(super) fn from_prefix(prefix: &str) -> Ns {
        match prefix.to_ascii_lowercase().as_str() {
            "atom" | "atom03" | "atom10" => Ns::Atom,
            "rdf" => Ns::Rdf,
            "rss" => Ns::Rss,
            "content" => Ns::Content,
            "dc" => Ns::Dc,
            "dcterms" => Ns::Dcterms,
            "media" => Ns::Media,
            "itunes" => Ns::Itunes,
            "podcast" => Ns::Podcast,
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
    /// The local name (shared by every attribute of that name in a document).
    pub name: Rc<str>,
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
    /// Local name, as written (shared by every element of that name in a document).
    pub name: Rc<str>,
    /// The local name lowercased (what names are matched on).
    pub lname: Rc<str>,
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

    /// The element's text, moved out when it is one text child (a body, read once); else a
    /// copy of all the text below it.
    pub fn take_text(&mut self) -> String {
        match self.children.as_mut_slice() {
            [Node::Text(t)] => std::mem::take(t),
            _ => self.text(),
        }
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
        Node::Text(t) => escape_html(t, out),
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
                escape_html(&a.value, out);
                out.push('"');
            }
            if e.children.is_empty() && crate::html::is_void(&e.lname) {
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
