//! A large feed's items read on all cores: the document held whole is cut into stretches
//! of items, each read by its own builder on rayon's threads, and the items handed out in
//! document order, exactly as one reader of the whole would have read them.
//!
//! The cuts are guesses (the next `<item` or `<entry` tag about every `step` bytes), so
//! each stretch proves itself: it is used only when its builder, started from where the
//! document's head left the items' parent, read nothing but whole items (and whitespace,
//! comments) and made no repair. A stretch that proves nothing, or a document whose head
//! is not clean, is read on by the one reader from where the last proven stretch ended: a
//! cut inside a CDATA section, a comment or an item costs time, never a difference.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use memchr::memmem::Finder;
use rayon::prelude::*;
use url::Url;

use super::channel::site_link;
use super::extract::{carries_data, convert};
use super::handout::Handout;
use super::xml::{Builder, Element, Ended, ItemContext, Template};
use super::{MAX_ITEMS, RawItem};

/// Bytes per stretch, about: small enough that every thread gets several (they differ in
/// length), large enough that each builder's start costs nothing.
pub(crate) const STEP: usize = 512 * 1024;

/// What reading one stretch gave.
struct Stretch {
    /// Its items in order (`None`: an item element with no data).
    items: Vec<Option<RawItem>>,
    /// Whitespace it read between items.
    between: String,
    /// Where the reader of the whole goes on from, when the stretch proved itself; `None`
    /// when it did not (then from the stretch's start, none of it used).
    then: Option<usize>,
    /// Whether the reader of the whole must go on alone from `then` (the stretch met
    /// something other than an item where items stand).
    stop: bool,
}

/// Reads `text` (the whole document, UTF-8) into `b`, items on all threads where the
/// document allows.
pub(super) fn drive(
    b: &mut Builder<'_>,
    text: &[u8],
    base: Option<&Url>,
    handout: &RefCell<Handout<'_>>,
    step: usize,
) {
    let cuts = cuts(text, step);
    // The head (up to the first item) read first on its own: only a clean head makes the
    // template the stretches start from. (A head read twice costs at most one more read of
    // the document's part before its items.)
    let template = match (cuts.first(), cuts.len() > 1) {
        (Some(&first), true) => {
            let mut ignore = |_: Element, _: &ItemContext<'_>| {};
            let mut head = Builder::new(base, &mut ignore);
            head.run_slice(&text[..first], 0);
            head.template().map(|t| (first, t))
        }
        _ => None,
    };
    let Some((first, template)) = template else {
        b.run_slice(text, 0);
        return;
    };
    b.run_slice(&text[..first], 0);
    let atom_mode = template.root_name().eq_ignore_ascii_case("feed");
    // The address a local file's items resolve against: as it will be when its first item
    // with data is read (nothing but items and whitespace come before that).
    let site = match (base, &handout.borrow().site) {
        (Some(_), _) => None,
        (None, Some(site)) => site.clone(),
        (None, None) => b.parent().and_then(|p| site_link(p, atom_mode)),
    };
    let mut stretches: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    stretches.push((cuts[cuts.len() - 1], text.len()));
    // Every stretch is read at once (the caller holds every item anyway): no thread waits
    // for another's stretch before going on.
    let produced = AtomicUsize::new(0);
    let mut read: Vec<Stretch> = stretches
        .par_iter()
        .map(|&at| read(&template, text, at, atom_mode, site.as_ref(), &produced))
        .collect();
    #[cfg(test)]
    HELD.with(|h| h.set(read.iter().map(|s| s.items.len()).sum()));
    let mut from = first;
    let mut next = 0;
    // Whether the stretches' items resolve against another site than the one reading alone
    // settled on (the items they hold are then not this document's): no stretch is used.
    let mut stale = false;
    loop {
        // The stretches proven from here, in order.
        while let Some(s) = read
            .get_mut(next)
            .filter(|_| stretches[next].0 == from && !stale)
        {
            let Some(then) = s.then else {
                break;
            };
            if base.is_none() {
                let now = match &handout.borrow().site {
                    Some(settled) => settled.clone(),
                    None => b.parent().and_then(|p| site_link(p, atom_mode)),
                };
                if now != site {
                    stale = true;
                    break;
                }
            }
            for it in std::mem::take(&mut s.items) {
                let mut h = handout.borrow_mut();
                if h.full() {
                    h.beyond();
                    continue;
                }
                h.root_entry = false;
                if it.is_some() && base.is_none() && h.site.is_none() {
                    h.site = Some(site.clone());
                }
                h.give(it);
            }
            b.add_text(&s.between);
            from = then;
            next += 1;
            #[cfg(test)]
            USED.with(|u| u.set(u.get() + 1));
            if s.stop {
                break;
            }
        }
        if from == text.len() {
            break;
        }
        // Read on alone, up to a later stretch's start where this reader stands as the
        // stretches started (then they are used again), or to the end.
        let later: Vec<u64> = stretches[next..]
            .iter()
            .map(|(start, _)| *start as u64)
            .filter(|start| *start > from as u64 && !stale)
            .collect();
        match b.run_slice_to(&text[from..], from as u64, &later, &template) {
            Ended::Cut(at) => {
                from = usize::try_from(at).unwrap_or(text.len());
                // (Always found: the places are the stretches' starts.)
                next = stretches
                    .iter()
                    .position(|(start, _)| *start == from)
                    .unwrap_or(stretches.len());
            }
            Ended::End | Ended::Fence(_) => break,
        }
    }
}

