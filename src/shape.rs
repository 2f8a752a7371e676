//! Bounds on a page's shape, enforced before any tree is built from it.
//!
//! An HTML tree builder walks its stack of open elements for many tags, and the extractors
//! walk trees recursively: a page of 30,000 nested `<span>` overflowed a thread's stack (no
//! `catch_unwind` sees that: the process aborts), 100,000 nested `<div>` kept a parser busy
//! for a minute. So a page reaches the extractors only once its shape is known to be within
//! [`MAX_DEPTH`] levels of nesting, [`MAX_ELEMENTS`] elements, [`MAX_ATTRIBUTE_BYTES`] of
//! attribute text and [`MAX_ATTRIBUTES`] attributes per tag; one linear pass over the tokens decides that ([`within_bounds`]),
//! counting so that it never undercounts what a browser's tree builder would build (it
//! closes an element only where any tree builder would). A page past a bound is written again
//! ([`rewrite`]): strictly nested, every element closed explicitly, the tags past the bounds
//! left out and their text kept, comments dropped. Both passes check the call's [`Stop`] as
//! they go.

use std::borrow::Cow;

use crate::html::{Token, Tokenizer};
use crate::stop::{Stop, Stopped};

/// The deepest nesting of elements extraction reads; the tags of deeper elements are left
/// out (their text is kept). Pages people read nest 20–60 deep; the extractors' work grows
/// with elements × depth.
pub(crate) const MAX_DEPTH: usize = 128;

/// The most elements extraction reads; the tags of later elements are left out (their text
/// is kept). A long news page has a few thousand.
pub(crate) const MAX_ELEMENTS: usize = 50_000;

/// The longest run of text between two tags extraction reads in one piece: a longer one is
/// split (with `<wbr>`, at a space where there is one), since writing a text node out again
/// costs the HTML serializer the extractors use time in its length times the characters it
/// escapes. A paragraph runs a few thousand bytes.
pub(crate) const MAX_TEXT_RUN: usize = 16 * 1024;

/// The most attribute text one tag may carry as written; in a rewritten page, a longer
/// attribute is left out.
pub(crate) const MAX_ATTRIBUTE_BYTES: usize = 256 * 1024;

/// The most attributes one tag may carry; in a rewritten page, those past it are left out.
/// A tree builder checks each attribute against every earlier one of its tag (a tag of
/// 30,000 short attributes, a 224 KB page, took two seconds); the pages of the corpora carry
/// at most 70.
pub(crate) const MAX_ATTRIBUTES: usize = 128;

/// Elements left out past the bounds are still tracked (so their end tags close nothing
/// else) up to this many open at once.
const MAX_TRACKED: usize = 65_536;

/// How many tokens pass between two checks of the call's [`Stop`].
const CHECK_EVERY: usize = 4096;

/// The most text nesting cost a page reaches the extractors with: the sum over its text of
/// how deep each byte sits. Readability's scoring builds the text of each candidate and of
/// its ancestors, work that grows with it (19 MB of text under 127 nested `<div>`, within
/// every other bound, cost 2.5 billion and took two seconds of CPU time, most of it
/// allocating and freeing each ancestor's copy of the text). A page past it is written again
/// less deep, so that its text fits: up to 2 MiB of text may sit at any depth.
pub(crate) const MAX_TEXT_COST: u64 = 256 << 20;

/// However much text a page holds, a rewrite leaves it this deep at least.
const MIN_TEXT_DEPTH: usize = 4;

/// The bounds a page is read within.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// [`MAX_DEPTH`].
    pub depth: usize,
    /// [`MAX_ELEMENTS`].
    pub elements: usize,
    /// [`MAX_ATTRIBUTE_BYTES`].
    pub attribute_bytes: usize,
    /// [`MAX_TEXT_COST`].
    pub text_cost: u64,
}

/// The bounds every page is read within.
pub(crate) const LIMITS: Limits = Limits {
    depth: MAX_DEPTH,
    elements: MAX_ELEMENTS,
    attribute_bytes: MAX_ATTRIBUTE_BYTES,
    text_cost: MAX_TEXT_COST,
};

