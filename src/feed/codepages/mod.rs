//! The byte encodings an XML feed may declare that `encoding_rs` (the web's list) does not
//! have: UTF-32, the DOS and Mac code pages, EBCDIC; and XML's own reading of a document's
//! first bytes when it has no byte order mark (XML 1.0, Appendix F: `00 3C 00 3F` is
//! UTF-16BE, `4C 6F A7 94` EBCDIC, …).

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE};

mod tables;

/// A single-byte code page: its upper half (the lower is ASCII), or all of it (EBCDIC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    High(&'static [u16; 128]),
    Full(&'static [u16; 256]),
}

/// An encoding of ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Legacy {
    /// UTF-32 (UCS-4), big- or little-endian.
    Utf32 { big_endian: bool },
    /// A single-byte code page.
    Bytes(Table),
}

/// An encoding a document names or shows: one of `encoding_rs`'s, or one of ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Charset {
    /// One of `encoding_rs`'s.
    Web(&'static Encoding),
    /// One of ours.
    Legacy(Legacy),
}

/// The encoding `label` names: `encoding_rs`'s, else ours.
pub(crate) fn charset(label: &str) -> Option<Charset> {
    let l = label.trim().to_ascii_lowercase().replace('_', "-");
    let web = match l.as_str() {
        "mac-roman" | "macroman" => Some(encoding_rs::MACINTOSH),
        "mac-cyrillic" | "maccyrillic" => Some(encoding_rs::X_MAC_CYRILLIC),
        _ => Encoding::for_label(label.trim().as_bytes())
            .or_else(|| Encoding::for_label(l.as_bytes())),
    };
    web.map(Charset::Web)
        .or_else(|| for_label(&l).map(Charset::Legacy))
}

/// Our encoding named by `label` (any case, `_` or `-`), if it is one.
pub(crate) fn for_label(label: &str) -> Option<Legacy> {
    let l = label.trim().to_ascii_lowercase().replace('_', "-");
    match l.as_str() {
        "utf-32" | "utf-32be" | "ucs-4" | "ucs-4be" | "iso-10646-ucs-4" | "csucs4" => {
            return Some(Legacy::Utf32 { big_endian: true });
        }
        "utf-32le" | "ucs-4le" => return Some(Legacy::Utf32 { big_endian: false }),
        _ => {}
    }
    tables::LABELS
        .iter()
        .find(|(name, _)| *name == l)
        .map(|(_, t)| Legacy::Bytes(*t))
}

/// The encoding a document's first bytes show (with the length of its byte order mark),
/// where they show one that `encoding_rs`'s own BOM check does not: UTF-32 with or without a
/// BOM, UTF-16 without one, EBCDIC (then the declaration, read in EBCDIC, names the page).
pub(crate) fn sniff(head: &[u8]) -> Option<(Charset, usize)> {
    let utf32 = |big_endian| Charset::Legacy(Legacy::Utf32 { big_endian });
    match head.get(..4)? {
        [0, 0, 0xFE, 0xFF] => Some((utf32(true), 4)),
        [0xFF, 0xFE, 0, 0] => Some((utf32(false), 4)),
        [0, 0, 0, b'<'] => Some((utf32(true), 0)),
        [b'<', 0, 0, 0] => Some((utf32(false), 0)),
        [0, b'<', 0, b'?' | b'r' | b'f' | b'!' | b'R' | b'F'] => Some((Charset::Web(UTF_16BE), 0)),
        [b'<', 0, b'?' | b'r' | b'f' | b'!' | b'R' | b'F', 0] => Some((Charset::Web(UTF_16LE), 0)),
        [0x4C, 0x6F, 0xA7, 0x94] => Some((Charset::Legacy(ebcdic_declared(head)), 0)),
        _ => None,
    }
}

/// The EBCDIC page an EBCDIC document's declaration names (IBM037 when it names none we
/// have).
fn ebcdic_declared(head: &[u8]) -> Legacy {
    let cp037 = Table::Full(&tables::CP037);
    let mut decl = String::new();
    for &b in head.iter().take(256) {
        let c = byte_char(cp037, b);
        decl.push(c);
        if c == '>' {
            break;
        }
    }
    let label = decl.find("encoding").and_then(|at| {
        let rest = decl[at + 8..].trim_start().strip_prefix('=')?.trim_start();
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        rest[1..].split(quote).next().map(str::to_owned)
    });
    match label.as_deref().and_then(for_label) {
        Some(l @ Legacy::Bytes(Table::Full(_))) => l,
        _ => Legacy::Bytes(cp037),
    }
}

