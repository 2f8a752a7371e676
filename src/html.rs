//! A small, fast, forgiving HTML tokenizer for feed bodies (rendering) and pages (discovery).
//!
//! It never fails: anything that is not a well-formed tag is text. The contents of
//! `<script>`, `<style>` and the other raw-text elements come out as [`Token::RawText`],
//! which every renderer drops.

use std::borrow::Cow;

use crate::text::unescape_attr;

/// One token of an HTML fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    /// Character data, still escaped (decode with `unescape_html`).
    Text(&'a str),
    /// A start tag: lowercased name, raw attribute text, whether it ended in `/>`.
    Start {
        name: Cow<'a, str>,
        attrs: &'a str,
        self_closing: bool,
    },
    /// An end tag, lowercased.
    End(Cow<'a, str>),
    /// The body of a raw-text element (`script`, `style`, ...), never rendered.
    RawText(&'a str),
}

/// Elements whose content is raw text up to the matching end tag.
fn is_raw_text(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "textarea" | "xmp" | "iframe" | "noembed" | "noframes" | "title"
    )
}

/// An iterator of tokens over an HTML fragment.
pub(crate) struct Tokenizer<'a> {
    src: &'a str,
    pos: usize,
    pending_raw: Option<Cow<'a, str>>,
    /// `<![CDATA[` reads as HTML reads it (a bogus comment up to the next `>`) rather than
    /// as a CDATA section (text up to `]]>`, as in SVG, MathML and feeds).
    cdata_is_comment: bool,
    /// Where the last tag returned starts (its `<`).
    tag_start: usize,
    /// Comments, declarations and bogus comments passed over so far (each a node a tree
    /// builder builds).
    skipped: usize,
}

impl<'a> Tokenizer<'a> {
    /// Tokenizes `src`.
    pub fn new(src: &'a str) -> Self {
        Tokenizer {
            src,
            pos: 0,
            pending_raw: None,
            cdata_is_comment: false,
            tag_start: 0,
            skipped: 0,
        }
    }

    /// How many comments, declarations and bogus comments were passed over so far.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Where the last start or end tag returned starts in the source (its `<`).
    pub fn tag_start(&self) -> usize {
        self.tag_start
    }

    /// Reads what follows as SVG or MathML content (`foreign`: a CDATA section is text)
    /// or as HTML (`<![CDATA[` is a bogus comment up to the next `>`).
    pub fn set_foreign(&mut self, foreign: bool) {
        self.cdata_is_comment = !foreign;
    }

    /// Reads the content of the raw-text element whose start tag was just returned as
    /// markup after all (an SVG `<style>` or `<title>` is an element like any other).
    pub fn not_raw(&mut self) {
        self.pending_raw = None;
    }

    /// The byte offset in the source just past the last token returned.
    pub fn offset(&self) -> usize {
        self.pos
    }

    fn raw_text(&mut self, name: &str) -> Token<'a> {
        let rest = &self.src[self.pos..];
        let bytes = rest.as_bytes();
        let mut i = 0;
        while let Some(off) = rest[i..].find("</") {
            let at = i + off;
            let after = &bytes[at + 2..];
            if after.len() >= name.len()
                && after[..name.len()].eq_ignore_ascii_case(name.as_bytes())
            {
                let next = after.get(name.len()).copied();
                if next.is_none_or(|b| b == b'>' || b == b'/' || is_space(b)) {
                    self.pos += at;
                    return Token::RawText(&rest[..at]);
                }
            }
            i = at + 2;
        }
        self.pos = self.src.len();
        Token::RawText(rest)
    }
}

fn lower(name: &str) -> Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// Whether `b` is whitespace to the HTML tokenizer (a carriage return is read as a line feed).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r')
}

