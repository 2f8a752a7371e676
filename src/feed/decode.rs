//! Bytes to text: the charset from a BOM, the HTTP header or the XML declaration.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// The charset parameter of a `Content-Type` header.
pub(crate) fn header_charset(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (k, v) = param.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(['"', '\'']))
    })
}

/// The `encoding="…"` of an XML declaration at the start of `bytes`.
fn declared_encoding(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(256)];
    if !head.starts_with(b"<?xml") {
        return None;
    }
    let end = head.iter().position(|&b| b == b'>')?;
    let decl = std::str::from_utf8(&head[..end]).ok()?;
    let at = decl.find("encoding")?;
    let rest = decl[at + 8..].trim_start().strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = rest[1..].split(quote).next()?;
    Encoding::for_label(value.trim().as_bytes())
}

/// Decodes a feed body to UTF-8. The order is BOM, then the HTTP charset, then the XML
/// declaration, then UTF-8 if it is valid, else Windows-1252. A header that claims a
/// single-byte Western charset for a body that is valid, non-ASCII UTF-8 is wrong so
/// often that UTF-8 wins.
pub(crate) fn to_utf8(bytes: Vec<u8>, content_type: Option<&str>) -> String {
    if let Some((enc, bom_len)) = Encoding::for_bom(&bytes) {
        return decode_with(enc, &bytes[bom_len..]);
    }
    let from_header = content_type
        .and_then(header_charset)
        .and_then(|c| Encoding::for_label(c.as_bytes()));
    let declared = from_header.or_else(|| declared_encoding(&bytes));
    match declared {
        Some(enc) if enc == UTF_8 => utf8_with_1252_fallback(bytes),
        Some(enc)
            if is_western_single_byte(enc)
                && !bytes.is_ascii()
                && std::str::from_utf8(&bytes).is_ok() =>
        {
            utf8_with_1252_fallback(bytes)
        }
        Some(enc) => decode_with(enc.output_encoding(), &bytes),
        None if mostly_utf8(&bytes) => utf8_with_1252_fallback(bytes),
        None => decode_with(detect(&bytes), &bytes),
    }
}

/// Whether undeclared bytes are UTF-8, perhaps with a few stray bytes pasted in: valid, or
/// with more valid multi-byte characters than invalid sequences. A legacy encoding (EUC-JP,
/// Shift_JIS, GB2312, Big5, EUC-KR, Windows-125x) has next to no valid multi-byte UTF-8.
fn mostly_utf8(bytes: &[u8]) -> bool {
    let (mut valid, mut invalid) = (0usize, 0usize);
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                valid += s.chars().filter(|c| !c.is_ascii()).count();
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                valid += std::str::from_utf8(good)
                    .map_or(0, |s| s.chars().filter(|c| !c.is_ascii()).count());
                invalid += 1;
                rest = &bad[e.error_len().unwrap_or(bad.len()).max(1)..];
            }
        }
    }
    invalid == 0 || valid > invalid
}

/// The legacy encoding of bytes that declare none, as Firefox's detector guesses it.
fn detect(bytes: &[u8]) -> &'static Encoding {
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    detector.guess(None, chardetng::Utf8Detection::Deny)
}

fn is_western_single_byte(enc: &'static Encoding) -> bool {
    enc == WINDOWS_1252 || enc.name() == "ISO-8859-15" || enc.name() == "ISO-8859-1"
}

/// UTF-8, where every byte that is not part of valid UTF-8 is read as Windows-1252: the
/// usual damage is a few pasted smart quotes in an otherwise UTF-8 feed, and this keeps
/// both the UTF-8 text and the quotes.
fn utf8_with_1252_fallback(bytes: Vec<u8>) -> String {
    let bytes = match String::from_utf8(bytes) {
        Ok(s) => return s,
        Err(e) => e.into_bytes(),
    };
    let mut out = String::with_capacity(bytes.len() + 64);
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(err) => {
                let (good, bad) = rest.split_at(err.valid_up_to());
                out.push_str(&String::from_utf8_lossy(good));
                let n = err.error_len().unwrap_or(bad.len()).max(1);
                out.push_str(&decode_with(WINDOWS_1252, &bad[..n]));
                rest = &bad[n..];
            }
        }
    }
    out
}

fn decode_with(enc: &'static Encoding, bytes: &[u8]) -> String {
    let (text, _) = enc.decode_without_bom_handling(bytes);
    text.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charset_given_only_in_the_header_is_honoured() {
        let latin1 = b"<rss><title>caf\xe9</title></rss>".to_vec();
        let s = to_utf8(latin1, Some("application/rss+xml; charset=ISO-8859-1"));
        assert!(s.contains("café"));
    }

    #[test]
    fn the_xml_declaration_and_bom_are_read() {
        let s = to_utf8(
            b"<?xml version=\"1.0\" encoding=\"windows-1252\"?><t>\x93q\x94</t>".to_vec(),
            None,
        );
        assert!(s.contains("\u{201c}q\u{201d}"));
        let mut utf16 = vec![0xFF, 0xFE];
        for u in "<t>é</t>".encode_utf16() {
            utf16.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(to_utf8(utf16, None), "<t>é</t>");
    }

    #[test]
    fn a_latin1_header_on_a_utf8_body_is_overruled() {
        let s = to_utf8(
            "<t>café</t>".as_bytes().to_vec(),
            Some("text/xml; charset=iso-8859-1"),
        );
        assert_eq!(s, "<t>café</t>");
    }

    #[test]
    fn invalid_utf8_without_a_declaration_falls_back_to_windows_1252() {
        assert_eq!(to_utf8(b"<t>\xe9</t>".to_vec(), None), "<t>é</t>");
    }

    #[test]
    fn undeclared_legacy_encodings_are_detected_from_the_bytes() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/parsing");
        for (file, expected) in [
            ("undeclared-euc-jp.xml", "日本語のフィード"),
            ("undeclared-shift-jis.xml", "日本語のフィード"),
            ("undeclared-gb2312.xml", "中文新闻频道"),
            ("undeclared-big5.xml", "繁體中文新聞頻道"),
            ("undeclared-euc-kr.xml", "한국어 피드"),
            ("undeclared-windows-1251.xml", "Русская лента новостей"),
        ] {
            let bytes = std::fs::read(format!("{dir}/{file}")).unwrap();
            assert!(to_utf8(bytes, None).contains(expected), "{file}");
        }
    }

    #[test]
    fn stray_windows_1252_bytes_in_utf8_keep_both() {
        let mixed =
            b"<?xml version=\"1.0\" encoding=\"utf-8\"?><t>caf\xc3\xa9 \x93quoted\x94</t>".to_vec();
        assert!(to_utf8(mixed, None).ends_with("<t>café \u{201c}quoted\u{201d}</t>"));
    }
}
