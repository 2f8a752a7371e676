//! Sanitized HTML: the body re-serialized without what must never pass.

use std::borrow::Cow;

use url::Url;

use super::absolutize;
use crate::feed::html::{Token, Tokenizer, attributes};
use crate::feed::text::escape_html;

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
