//! Start tags: what each element does to the writer.

use super::writer::{ListState, Open, Writer};
use super::{MAX_NESTING, Unconvertible, absolutize, is_skipped, is_void, md_url};
use crate::feed::html::attr;

impl Writer<'_> {
    pub(super) fn start(
        &mut self,
        name: &str,
        attrs: &str,
        self_closing: bool,
    ) -> Result<(), Unconvertible> {
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
}
