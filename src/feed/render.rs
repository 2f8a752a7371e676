//! HTML bodies rendered as markdown, plain text, one-line text, or sanitized HTML.
//!
//! One pass over [`Tokenizer`] tokens; links and images are made absolute against the
//! item's base. Script and style bodies never reach any output.

use std::borrow::Cow;

use url::Url;

use super::html::{Token, Tokenizer, attr, attributes};
use super::text::{escape_html, unescape_html};

/// The conversion gave up (absurd nesting or output growth); the caller falls back to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unconvertible(pub &'static str);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Markdown,
    Text,
}

const MAX_NESTING: usize = 64;

/// Renders `html` as CommonMark-flavoured markdown.
pub(crate) fn to_markdown(html: &str, base: Option<&Url>) -> Result<String, Unconvertible> {
    Writer::new(Style::Markdown, base, html.len()).run(html)
}

/// Renders `html` as readable plain text (paragraphs, list bullets, no markup).
pub(crate) fn to_text(html: &str, base: Option<&Url>) -> Result<String, Unconvertible> {
    Writer::new(Style::Text, base, html.len()).run(html)
}

/// The text of `html` on one line: tags dropped, entities decoded, whitespace collapsed.
pub(crate) fn to_plain(html: &str) -> String {
    if !html.contains('<') && !html.contains('&') {
        return super::text::collapse_ws(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut space = false;
    for tok in Tokenizer::new(html) {
        match tok {
            Token::Text(t) => {
                let t = unescape_html(t);
                if t.starts_with(|c: char| c.is_ascii_whitespace()) {
                    space = true;
                }
                let mut any = false;
                for word in t.split_ascii_whitespace() {
                    if (space || any) && !out.is_empty() {
                        out.push(' ');
                    }
                    out.push_str(word);
                    any = true;
                    space = false;
                }
                if any {
                    space = t.ends_with(|c: char| c.is_ascii_whitespace());
                }
            }
            Token::Start { name, .. } | Token::End(name) if !is_inline(&name) => space = true,
            _ => {}
        }
    }
    out
}

/// Elements that carry no content worth keeping, with everything inside them.
fn is_skipped(name: &str) -> bool {
    matches!(
        name,
        "head"
            | "template"
            | "svg"
            | "math"
            | "select"
            | "button"
            | "canvas"
            | "object"
            | "applet"
            | "datalist"
            | "dialog"
            | "map"
    )
}

/// Elements that may not carry an end tag.
fn is_void(name: &str) -> bool {
    matches!(
        name,
        "br" | "hr"
            | "img"
            | "input"
            | "meta"
            | "link"
            | "source"
            | "wbr"
            | "col"
            | "embed"
            | "param"
            | "track"
            | "area"
            | "base"
            | "keygen"
    )
}

fn is_inline(name: &str) -> bool {
    matches!(
        name,
        "a" | "abbr"
            | "b"
            | "bdi"
            | "bdo"
            | "cite"
            | "code"
            | "data"
            | "dfn"
            | "em"
            | "font"
            | "i"
            | "kbd"
            | "mark"
            | "q"
            | "s"
            | "samp"
            | "small"
            | "span"
            | "strike"
            | "strong"
            | "sub"
            | "sup"
            | "time"
            | "tt"
            | "u"
            | "var"
            | "del"
            | "ins"
            | "img"
            | "label"
            | "big"
            | "nobr"
            | "wbr"
    )
}

/// Resolves `href` against `base`; drops scripts and empty values.
pub(crate) fn absolutize(href: &str, base: Option<&Url>) -> Option<String> {
    let href = href.trim();
    if href.is_empty() {
        return None;
    }
    let lower = href.get(..11).unwrap_or(href).to_ascii_lowercase();
    if lower.starts_with("javascript:") || lower.starts_with("vbscript:") {
        return None;
    }
    // An absolute URL is kept as written (as feed readers do); only relative ones change.
    if Url::parse(href).is_ok() {
        return Some(href.to_owned());
    }
    match base {
        Some(b) => b.join(href).ok().map(Into::into),
        None => Some(href.to_owned()),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Open {
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

struct ListState {
    ordered: bool,
    next: u64,
}

struct Writer<'b> {
    style: Style,
    base: Option<&'b Url>,
    out: String,
    stack: Vec<(String, Open)>,
    prefixes: Vec<&'static str>,
    lists: Vec<ListState>,
    marker: Option<String>,
    brk: u8,
    space: bool,
    line_start: bool,
    committed: u8,
    glued: bool,
    skip: usize,
    pre: usize,
    code: usize,
    cells: usize,
    first_row_cells: Option<usize>,
    rows: usize,
    cell_in_row: usize,
    budget: usize,
}

impl<'b> Writer<'b> {
    fn new(style: Style, base: Option<&'b Url>, input_len: usize) -> Self {
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

    fn md(&self) -> bool {
        self.style == Style::Markdown
    }

    fn run(mut self, html: &str) -> Result<String, Unconvertible> {
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

    fn block(&mut self, lines: u8) {
        if self.cells > 0 {
            self.space = true;
        } else if lines > self.committed {
            self.brk = self.brk.max(lines - self.committed);
        }
    }

    /// Writes pending line breaks (blank lines carry the current prefixes, trimmed) but
    /// not the prefix of the next line.
    fn commit_breaks(&mut self) {
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
    fn flush(&mut self) {
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

    fn text(&mut self, t: &str) {
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
    fn open_marker(&mut self, s: &str) {
        self.flush();
        self.out.push_str(s);
        self.glued = true;
    }

    fn inline_marker(&mut self, s: &str) {
        self.flush();
        self.out.push_str(s);
    }

    fn start(&mut self, name: &str, attrs: &str, self_closing: bool) -> Result<(), Unconvertible> {
        if self.skip > 0 {
            if !is_void(name) && !self_closing {
                self.stack.push((name.to_owned(), Open::Skip));
                self.skip += 1;
            }
            return Ok(());
        }
        if self.prefixes.len() > MAX_NESTING || self.stack.len() > MAX_NESTING * 16 {
            return Err(Unconvertible("the HTML is nested too deeply"));
        }
        let md = self.md();
        let open = match name {
            "br" => {
                if self.pre > 0 {
                    self.out.push('\n');
                    self.line_start = true;
                } else {
                    self.block(1);
                }
                None
            }
            "hr" => {
                self.block(2);
                if md {
                    self.flush();
                    self.out.push_str("---");
                }
                self.block(2);
                None
            }
            "img" => {
                self.image(attrs);
                None
            }
            "iframe" | "video" | "audio" | "embed" => {
                if md {
                    let src = attr(attrs, "src");
                    if let Some(src) = src.as_deref().and_then(|s| absolutize(s, self.base)) {
                        self.inline_marker(&format!("[embedded {name}]({})", md_url(&src)));
                        self.space = true;
                    }
                }
                (name != "iframe" && name != "embed").then_some(Open::Skip)
            }
            _ if is_void(name) => None,
            _ if is_skipped(name) => Some(Open::Skip),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.block(2);
                if md {
                    let level = (name.as_bytes()[1] - b'0') as usize;
                    self.open_marker(&format!("{} ", "#".repeat(level)));
                }
                Some(Open::Heading)
            }
            "b" | "strong" | "i" | "em" | "cite" | "dfn" | "del" | "s" | "strike" => {
                let marker = match name {
                    "b" | "strong" => "**",
                    "del" | "s" | "strike" => "~~",
                    _ => "*",
                };
                if md && self.pre == 0 && self.code == 0 {
                    self.flush();
                    let at = self.out.len();
                    self.open_marker(marker);
                    Some(Open::Emphasis { marker, at })
                } else {
                    None
                }
            }
            "code" | "kbd" | "samp" | "tt" => {
                if md && self.pre == 0 {
                    self.open_marker("`");
                }
                self.code += 1;
                Some(Open::Code)
            }
            "a" => {
                let href = attr(attrs, "href").and_then(|h| absolutize(&h, self.base));
                let inside_link = self
                    .stack
                    .iter()
                    .any(|(_, o)| matches!(o, Open::Link { .. }));
                let href = href.filter(|_| md && !inside_link);
                self.flush();
                let at = self.out.len();
                if href.is_some() {
                    self.open_marker("[");
                }
                Some(Open::Link { href, at })
            }
            "ul" | "ol" | "menu" | "dir" => {
                let nested = self.stack.iter().any(|(_, o)| *o == Open::Item);
                self.block(if nested { 1 } else { 2 });
                let start = attr(attrs, "start")
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(1);
                self.lists.push(ListState {
                    ordered: name == "ol",
                    next: start,
                });
                Some(Open::List)
            }
            "li" => {
                if let Some(pos) = self
                    .stack
                    .iter()
                    .rposition(|(_, o)| *o == Open::Item || *o == Open::List)
                    && self.stack[pos].1 == Open::Item
                {
                    self.close_to(pos);
                }
                self.block(1);
                let marker = match self.lists.last_mut() {
                    Some(l) if l.ordered => {
                        let m = format!("{}. ", l.next);
                        l.next += 1;
                        m
                    }
                    _ => "- ".to_owned(),
                };
                self.commit_breaks();
                self.prefixes
                    .push(if marker.len() > 2 { "   " } else { "  " });
                self.marker = Some(marker);
                Some(Open::Item)
            }
            "blockquote" => {
                self.block(2);
                self.commit_breaks();
                self.prefixes.push(if md { "> " } else { "  " });
                Some(Open::Quote)
            }
            "pre" | "listing" | "plaintext" => {
                self.block(2);
                if md {
                    self.flush();
                    self.out.push_str("```\n");
                    self.line_start = true;
                }
                self.pre += 1;
                Some(Open::Pre)
            }
            "table" => {
                self.block(2);
                self.first_row_cells = None;
                self.rows = 0;
                Some(Open::Table)
            }
            "tr" => {
                if let Some(pos) = self.stack.iter().rposition(|(_, o)| *o == Open::Row) {
                    self.close_to(pos);
                }
                self.block(1);
                self.cell_in_row = 0;
                Some(Open::Row)
            }
            "td" | "th" => {
                if let Some(pos) = self.stack.iter().rposition(|(_, o)| *o == Open::Cell) {
                    self.close_to(pos);
                }
                self.open_marker(if self.cell_in_row == 0 { "| " } else { " | " });
                self.cell_in_row += 1;
                self.cells += 1;
                Some(Open::Cell)
            }
            "p" | "div" | "section" | "article" | "header" | "footer" | "main" | "aside"
            | "figure" | "figcaption" | "address" | "details" | "summary" | "dl" | "dt" | "dd"
            | "form" | "fieldset" | "center" | "nav" | "caption" | "hgroup" | "body" | "html"
            | "legend" | "picture" | "noscript" => {
                self.block(if matches!(name, "dt" | "dd" | "div") {
                    1
                } else {
                    2
                });
                Some(Open::Block)
            }
            _ => None,
        };
        if let Some(open) = open {
            if self_closing {
                self.close(open);
            } else {
                if open == Open::Skip {
                    self.skip += 1;
                }
                self.stack.push((name.to_owned(), open));
            }
        }
        Ok(())
    }

    fn end(&mut self, name: &str) {
        if let Some(pos) = self.stack.iter().rposition(|(n, _)| n == name) {
            self.close_to(pos);
        } else if name == "p" || name == "br" {
            self.block(if name == "p" { 2 } else { 1 });
        }
    }

    fn close_to(&mut self, pos: usize) {
        while self.stack.len() > pos {
            if let Some((_, open)) = self.stack.pop() {
                self.close(open);
            }
        }
    }

    fn close(&mut self, open: Open) {
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
                if self.out.len() <= at + marker.len()
                    || self.out[at + marker.len()..].trim().is_empty()
                {
                    self.out.truncate(at);
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
                        self.out.truncate(at);
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

    fn image(&mut self, attrs: &str) {
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
        let alt = super::text::collapse_ws(&alt).replace(['[', ']'], "");
        self.inline_marker(&format!("![{alt}]({})", md_url(&url)));
    }
}

fn md_url(url: &str) -> Cow<'_, str> {
    if url.contains([' ', '(', ')', '<', '>']) {
        Cow::Owned(format!("<{}>", url.replace('<', "%3C").replace('>', "%3E")))
    } else {
        Cow::Borrowed(url)
    }
}

/// Escapes markdown syntax in a word of text.
fn escape_md(word: &str, line_start: bool, out: &mut String) {
    if line_start {
        let b = word.as_bytes();
        let numbered = b.len() >= 2
            && b[..b.len() - 1].iter().all(u8::is_ascii_digit)
            && matches!(b[b.len() - 1], b'.' | b')');
        if matches!(word, "-" | "+" | "*") || word.starts_with('#') || word.starts_with('>') {
            out.push('\\');
        } else if numbered {
            out.push_str(&word[..word.len() - 1]);
            out.push('\\');
            out.push_str(&word[word.len() - 1..]);
            return;
        }
    }
    if !word.contains(['\\', '*', '_', '`', '[', ']', '<']) {
        out.push_str(word);
        return;
    }
    let chars: Vec<char> = word.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let intraword = |i: usize| {
            i > 0
                && i + 1 < chars.len()
                && chars[i - 1].is_alphanumeric()
                && chars[i + 1].is_alphanumeric()
        };
        match c {
            '_' if intraword(i) => out.push('_'),
            '\\' | '*' | '_' | '`' | '[' | ']' | '<' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
}

/// Re-serializes `html` without scripts, styles, event handlers or `javascript:` URLs,
/// with links and images made absolute.
pub(crate) fn sanitize_html(html: &str, base: Option<&Url>) -> String {
    let mut out = String::with_capacity(html.len());
    let mut skip = 0usize;
    for tok in Tokenizer::new(html) {
        match tok {
            Token::Text(t) if skip == 0 => out.push_str(t),
            Token::Start {
                name,
                attrs,
                self_closing,
            } => {
                let dropped = matches!(
                    name.as_ref(),
                    "script"
                        | "style"
                        | "iframe"
                        | "object"
                        | "embed"
                        | "form"
                        | "input"
                        | "button"
                        | "link"
                        | "meta"
                        | "base"
                        | "frame"
                        | "frameset"
                        | "applet"
                        | "noscript"
                        | "template"
                        | "textarea"
                        | "select"
                );
                if skip > 0 || dropped {
                    if matches!(
                        name.as_ref(),
                        "object" | "form" | "template" | "select" | "applet"
                    ) && !self_closing
                    {
                        skip += 1;
                    }
                    continue;
                }
                out.push('<');
                out.push_str(&name);
                for (k, v) in attributes(attrs) {
                    if k.starts_with("on")
                        || k == "style"
                        || k.is_empty()
                        || !k.bytes().all(|b| {
                            b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b':'
                        })
                    {
                        continue;
                    }
                    let v = if matches!(k.as_ref(), "href" | "src" | "poster" | "cite" | "action") {
                        match absolutize(&v, base) {
                            Some(u) => Cow::Owned(u),
                            None => continue,
                        }
                    } else {
                        v
                    };
                    out.push(' ');
                    out.push_str(&k);
                    out.push_str("=\"");
                    escape_html(&v, &mut out);
                    out.push('"');
                }
                out.push_str(if self_closing { " />" } else { ">" });
            }
            Token::End(name) => {
                if matches!(
                    name.as_ref(),
                    "object" | "form" | "template" | "select" | "applet"
                ) {
                    skip = skip.saturating_sub(1);
                    continue;
                }
                if skip == 0
                    && !matches!(
                        name.as_ref(),
                        "script" | "style" | "iframe" | "noscript" | "textarea"
                    )
                {
                    out.push_str("</");
                    out.push_str(&name);
                    out.push('>');
                }
            }
            Token::Text(_) | Token::RawText(_) => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
