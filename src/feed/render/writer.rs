//! The markdown / text writer: block structure, line prefixes, inline markers.
//!
//! Markdown output never holds raw HTML: text is escaped word by word, code goes into code
//! spans and fences sized to their content, and only `http`, `https` and `mailto` links
//! and images are written as such.

use std::borrow::Cow;

use url::Url;

use super::cells::Table;
use super::escape::{escape_word, fence_for, may_need_escaping, wrap_code_span};
use super::{Style, Unconvertible};
use crate::html::{Token, Tokenizer};
use crate::text::unescape_html;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Open {
    /// A block that only separates paragraphs.
    Block,
    /// A heading (written with a `#` marker in markdown).
    Heading {
        marked: bool,
    },
    Emphasis {
        marker: &'static str,
        at: usize,
    },
    /// Code; `at` is where a markdown code span's content starts.
    Code {
        at: Option<usize>,
    },
    /// A link; `dest` is its markdown destination when it is written as a link.
    Link {
        dest: Option<String>,
        at: usize,
    },
    /// A list (nested in another list's item, or not).
    List(bool),
    Item,
    Quote,
    /// Preformatted text, and the language of its code.
    Pre {
        lang: Option<String>,
    },
    Skip,
    /// `<video>` (true) or `<audio>`: its sources become links, its fallback is kept.
    Media(bool),
    /// The table being laid out.
    Table,
    Row,
    Cell,
}

impl Open {
    /// Whether this element keeps its content on one line (block breaks become spaces).
    fn is_inline_context(&self) -> bool {
        matches!(
            self,
            Open::Heading { marked: true }
                | Open::Code { at: Some(_) }
                | Open::Link { dest: Some(_), .. }
                | Open::Cell
        )
    }
}

pub(super) struct ListState {
    pub(super) ordered: bool,
    pub(super) next: u64,
}

/// `'b`: the base URL's lifetime; `'h`: the HTML's (open elements keep their names as
/// the tokenizer gave them, borrowed from the source when they were lowercase).
pub(super) struct Writer<'b, 'h> {
    pub(super) style: Style,
    pub(super) base: Option<&'b Url>,
    pub(super) out: String,
    pub(super) stack: Vec<(Cow<'h, str>, Open)>,
    pub(super) prefixes: Vec<String>,
    pub(super) lists: Vec<ListState>,
    /// A list marker waiting for the item's first line.
    pub(super) marker: Option<String>,
    /// A heading marker waiting for the heading's first content.
    pub(super) lead: Option<String>,
    /// Line breaks owed before the next content.
    pub(super) brk: u8,
    /// The owed single break is a `<br>` (a hard break in markdown).
    pub(super) hard: bool,
    pub(super) space: bool,
    pub(super) line_start: bool,
    /// Line breaks already written since the last content.
    pub(super) committed: u8,
    /// The next text hugs what was just written (after an opening marker).
    pub(super) glued: bool,
    pub(super) skip: usize,
    pub(super) pre: usize,
    /// Where the content of the open preformatted text starts, once it has any.
    pub(super) fence_at: Option<usize>,
    /// Where its last non-blank line ended.
    pub(super) pre_end: usize,
    /// A newline right after `<pre>` is not content (as in HTML).
    pub(super) pre_fresh: bool,
    pub(super) code: usize,
    /// Open elements that keep their content on one line.
    pub(super) inline: usize,
    pub(super) table: Option<Table>,
    /// URLs already written for the `<video>`/`<audio>` being rendered.
    pub(super) media: Vec<String>,
    pub(super) budget: usize,
}

impl<'b, 'h> Writer<'b, 'h> {
    pub(super) fn new(style: Style, base: Option<&'b Url>, input_len: usize) -> Self {
        Writer {
            style,
            base,
            out: String::with_capacity(input_len),
            stack: Vec::new(),
            prefixes: Vec::new(),
            lists: Vec::new(),
            marker: None,
            lead: None,
            brk: 0,
            hard: false,
            space: false,
            line_start: true,
            committed: 0,
            glued: false,
            skip: 0,
            pre: 0,
            fence_at: None,
            pre_end: 0,
            pre_fresh: false,
            code: 0,
            inline: 0,
            table: None,
            media: Vec::new(),
            budget: input_len.saturating_mul(4) + 4096,
        }
    }

