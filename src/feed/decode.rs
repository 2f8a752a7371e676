//! Bytes to text: the charset from a BOM, the HTTP header, the XML declaration or an HTML
//! page's `<meta charset>` (`http-equiv` too), else
//! UTF-8 when the bytes are (mostly) UTF-8, else what Firefox's detector guesses.
//!
//! Decoding streams: [`reader`] turns a [`Payload`] into UTF-8 bytes chunk by chunk, freeing
//! the input as it goes, so a large feed is never held as bytes and as text at once.

use std::io::{self, BufRead, Read};

use encoding_rs::{Decoder, Encoding, UTF_8, WINDOWS_1252};

use super::codepages::{self, Charset, Legacy, LegacyDecoder};

use crate::payload::{Payload, PayloadReader};

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
fn declared_encoding(bytes: &[u8]) -> Option<Charset> {
    let head = &bytes[..bytes.len().min(256)];
    if !head.starts_with(b"<?xml") {
        return html_meta_charset(&bytes[..bytes.len().min(1024)]).map(Charset::Web);
    }
    let end = head.iter().position(|&b| b == b'>')?;
    let decl = std::str::from_utf8(&head[..end]).ok()?;
    let at = decl.find("encoding")?;
    let rest = decl[at + 8..].trim_start().strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = rest[1..].split(quote).next()?;
    codepages::charset(value)
}

/// The charset an HTML page declares in its first 1,024 bytes, as browsers prescan it:
/// `<meta charset="…">`, or `<meta http-equiv="Content-Type" content="…; charset=…">`.
fn html_meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let text = String::from_utf8_lossy(head);
    for tok in crate::html::Tokenizer::new(&text) {
        let crate::html::Token::Start { name, attrs, .. } = tok else {
            continue;
        };
        if name != "meta" {
            continue;
        }
        let label = crate::html::attr(attrs, "charset").or_else(|| {
            let equiv = crate::html::attr(attrs, "http-equiv")?;
            if !equiv.eq_ignore_ascii_case("content-type") {
                return None;
            }
            let content = crate::html::attr(attrs, "content")?;
            header_charset(&content).map(|c| std::borrow::Cow::Owned(c.to_owned()))
        });
        if let Some(enc) = label.and_then(|l| Encoding::for_label(l.trim().as_bytes())) {
            // A page cannot really be UTF-16 if its bytes were read as ASCII here.
            return Some(
                if enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE {
                    UTF_8
                } else {
                    enc
                },
            );
        }
    }
    None
}

/// Whether every chunk joined is valid UTF-8: the common case, answered at the speed of
/// the validator (on every thread for a large body).
fn valid_utf8(body: &Payload) -> bool {
    if super::parallel(body.len())
        && rayon::current_num_threads() > 1
        && let Some(valid) = valid_utf8_on_all_threads(body, 1 << 20)
    {
        return valid;
    }
    valid_utf8_on_one_thread(body)
}

/// [`valid_utf8`] with the body cut into pieces of `piece` bytes at most, each validated on its
/// own thread from its first ASCII byte through its last (an ASCII byte is a character of
/// its own in UTF-8, so the cuts split no character of a valid text, and a character cut
/// short is invalid on either side), and the bytes between pieces validated joined.
/// `None` when a piece has no ASCII byte at all.
fn valid_utf8_on_all_threads(body: &Payload, piece: usize) -> Option<bool> {
    use rayon::prelude::*;
    let pieces: Vec<&[u8]> = body.chunks().flat_map(|c| c.chunks(piece.max(1))).collect();
    // Each piece: where its ASCII bytes start and end.
    let spans: Vec<(usize, usize)> = pieces
        .iter()
        .map(|p| {
            let first = p.iter().position(u8::is_ascii)?;
            let last = p.iter().rposition(u8::is_ascii)?;
            Some((first, last + 1))
        })
        .collect::<Option<_>>()?;
    let middles_valid = pieces
        .par_iter()
        .zip(spans.par_iter())
        .all(|(p, &(a, b))| simdutf8::basic::from_utf8(&p[a..b]).is_ok());
    if !middles_valid {
        return Some(false);
    }
    // The joins: the bytes after one piece's last ASCII byte and before the next one's
    // first, taken together (and the body's first and last bytes on their own).
    let mut join: Vec<u8> = Vec::new();
    for (p, &(a, b)) in pieces.iter().zip(&spans) {
        join.extend_from_slice(&p[..a]);
        if simdutf8::basic::from_utf8(&join).is_err() {
            return Some(false);
        }
        join.clear();
        join.extend_from_slice(&p[b..]);
    }
    Some(simdutf8::basic::from_utf8(&join).is_ok())
}