/// Reads the stretch `start..end` of `text` from `template` on this thread. `produced`
/// counts the item elements every stretch has read: past the document's cap, a stretch gives
/// up (the one reader only counts items past the cap; no stretch holds them).
fn read(
    template: &Template,
    text: &[u8],
    (start, end): (usize, usize),
    atom_mode: bool,
    site: Option<&Url>,
    produced: &AtomicUsize,
) -> Stretch {
    let mut items = Vec::new();
    let over_cap = std::cell::Cell::new(false);
    let mut on_item = |mut el: Element, _: &ItemContext<'_>| {
        if over_cap.get() || produced.fetch_add(1, Ordering::Relaxed) >= MAX_ITEMS {
            over_cap.set(true);
            return;
        }
        items.push(carries_data(&el).then(|| convert(&mut el, atom_mode, site)));
    };
    let mut b = Builder::from_template(template, &mut on_item);
    let ended = b.run_slice(&text[start..end], start as u64);
    let clean = b.clean() && !over_cap.get();
    let (then, stop) = match ended {
        // (Not before a U+FEFF: a reader started there would take it for a byte-order mark.)
        Ended::Fence(at)
            if clean
                && !usize::try_from(at)
                    .ok()
                    .and_then(|at| text.get(at..))
                    .is_some_and(|rest| rest.starts_with("\u{feff}".as_bytes())) =>
        {
            (usize::try_from(at).ok(), true)
        }
        Ended::End if clean && b.at_fence() => (Some(end), false),
        _ => (None, true),
    };
    let between = b.take_fence_text();
    drop(b);
    Stretch {
        items: if then.is_some() { items } else { Vec::new() },
        between,
        then,
        stop,
    }
}

/// Where stretches start: the first `<item` (or `<entry`) start tag, then the next one at
/// least `step` bytes on, and so on; one place or none when there is nothing to split.
fn cuts(text: &[u8], step: usize) -> Vec<usize> {
    let item = Finder::new(b"<item");
    let entry = Finder::new(b"<entry");
    // An `<entry` is looked for only before the first `<item` (not through a whole RSS
    // document).
    let first_item = tag_at(text, &item, 0);
    let before = first_item.map_or(text, |i| &text[..i]);
    let (first, finder) = match (first_item, tag_at(before, &entry, 0)) {
        (_, Some(e)) => (e, entry),
        (Some(i), None) => (i, item),
        (None, None) => return Vec::new(),
    };
    let mut cuts = vec![first];
    let mut at = first;
    while let Some(next) = at
        .checked_add(step.max(1))
        .filter(|n| *n < text.len())
        .and_then(|n| tag_at(text, &finder, n))
    {
        cuts.push(next);
        at = next;
    }
    cuts
}