/// `html` as the extractors may read it: itself when its shape is within the bounds, else
/// written again within them.
pub(crate) fn bounded<'a>(html: &'a str, stop: &Stop) -> Result<Cow<'a, str>, Stopped> {
    bounded_by(html, &LIMITS, stop)
}

/// [`bounded`] within `limits`.
pub(crate) fn bounded_by<'a>(
    html: &'a str,
    limits: &Limits,
    stop: &Stop,
) -> Result<Cow<'a, str>, Stopped> {
    measured_by(html, limits, stop).map(|(page, _)| page)
}

/// [`bounded`], and the page's nesting cost as it reaches the extractors: the sum over its
/// elements of how deep each sits (what work that walks or copies every element's
/// ancestors, or every subtree, grows with).
pub(crate) fn measured<'a>(html: &'a str, stop: &Stop) -> Result<(Cow<'a, str>, u64), Stopped> {
    measured_by(html, &LIMITS, stop)
}

fn measured_by<'a>(
    html: &'a str,
    limits: &Limits,
    stop: &Stop,
) -> Result<(Cow<'a, str>, u64), Stopped> {
    if let Some(cost) = within_bounds(html, limits, stop)? {
        return Ok((Cow::Borrowed(html), cost));
    }
    // Deep enough for the page's text to fit the text cost (with room for what a rewrite
    // adds: `&lt;` for `<`, a `<wbr>` in a long run).
    let text = text_bytes(html, stop)?;
    let fits = limits.text_cost / (text + text / 4).max(1);
    let limits = &Limits {
        depth: usize::try_from(fits)
            .unwrap_or(usize::MAX)
            .saturating_sub(1)
            .clamp(MIN_TEXT_DEPTH, limits.depth),
        ..*limits
    };
    let page = rewrite(html, limits, stop)?;
    // The rewritten page counted as it will be read (within the bounds by construction;
    // were it not, it is counted as past any budget).
    let cost = within_bounds(&page, limits, stop)?.unwrap_or(u64::MAX);
    Ok((Cow::Owned(page), cost))
}

/// How many bytes of text (between tags, raw text left out) `html` holds.
fn text_bytes(html: &str, stop: &Stop) -> Result<u64, Stopped> {
    let mut bytes = 0u64;
    for (n, tok) in Tokenizer::new(html).enumerate() {
        if n % CHECK_EVERY == CHECK_EVERY - 1 {
            stop.check()?;
        }
        if let Token::Text(t) = tok {
            bytes += t.len() as u64;
        }
    }
    Ok(bytes)
}

/// How deep a tree builder may nest a page whose shape was counted `depth` deep: up to
/// three more for each level (implied table sections and rows, formatting elements it opens
/// again) and a few for the document itself.
pub(crate) const fn tree_builder_allowance(depth: usize) -> usize {
    4 * depth + 6
}

/// The deepest element of `html` as a tree builder builds it (dom_query's, the one
/// dom_smoothie reads pages with): what checks of the bounds measure.
pub(crate) fn tree_depth(html: &str) -> usize {
    tree_shape(html).0
}

/// How many nodes (elements, comments, text) a tree builder builds of `html`.
#[cfg(test)]
pub(crate) fn tree_size(html: &str) -> usize {
    tree_shape(html).1
}

