//! A page past the bounds, written again within them: strictly nested, every written
//! element closed by an explicit end tag, tags past the bounds left out with their text kept,
//! text and raw text with no `<` that could open a tag, long runs of text split, comments
//! dropped. Where a tree builder would close an element implicitly (a new paragraph, list
//! item, cell or heading), the rewrite closes it explicitly, so the page keeps its shape.

use std::borrow::Cow;

use super::{
    CHECK_EVERY, Limits, MAX_ATTRIBUTES, MAX_TEXT_RUN, MAX_TRACKED, Mode, Open, content_mode,
    is_raw, is_void, tag_name,
};
use crate::html::{Token, Tokenizer};
use crate::stop::{Stop, Stopped};

/// Appends `text` with every `<` written as `&lt;` (so no text becomes a tag), split into
/// runs of at most [`MAX_TEXT_RUN`] bytes by `<wbr>` (after a space where one is near).
fn push_text(out: &mut String, text: &str) {
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len();
        if end > MAX_TEXT_RUN {
            end = MAX_TEXT_RUN;
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            if let Some(space) = rest[..end].rfind(' ').filter(|&i| i > end / 2) {
                end = space + 1;
            } else if let Some(amp) = rest[..end].rfind('&').filter(|&i| i > 0 && end - i < 40)
                && !rest[amp..end].contains(';')
            {
                // Not inside a character reference.
                end = amp;
            }
        }
        let (run, more) = rest.split_at(end);
        let mut part = run;
        while let Some(i) = part.find('<') {
            out.push_str(&part[..i]);
            out.push_str("&lt;");
            part = &part[i + 1..];
        }
        out.push_str(part);
        if !more.is_empty() {
            out.push_str("<wbr>");
        }
        rest = more;
    }
}

/// Appends a start tag named `name` with the attributes of `attrs`, written again: names a
/// tree builder reads the same way, values quoted and escaped, long ones left out.
fn push_start(out: &mut String, name: &str, attrs: &str, limits: &Limits) {
    out.push('<');
    out.push_str(name);
    for (k, v) in crate::html::attributes(attrs).take(MAX_ATTRIBUTES) {
        let plain = !k.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.'));
        if !plain || v.len() > limits.attribute_bytes {
            continue;
        }
        out.push(' ');
        out.push_str(&k);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '"' => out.push_str("&quot;"),
                '<' => out.push_str("&lt;"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('>');
}

/// Whether a tag name can be written as it is (anything else is left out, its text kept).
fn plain_name(name: &str) -> bool {
    name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.'))
}

/// Start tags that close an open paragraph.
fn closes_p(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "li"
            | "dd"
            | "dt"
            | "listing"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "search"
            | "section"
            | "summary"
            | "table"
            | "ul"
            | "xmp"
    )
}

/// Elements whose tags part the words around them (blocks, rows, cells, line breaks).
fn separates(name: &str) -> bool {
    closes_p(name) || matches!(name, "br" | "td" | "th" | "tr" | "option" | "body")
}

/// Elements that bound the search for an element to close implicitly.
fn is_scope(name: &str) -> bool {
    matches!(
        name,
        "applet"
            | "caption"
            | "html"
            | "table"
            | "td"
            | "th"
            | "marquee"
            | "object"
            | "template"
            | "button"
            | "svg"
            | "math"
    )
}

/// The page written again within the bounds (see the module's doc).
struct Rewriter<'a> {
    limits: Limits,
    out: String,
    stack: Vec<Open<'a>>,
    /// Elements whose tags are written and still open.
    depth: usize,
    elements: usize,
    seen_root: [bool; 3],
}

impl<'a> Rewriter<'a> {
    /// Closes the open elements from the top down to the one at `index`, writing the end
    /// tags of those that were written.
    fn close_to(&mut self, index: usize) {
        while self.stack.len() > index {
            let Some(o) = self.stack.pop() else { break };
            if o.written {
                self.depth -= 1;
                self.out.push_str("</");
                self.out.push_str(&o.name);
                self.out.push('>');
            } else if separates(&o.name) {
                self.out.push(' ');
            }
        }
    }

    /// The index of the innermost open element named `name` within scope (not past an
    /// element that bounds the search), if any.
    fn in_scope(&self, names: &[&str]) -> Option<usize> {
        for (i, o) in self
            .stack
            .iter()
            .enumerate()
            .rev()
            .take(self.limits.depth * 2)
        {
            if names.contains(&o.name.as_ref()) {
                return Some(i);
            }
            if is_scope(&o.name) {
                return None;
            }
        }
        None
    }