/// The first `<name` from `from` on that is a whole tag name (a space, `>` or `/` after it).
fn tag_at(text: &[u8], finder: &Finder<'_>, from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        let at = i + finder.find(text.get(i..)?)?;
        let after = at + finder.needle().len();
        if matches!(
            text.get(after),
            Some(b' ' | b'\t' | b'\r' | b'\n' | b'>' | b'/')
        ) {
            return Some(at);
        }
        i = at + 1;
    }
}

#[cfg(test)]
thread_local! {
    /// Stretches read on threads and used, by the last [`drive`] on this thread.
    static USED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Items all the stretches of the last [`drive`] on this thread held at once.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The feed and items as one reader reads `doc`, and as the split reader does with
    /// stretches of `step` bytes; and how many stretches the split one used.
    /// (The one reader is quick-xml's alone, CDATA sections and all; the split reader's
    /// stretches find sections themselves, and so does a third read, streamed in pieces of
    /// about `step` bytes, whose feed and items must be the one reader's.)
    fn both(doc: &str, base: Option<&Url>, step: usize) -> (String, String, usize) {
        use super::super::xml::PLAIN_CDATA;
        let mut one = Vec::new();
        PLAIN_CDATA.with(|p| p.set(true));
        let whole = super::super::extract::parse_xml(doc.as_bytes(), base, &mut |it| one.push(it));
        PLAIN_CDATA.with(|p| p.set(false));
        let one = format!("{whole:?}\n{one:?}");
        let mut streamed = Vec::new();
        let pieces = std::io::BufReader::with_capacity(step.max(1), doc.as_bytes());
        let read = super::super::extract::parse_xml(pieces, base, &mut |it| streamed.push(it));
        assert_eq!(
            one,
            format!("{read:?}\n{streamed:?}"),
            "streamed in {step}: {doc}"
        );
        let mut many = Vec::new();
        USED.with(|u| u.set(0));
        let split = super::super::extract::parse_xml_whole(
            doc.as_bytes(),
            base,
            &mut |it| many.push(it),
            step,
        );
        let used = USED.with(|u| u.get());
        (one, format!("{split:?}\n{many:?}"), used)
    }

    fn same(doc: &str, base: Option<&Url>) -> usize {
        let mut most = 0;
        for step in [1, 2, 5, 17, 64, 300, 4096] {
            let (a, b, used) = both(doc, base, step);
            assert_eq!(a, b, "step {step}: {doc}");
            most = most.max(used);
        }
        most
    }

    fn rss(items: &str) -> String {
        format!(
            "<?xml version=\"1.0\"?><rss xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><channel><title>T</title><link>https://example.com/</link>{items}</channel></rss>"
        )
    }

    #[test]
    fn a_plain_feed_is_read_in_stretches_and_reads_the_same() {
        let items: String = (0..40)
            .map(|i| format!("<item><title>A {i} &amp; b</title><link>/p/{i}</link><dc:creator>Me</dc:creator><description><![CDATA[<p>x {i}</p>]]></description></item>\n"))
            .collect();
        let doc = rss(&items);
        assert!(same(&doc, None) > 10, "stretches were used");
        let base = Url::parse("https://example.com/feed.xml").unwrap();
        assert!(same(&doc, Some(&base)) > 10);
        let atom: String = (0..30)
            .map(|i| format!("<entry xml:base=\"/b/\"><id>{i}</id><title type=\"html\">&lt;b&gt;{i}&lt;/b&gt;</title><link href=\"p{i}\"/></entry>\n"))
            .collect();
        let doc = format!(
            "<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:base=\"https://example.org/\"><title>A</title>{atom}</feed>"
        );
        assert!(same(&doc, None) > 10);
    }

    #[test]
    fn cuts_in_the_wrong_places_cost_time_not_a_difference() {
        for items in [
            // A cut inside a CDATA section, a comment, an attribute, a nested item.
            "<item><title>a</title><description><![CDATA[<item>not one</item> <item x>]]></description></item><item><title>b</title></item>",
            "<item><title>a</title></item><!-- <item> <item/> --><item><title>b</title></item>",
            "<item><title a=\"<item x\">a</title></item><item><title>b</title></item>",
            "<item><title>a</title><item><title>inner</title></item></item><item><title>b</title></item>",
            // Something other than items where the items stand, then items again.
            "<item><title>a</title></item><title>late</title><item><title>b</title></item><link>/late</link><item><title>c</title></item>",
            "<item><title>a</title></item> stray text &amp; <item><title>b</title></item>",
            "<item><title>a</title></item><![CDATA[ ]]><item><title>b</title></item>",
            // Repairs: mismatched, stray and missing end tags; an item left open.
            "<item><title>a</item><item><title>b</title></foo></item><item><title>c</title>",
            "<item><title>a</title></item></channel><item><title>b</title></item>",
            "<item><title>a</title></item><item><title>b</title></item></channel></rss><item><title>after</title></item>",
            // Empty items, xmlns on an item, undeclared prefixes, entities.
            "<item></item><item><title>a</title></item><item/><item xmlns:x=\"urn:x\"><x:y>1</x:y><media:title>m</media:title>&eacute;&bogus;</item>",
            // A DOCTYPE among the items.
            "<item><title>a</title></item><!DOCTYPE x [<!ENTITY e \"E\">]><item><title>&e;</title></item>",
            // Markup quick-xml reads no further after (a processing instruction or a
            // declaration with nothing in it), just before a place a stretch starts.
            "<item><title>a</title></item><?><item><title>b</title></item><item><title>c</title></item>",
            "<item><title>a</title></item><!D><item><title>b</title></item><item><title>c</title></item>",
            // A U+FEFF where a stretch stops (not a byte-order mark there), then an error
            // whose byte position is reported.
            "<item><title>a</title></item>\u{feff}words<item><title>b</title></item><item><title>c</title></item><!-- open",
            // Malformed markup.
            "<item><title>a</title></item><item><ti<tle>b</title></item><item><title>c</title></item>",
            "<item><title>a</title></item><item><title>b</title></item><",
        ] {
            same(&rss(items), None);
        }
    }

    #[test]
    fn after_something_else_among_the_items_the_stretches_are_used_again() {
        let items = |n: usize| -> String {
            (0..n)
                .map(|i| {
                    format!("<item><title>{i}</title><description>d {i}</description></item>\n")
                })
                .collect()
        };
        for odd in [
            "<title>late</title>",
            "stray words",
            "<item><title>x</title></foo></item>",
            "<!DOCTYPE x>",
        ] {
            let doc = rss(&format!("{}{odd}{}", items(3), items(40)));
            let used = same(&doc, None);
            assert!(used > 20, "{odd}: {used} stretches used");
        }
    }

    #[test]
    fn what_the_head_declares_holds_in_every_stretch() {
        // Entities declared by the document: read by one reader (their budget is the
        // document's), the same either way.
        let doc = "<!DOCTYPE rss [<!ENTITY me \"Someone\">]><rss><channel><item><title>&me;</title></item><item><title>&me;</title></item><item><title>&me;</title></item></channel></rss>";
        assert_eq!(same(doc, None), 0);
        // Prefixes and an unknown root namespace declared in the head; RSS 1.0.
        let doc = "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns=\"http://purl.org/rss/1.0/\" xmlns:c=\"http://purl.org/rss/1.0/modules/content/\"><channel rdf:about=\"x\"><title>R</title><link>http://example.com/</link></channel><item rdf:about=\"http://example.com/1\"><title>1</title><c:encoded>&lt;p&gt;one&lt;/p&gt;</c:encoded></item><item rdf:about=\"http://example.com/2\"><title>2</title></item><item rdf:about=\"http://example.com/3\"><title>3</title></item></rdf:RDF>";
        assert!(same(doc, None) > 0);
        let doc = "<rss xmlns=\"urn:unknown\"><channel><link>/site/</link><item><title>1</title><link>a</link></item><item><title>2</title><link>b</link></item><item><title>3</title></item></channel></rss>";
        assert!(same(doc, None) > 0);
        // A head that needed a repair: read by one reader.
        let doc = "<rss><channel><title>T</foo><item><title>1</title></item><item><title>2</title></item></channel></rss>";
        assert_eq!(same(doc, None), 0);
    }

    #[test]
    fn every_fixture_reads_the_same_split() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut read = 0;
        for dir in [root.clone(), root.join("parsing")] {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().and_then(|e| e.to_str()) != Some("xml") {
                    continue;
                }
                let bytes = std::fs::read(&path).unwrap();
                let text = super::super::decode::to_utf8(bytes.into(), None);
                same(&text, None);
                read += 1;
            }
        }
        assert!(read > 30);
    }

    #[test]
    fn the_item_cap_counts_the_same_across_stretches() {
        let items =
            "<item><title>i</title></item><item></item>".repeat(super::super::MAX_ITEMS / 2 + 3);
        let doc = rss(&items);
        let (a, b, used) = both(&doc, None, 100_000);
        assert!(used > 3);
        assert_eq!(a, b);
        assert!(a.contains("ItemsCapped"));
        // No stretch holds an item past the cap (they would all be held at once).
        assert!(HELD.with(|h| h.get()) <= super::super::MAX_ITEMS);
        let beyond = "<item a=\"1\"/>".repeat(super::super::MAX_ITEMS * 2);
        let (a, b, _) = both(&rss(&beyond), None, 50_000);
        assert_eq!(a, b);
        assert!(HELD.with(|h| h.get()) <= super::super::MAX_ITEMS);
    }

    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "<item><title>t</title></item>",
            "<item><title>x &amp; y</title><link>/l</link></item>",
            "<item/>",
            "<item></item>",
            "\n",
            "<!-- <item> -->",
            "<item><description><![CDATA[<item>]]></description></item>",
            "<title>late</title>",
            "</channel>",
            "<item><title>open",
            "</title></item>",
            "<entry><id>e</id></entry>",
            "text",
            "&eacute;",
            "<item><item><title>n</title></item></item>",
            "<item xml:base=\"/b/\"><link>rel</link></item>",
            "<?pi x?>",
            "<",
            "<wrap>",
            "</wrap>",
            "<item xmlns:dc=\"urn:x\"><dc:creator>c</dc:creator></item>",
            "<!DOCTYPE d [<!ENTITY e \"E\">]>",
            "<item><title>&e;</title></item>",
            "<![CDATA[",
            "]]>",
            "<?>",
            "<!D>",
            "\u{feff}",
            "<!-- open",
            "<description>\n <![CDATA[<p>a > b]] > c</p>]]></description>",
            "<![CDATA[x]]]]>",
            "<![CDATA[]]>",
            "]]",
            "\u{feff}<![CDATA[y]]>\u{feff}",
            "<![cdata[z]]>",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn any_sequence_of_pieces_reads_the_same_split(
            pieces in prop::collection::vec(piece(), 0..40),
            step in 1usize..200,
        ) {
            let doc = rss(&pieces.concat());
            let (a, b, _) = both(&doc, None, step);
            prop_assert_eq!(a, b);
        }
    }
}