/// The deepest node of `html`'s tree and how many nodes it has, walked without recursion.
fn tree_shape(html: &str) -> (usize, usize) {
    let doc = dom_query::Document::from(html);
    let (mut deepest, mut nodes) = (0, 0);
    let mut stack = vec![(doc.root(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        nodes += 1;
        let mut child = node.first_child();
        while let Some(c) = child {
            stack.push((c, depth + 1));
            child = c.next_sibling();
        }
    }
    (deepest, nodes)
}

/// Elements with no content and no end tag, as a tree builder reads them.
fn is_void(name: &str) -> bool {
    crate::html::is_void(name) || matches!(name, "basefont" | "bgsound" | "frame")
}

/// Elements whose content the tokenizer reads as raw text in HTML (not in SVG or MathML).
fn is_raw(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "textarea" | "xmp" | "iframe" | "noembed" | "noframes" | "title"
    )
}

/// Start tags that end SVG or MathML content (a tree builder pops the foreign elements and
/// reads them as HTML).
fn breaks_out(name: &str, attrs: &str) -> bool {
    matches!(
        name,
        "b" | "big"
            | "blockquote"
            | "body"
            | "br"
            | "center"
            | "code"
            | "dd"
            | "div"
            | "dl"
            | "dt"
            | "em"
            | "embed"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "head"
            | "hr"
            | "i"
            | "img"
            | "li"
            | "listing"
            | "menu"
            | "meta"
            | "nobr"
            | "ol"
            | "p"
            | "pre"
            | "ruby"
            | "s"
            | "small"
            | "span"
            | "strong"
            | "strike"
            | "sub"
            | "sup"
            | "table"
            | "tt"
            | "u"
            | "ul"
            | "var"
    ) || (name == "font"
        && ["color", "face", "size"]
            .iter()
            .any(|a| crate::html::attr(attrs, a).is_some()))
}

/// How an element's content is read: as HTML, or as SVG or MathML (foreign content).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Html,
    Svg,
    Math,
}

impl Mode {
    /// SVG or MathML: self-closing tags close, no raw text, `<![CDATA[` is a section.
    fn foreign(self) -> bool {
        self != Mode::Html
    }
}

/// What an element is in the model: its name, whether it is SVG/MathML, how its content is
/// read, and (in a rewrite) whether its tags are written.
#[derive(Debug, Clone)]
struct Open<'a> {
    name: Cow<'a, str>,
    content: Mode,
    written: bool,
}