fn byte_char(t: Table, b: u8) -> char {
    let unit = match t {
        Table::High(_) if b < 0x80 => u16::from(b),
        Table::High(high) => high[usize::from(b - 0x80)],
        Table::Full(all) => all[usize::from(b)],
    };
    char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}')
}

/// Decodes one of our encodings a chunk at a time.
#[derive(Debug)]
pub(crate) struct LegacyDecoder {
    kind: Legacy,
    /// The bytes of a UTF-32 unit that continues in the next chunk.
    carry: Vec<u8>,
}

impl LegacyDecoder {
    /// A decoder of `kind`.
    pub(crate) fn new(kind: Legacy) -> LegacyDecoder {
        LegacyDecoder {
            kind,
            carry: Vec::new(),
        }
    }

    /// Appends `src` decoded to `out` as UTF-8; `last` when no more input follows.
    pub(crate) fn decode(&mut self, src: &[u8], last: bool, out: &mut Vec<u8>) {
        let mut buf = [0u8; 4];
        match self.kind {
            Legacy::Bytes(t) => {
                for &b in src {
                    out.extend_from_slice(byte_char(t, b).encode_utf8(&mut buf).as_bytes());
                }
            }
            Legacy::Utf32 { big_endian } => {
                self.carry.extend_from_slice(src);
                let whole = self.carry.len() / 4 * 4;
                for unit in self.carry[..whole].chunks_exact(4) {
                    let bytes = [unit[0], unit[1], unit[2], unit[3]];
                    let n = if big_endian {
                        u32::from_be_bytes(bytes)
                    } else {
                        u32::from_le_bytes(bytes)
                    };
                    let c = char::from_u32(n).unwrap_or('\u{FFFD}');
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                self.carry.drain(..whole);
                if last && !self.carry.is_empty() {
                    self.carry.clear();
                    out.extend_from_slice("\u{FFFD}".as_bytes());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(kind: Legacy, bytes: &[u8]) -> String {
        let mut out = Vec::new();
        let mut d = LegacyDecoder::new(kind);
        for piece in bytes.chunks(3) {
            d.decode(piece, false, &mut out);
        }
        d.decode(&[], true, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dos_pages_and_ebcdic_read_their_bytes() {
        let cp437 = for_label("IBM437").unwrap();
        assert_eq!(decode(cp437, b"<t>\x80\x82</t>"), "<t>Çé</t>");
        assert_eq!(for_label("cspc8codepage437"), Some(cp437));
        let ebcdic = for_label("ebcdic_cp_us").unwrap();
        // "<t>Ø</t>" in IBM037.
        assert_eq!(
            decode(ebcdic, b"\x4c\xa3\x6e\x80\x4c\x61\xa3\x6e"),
            "<t>Ø</t>"
        );
        assert_eq!(for_label("no-such-page"), None);
    }

    #[test]
    fn utf32_of_either_order_reads_across_chunks() {
        let text = "<t>é😀</t>";
        let be: Vec<u8> = text
            .chars()
            .flat_map(|c| (c as u32).to_be_bytes())
            .collect();
        let le: Vec<u8> = text
            .chars()
            .flat_map(|c| (c as u32).to_le_bytes())
            .collect();
        assert_eq!(decode(Legacy::Utf32 { big_endian: true }, &be), text);
        assert_eq!(decode(Legacy::Utf32 { big_endian: false }, &le), text);
        assert_eq!(
            sniff(&be).map(|s| s.0),
            Some(Charset::Legacy(Legacy::Utf32 { big_endian: true }))
        );
        // A unit cut short at the end is one replacement character, never a panic.
        assert_eq!(
            decode(Legacy::Utf32 { big_endian: true }, &be[..5]),
            "<\u{FFFD}"
        );
    }

    #[test]
    fn the_first_bytes_name_utf16_and_ebcdic_without_a_bom() {
        let be: Vec<u8> = "<?xml".encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(sniff(&be), Some((Charset::Web(UTF_16BE), 0)));
        let le: Vec<u8> = "<rss>".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(sniff(&le), Some((Charset::Web(UTF_16LE), 0)));
        // `<?xml version="1.0" encoding="cp500"?>` in EBCDIC.
        let decl: Vec<u8> = "<?xml version=\"1.0\" encoding=\"cp500\"?>"
            .chars()
            .map(|c| {
                (0u8..=255)
                    .find(|b| byte_char(Table::Full(&tables::CP037), *b) == c)
                    .unwrap()
            })
            .collect();
        assert_eq!(
            sniff(&decl),
            Some((Charset::Legacy(for_label("cp500").unwrap()), 0))
        );
        assert_eq!(sniff(b"<?xml version"), None);
        assert_eq!(sniff(b"<r"), None);
    }
}
