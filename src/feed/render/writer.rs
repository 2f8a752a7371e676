//! The markdown / text writer: block structure, line prefixes, inline markers.

use std::borrow::Cow;

use url::Url;

use super::{Style, Unconvertible, absolutize, escape_md, md_url};
use crate::feed::html::{Token, Tokenizer, attributes};
use crate::feed::text::unescape_html;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Open {
    /// A block that only separates paragraphs.
    Block,
    Heading,
    Emphasis {
        marker: &'static str,
        at: usize,
    },
    Code,
    Link {
        href: Option<String>,
        at: usize,
    },
    List,
    Item,
    Quote,
    Pre,
    Skip,
    Table,
    Row,
    Cell,
}

pub(super) struct ListState {
    pub(super) ordered: bool,
    pub(super) next: u64,
}

pub(super) struct Writer<'b> {
    pub(super) style: Style,
    pub(super) base: Option<&'b Url>,
    pub(super) out: String,
    pub(super) stack: Vec<(String, Open)>,
    pub(super) prefixes: Vec<&'static str>,
    pub(super) lists: Vec<ListState>,
    pub(super) marker: Option<String>,
    pub(super) brk: u8,
    pub(super) space: bool,
    pub(super) line_start: bool,
    pub(super) committed: u8,
    pub(super) glued: bool,
    pub(super) skip: usize,
    pub(super) pre: usize,
    pub(super) code: usize,
    pub(super) cells: usize,
    pub(super) first_row_cells: Option<usize>,
    pub(super) rows: usize,
    pub(super) cell_in_row: usize,
    pub(super) budget: usize,
}

impl<'b> Writer<'b> {
    pub(super) fn new(style: Style, base: Option<&'b Url>, input_len: usize) -> Self {
        Writer {
            style,
            base,
            out: String::with_capacity(input_len),
            stack: Vec::new(),
            prefixes: Vec::new(),
            lists: Vec::new(),
            marker: None,
            brk: 0,
            space: false,
            line_start: true,
            committed: 0,
            glued: false,
            skip: 0,
            pre: 0,
            code: 0,
            cells: 0,
            first_row_cells: None,
            rows: 0,
            cell_in_row: 0,
            budget: input_len.saturating_mul(4) + 4096,
        }
    }

    pub(super) fn md(&self) -> bool {
        self.style == Style::Markdown
    }

