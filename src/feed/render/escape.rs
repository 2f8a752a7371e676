//! CommonMark escaping: text that no renderer reads as markup, code spans and fences that
//! hold whatever code they are given, and link destinations that stay one destination.

/// Escapes one word of text (no whitespace inside) for markdown. `line_start`: the word
/// begins a line, where `#`, `>`, `-`, `+`, `=`, `~` and `1.` start blocks. `in_cell`: the
/// word is inside a table cell, where `|` ends the cell.
pub(super) fn escape_word(word: &str, line_start: bool, in_cell: bool, out: &mut String) {
    let mut rest = word;
    if line_start {
        let b = word.as_bytes();
        let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 && digits + 1 == b.len() && matches!(b[digits], b'.' | b')') {
            out.push_str(&word[..digits]);
            out.push('\\');
            out.push_str(&word[digits..]);
            return;
        }
        if let Some(&first) = b.first()
            && matches!(first, b'#' | b'>' | b'-' | b'+' | b'=' | b'~')
        {
            out.push('\\');
            out.push(first as char);
            rest = &word[1..];
        }
    }
    if !may_need_escaping(rest) {
        out.push_str(rest);
        return;
    }
    let bytes = rest.as_bytes();
    for (i, c) in rest.char_indices() {
        let prev = rest[..i].chars().next_back();
        let next = rest[i + c.len_utf8()..].chars().next();
        let escape = match c {
            '\\' | '*' | '`' | '[' | ']' | '<' => true,
            // snake_case stays readable: an underscore between letters is not emphasis.
            '_' => {
                !(prev.is_some_and(char::is_alphanumeric)
                    && next.is_some_and(char::is_alphanumeric))
            }
            '~' => prev.is_none() || next.is_none() || prev == Some('~') || next == Some('~'),
            '&' => looks_like_reference(&bytes[i + 1..]),
            '|' => in_cell,
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The bytes `escape_word` may have to escape (all ASCII, so a byte scan finds them).
const MAY_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let specials = b"\\*_`[]<&~|";
    let mut i = 0;
    while i < specials.len() {
        t[specials[i] as usize] = true;
        i += 1;
    }
    t
};

/// Whether `s` holds a byte that a word may need escaped; without one, a word of `s` that
/// does not start a line is written as it is.
pub(super) fn may_need_escaping(s: &str) -> bool {
    s.bytes().any(|b| MAY_ESCAPE[b as usize])
}

/// Whether the bytes after a `&` would be read as a character reference (`&amp;`,
/// `&#60;`, `&#x3c;`).
fn looks_like_reference(after: &[u8]) -> bool {
    let body = after
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'#')
        .count();
    body > 0 && after.get(body) == Some(&b';')
}

/// Escapes link text or alt text that sits between `[` and `]`, on one line.
pub(super) fn escape_label(text: &str, in_cell: bool, out: &mut String) {
    let mut first = true;
    for word in text.split_ascii_whitespace() {
        if !first {
            out.push(' ');
        }
        escape_word(word, false, in_cell, out);
        first = false;
    }
}

/// The longest run of the ASCII byte `c` in `s`.
pub(super) fn longest_run(s: &str, c: u8) -> usize {
    let (mut best, mut run) = (0, 0);
    for &x in s.as_bytes() {
        if x == c {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

/// Wraps the code-span content that starts at `at` in `out`, the CommonMark way: a
/// backtick string longer than any run inside, padded with a space when the content starts
/// or ends with a backtick (or with a space at both ends, which a renderer would strip).
pub(super) fn wrap_code_span(out: &mut String, at: usize) {
    let content = &out[at..];
    let ticks = longest_run(content, b'`') + 1;
    let pad = content.starts_with('`')
        || content.ends_with('`')
        || (content.starts_with(' ') && content.ends_with(' '));
    let mut head = backticks(ticks);
    if pad {
        head.push(' ');
        out.push(' ');
    }
    out.insert_str(at, &head);
    out.push_str(&head[..ticks]);
}

/// `n` backticks.
fn backticks(n: usize) -> String {
    let mut s = String::with_capacity(n + 1);
    s.extend(std::iter::repeat_n('`', n));
    s
}

/// The opening fence for a code block holding `code`: longer than any backtick run in it.
pub(super) fn fence_for(code: &str) -> String {
    backticks((longest_run(code, b'`') + 1).max(3))
}

/// A language name from a `class` attribute (`language-rust`, `lang-js`), reduced to the
/// characters an info string may carry.
pub(super) fn language_of(class: &str) -> Option<String> {
    class.split_ascii_whitespace().find_map(|c| {
        let lang = c
            .strip_prefix("language-")
            .or_else(|| c.strip_prefix("lang-"))?;
        let lang: String = lang
            .chars()
            .filter(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '+' | '#' | '-' | '_' | '.'))
            .collect();
        (!lang.is_empty()).then_some(lang)
    })
}

/// A link or image destination: one token that no renderer splits or reads as markup.
/// Spaces, angle brackets and control characters are percent-encoded; parentheses,
/// backslashes and pipes are backslash-escaped.
pub(super) fn destination(s: &str) -> String {
    let plain = |b: u8| {
        (0x20..0x7f).contains(&b)
            && !matches!(
                b,
                b'(' | b')' | b'\\' | b'|' | b' ' | b'<' | b'>' | b'"' | b'`'
            )
    };
    if s.bytes().all(plain) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '(' | ')' | '\\' | '|' => {
                out.push('\\');
                out.push(c);
            }
            ' ' | '<' | '>' | '"' | '`' => out.push_str(&format!("%{:02X}", c as u32)),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Plain text as markdown: every word escaped, paragraphs kept, single line breaks hard.
pub(crate) fn text_to_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut blank = false;
    for line in text.trim().lines() {
        if line.trim().is_empty() {
            blank = true;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank { "\n\n" } else { "\\\n" });
        }
        blank = false;
        for (i, word) in line.split_ascii_whitespace().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            escape_word(word, i == 0, false, &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn esc(word: &str, line_start: bool) -> String {
        let mut s = String::new();
        escape_word(word, line_start, false, &mut s);
        s
    }

    #[test]
    fn line_start_markers_are_escaped_once() {
        assert_eq!(esc("*", true), "\\*");
        assert_eq!(esc("-", true), "\\-");
        assert_eq!(esc("---", true), "\\---");
        assert_eq!(esc("#tag", true), "\\#tag");
        assert_eq!(esc("12.", true), "12\\.");
        assert_eq!(esc("#tag", false), "#tag");
        assert_eq!(esc("<img", false), "\\<img");
        assert_eq!(esc("&amp;", false), "\\&amp;");
        assert_eq!(esc("AT&T", false), "AT&T");
        assert_eq!(esc("snake_case", false), "snake_case");
        assert_eq!(esc("_em_", false), "\\_em\\_");
        assert_eq!(esc("~/.config", false), "\\~/.config");
        assert_eq!(esc("a~b", false), "a~b");
    }

    #[test]
    fn code_spans_outgrow_their_backticks() {
        let mut s = String::from("x a``b");
        wrap_code_span(&mut s, 2);
        assert_eq!(s, "x ```a``b```");
        let mut s = String::from("`tick");
        wrap_code_span(&mut s, 0);
        assert_eq!(s, "`` `tick ``");
        assert_eq!(fence_for("a\n```\nb"), "````");
        assert_eq!(fence_for("plain"), "```");
    }

    #[test]
    fn destinations_stay_one_token() {
        let u = Url::parse("https://e.com/a_(b)?q=x|y").unwrap();
        assert_eq!(destination(u.as_str()), "https://e.com/a_\\(b\\)?q=x\\|y");
        let u = Url::parse("mailto:a b@c").unwrap();
        assert!(!destination(u.as_str()).contains(' '));
    }

    #[test]
    fn languages_come_from_classes() {
        assert_eq!(language_of("hl language-rust").as_deref(), Some("rust"));
        assert_eq!(language_of("lang-c++").as_deref(), Some("c++"));
        assert_eq!(language_of("language-`x`"), Some("x".into()));
        assert_eq!(language_of("plain"), None);
    }

    #[test]
    fn plain_text_keeps_its_lines() {
        assert_eq!(text_to_markdown("a <b>\nc\n\n# d"), "a \\<b>\\\nc\n\n\\# d");
    }
}