    pub(super) fn md(&self) -> bool {
        self.style == Style::Markdown
    }

    pub(super) fn in_cell(&self) -> bool {
        self.table.as_ref().is_some_and(Table::in_cell)
    }

    pub(super) fn run(mut self, html: &'h str) -> Result<String, Unconvertible> {
        for tok in Tokenizer::new(html) {
            match tok {
                Token::Text(t) if self.skip == 0 => self.text(&unescape_html(t)),
                Token::Start {
                    name,
                    attrs,
                    self_closing,
                } => self.start(name, attrs, self_closing)?,
                Token::End(name) => self.end(&name),
                Token::Text(_) | Token::RawText(_) => {}
            }
            let held = self.table.as_ref().map_or(0, Table::bytes);
            if self.out.len() + held > self.budget {
                return Err(Unconvertible("the rendering grew far beyond its input"));
            }
        }
        while let Some((_, open)) = self.stack.pop() {
            self.close(open);
        }
        let trimmed = self.out.trim_end().len();
        self.out.truncate(trimmed);
        Ok(self.out)
    }

    /// Owes `lines` line breaks before the next content (inside a one-line element, a space).
    pub(super) fn block(&mut self, lines: u8) {
        self.hard = false;
        if self.inline > 0 {
            self.space = true;
        } else if lines > self.committed {
            self.brk = self.brk.max(lines - self.committed);
        }
    }

    /// A `<br>`: a hard line break; two in a row end the paragraph.
    pub(super) fn line_break(&mut self) {
        if self.pre > 0 {
            self.pre_newline();
        } else if self.inline > 0 {
            self.space = true;
        } else if self.hard && self.brk > 0 {
            self.block(2);
        } else {
            self.block(1);
            self.hard = self.brk == 1;
        }
    }

    /// Writes pending line breaks (blank lines carry the current prefixes, trimmed) but
    /// not the prefix of the next line.
    #[inline]
    pub(super) fn commit_breaks(&mut self) {
        if self.brk == 0 {
            self.hard = false;
            return;
        }
        self.write_breaks();
    }

    fn write_breaks(&mut self) {
        if self.out.is_empty() {
            self.brk = 0;
        }
        if self.brk > 0 {
            if self.committed == 0 {
                let end = self.out.trim_end_matches([' ', '\t']).len();
                self.out.truncate(end);
                if self.hard && self.brk == 1 && self.md() {
                    self.out.push('\\');
                }
            }
            for i in 0..self.brk {
                if self.committed + i > 0 {
                    self.push_prefixes_trimmed();
                }
                self.out.push('\n');
            }
            self.committed += self.brk;
            self.brk = 0;
            self.line_start = true;
            self.space = false;
        }
        self.hard = false;
    }

    /// Writes the line prefixes with their trailing spaces left out (a blank line's prefix);
    /// `out` is at the start of a line, so only the prefixes' own spaces are trimmed.
    fn push_prefixes_trimmed(&mut self) {
        if self.prefixes.is_empty() {
            return;
        }
        for p in &self.prefixes {
            self.out.push_str(p);
        }
        let end = self.out.trim_end_matches(' ').len();
        self.out.truncate(end);
    }

    /// Writes pending line breaks and the line prefix before new content.
    pub(super) fn flush(&mut self) {
        self.commit_breaks();
        self.committed = 0;
        if self.line_start {
            if self.out.is_empty() || self.out.ends_with('\n') {
                let n = self.prefixes.len();
                match self.marker.take() {
                    Some(m) if n > 0 => {
                        for p in &self.prefixes[..n - 1] {
                            self.out.push_str(p);
                        }
                        self.out.push_str(&m);
                    }
                    _ => {
                        for p in &self.prefixes {
                            self.out.push_str(p);
                        }
                    }
                }
            }
            if let Some(lead) = self.lead.take() {
                self.out.push_str(&lead);
            }
            self.line_start = false;
            self.space = false;
        } else if self.space && !self.glued {
            self.out.push(' ');
        }
        self.space = false;
        self.glued = false;
    }

