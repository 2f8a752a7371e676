//! Stretches of a document's items read by builders of their own: the [`Template`] a
//! builder of the head makes, the builders started from it (with a fence where the items
//! stand), and the one reader's way back to where they started.

use std::rc::Rc;

use url::Url;

use super::cdata::SliceEvents;
use super::{Builder, Element, Ended, Frame, Ns, OnItem};

/// What a builder for one stretch of items starts from: the elements open around the
/// items and the prefixes declared there (the builder that read the document's head made
/// it; plain data, so it crosses threads).
#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// Each open element: qualified name, namespace, local name, lowercase local name,
    /// effective base.
    frames: Vec<(String, Ns, String, String, Option<Url>)>,
    scopes: Vec<(String, Ns, String)>,
    root_uri: Option<String>,
    doc_base: Option<Url>,
}

impl Template {
    /// The local name of the document's root element.
    pub(crate) fn root_name(&self) -> &str {
        self.frames.first().map_or("", |f| f.2.as_str())
    }
}

impl<'f> Builder<'f> {
    /// A builder for a stretch of items that stand where `t` was made: it stops (and says
    /// where) at anything else at that level.
    pub(crate) fn from_template(t: &Template, on_item: &'f mut OnItem<'f>) -> Builder<'f> {
        let mut b = Builder::new(None, on_item);
        b.doc_base = t.doc_base.clone().map(Rc::new);
        b.scopes = t.scopes.clone();
        b.root_uri = t.root_uri.clone();
        for (i, (qname, ns, name, lname, base)) in t.frames.iter().enumerate() {
            b.stack.push(Frame {
                el: Element {
                    ns: *ns,
                    name: Rc::from(name.as_str()),
                    lname: Rc::from(lname.as_str()),
                    attrs: Vec::new(),
                    children: Vec::new(),
                    base: base.clone().map(Rc::new),
                },
                qname: Rc::from(qname.as_str()),
                // The template's prefixes all belong to the frames; none is ever popped.
                ns_mark: if i == 0 { 0 } else { t.scopes.len() },
            });
        }
        b.fence = Some(t.frames.len());
        b
    }

    /// Where this builder stands, as a [`Template`] for builders of the items that follow:
    /// only when the read so far was clean (no repair, no error), no item is open, elements
    /// are open around where the items go, and the document declared no entities (their
    /// expansion budget is the document's, not a stretch's).
    pub(crate) fn template(&self) -> Option<Template> {
        let clean = self.repairs.is_empty() && self.errors == 0 && !self.truncated;
        if !clean || self.item_at.is_some() || self.too_deep > 0 || self.stack.is_empty() {
            return None;
        }
        if !self.entities.is_empty() {
            return None;
        }
        Some(Template {
            frames: self
                .stack
                .iter()
                .map(|f| {
                    (
                        f.qname.to_string(),
                        f.el.ns,
                        f.el.name.to_string(),
                        f.el.lname.to_string(),
                        f.el.base.as_deref().cloned(),
                    )
                })
                .collect(),
            scopes: self.scopes.clone(),
            root_uri: self.root_uri.clone(),
            doc_base: self.doc_base.as_deref().cloned(),
        })
    }

    /// Whether everything read so far was read without a repair or an error.
    pub(crate) fn clean(&self) -> bool {
        self.repairs.is_empty() && self.errors == 0 && !self.truncated
    }

    /// The whitespace read between items at the fence (the document's text there, which a
    /// single reader would have kept in the items' parent).
    pub(crate) fn take_fence_text(&mut self) -> String {
        std::mem::take(&mut self.fence_text)
    }

    /// Text read where the items stand (what a stretch read elsewhere found there).
    pub(crate) fn add_text(&mut self, s: &str) {
        self.text(s);
    }

    /// [`Builder::run_slice`] that stops before the first of `cuts` (places in the
    /// document, ascending) it reaches between two events with nothing open but what
    /// `template` holds open, as `template` holds it, and no error read (from there,
    /// stretches read from the template read on as this builder would).
    pub(crate) fn run_slice_to(
        &mut self,
        xml: &[u8],
        offset: u64,
        cuts: &[u64],
        template: &Template,
    ) -> Ended {
        let mut reader = SliceEvents::new(xml);
        let mut next = 0;
        loop {
            let before = reader.position();
            let at = offset + before;
            while cuts.get(next).is_some_and(|c| *c < at) {
                next += 1;
            }
            if cuts.get(next) == Some(&at) && self.stands_as(template) {
                return Ended::Cut(at);
            }
            let event = reader.next();
            if let Some(ended) = self.take(event, &mut reader, at, offset) {
                return ended;
            }
        }
    }

    /// Whether exactly what `template` holds open is open here, as it holds it, and no
    /// entity was declared since.
    fn stands_as(&self, template: &Template) -> bool {
        // After an error the reader may read nothing more, wherever it stands.
        self.errors == 0
            && self.item_at.is_none()
            && self.too_deep == 0
            && self.entities.is_empty()
            && self.scopes == template.scopes
            && self.root_uri == template.root_uri
            && self.stack.len() == template.frames.len()
            && self
                .stack
                .iter()
                .zip(&template.frames)
                .all(|(f, (qname, ns, _, _, base))| {
                    &*f.qname == qname.as_str()
                        && f.el.ns == *ns
                        && f.el.base.as_deref() == base.as_ref()
                })
    }
}
