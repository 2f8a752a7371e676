//! Start tags: what each element does to the writer.

use std::borrow::Cow;

use super::escape::language_of;
use super::writer::{ListState, Open, Writer};
use super::{MAX_NESTING, Unconvertible, is_skipped};
use crate::html::{attr, is_void};

impl<'h> Writer<'_, 'h> {
    pub(super) fn start(
        &mut self,
        tag: Cow<'h, str>,
        attrs: &str,
        self_closing: bool,
    ) -> Result<(), Unconvertible> {
        let name: &str = &tag;
        if self.skip > 0 {
            if !is_void(name) && !self_closing {
                self.push(tag, Open::Skip);
            }
            return Ok(());
        }
        if self.prefixes.len() > MAX_NESTING || self.stack.len() > MAX_NESTING * 16 {
            return Err(Unconvertible("the HTML is nested too deeply"));
        }
        let open = if self.pre > 0 {
            self.start_in_pre(name, attrs)
        } else {
            self.start_element(name, attrs)
        };
        if let Some(open) = open {
            if self_closing {
                self.close(open);
            } else {
                self.push(tag, open);
            }
        }
        Ok(())
    }

    /// Inside preformatted text only line breaks, code languages and skipped elements count.
    fn start_in_pre(&mut self, name: &str, attrs: &str) -> Option<Open> {
        match name {
            "br" => {
                self.pre_fresh = false;
                self.pre_newline();
                None
            }
            "img" if !self.md() => {
                self.image(attrs);
                None
            }
            "code" => {
                let class = attr(attrs, "class");
                if let Some(lang) = class.as_deref().and_then(language_of)
                    && let Some((_, Open::Pre { lang: l })) = self.stack.last_mut()
                    && l.is_none()
                {
                    *l = Some(lang);
                }
                self.code += 1;
                Some(Open::Code { at: None })
            }
            _ if is_skipped(name) => Some(Open::Skip),
            _ => None,
        }
    }

    fn start_element(&mut self, name: &str, attrs: &str) -> Option<Open> {
        let md = self.md();
        let inline = self.inline > 0;
        match name {
            "br" => {
                self.line_break();
                None
            }
            "hr" => {
                self.block(2);
                if md && !inline {
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
            "iframe" | "embed" => {
                let label = format!("embedded {name}");
                self.media_link(&label, attr(attrs, "src").as_deref());
                None
            }
            "video" | "audio" => {
                self.block(if md { 2 } else { 1 });
                self.media.clear();
                self.media_link(name, attr(attrs, "src").as_deref());
                Some(Open::Media(name == "video"))
            }
            "source" => {
                let media = self.stack.iter().rev().find_map(|(_, o)| match o {
                    Open::Media(video) => Some(*video),
                    _ => None,
                });
                if let Some(video) = media {
                    let label = if video { "video" } else { "audio" };
                    self.media_link(label, attr(attrs, "src").as_deref());
                }
                None
            }
            _ if is_void(name) => None,
            _ if is_skipped(name) => Some(Open::Skip),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.block(2);
                let marked = md && !inline;
                if marked {
                    let level = (name.as_bytes()[1] - b'0') as usize;
                    self.lead = Some(format!("{} ", "#".repeat(level)));
                }
                Some(Open::Heading { marked })
            }
            "b" | "strong" | "i" | "em" | "cite" | "dfn" | "del" | "s" | "strike" => {
                let marker = match name {
                    "b" | "strong" => "**",
                    "del" | "s" | "strike" => "~~",
                    _ => "*",
                };
                if md && self.code == 0 {
                    self.flush();
                    let at = self.out.len();
                    self.open_marker(marker);
                    Some(Open::Emphasis { marker, at })
                } else {
                    None
                }
            }
            "code" | "kbd" | "samp" | "tt" => Some(self.open_code()),
            "a" => {
                let dest = if md && self.code == 0 && !self.inline_link_open() {
                    attr(attrs, "href").and_then(|h| self.dest(&h).map(|(d, _)| d))
                } else {
                    None
                };
                self.flush();
                let at = self.out.len();
                if dest.is_some() {
                    self.open_marker("[");
                }
                Some(Open::Link { dest, at })
            }
            "ul" | "ol" | "menu" | "dir" if !inline => {
                let nested = self.stack.iter().any(|(_, o)| *o == Open::Item);
                self.block(if nested { 1 } else { 2 });
                let start = attr(attrs, "start")
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(1);
                self.lists.push(ListState {
                    ordered: name == "ol",
                    next: start,
                });
                Some(Open::List(nested))
            }
            "li" if !inline => {
                if let Some(pos) = self
                    .stack
                    .iter()
                    .rposition(|(_, o)| matches!(o, Open::Item | Open::List(_)))
                    && self.stack[pos].1 == Open::Item
                {
                    self.close_to(pos);
                }
                self.block(1);
                let marker = match self.lists.last_mut() {
                    Some(l) if l.ordered => {
                        let m = format!("{}. ", l.next);
                        l.next = l.next.saturating_add(1);
                        m
                    }
                    _ => "- ".to_owned(),
                };
                self.commit_breaks();
                self.prefixes.push(" ".repeat(marker.len()));
                self.marker = Some(marker);
                Some(Open::Item)
            }
            "blockquote" if !inline => {
                self.block(2);
                self.commit_breaks();
                self.prefixes.push(if md { "> " } else { "  " }.to_owned());
                Some(Open::Quote)
            }
            "pre" | "listing" | "plaintext" if inline => Some(self.open_code()),
            "pre" | "listing" | "plaintext" => {
                self.block(2);
                self.pre += 1;
                self.pre_fresh = true;
                self.fence_at = None;
                let lang = attr(attrs, "class").as_deref().and_then(language_of);
                Some(Open::Pre { lang })
            }
            "table" if !inline && self.table.is_none() => {
                self.block(2);
                self.table = Some(Default::default());
                Some(Open::Table)
            }
            "tr" => {
                if let Some(pos) = self.in_table_scope(&["tr", "td", "th"]) {
                    self.close_to(pos);
                }
                if self.laying_out_table() {
                    self.open_row();
                    None
                } else {
                    self.block(1);
                    Some(Open::Block)
                }
            }
            "td" | "th" => {
                if let Some(pos) = self.in_table_scope(&["td", "th"]) {
                    self.close_to(pos);
                }
                if self.laying_out_table() {
                    if self.in_table_scope(&["tr"]).is_none() {
                        self.open_row();
                    }
                    self.open_cell(attr(attrs, "colspan").as_deref());
                    Some(Open::Cell)
                } else {
                    self.space = true;
                    Some(Open::Block)
                }
            }
            "thead" | "tbody" | "tfoot" | "colgroup" => None,
            "p" | "div" | "section" | "article" | "header" | "footer" | "main" | "aside"
            | "figure" | "figcaption" | "address" | "details" | "summary" | "dl" | "dt" | "dd"
            | "form" | "fieldset" | "center" | "nav" | "caption" | "hgroup" | "body" | "html"
            | "legend" | "picture" | "noscript" | "table" | "ul" | "ol" | "menu" | "dir" | "li"
            | "blockquote" => {
                let soft = !md && matches!(name, "dt" | "dd" | "div" | "li");
                self.block(if soft { 1 } else { 2 });
                Some(Open::Block)
            }
            _ => None,
        }
    }

    /// Code: in markdown, a code span whose delimiters are chosen when it closes.
    fn open_code(&mut self) -> Open {
        let at = if self.md() && self.code == 0 {
            self.flush();
            self.glued = true;
            Some(self.out.len())
        } else {
            None
        };
        self.code += 1;
        Open::Code { at }
    }
}