    /// A newline inside preformatted text (a blank line keeps the quote prefix, so a code
    /// block inside a quote stays inside it).
    pub(super) fn pre_newline(&mut self) {
        if self.fence_at.is_none() {
            // Blank lines before the first content are dropped.
            return;
        }
        if self.line_start && self.md() {
            self.push_prefixes_trimmed();
        }
        self.out.push('\n');
        self.line_start = true;
    }

    pub(super) fn text(&mut self, t: &str) {
        if self.pre > 0 {
            for (i, line) in t.split('\n').enumerate() {
                if i > 0 && !std::mem::take(&mut self.pre_fresh) {
                    self.pre_newline();
                }
                let line = line.strip_suffix('\r').unwrap_or(line);
                if !line.is_empty() {
                    self.pre_fresh = false;
                    self.flush();
                    if self.fence_at.is_none() {
                        self.fence_at = Some(self.out.len());
                    }
                    if self.in_cell() {
                        self.out.push_str(&line.replace('|', "\\|"));
                    } else {
                        self.out.push_str(line);
                    }
                    self.pre_end = self.out.len();
                }
            }
            return;
        }
        if t.starts_with(|c: char| c.is_ascii_whitespace()) {
            self.space = true;
        }
        let md = self.md();
        let in_cell = self.in_cell();
        let mut any = false;
        let mut rest = "";
        for word in t.split_ascii_whitespace() {
            if any {
                self.space = true;
            }
            let at_line_start = self.line_start || self.brk > 0 || self.out.is_empty();
            if at_line_start && word.chars().all(char::is_whitespace) {
                // A line of no-break spaces (Word's empty paragraphs) is not content.
                continue;
            }
            self.flush();
            self.write_word(word, at_line_start, md, in_cell);
            any = true;
            // `word` is a slice of `t`: what follows it.
            rest = &t[word.as_ptr() as usize - t.as_ptr() as usize + word.len()..];
            break;
        }
        // The rest of the words follow on the same line: `flush` would only add the space.
        if md && self.code == 0 && !may_need_escaping(rest) {
            for word in rest.split_ascii_whitespace() {
                self.out.push(' ');
                self.out.push_str(word);
            }
        } else {
            for word in rest.split_ascii_whitespace() {
                self.out.push(' ');
                self.write_word(word, false, md, in_cell);
            }
        }
        if any {
            self.space = t.ends_with(|c: char| c.is_ascii_whitespace());
        }
    }

    fn write_word(&mut self, word: &str, at_line_start: bool, md: bool, in_cell: bool) {
        if md && self.code == 0 {
            escape_word(word, at_line_start, in_cell, &mut self.out);
        } else if md && in_cell {
            self.out.push_str(&word.replace('|', "\\|"));
        } else {
            self.out.push_str(word);
        }
    }

    /// Flushes, then writes an opening marker that the next text hugs.
    pub(super) fn open_marker(&mut self, s: &str) {
        self.flush();
        self.out.push_str(s);
        self.glued = true;
    }

    pub(super) fn end(&mut self, name: &str) {
        let found = if matches!(name, "td" | "th" | "tr" | "table") {
            self.in_table_scope(&[name])
        } else {
            self.stack.iter().rposition(|(n, _)| n == name)
        };
        if let Some(pos) = found {
            self.close_to(pos);
        } else if name == "p" {
            self.block(2);
        } else if name == "br" {
            self.line_break();
        }
    }

    /// The innermost open element named one of `names`, looking no further out than the
    /// innermost open table (a nested table's cells never close the outer one's).
    pub(super) fn in_table_scope(&self, names: &[&str]) -> Option<usize> {
        for (i, (n, _)) in self.stack.iter().enumerate().rev() {
            if names.contains(&n.as_ref()) {
                return Some(i);
            }
            if n == "table" {
                return None;
            }
        }
        None
    }