fn valid_utf8_on_one_thread(body: &Payload) -> bool {
    let mut carry: Vec<u8> = Vec::new();
    for chunk in body.chunks() {
        let joined;
        let bytes: &[u8] = if carry.is_empty() {
            chunk
        } else {
            carry.extend_from_slice(chunk);
            joined = std::mem::take(&mut carry);
            &joined
        };
        // simdutf8's validator (several times std's on long text; the same answers).
        match simdutf8::compat::from_utf8(bytes) {
            Ok(_) => {}
            // A character that continues in the next chunk.
            Err(e) if e.error_len().is_none() => carry = bytes[e.valid_up_to()..].to_vec(),
            Err(_) => return false,
        }
    }
    carry.is_empty()
}

/// How many non-ASCII characters are valid UTF-8 and how many sequences are not, over
/// every chunk (a character split across chunks counts once).
fn utf8_census(body: &Payload) -> (usize, usize) {
    let (mut valid, mut invalid) = (0usize, 0usize);
    let mut carry: Vec<u8> = Vec::new();
    for chunk in body.chunks() {
        let joined;
        let mut rest: &[u8] = if carry.is_empty() {
            chunk
        } else {
            carry.extend_from_slice(chunk);
            joined = std::mem::take(&mut carry);
            &joined
        };
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
                    match e.error_len() {
                        Some(n) => {
                            invalid += 1;
                            rest = &bad[n..];
                        }
                        // Possibly a character that continues in the next chunk.
                        None => {
                            carry = bad.to_vec();
                            break;
                        }
                    }
                }
            }
        }
    }
    if !carry.is_empty() {
        invalid += 1;
    }
    (valid, invalid)
}

/// The legacy encoding of bytes that declare none, as Firefox's detector guesses it.
fn detect(body: &Payload) -> &'static Encoding {
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    let mut chunks = body.chunks().peekable();
    while let Some(c) = chunks.next() {
        detector.feed(c, chunks.peek().is_none());
    }
    detector.guess(None, chardetng::Utf8Detection::Deny)
}

/// How a body becomes UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Valid UTF-8 already: passed through untouched.
    Utf8,
    /// UTF-8 where every byte that is not part of valid UTF-8 is read as Windows-1252 (the
    /// usual damage is a few pasted smart quotes; this keeps both).
    Utf8With1252,
    /// Another encoding.
    Decode(&'static Encoding),
    /// One `encoding_rs` does not have (UTF-32, a DOS code page, EBCDIC).
    Legacy(Legacy),
}

/// The plan for `body`, after `skip` bytes of BOM. The order is BOM, then the HTTP charset,
/// then the XML declaration or an HTML `<meta charset>`, then UTF-8 if it is (mostly) that,
/// else a detected legacy
/// encoding. A label that claims a legacy charset for a body that is valid, non-ASCII
/// UTF-8 is wrong so often that UTF-8 wins.
fn plan(body: &Payload, content_type: Option<&str>) -> (Plan, usize) {
    let head = body.head(1024);
    // What only XML's reading of the first bytes shows (UTF-32, UTF-16 without a BOM,
    // EBCDIC) is certain: no ASCII-compatible body starts so.
    if let Some((found, bom_len)) = codepages::sniff(&head) {
        return (
            match found {
                Charset::Web(enc) => Plan::Decode(enc),
                Charset::Legacy(l) => Plan::Legacy(l),
            },
            bom_len,
        );
    }
    if let Some((enc, bom_len)) = Encoding::for_bom(&head) {
        return (
            if enc == UTF_8 {
                Plan::Utf8With1252
            } else {
                Plan::Decode(enc)
            },
            bom_len,
        );
    }
    let from_header = content_type
        .and_then(header_charset)
        .and_then(codepages::charset);
    let declared = from_header.or_else(|| declared_encoding(&head));
    // Validity alone decides, but for a legacy label, where the body must also hold
    // something beyond ASCII (an ASCII body reads the same either way).
    let plan = match declared {
        Some(Charset::Web(enc)) if enc == UTF_8 => {
            if valid_utf8(body) {
                Plan::Utf8
            } else {
                Plan::Utf8With1252
            }
        }
        // Bytes that are valid, non-ASCII UTF-8 are UTF-8, whatever the label says: text in
        // a legacy encoding practically never is (its high bytes do not form UTF-8
        // sequences), while a page converted to UTF-8 often keeps its old label.
        Some(_) if valid_utf8(body) && body.chunks().any(|c| !c.is_ascii()) => Plan::Utf8,
        Some(Charset::Web(enc)) => Plan::Decode(enc.output_encoding()),
        Some(Charset::Legacy(l)) => Plan::Legacy(l),
        None if valid_utf8(body) => Plan::Utf8,
        None => match utf8_census(body) {
            (valid, invalid) if valid > invalid => Plan::Utf8With1252,
            _ => Plan::Decode(detect(body)),
        },
    };
    (plan, 0)
}