    pub(super) fn run(mut self, html: &str) -> Result<String, Unconvertible> {
        for tok in Tokenizer::new(html) {
            match tok {
                Token::Text(t) if self.skip == 0 => self.text(&unescape_html(t)),
                Token::Start {
                    name,
                    attrs,
                    self_closing,
                } => self.start(&name, attrs, self_closing)?,
                Token::End(name) => self.end(&name),
                Token::Text(_) | Token::RawText(_) => {}
            }
            if self.out.len() > self.budget {
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

    pub(super) fn block(&mut self, lines: u8) {
        if self.cells > 0 {
            self.space = true;
        } else if lines > self.committed {
            self.brk = self.brk.max(lines - self.committed);
        }
    }

    /// Writes pending line breaks (blank lines carry the current prefixes, trimmed) but
    /// not the prefix of the next line.
    pub(super) fn commit_breaks(&mut self) {
        if self.out.is_empty() {
            self.brk = 0;
        }
        if self.brk > 0 {
            if self.committed == 0 {
                let end = self.out.trim_end_matches([' ', '\t']).len();
                self.out.truncate(end);
            }
            let prefix: String = self.prefixes.concat();
            for i in 0..self.brk {
                if self.committed + i > 0 {
                    self.out.push_str(prefix.trim_end());
                }
                self.out.push('\n');
            }
            self.committed += self.brk;
            self.brk = 0;
            self.line_start = true;
            self.space = false;
        }
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
                        let outer: String = self.prefixes[..n - 1].concat();
                        self.out.push_str(&outer);
                        self.out.push_str(&m);
                    }
                    _ => {
                        let all: String = self.prefixes.concat();
                        self.out.push_str(&all);
                    }
                }
            }
            self.line_start = false;
            self.space = false;
        } else if self.space && !self.glued {
            self.out.push(' ');
        }
        self.space = false;
        self.glued = false;
    }

    pub(super) fn text(&mut self, t: &str) {
        if self.pre > 0 {
            let mut first = true;
            for line in t.split('\n') {
                if !first {
                    self.out.push('\n');
                    self.line_start = true;
                }
                first = false;
                if !line.is_empty() {
                    self.flush();
                    self.out.push_str(line);
                }
            }
            return;
        }
        if t.starts_with(|c: char| c.is_ascii_whitespace()) {
            self.space = true;
        }
        let mut any = false;
        for word in t.split_ascii_whitespace() {
            if any {
                self.space = true;
            }
            let at_line_start = self.line_start || self.brk > 0 || self.out.is_empty();
            self.flush();
            if self.md() && self.code == 0 {
                escape_md(word, at_line_start, &mut self.out);
            } else {
                self.out.push_str(word);
            }
            any = true;
        }
        if any {
            self.space = t.ends_with(|c: char| c.is_ascii_whitespace());
        }
    }

    /// Flushes, then writes an opening marker that the next text hugs.
    pub(super) fn open_marker(&mut self, s: &str) {
        self.flush();
        self.out.push_str(s);
        self.glued = true;
    }

    pub(super) fn inline_marker(&mut self, s: &str) {
        self.flush();
        self.out.push_str(s);
    }

    pub(super) fn end(&mut self, name: &str) {
        if let Some(pos) = self.stack.iter().rposition(|(n, _)| n == name) {
            self.close_to(pos);
        } else if name == "p" || name == "br" {
            self.block(if name == "p" { 2 } else { 1 });
        }
    }

    pub(super) fn close_to(&mut self, pos: usize) {
        while self.stack.len() > pos {
            if let Some((_, open)) = self.stack.pop() {
                self.close(open);
            }
        }
    }

    pub(super) fn close(&mut self, open: Open) {
        let md = self.md();
        match open {
            Open::Skip => self.skip = self.skip.saturating_sub(1),
            Open::Block => {
                if self.cells == 0 {
                    self.block(2);
                }
            }
            Open::Heading => {
                let t = self.out.trim_end_matches(' ');
                if t.ends_with('#') {
                    let cut = t.trim_end_matches('#').len();
                    self.out.truncate(cut);
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
            Open::Code => {
                self.glued = false;
                self.code = self.code.saturating_sub(1);
                if md && self.pre == 0 {
                    if self.out.ends_with('`') {
                        self.out.pop();
                    } else {
                        self.out.push('`');
                    }
                }
            }
            Open::Link { href, at } => {
                self.glued = false;
                if let Some(href) = href {
                    let text_empty = self.out.get(at + 1..).is_none_or(|t| t.trim().is_empty());
                    if text_empty {
                        cut_at(&mut self.out, at);
                    } else {
                        self.out.push_str("](");
                        self.out.push_str(&md_url(&href));
                        self.out.push(')');
                    }
                }
            }
            Open::List => {
                self.lists.pop();
                self.block(2);
            }
            Open::Item => {
                self.prefixes.pop();
                self.marker = None;
                self.block(1);
            }
            Open::Quote => {
                self.prefixes.pop();
                self.block(2);
            }
            Open::Pre => {
                self.pre = self.pre.saturating_sub(1);
                if md {
                    while self.out.ends_with('\n') {
                        self.out.pop();
                    }
                    self.out.push('\n');
                    let prefix: String = self.prefixes.concat();
                    self.out.push_str(&prefix);
                    self.out.push_str("```");
                }
                self.line_start = false;
                self.block(2);
            }
            Open::Table => {
                self.block(2);
            }
            Open::Row => {
                if self.cell_in_row > 0 {
                    self.out.push_str(" |");
                    if self.rows == 0 && md {
                        self.first_row_cells = Some(self.cell_in_row);
                        let sep: String = "| --- ".repeat(self.cell_in_row);
                        self.out.push('\n');
                        let prefix: String = self.prefixes.concat();
                        self.out.push_str(&prefix);
                        self.out.push_str(&sep);
                        self.out.push('|');
                    }
                    self.rows += 1;
                }
                self.cell_in_row = 0;
                self.block(1);
            }
            Open::Cell => {
                self.cells = self.cells.saturating_sub(1);
                self.space = false;
            }
        }
    }

    pub(super) fn image(&mut self, attrs: &str) {
        if !self.md() {
            return;
        }
        let mut src: Option<Cow<'_, str>> = None;
        let mut lazy: Option<Cow<'_, str>> = None;
        let mut alt = Cow::Borrowed("");
        for (name, value) in attributes(attrs) {
            match name.as_ref() {
                "src" => src = Some(value),
                "data-src" | "data-lazy-src" | "data-original" => lazy = Some(value),
                "alt" => alt = value,
                "width" | "height" if value.trim() == "1" || value.trim() == "0" => return,
                _ => {}
            }
        }
        let src = match (src, lazy) {
            (Some(s), Some(l)) if s.trim_start().starts_with("data:") => l,
            (Some(s), _) => s,
            (None, Some(l)) => l,
            (None, None) => return,
        };
        if src.trim_start().starts_with("data:") {
            return;
        }
        let Some(url) = absolutize(&src, self.base) else {
            return;
        };
        let alt = crate::feed::text::collapse_ws(&alt).replace(['[', ']'], "");
        self.inline_marker(&format!("![{alt}]({})", md_url(&url)));
    }
}

/// Cuts `s` back to `at` (or the char boundary before it); never panics.
fn cut_at(s: &mut String, at: usize) {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.truncate(at);
}