/// Where the tag whose name runs on from `from` ends (its `>`), and whether it is
/// self-closing, read as the HTML tokenizer reads a tag: the name runs to whitespace, `/` or
/// `>`; a quote opens a value only right after the `=` that follows an attribute's name
/// (anywhere else it is part of a name or of an unquoted value); `/` closes the tag only
/// right before its `>`. `None`: the tag runs to the end of the source.
fn tag_end(bytes: &[u8], from: usize) -> Option<(usize, bool)> {
    let gt = from + memchr::memchr(b'>', &bytes[from..])?;
    let seg = &bytes[from..gt];
    // Most tags have neither values nor quotes: their first `>` ends them.
    if !seg.iter().any(|&b| matches!(b, b'=' | b'"' | b'\'')) {
        return Some((gt, seg.last() == Some(&b'/')));
    }
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Name,
        SelfClosing,
        BeforeAttr,
        Attr,
        AfterAttr,
        BeforeValue,
        Quoted(u8),
        AfterQuoted,
        Unquoted,
    }
    let mut s = S::Name;
    let mut i = from;
    while i < bytes.len() {
        let b = bytes[i];
        s = match (s, b) {
            (S::Quoted(q), _) if b == q => S::AfterQuoted,
            (S::Quoted(q), _) => {
                // Everything up to the closing quote is the value.
                i += memchr::memchr(q, &bytes[i..])?;
                continue;
            }
            (S::SelfClosing, b'>') => return Some((i, true)),
            (_, b'>') => return Some((i, false)),
            (S::Name | S::Unquoted | S::AfterQuoted, _) if is_space(b) => S::BeforeAttr,
            (S::Name | S::AfterQuoted | S::BeforeAttr | S::Attr | S::AfterAttr, b'/') => {
                S::SelfClosing
            }
            (S::Name | S::Unquoted, _) => s,
            (S::SelfClosing | S::AfterQuoted, _) => {
                // Read again as the start of an attribute.
                s = S::BeforeAttr;
                continue;
            }
            (S::BeforeAttr | S::AfterAttr | S::BeforeValue, _) if is_space(b) => s,
            (S::Attr, _) if is_space(b) => S::AfterAttr,
            (S::Attr | S::AfterAttr, b'=') => S::BeforeValue,
            // A name may start with `=`, and holds quotes as any other character.
            (S::BeforeAttr | S::Attr | S::AfterAttr, _) => S::Attr,
            (S::BeforeValue, b'"' | b'\'') => S::Quoted(b),
            (S::BeforeValue, _) => S::Unquoted,
        };
        i += 1;
    }
    None
}

impl<'a> Iterator for Tokenizer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        if let Some(name) = self.pending_raw.take() {
            return Some(self.raw_text(&name));
        }
        let src = self.src;
        let bytes = src.as_bytes();
        // Comments and declarations produce no token: loop past them (never recurse, so a
        // long run of `<!---->` cannot grow the stack).
        loop {
            if self.pos >= src.len() {
                return None;
            }
            let start = self.pos;
            let lt = match next_markup(bytes, start) {
                None => {
                    self.pos = src.len();
                    return Some(Token::Text(&src[start..]));
                }
                Some(lt) if lt > start => {
                    self.pos = lt;
                    return Some(Token::Text(&src[start..lt]));
                }
                Some(lt) => lt,
            };
            let next = bytes.get(lt + 1).copied();
            if src[lt..].starts_with("<!--") {
                self.pos = comment_end(src, lt + 4);
                self.skipped += 1;
                continue;
            }
            if matches!(next, Some(b'!') | Some(b'?')) {
                if src[lt..].starts_with("<![CDATA[") && !self.cdata_is_comment {
                    let body_start = lt + 9;
                    let (body, after) = match src[body_start..].find("]]>") {
                        Some(e) => (&src[body_start..body_start + e], body_start + e + 3),
                        None => (&src[body_start..], src.len()),
                    };
                    self.pos = after;
                    return Some(Token::Text(body));
                }
                self.pos = src[lt..].find('>').map_or(src.len(), |e| lt + e + 1);
                self.skipped += 1;
                continue;
            }
            let is_end = next == Some(b'/');
            if is_end && !bytes.get(lt + 2).is_some_and(|b| b.is_ascii_alphabetic()) {
                // `</>` is nothing; `</` before anything else but a letter is a bogus comment
                // up to the next `>`, as an HTML tokenizer reads it.
                self.pos = src[lt..].find('>').map_or(src.len(), |e| lt + e + 1);
                self.skipped += 1;
                continue;
            }
            let name_start = lt + if is_end { 2 } else { 1 };
            // A tag's name runs to whitespace, `/` or `>` (`<p$>` names no paragraph).
            let mut name_end = name_start;
            while name_end < bytes.len()
                && !is_space(bytes[name_end])
                && !matches!(bytes[name_end], b'/' | b'>')
            {
                name_end += 1;
            }
            let Some((gt, self_closing)) = tag_end(bytes, name_end) else {
                // A tag cut off by the end of the body is dropped, as browsers drop it.
                self.pos = src.len();
                return None;
            };
            self.pos = gt + 1;
            self.tag_start = lt;
            let name = lower(&src[name_start..name_end]);
            if is_end {
                return Some(Token::End(name));
            }
            let inner = &src[name_end..gt];
            let attrs = if self_closing {
                &inner[..inner.len() - 1]
            } else {
                inner
            };
            // `/>` does not close an HTML element: `<title/>` starts a title like `<title>`.
            if is_raw_text(&name) {
                self.pending_raw = Some(name.clone());
            }
            return Some(Token::Start {
                name,
                attrs,
                self_closing,
            });
        }
    }
}

