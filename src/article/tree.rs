//! A page's tree, built once for the extractor that reads it as a tree (dom_smoothie reads
//! a `dom_query` document built by html5ever). The parser is fed the page in pieces and the
//! call's [`Stop`] is checked between them, so building the tree of a large page is cut like
//! any other stage; and the parser's error messages are not kept (`dom_query` keeps each one:
//! a page of millions of stray `<` would hold millions of them).

use std::borrow::Cow;
use std::cell::Ref;

use dom_query::{Document, NodeId};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeBuilderOpts, TreeSink};
use html5ever::{Attribute, ParseOpts, QualName};

use crate::stop::{Stop, Stopped};

/// How much of the page the parser reads between two checks of the stop: well under a
/// millisecond of its work on the slowest text (character references).
const PIECE: usize = 16 * 1024;

/// The page's tree, built from `html` (within the bounds of [`crate::shape`]) as
/// `dom_query::Document::from` builds it, the stop checked every [`PIECE`] bytes.
pub(crate) fn build(html: &str, stop: &Stop) -> Result<Document, Stopped> {
    let opts = ParseOpts {
        tree_builder: TreeBuilderOpts {
            scripting_enabled: false,
            ..TreeBuilderOpts::default()
        },
        ..ParseOpts::default()
    };
    let mut parser = html5ever::parse_document(Quiet(Document::default()), opts);
    let mut rest = html;
    while !rest.is_empty() {
        let mut end = rest.len().min(PIECE);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, more) = rest.split_at(end);
        parser.process(StrTendril::from_slice(piece));
        rest = more;
        stop.check()?;
    }
    Ok(parser.finish())
}

/// `dom_query`'s tree sink, less the parse errors it would keep.
struct Quiet(Document);

impl TreeSink for Quiet {
    type Handle = NodeId;
    type Output = Document;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Document {
        self.0
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> NodeId {
        self.0.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.0.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.0.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.0.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.0.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.0.append(parent, child)
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        self.0
            .append_based_on_parent_node(element, prev_element, child)
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.0
            .append_doctype_to_document(name, public_id, system_id)
    }

    fn mark_script_already_started(&self, node: &NodeId) {
        self.0.mark_script_already_started(node)
    }

    fn pop(&self, node: &NodeId) {
        self.0.pop(node)
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.0.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.0.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.0.set_quirks_mode(mode)
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        self.0.append_before_sibling(sibling, new_node)
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.0.add_attrs_if_missing(target, attrs)
    }

    fn associate_with_form(
        &self,
        target: &NodeId,
        form: &NodeId,
        nodes: (&NodeId, Option<&NodeId>),
    ) {
        self.0.associate_with_form(target, form, nodes)
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.0.remove_from_parent(target)
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.0.reparent_children(node, new_parent)
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &NodeId) -> bool {
        self.0.is_mathml_annotation_xml_integration_point(handle)
    }

    fn set_current_line(&self, line_number: u64) {
        self.0.set_current_line(line_number)
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &NodeId) -> bool {
        self.0.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(
        &self,
        location: &NodeId,
        template: &NodeId,
        attrs: &[Attribute],
    ) -> bool {
        self.0.attach_declarative_shadow(location, template, attrs)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &NodeId) {
        self.0.maybe_clone_an_option_into_selectedcontent(option)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_built_in_pieces_is_the_tree_built_at_once() {
        // Pieces part a multi-byte character, a tag, an entity and a comment somewhere.
        let para = "<p class=\"x\">Ünïcödé — &amp; <b>bold</b><!-- c --> text</p>";
        let html = format!(
            "<!doctype html><html lang=en><head><title>T</title></head><body>{}<table><td>cell</table></body></html>",
            para.repeat(5_000)
        );
        assert!(html.len() > 10 * PIECE);
        let built = build(&html, &Stop::never()).unwrap();
        assert_eq!(built.html(), Document::from(html.as_str()).html());
        assert!(built.errors.borrow().is_empty());
    }

    #[test]
    fn building_stops_when_told() {
        let (stop, guard) = Stop::new();
        drop(guard);
        let html = "<p>words</p>".repeat(10_000);
        assert!(matches!(build(&html, &stop), Err(Stopped::Cancelled)));
    }
}