    fn start(&mut self, name: Cow<'a, str>, attrs: &str, self_closing: bool, mode: Mode) -> bool {
        if let Some(i) = ["html", "head", "body"].iter().position(|r| *r == name) {
            if !self.seen_root[i] {
                self.seen_root[i] = true;
                push_start(&mut self.out, &name, attrs, &self.limits);
            }
            return false;
        }
        if closes_p(&name)
            && let Some(i) = self.in_scope(&["p"])
        {
            self.close_to(i);
        }
        let twin: &[&str] = match name.as_ref() {
            "li" => &["li"],
            "dt" | "dd" => &["dt", "dd"],
            "td" | "th" => &["td", "th"],
            "tr" => &["tr"],
            "a" => &["a"],
            "option" => &["option"],
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => &["h1", "h2", "h3", "h4", "h5", "h6"],
            _ => &[],
        };
        if !twin.is_empty()
            && let Some(i) = self.in_scope(twin)
        {
            self.close_to(i);
        }
        self.elements += 1;
        let room = self.elements <= self.limits.elements && plain_name(&name);
        if is_void(&name) {
            if room {
                push_start(&mut self.out, &name, attrs, &self.limits);
            } else if separates(&name) {
                self.out.push(' ');
            }
            return false;
        }
        let written = room && self.depth < self.limits.depth;
        if !written && separates(&name) {
            // The words on either side of a block left out stay apart.
            self.out.push(' ');
        }
        if self_closing {
            if written {
                push_start(&mut self.out, &name, attrs, &self.limits);
                self.out.push_str("</");
                self.out.push_str(&name);
                self.out.push('>');
            }
            return false;
        }
        if !written && self.stack.len() >= MAX_TRACKED {
            return true;
        }
        if written {
            push_start(&mut self.out, &name, attrs, &self.limits);
            self.depth += 1;
        }
        let (_, content) = content_mode(&name, attrs, mode);
        self.stack.push(Open {
            name,
            content,
            written,
        });
        false
    }

    fn end(&mut self, name: &str) {
        match name {
            "html" | "head" | "body" => {}
            "br" => self.out.push_str("<br>"),
            _ => {
                let found = self
                    .stack
                    .iter()
                    .enumerate()
                    .rev()
                    .take(self.limits.depth * 2)
                    .find(|(_, o)| o.name == name)
                    .map(|(i, _)| i);
                if let Some(i) = found {
                    self.close_to(i);
                }
            }
        }
    }
}

/// `html` written again within the bounds: strictly nested, every written element closed
/// by an explicit end tag, tags past the bounds left out with their text kept, text and raw
/// text with no `<` that could open a tag, comments dropped.
pub(super) fn rewrite(html: &str, limits: &Limits, stop: &Stop) -> Result<String, Stopped> {
    let mut w = Rewriter {
        limits: *limits,
        out: String::with_capacity(html.len() / 2 + 64),
        stack: Vec::new(),
        depth: 0,
        elements: 0,
        seen_root: [false; 3],
    };
    w.out.push_str("<!DOCTYPE html>");
    let mut tokens = Tokenizer::new(html);
    // Raw text of an element left out is left out too.
    let mut skip_raw = false;
    let mut n = 0usize;
    loop {
        let mode = w.stack.last().map_or(Mode::Html, |o| o.content);
        tokens.set_foreign(mode.foreign());
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
                let (element, _) = content_mode(&name, attrs, mode);
                let mut raw = is_raw(&name);
                if raw && element.foreign() {
                    tokens.not_raw();
                    raw = false;
                }
                // `/>` closes no HTML element: `<title/>` holds the raw text after it.
                let untracked = w.start(name, attrs, self_closing && !raw, mode);
                skip_raw = raw && (untracked || w.stack.last().is_some_and(|o| !o.written));
            }
            Token::End(_) => {
                let name = tag_name(html, from + 2);
                w.end(&name);
            }
            Token::Text(t) => push_text(&mut w.out, t),
            Token::RawText(t) => {
                if !std::mem::take(&mut skip_raw) {
                    push_text(&mut w.out, t);
                }
            }
        }
    }
    w.close_to(0);
    Ok(w.out)
}
