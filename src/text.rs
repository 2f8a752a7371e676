//! Small text helpers shared by the parsers: entity references and whitespace.

use std::borrow::Cow;

/// Resolves the reference `&name;` (name without `&` and `;`): character references,
/// the five XML entities and every HTML named entity. `None` for an unknown name.
pub(crate) fn resolve_entity(name: &str) -> Option<Cow<'static, str>> {
    if let Some(num) = name.strip_prefix('#') {
        let code = if let Some(hex) = num.strip_prefix('x').or_else(|| num.strip_prefix('X')) {
            u32::from_str_radix(hex, 16).ok()?
        } else {
            num.parse::<u32>().ok()?
        };
        let c = match code {
            0 => '\u{FFFD}',
            // Windows-1252 code points sent as numeric references (common in old feeds).
            0x80..=0x9F => windows_1252_c1(code).unwrap_or('\u{FFFD}'),
            _ => char::from_u32(code).unwrap_or('\u{FFFD}'),
        };
        return Some(Cow::Owned(c.to_string()));
    }
    let simple = match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        _ => "",
    };
    if !simple.is_empty() {
        return Some(Cow::Borrowed(simple));
    }
    let key = format!("&{name};");
    htmlize::ENTITIES
        .get(key.as_bytes())
        .and_then(|v| std::str::from_utf8(v).ok())
        .map(Cow::Borrowed)
}

fn windows_1252_c1(code: u32) -> Option<char> {
    let byte = [code as u8];
    let (decoded, _, had_errors) = encoding_rs::WINDOWS_1252.decode(&byte);
    if had_errors {
        None
    } else {
        decoded.chars().next()
    }
}

/// Decodes HTML character references in text (liberal: unknown references stay as is).
pub(crate) fn unescape_html(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    htmlize::unescape(s)
}

/// Decodes character references in an attribute value.
pub(crate) fn unescape_attr(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    htmlize::unescape_attribute(s)
}

/// Collapses every run of ASCII whitespace to one space and trims the ends (a no-break
/// space is content, as feed readers keep it).
pub(crate) fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_ascii_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `Some(trimmed)` unless the text is empty after trimming.
pub(crate) fn non_empty(s: impl AsRef<str>) -> Option<String> {
    let t = s.as_ref().trim();
    (!t.is_empty()).then(|| t.to_owned())
}

/// Escapes text for inclusion in HTML.
pub(crate) fn escape_html(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
}

/// `n` and its noun, singular or plural: `1 feed`, `2 feeds`, `0 feeds`.
pub(crate) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_cover_xml_html_and_numeric_forms() {
        assert_eq!(resolve_entity("amp").as_deref(), Some("&"));
        assert_eq!(resolve_entity("nbsp").as_deref(), Some("\u{a0}"));
        assert_eq!(resolve_entity("eacute").as_deref(), Some("é"));
        assert_eq!(resolve_entity("#8217").as_deref(), Some("\u{2019}"));
        assert_eq!(resolve_entity("#x2014").as_deref(), Some("\u{2014}"));
        assert_eq!(resolve_entity("#146").as_deref(), Some("\u{2019}"));
        assert_eq!(resolve_entity("bogus"), None);
    }

    #[test]
    fn counts_are_singular_or_plural() {
        assert_eq!(counted(1, "feed"), "1 feed");
        assert_eq!(counted(0, "feed"), "0 feeds");
        assert_eq!(counted(2, "page"), "2 pages");
    }

    #[test]
    fn unescaping_is_liberal() {
        assert_eq!(
            unescape_html("AT&T &amp; &eacute; &nope;"),
            "AT&T & é &nope;"
        );
        assert_eq!(collapse_ws("  a \n\t b  "), "a b");
    }
}