/// `body` as a stream of UTF-8 bytes; the input is freed as it is read.
pub(crate) fn reader(body: Payload, content_type: Option<&str>) -> Box<dyn BufRead + Send> {
    let (plan, skip) = plan(&body, content_type);
    let mut input = body.into_reader();
    input.consume(skip);
    match plan {
        Plan::Utf8 => Box::new(input),
        Plan::Utf8With1252 => Box::new(Transcoder::new(input, Via::Utf8With1252)),
        Plan::Decode(enc) => Box::new(Transcoder::new(
            input,
            Via::Web(enc.new_decoder_without_bom_handling()),
        )),
        Plan::Legacy(l) => Box::new(Transcoder::new(input, Via::Legacy(LegacyDecoder::new(l)))),
    }
}

/// `body` whole when it is UTF-8 as it stands, with the bytes of its byte-order mark to
/// skip; else `body` back, untouched.
pub(crate) fn whole_utf8(
    body: Payload,
    content_type: Option<&str>,
) -> Result<(Vec<u8>, usize), Payload> {
    match plan(&body, content_type) {
        (Plan::Utf8, skip) => Ok((body.into_vec(), skip)),
        _ => Err(body),
    }
}

/// `body` decoded to one string (for JSON Feed and HTML pages, which are read whole).
pub(crate) fn to_utf8(body: Payload, content_type: Option<&str>) -> String {
    let (plan, skip) = plan(&body, content_type);
    if plan == Plan::Utf8 && skip == 0 {
        return String::from_utf8(body.into_vec())
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    }
    let mut out = String::with_capacity(body.len() + body.len() / 8);
    let _ = reader(body, content_type).read_to_string(&mut out);
    out
}

/// Input read per step of a [`Transcoder`].
const STEP: usize = 64 * 1024;

/// How a [`Transcoder`] decodes.
enum Via {
    /// UTF-8 with stray bytes read as Windows-1252.
    Utf8With1252,
    /// An `encoding_rs` decoder.
    Web(Decoder),
    /// One of ours.
    Legacy(LegacyDecoder),
}

/// Turns bytes into UTF-8 a step at a time: with an `encoding_rs` decoder or one of ours, or
/// as UTF-8 with stray bytes read as Windows-1252.
struct Transcoder {
    input: PayloadReader,
    decoder: Via,
    /// Bytes of an incomplete UTF-8 sequence waiting for the next step.
    carry: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Transcoder {
    fn new(input: PayloadReader, decoder: Via) -> Transcoder {
        Transcoder {
            input,
            decoder,
            carry: Vec::new(),
            out: Vec::with_capacity(STEP * 2),
            pos: 0,
            done: false,
        }
    }

    fn step(&mut self) -> io::Result<()> {
        self.out.clear();
        self.pos = 0;
        let chunk = self.input.fill_buf()?;
        let take = chunk.len().min(STEP);
        let last = take == 0;
        let mut src = std::mem::take(&mut self.carry);
        src.extend_from_slice(&chunk[..take]);
        self.input.consume(take);
        match &mut self.decoder {
            Via::Legacy(d) => d.decode(&src, last, &mut self.out),
            Via::Web(d) => {
                let cap = d
                    .max_utf8_buffer_length(src.len())
                    .unwrap_or(src.len() * 3 + 16);
                self.out.resize(cap, 0);
                let (_, _, written, _) = d.decode_to_utf8(&src, &mut self.out, last);
                self.out.truncate(written);
            }
            Via::Utf8With1252 => self.utf8_with_1252(&src, last),
        }
        self.done = last;
        Ok(())
    }

    fn utf8_with_1252(&mut self, src: &[u8], last: bool) {
        let mut rest = src;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    self.out.extend_from_slice(s.as_bytes());
                    return;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    self.out.extend_from_slice(good);
                    let n = match e.error_len() {
                        Some(n) => n,
                        // An incomplete character: wait for the rest, unless there is none.
                        None if !last => {
                            self.carry = bad.to_vec();
                            return;
                        }
                        None => bad.len(),
                    };
                    for &b in &bad[..n] {
                        let byte = [b];
                        let (text, _) = WINDOWS_1252.decode_without_bom_handling(&byte);
                        self.out.extend_from_slice(text.as_bytes());
                    }
                    rest = &bad[n..];
                }
            }
        }
    }
}

