//! HTML bodies rendered as markdown, plain text, one-line text, or sanitized HTML.
//!
//! One pass over [`Tokenizer`] tokens; links and images are made absolute against the
//! item's base. Script and style bodies never reach any output.

mod sanitize;
mod tags;
mod writer;

use std::borrow::Cow;

use url::Url;

use super::html::{Token, Tokenizer};
use super::text::unescape_html;
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

/// Elements that may not carry an end tag.
pub(crate) fn is_void(name: &str) -> bool {
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

pub(super) fn is_inline(name: &str) -> bool {
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

pub(super) fn md_url(url: &str) -> Cow<'_, str> {
    if url.contains([' ', '(', ')', '<', '>']) {
        Cow::Owned(format!("<{}>", url.replace('<', "%3C").replace('>', "%3E")))
    } else {
        Cow::Borrowed(url)
    }
}

/// Escapes markdown syntax in a word of text.
pub(super) fn escape_md(word: &str, line_start: bool, out: &mut String) {
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

#[cfg(test)]
#[path = "../render_tests.rs"]
mod tests;
