//! Images, embedded media and link destinations in the writer's output: only `http`,
//! `https` and `mailto` URLs (resolved against the base) are written as links.

use super::escape::{destination, escape_label};
use super::writer::{Open, Writer};
use crate::html::attributes;
use crate::text::collapse_ws;
use crate::urls::content_link_string;

impl<'h> Writer<'_, 'h> {
    /// A link or image destination in rendered markdown, or `None` when the URL may not be
    /// linked (a scheme other than http, https or mailto; relative with no base).
    pub(super) fn dest(&self, href: &str) -> Option<(String, String)> {
        let url = content_link_string(href, self.base)?;
        Some((destination(&url), url))
    }

    pub(super) fn image(&mut self, attrs: &str) {
        let mut src = None;
        let mut lazy = None;
        let mut alt = String::new();
        for (name, value) in attributes(attrs) {
            match name.as_ref() {
                "src" => src = Some(value),
                "data-src" | "data-lazy-src" | "data-original" => lazy = Some(value),
                "alt" => alt = collapse_ws(&value),
                "width" | "height" if value.trim() == "1" || value.trim() == "0" => return,
                _ => {}
            }
        }
        if !self.md() {
            if !alt.is_empty() {
                self.flush();
                self.out.push('[');
                self.out.push_str(&alt);
                self.out.push(']');
            }
            return;
        }
        if self.pre > 0 || self.code > 0 {
            return;
        }
        let src = match (src, lazy) {
            (Some(s), Some(l)) if s.trim_start().starts_with("data:") => l,
            (Some(s), _) => s,
            (None, Some(l)) => l,
            (None, None) => return,
        };
        let Some((dest, _)) = self.dest(&src) else {
            return;
        };
        self.flush();
        self.out.push_str("![");
        let in_cell = self.in_cell();
        escape_label(&alt, in_cell, &mut self.out);
        self.out.push_str("](");
        self.out.push_str(&dest);
        self.out.push(')');
    }

    /// An inline link to embedded media (`[video](…)`), once per URL of one media element.
    pub(super) fn media_link(&mut self, label: &str, src: Option<&str>) {
        if !self.md() || self.pre > 0 || self.code > 0 || self.inline_link_open() {
            return;
        }
        let Some((dest, url)) = src.and_then(|s| self.dest(s)) else {
            return;
        };
        if self.media.contains(&url) {
            return;
        }
        self.media.push(url);
        self.flush();
        self.out.push('[');
        self.out.push_str(label);
        self.out.push_str("](");
        self.out.push_str(&dest);
        self.out.push(')');
        self.space = true;
    }

    pub(super) fn inline_link_open(&self) -> bool {
        self.stack
            .iter()
            .any(|(_, o)| matches!(o, Open::Link { dest: Some(_), .. }))
    }
}