impl Read for Transcoder {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        crate::payload::read_buffered(self, buf)
    }
}

impl BufRead for Transcoder {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.out.len() && !self.done {
            self.step()?;
        }
        Ok(&self.out[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos += amt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8], ct: Option<&str>) -> String {
        to_utf8(Payload::from(bytes.to_vec()), ct)
    }

    #[test]
    fn a_charset_given_only_in_the_header_is_honoured() {
        let s = text(
            b"<rss><title>caf\xe9</title></rss>",
            Some("application/rss+xml; charset=ISO-8859-1"),
        );
        assert!(s.contains("café"));
    }

    #[test]
    fn the_xml_declaration_and_bom_are_read() {
        let s = text(
            b"<?xml version=\"1.0\" encoding=\"windows-1252\"?><t>\x93q\x94</t>",
            None,
        );
        assert!(s.contains("\u{201c}q\u{201d}"));
        let mut utf16 = vec![0xFF, 0xFE];
        for u in "<t>é</t>".encode_utf16() {
            utf16.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(text(&utf16, None), "<t>é</t>");
        assert_eq!(text(b"\xef\xbb\xbf<t>x</t>", None), "<t>x</t>");
    }

    #[test]
    fn a_latin1_header_on_a_utf8_body_is_overruled() {
        let s = text(
            "<t>café</t>".as_bytes(),
            Some("text/xml; charset=iso-8859-1"),
        );
        assert_eq!(s, "<t>café</t>");
    }

    #[test]
    fn invalid_utf8_without_a_declaration_falls_back_to_windows_1252() {
        assert_eq!(text(b"<t>\xe9</t>", None), "<t>é</t>");
    }

    #[test]
    fn stray_windows_1252_bytes_in_utf8_keep_both() {
        let mixed = b"<?xml version=\"1.0\" encoding=\"utf-8\"?><t>caf\xc3\xa9 \x93quoted\x94</t>";
        assert!(text(mixed, None).ends_with("<t>café \u{201c}quoted\u{201d}</t>"));
    }

    #[test]
    fn characters_split_across_chunks_decode_whole() {
        // 3-byte characters over many chunk and step boundaries, with a stray byte.
        let mut s = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><t>");
        for _ in 0..400_000 {
            s.push('€');
        }
        let mut bytes = s.into_bytes();
        bytes.push(0x93);
        bytes.extend_from_slice("€</t>".as_bytes());
        let mut p = Payload::default();
        for piece in bytes.chunks(65_537) {
            p.extend_from_slice(piece);
        }
        let out = to_utf8(p, None);
        assert_eq!(out.matches('€').count(), 400_001);
        assert!(out.ends_with("\u{201c}€</t>"));
        let sjis = encoding_rs::SHIFT_JIS
            .encode(&"日本語".repeat(100_000))
            .0
            .into_owned();
        let mut p = Payload::default();
        for piece in sjis.chunks(70_001) {
            p.extend_from_slice(piece);
        }
        let out = to_utf8(p, Some("text/xml; charset=shift_jis"));
        assert_eq!(out, "日本語".repeat(100_000));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Validating in pieces on threads answers as one validator over the joined body,
        /// wherever pieces cut (characters of 1 to 4 bytes, stray and truncated
        /// sequences).
        #[test]
        fn validation_in_pieces_answers_as_the_whole(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                &b"a"[..], b"<", b"\xc3\xa9", b"\xe2\x80\x94", b"\xf0\x9f\x98\x80", b"\xc3",
                b"\xe2\x80", b"\x80", b"\xff", b"\xed\xa0\x80", b"\xc0\xaf",
            ]), 0..60),
            piece in 1usize..9,
        ) {
            let bytes: Vec<u8> = parts.concat();
            let body = Payload::from(bytes.clone());
            let want = std::str::from_utf8(&bytes).is_ok();
            proptest::prop_assert_eq!(valid_utf8_on_one_thread(&body), want);
            if let Some(got) = valid_utf8_on_all_threads(&body, piece) {
                proptest::prop_assert_eq!(got, want);
            }
        }
    }
}
