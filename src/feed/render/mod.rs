//! HTML bodies rendered as markdown, plain text, one-line text, or sanitized HTML.
//!
//! Markdown and text come from one pass over [`Tokenizer`] tokens; links and images are
//! made absolute against the item's base. Sanitized HTML comes from ammonia. Script and
//! style bodies never reach any output.

mod cells;
mod escape;
mod media;
mod sanitize;
mod table;
mod tags;
mod writer;

use url::Url;

use crate::html::{Token, Tokenizer};
use crate::text::unescape_html;
pub(crate) use escape::text_to_markdown;
pub(crate) use sanitize::sanitize_html;
use writer::Writer;

/// The conversion gave up (absurd nesting or output growth); the caller falls back to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unconvertible(pub &'static str);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Markdown,
    Text,
}

/// Deepest list/quote nesting rendered before giving up.
pub(super) const MAX_NESTING: usize = 64;

/// Renders `html` as CommonMark (with GFM tables and strikethrough) that holds no raw HTML.
pub(crate) fn to_markdown(html: &str, base: Option<&Url>) -> Result<String, Unconvertible> {
    Writer::new(Style::Markdown, base, html.len()).run(html)
}

/// Renders `html` as readable plain text (paragraphs, list bullets, image alt text in
/// brackets, tables in columns, no markup).
pub(crate) fn to_text(html: &str, base: Option<&Url>) -> Result<String, Unconvertible> {
    Writer::new(Style::Text, base, html.len()).run(html)
}

/// The text of `html` on one line: tags dropped, entities decoded, whitespace collapsed.
pub(crate) fn to_plain(html: &str) -> String {
    if !html.contains('<') && !html.contains('&') {
        return crate::text::collapse_ws(html);
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
pub(super) fn is_skipped(name: &str) -> bool {
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

#[cfg(test)]
mod tests;