/// The position of the next `<` at `from` or after that opens markup (a tag, an end tag,
/// a comment or a declaration); any other `<` is text.
fn next_markup(bytes: &[u8], from: usize) -> Option<usize> {
    let mut scan = from;
    loop {
        // A token after a tag usually starts at the next tag: no search needed.
        let lt = if bytes.get(scan) == Some(&b'<') {
            scan
        } else {
            scan + memchr::memchr(b'<', &bytes[scan..])?
        };
        let is_markup = match bytes.get(lt + 1).copied() {
            Some(b) if b.is_ascii_alphabetic() => true,
            // `</` opens an end tag, `</>` (skipped) or a bogus comment: anything but the
            // end of the source.
            Some(b'/') => bytes.len() > lt + 2,
            Some(b'!') | Some(b'?') => true,
            _ => false,
        };
        if is_markup {
            return Some(lt);
        }
        scan = lt + 1;
    }
}

/// Where a comment whose text starts at `from` ends, as browsers read it: `<!-->` and
/// `<!--->` are empty comments, and `-->` or `--!>` closes one; unclosed, it runs to the end.
fn comment_end(src: &str, from: usize) -> usize {
    let rest = &src[from..];
    if rest.starts_with('>') {
        return from + 1;
    }
    if rest.starts_with("->") {
        return from + 2;
    }
    let bytes = rest.as_bytes();
    let mut i = 0;
    while let Some(off) = rest[i..].find("--") {
        let at = i + off + 2;
        match bytes.get(at) {
            Some(b'>') => return from + at + 1,
            Some(b'!') if bytes.get(at + 1) == Some(&b'>') => return from + at + 2,
            _ => i = at - 1,
        }
    }
    src.len()
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

/// Iterates `(name, value)` over raw attribute text; names lowercased, values decoded.
pub(crate) fn attributes(raw: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    let bytes = raw.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        let name_start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && !matches!(bytes[i], b'=' | b'/')
        {
            i += 1;
        }
        let name = lower(&raw[name_start..i]);
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= bytes.len() || bytes[j] != b'=' {
            return Some((name, Cow::Borrowed("")));
        }
        j += 1;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        let value = if j < bytes.len() && (bytes[j] == b'"' || bytes[j] == b'\'') {
            let q = bytes[j];
            let vstart = j + 1;
            let vend = bytes[vstart..]
                .iter()
                .position(|&b| b == q)
                .map_or(bytes.len(), |p| vstart + p);
            i = (vend + 1).min(bytes.len());
            &raw[vstart..vend]
        } else {
            let vstart = j;
            let mut vend = j;
            while vend < bytes.len() && !bytes[vend].is_ascii_whitespace() {
                vend += 1;
            }
            i = vend;
            &raw[vstart..vend]
        };
        Some((name, unescape_attr(value)))
    })
}

