//! CDATA sections found in one search, for quick-xml's reader over a document held in
//! memory or streamed.
//!
//! quick-xml finds a CDATA section's end by stopping at every `>` inside it and looking
//! back for `]]`; an HTML body in CDATA has a `>` every few dozen bytes, and that scan was
//! the largest single cost of reading a large feed. Here a section that opens where the
//! next event starts is found with one substring search for `]]>` (the same first end
//! quick-xml finds: the opening `<![CDATA[` holds no `]`), handed on as the event
//! quick-xml would give, and a fresh reader (same settings) reads on after it. Positions
//! stay quick-xml's. Where the two could differ, quick-xml reads the section itself: after
//! any error (its reader may read nothing more), a section that is not closed or not
//! UTF-8, a byte order mark right after the section (a fresh reader would drop it), and in
//! a stream, a section not buffered whole.

use std::io::BufRead;
use std::sync::LazyLock;

use quick_xml::Reader;
use quick_xml::events::{BytesCData, Event};

use super::{Source, reader_of};

/// Events of a slice, as quick-xml's reader gives them.
pub(super) struct SliceEvents<'a> {
    reader: Reader<&'a [u8]>,
    /// Position of the current reader's start, in the first reader's positions.
    base: u64,
    /// No error read yet: sections may be found here.
    fast: bool,
}

impl<'a> SliceEvents<'a> {
    pub(super) fn new(xml: &'a [u8]) -> Self {
        SliceEvents {
            reader: reader_of(xml),
            base: 0,
            fast: enabled(),
        }
    }

    /// Where the next event starts (quick-xml's `buffer_position`).
    pub(super) fn position(&self) -> u64 {
        self.base + self.reader.buffer_position()
    }

    pub(super) fn next(&mut self) -> quick_xml::Result<Event<'a>> {
        if self.fast {
            let rest: &'a [u8] = self.reader.get_ref();
            if let Some((text, len)) = cdata_at(rest) {
                self.base = self.position() + len as u64;
                self.reader = reader_of(&rest[len..]);
                return Ok(Event::CData(BytesCData::new(text)));
            }
        }
        let event = self.reader.read_event();
        if event.is_err() {
            self.fast = false;
        }
        event
    }
}

impl Source for SliceEvents<'_> {
    fn error_position(&self) -> u64 {
        self.base + self.reader.error_position()
    }

    fn at_end(&mut self) -> bool {
        self.reader.get_ref().is_empty()
    }
}

/// For quick-xml's reader over a stream: the CDATA section the buffered part of `xml`
/// starts with (between two events: nothing of the next is consumed), copied into `into`,
/// consumed, and its length; where it lies whole in what is buffered, with what follows
/// it, and can be read here as quick-xml reads it. Else nothing is consumed. (The streams
/// read are bodies in memory: buffering them never fails.)
pub(super) fn take_buffered(xml: &mut impl BufRead, into: &mut String) -> Option<usize> {
    if !enabled() {
        return None;
    }
    let chunk = xml.fill_buf().ok()?;
    let (text, len) = cdata_at(chunk)?;
    if chunk.len() < len + BOM.len() {
        // What follows is not buffered yet: it could be a byte order mark.
        return None;
    }
    into.clear();
    into.push_str(text);
    xml.consume(len);
    Some(len)
}

#[cfg(test)]
thread_local! {
    /// Set in a test: quick-xml reads every section on this thread (the reference the
    /// sections found here are compared with).
    pub(crate) static PLAIN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn enabled() -> bool {
    #[cfg(test)]
    if PLAIN.with(|p| p.get()) {
        return false;
    }
    true
}

/// The search for a section's end, built once (building it per section cost more than the
/// search itself on millions of tiny sections).
static END: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"]]>"));

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The content and length of the CDATA section `rest` starts with, where it can be read
/// here as quick-xml reads it.
fn cdata_at(rest: &[u8]) -> Option<(&str, usize)> {
    const OPEN: &[u8] = b"<![CDATA[";
    let body = rest.strip_prefix(OPEN)?;
    let end = END.find(body)?;
    let len = OPEN.len() + end + 3;
    if rest[len..].starts_with(BOM) {
        return None;
    }
    let text = std::str::from_utf8(&body[..end]).ok()?;
    Some((text, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event with its position and the error positions, as `read` reads `xml`.
    fn events_of(xml: &[u8], fast: bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut ev = SliceEvents::new(xml);
        ev.fast = fast;
        for _ in 0..10_000 {
            let at = ev.position();
            match ev.next() {
                Ok(Event::Eof) => {
                    out.push(format!("{at} eof {}", Source::at_end(&mut ev)));
                    return out;
                }
                Ok(e) => out.push(format!("{at} {e:?}")),
                Err(e) => out.push(format!("{at} error {e} at {}", Source::error_position(&ev))),
            }
        }
        panic!("no end");
    }

    const DOCS: &[&[u8]] = &[
        b"<a><![CDATA[<p>x</p> > ]] ]>]]></a>",
        b"<a>\n <![CDATA[one]]><![CDATA[]]><![CDATA[two]]]]>x</a>",
        b"<![CDATA[first]]><a/>",
        b"<a><![CDATA[x]]>\xEF\xBB\xBF<b/></a>",
        b"<a><![CDATA[not closed</a>",
        b"<a><![CDATA[\xFF]]><![CDATA[y]]></a>",
        b"<a><?><![CDATA[after an error]]></a>",
        b"<a><![cdata[lower]]></a>",
        b"<a>&amp;<![CDATA[x]]>&lt;</a>",
        b"<a><![CDATA[x]]",
    ];

    #[test]
    fn sections_read_the_same_as_quick_xml_reads_them() {
        for doc in DOCS {
            assert_eq!(
                events_of(doc, true),
                events_of(doc, false),
                "{}",
                String::from_utf8_lossy(doc)
            );
        }
    }

    /// The tree and repairs as a builder reads `xml` streamed with a buffer of `cap` bytes.
    fn streamed(xml: &[u8], cap: usize) -> String {
        let mut items = Vec::new();
        let mut on_item =
            |el: super::super::Element, _: &super::super::ItemContext<'_>| items.push(el);
        let pieces = std::io::BufReader::with_capacity(cap, xml);
        let doc = super::super::parse(pieces, None, &mut on_item);
        format!("{doc:?} {items:?}")
    }

    #[test]
    fn a_stream_reads_sections_as_quick_xml_does_at_every_buffer_size() {
        for doc in DOCS {
            PLAIN.with(|p| p.set(true));
            let reference = streamed(doc, 8192);
            PLAIN.with(|p| p.set(false));
            for cap in 1..=doc.len() + 1 {
                assert_eq!(streamed(doc, cap), reference, "{cap}: {doc:?}");
            }
        }
    }

    #[test]
    fn a_section_is_found_in_one_search() {
        let doc = b"<a><![CDATA[<p>a > b</p>]]></a>";
        let mut ev = SliceEvents::new(doc);
        ev.next().unwrap();
        assert_eq!(ev.position(), 3);
        assert!(matches!(ev.next(), Ok(Event::CData(c)) if &*c == "<p>a > b</p>"));
        // Found here: a fresh reader stands after the section.
        assert_eq!(ev.reader.buffer_position(), 0);
        assert_eq!(ev.position(), 27);
    }
}