    pub(super) fn close_to(&mut self, pos: usize) {
        while self.stack.len() > pos {
            if let Some((_, open)) = self.stack.pop() {
                self.close(open);
            }
        }
    }

    pub(super) fn push(&mut self, name: Cow<'h, str>, open: Open) {
        if open.is_inline_context() {
            self.inline += 1;
        }
        if open == Open::Skip {
            self.skip += 1;
        }
        self.stack.push((name, open));
    }

    pub(super) fn close(&mut self, open: Open) {
        if open.is_inline_context() {
            self.inline = self.inline.saturating_sub(1);
        }
        match open {
            Open::Skip => self.skip = self.skip.saturating_sub(1),
            Open::Block | Open::Quote => {
                if matches!(open, Open::Quote) {
                    self.prefixes.pop();
                }
                self.block(2);
            }
            Open::List(nested) => {
                self.lists.pop();
                self.block(if nested { 1 } else { 2 });
            }
            Open::Heading { marked } => {
                if marked && self.lead.take().is_none() {
                    self.close_heading();
                }
                self.block(2);
            }
            Open::Emphasis { marker, at } => {
                let inner = self.out.get(at + marker.len()..);
                if inner.is_none_or(|t| t.trim().is_empty()) {
                    cut_at(&mut self.out, at);
                } else {
                    self.out.push_str(marker);
                }
                self.glued = false;
            }
            Open::Code { at } => {
                self.code = self.code.saturating_sub(1);
                self.glued = false;
                if let Some(at) = at {
                    if self.out.get(at..).is_none_or(|t| t.trim().is_empty()) {
                        cut_at(&mut self.out, at);
                    } else {
                        wrap_code_span(&mut self.out, at);
                    }
                }
            }
            Open::Link { dest, at } => {
                self.glued = false;
                if let Some(dest) = dest {
                    if self.out.get(at + 1..).is_none_or(|t| t.trim().is_empty()) {
                        cut_at(&mut self.out, at);
                    } else {
                        self.out.push_str("](");
                        self.out.push_str(&dest);
                        self.out.push(')');
                    }
                }
            }
            Open::Item => {
                self.prefixes.pop();
                self.marker = None;
                self.block(1);
            }
            Open::Pre { lang } => {
                self.pre = self.pre.saturating_sub(1);
                self.pre_fresh = false;
                if let Some(at) = self.fence_at.take() {
                    let end = self.pre_end.max(at).min(self.out.len());
                    self.out.truncate(end);
                    if self.md() {
                        self.close_fence(at, lang.as_deref());
                    }
                }
                self.line_start = false;
                self.block(2);
            }
            Open::Media(_) => {
                self.media.clear();
                self.block(if self.md() { 2 } else { 1 });
            }
            Open::Table => self.close_table(),
            Open::Row => {}
            Open::Cell => self.close_cell(),
        }
    }

    fn close_heading(&mut self) {
        // ` ##` at the end would be read as a closing sequence and dropped.
        let t = self.out.trim_end_matches(' ');
        let hashes = t.len() - t.trim_end_matches('#').len();
        if hashes > 0 && t[..t.len() - hashes].ends_with(' ') {
            let at = t.len() - hashes;
            self.out.insert(at, '\\');
        }
    }

    fn close_fence(&mut self, at: usize, lang: Option<&str>) {
        let fence = fence_for(&self.out[at..]);
        let prefix: String = self.prefixes.concat();
        let lang = lang.unwrap_or("");
        let mut head = String::with_capacity(fence.len() + lang.len() + 1 + prefix.len());
        head.push_str(&fence);
        head.push_str(lang);
        head.push('\n');
        head.push_str(&prefix);
        self.out.insert_str(at, &head);
        self.out.push('\n');
        self.out.push_str(&prefix);
        self.out.push_str(&fence);
    }
}

/// Cuts `s` back to `at` (or the char boundary before it); never panics.
pub(super) fn cut_at(s: &mut String, at: usize) {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.truncate(at);
}