/// The value of attribute `name` in raw attribute text.
pub(crate) fn attr<'a>(raw: &'a str, name: &str) -> Option<Cow<'a, str>> {
    if raw.is_empty() {
        return None;
    }
    attributes(raw).find(|(n, _)| n == name).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Token<'_>> {
        Tokenizer::new(s).collect()
    }

    #[test]
    fn tags_text_and_comments() {
        let t = toks("<P class=x>Hi <b>there</b><!-- no --><br/>a < b</p>");
        assert_eq!(
            t,
            vec![
                Token::Start {
                    name: "p".into(),
                    attrs: " class=x",
                    self_closing: false
                },
                Token::Text("Hi "),
                Token::Start {
                    name: "b".into(),
                    attrs: "",
                    self_closing: false
                },
                Token::Text("there"),
                Token::End("b".into()),
                Token::Start {
                    name: "br".into(),
                    attrs: "",
                    self_closing: true
                },
                Token::Text("a < b"),
                Token::End("p".into()),
            ]
        );
    }

    #[test]
    fn script_and_style_bodies_are_raw() {
        let t = toks("<script>if (a < b) { x = '</div>'; }</script>ok<style>p{}</STYLE>");
        assert_eq!(t[1], Token::RawText("if (a < b) { x = '</div>'; }"));
        assert_eq!(t[3], Token::Text("ok"));
        assert_eq!(t[5], Token::RawText("p{}"));
    }

    #[test]
    fn attributes_are_parsed_forgivingly() {
        let raw = r#" href="/a?x=1&amp;y=2" data-x='q' checked src=img.png"#;
        let all: Vec<_> = attributes(raw).collect();
        assert_eq!(all[0].1, "/a?x=1&y=2");
        assert_eq!(all[1].1, "q");
        assert_eq!(all[2], ("checked".into(), "".into()));
        assert_eq!(attr(raw, "src").as_deref(), Some("img.png"));
        assert_eq!(attr("title=\"a > b\"", "title").as_deref(), Some("a > b"));
    }

    #[test]
    fn comments_end_where_browsers_end_them() {
        assert_eq!(
            toks("a<!-- x --!>b"),
            vec![Token::Text("a"), Token::Text("b")]
        );
        assert_eq!(toks("<!-->c"), vec![Token::Text("c")]);
        assert_eq!(toks("<!--->d"), vec![Token::Text("d")]);
        assert_eq!(toks("e<!-- open"), vec![Token::Text("e")]);
    }

    #[test]
    fn a_long_run_of_comments_does_not_grow_the_stack() {
        let src = "<!---->".repeat(200_000) + "end";
        assert_eq!(toks(&src), vec![Token::Text("end")]);
    }

    #[test]
    fn issue_27_tags_end_where_an_html_tokenizer_ends_them() {
        // A quote opens a value only right after the `=` that follows a name.
        assert_eq!(
            toks("<div x==\"><b>")[1],
            Token::Start {
                name: "b".into(),
                attrs: "",
                self_closing: false
            }
        );
        assert_eq!(toks("<div\"=\"><b>").len(), 2);
        assert_eq!(toks("<a href=\"x>y\">t").len(), 2);
        assert_eq!(toks("<a href = 'x>y' >t").len(), 2);
        // `/` closes a tag only right before its `>`, and not inside an unquoted value.
        let closing = |s: &str| match toks(s).remove(0) {
            Token::Start { self_closing, .. } => self_closing,
            other => panic!("{other:?}"),
        };
        assert!(closing("<g/>"));
        assert!(closing("<g a/>"));
        assert!(closing("<g a=\"1\"/>"));
        assert!(!closing("<g a=1/>"));
        assert!(!closing("<g / >"));
        // A raw-text element ends at its end tag followed by any whitespace, form feed too.
        assert_eq!(toks("<script>x</script\x0c><p>")[1], Token::RawText("x"));
        assert_eq!(toks("<script>x</script\x0c><p>").len(), 4);
    }

    #[test]
    fn a_tag_cut_off_by_the_end_is_dropped() {
        assert_eq!(toks("a <b"), vec![Token::Text("a ")]);
        assert_eq!(toks("a <img src='x"), vec![Token::Text("a ")]);
        assert_eq!(toks("a < b"), vec![Token::Text("a < b")]);
    }
}