/// The name of the tag that starts at byte `at` of `src` (after `<` or `</`), as a tree
/// builder reads it: up to whitespace, `/` or `>`, ASCII lower-cased.
fn tag_name(src: &str, at: usize) -> Cow<'_, str> {
    let rest = &src[at..];
    let end = rest
        .find(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>')
        .unwrap_or(rest.len());
    let name = &rest[..end];
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// What an element named `name` is (HTML, SVG or MathML) when opened in content read as
/// `opened_in`, and how its own content is read (an integration point's as HTML).
fn content_mode(name: &str, attrs: &str, opened_in: Mode) -> (Mode, Mode) {
    let element = match opened_in {
        Mode::Html | Mode::Math if name == "svg" => Mode::Svg,
        Mode::Html if name == "math" => Mode::Math,
        Mode::Html => Mode::Html,
        Mode::Svg | Mode::Math if breaks_out(name, attrs) => Mode::Html,
        foreign => foreign,
    };
    let integration = match element {
        Mode::Html => false,
        Mode::Svg => matches!(name, "foreignobject" | "desc" | "title"),
        Mode::Math => {
            matches!(name, "mi" | "mo" | "mn" | "ms" | "mtext")
                || (name == "annotation-xml"
                    && crate::html::attr(attrs, "encoding").is_some_and(|e| {
                        e.eq_ignore_ascii_case("text/html")
                            || e.eq_ignore_ascii_case("application/xhtml+xml")
                    }))
        }
    };
    let content = if integration { Mode::Html } else { element };
    (element, content)
}

/// The formatting elements a tree builder keeps a list of and opens again where they were
/// closed implicitly.
fn is_formatting(name: &str) -> bool {
    matches!(
        name,
        "a" | "b"
            | "big"
            | "code"
            | "em"
            | "font"
            | "i"
            | "nobr"
            | "s"
            | "small"
            | "strike"
            | "strong"
            | "tt"
            | "u"
    )
}

/// Whitespace between tags (no text a tree builder opens formatting elements for).
fn is_space_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Elements a start tag of the same name closes when it is the current one (a new
/// paragraph, list item, row, cell or option), as every tree builder does.
fn closes_its_twin(name: &str) -> bool {
    matches!(
        name,
        "p" | "li" | "dt" | "dd" | "tr" | "td" | "th" | "option" | "optgroup"
    )
}

/// Whether a tag's attribute text holds more than [`MAX_ATTRIBUTES`] attributes (read only
/// when it is long enough to: each takes two bytes at least).
fn too_many_attributes(attrs: &str) -> bool {
    attrs.len() > 2 * MAX_ATTRIBUTES && crate::html::attributes(attrs).nth(MAX_ATTRIBUTES).is_some()
}

/// Whether `html`'s shape is within the bounds, counted so as never to undercount a tree
/// builder's nesting: an element is closed only by its own end tag while it is the current
/// one, or by a twin start tag (a new `<p>` after an open `<p>`); every other start tag
/// nests, a self-closing tag is closed only in SVG or MathML, and each level may cost a
/// tree builder up to three (implied table sections and rows, formatting elements it opens
/// again), which [`MAX_DEPTH`] allows for. Where what a tree builder does cannot be known
/// from here (an end tag that is not the current element's inside SVG or MathML), the rest
/// of the page is read in the way that counts most.
fn within_bounds(html: &str, limits: &Limits, stop: &Stop) -> Result<Option<u64>, Stopped> {
    let mut tokens = Tokenizer::new(html);
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut elements = 0usize;
    // The sum of the depths the counted elements sit at, and of those each byte of text
    // sits at.
    let mut cost = 0u64;
    let mut text_cost = 0u64;
    // Formatting elements open in the count: a tree builder that closed them implicitly
    // opens them all again before the next text or tag (every one, each time), so each such
    // point may cost that many elements more.
    let mut formatting = 0usize;
    // After an ambiguity in foreign content: no self-closing tag is taken as closed, no
    // element's content is skipped as raw text, `<![CDATA[` ends at the next `>`.
    let mut doubt = false;
    let mut n = 0usize;
    loop {
        let mode = stack.last().map_or(Mode::Html, |o| o.content);
        tokens.set_foreign(mode.foreign() && !doubt);
        let Some(tok) = tokens.next() else { break };
        let from = tokens.tag_start();
        n += 1;
        if n.is_multiple_of(CHECK_EVERY) {
            stop.check()?;
        }
        match tok {
            Token::Start {
                attrs,
                self_closing,
                ..
            } => {
                let name = tag_name(html, from + 1);
                elements += 1 + formatting;
                cost += ((1 + formatting) * (stack.len() + 1)) as u64;
                // Comments and declarations are nodes too: they count against the budget
                // (a rewrite leaves them out).
                if elements + tokens.skipped() > limits.elements
                    || attrs.len() > limits.attribute_bytes
                    || too_many_attributes(attrs)
                {
                    return Ok(None);
                }
                if matches!(name.as_ref(), "html" | "head" | "body") || is_void(&name) {
                    continue;
                }
                let (element, content) = content_mode(&name, attrs, mode);
                if mode.foreign() && element == Mode::Html {
                    doubt = true;
                }
                let foreign_closed = element.foreign() && self_closing && !doubt;
                if is_raw(&name) && (element.foreign() || doubt) {
                    tokens.not_raw();
                }
                if foreign_closed {
                    continue;
                }
                if closes_its_twin(&name) && stack.last().is_some_and(|o| o.name == name) {
                    stack.pop();
                }
                formatting += usize::from(is_formatting(&name));
                stack.push(Open {
                    name,
                    content,
                    written: true,
                });
                if stack.len() > limits.depth {
                    return Ok(None);
                }
            }
            Token::End(_) => {
                let name = tag_name(html, from + 2);
                if stack.last().is_some_and(|o| o.name == name) {
                    stack.pop();
                    formatting -= usize::from(is_formatting(&name));
                } else if mode.foreign() || stack.iter().any(|o| o.content.foreign()) {
                    doubt = true;
                }
            }
            // Raw text (a script, a style) is written out again as it is, not escaped.
            Token::Text(t) => {
                text_cost += t.len() as u64 * (stack.len() + 1 + formatting) as u64;
                if t.len() > MAX_TEXT_RUN || text_cost > limits.text_cost {
                    return Ok(None);
                }
                if formatting > 0 && !t.bytes().all(is_space_byte) {
                    elements += formatting;
                    cost += (formatting * (stack.len() + 1)) as u64;
                    if elements > limits.elements {
                        return Ok(None);
                    }
                }
            }
            Token::RawText(_) => {}
        }
    }
    if elements + tokens.skipped() > limits.elements {
        return Ok(None);
    }
    Ok(Some(cost))
}

mod rewrite;
use rewrite::rewrite;

#[cfg(test)]
mod tests;
