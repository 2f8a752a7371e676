//! The shape bounds against a real tree builder (dom_query's, the one dom_smoothie reads
//! pages with): what reaches the extractors is never nested deeper than the bounds allow.

use proptest::prelude::*;

use super::*;

fn allowed(depth: usize) -> usize {
    tree_builder_allowance(depth)
}

fn shaped(html: &str) -> Cow<'_, str> {
    bounded(html, &Stop::never()).unwrap()
}

#[test]
fn issue_27_ordinary_pages_reach_the_extractors_untouched() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/articles");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "html") {
            let html = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert!(
                matches!(shaped(&html), Cow::Borrowed(_)),
                "{} was rewritten",
                path.display()
            );
            seen += 1;
        }
    }
    assert!(seen >= 3);
    let soup = "<p>one<p>two<ul><li>a<li>b</ul><table><tr><td>x<td>y</table>\
                <svg><path d='M0'/><path/><title>icon</title></svg><p>three";
    assert!(matches!(shaped(soup), Cow::Borrowed(_)));
}

#[test]
fn issue_27_deep_pages_are_written_again_within_the_bounds_with_their_text() {
    let hostile = [
        format!(
            "{}deep words{}",
            "<span>".repeat(30_000),
            "</span>".repeat(30_000)
        ),
        format!("{}deep words", "<div>".repeat(12_000)),
        format!("{}deep words", "<div/>".repeat(5_000)),
        format!("{}deep words", "<span><div></span>".repeat(3_000)),
        format!(
            "<svg><title>{}deep words</title></svg>",
            "<g>".repeat(3_000)
        ),
        format!("<![CDATA[>{}deep words]]>", "<div>".repeat(3_000)),
        format!("{}deep words", "<x$1></x$2>".repeat(3_000)),
        format!("{}deep words", "<table><td>".repeat(2_000)),
        format!("{}deep words", "<p><b><div>".repeat(2_000)),
        format!(
            "<math><annotation-xml>{}<style></style>deep words",
            "<mi>".repeat(2_000)
        ),
        format!("<svg><g><div></div>{}deep words", "<span/>".repeat(3_000)),
    ];
    for html in &hostile {
        let out = shaped(html);
        assert!(matches!(out, Cow::Owned(_)), "{}", &html[..40]);
        let depth = tree_depth(&out);
        assert!(depth <= allowed(MAX_DEPTH), "{}: {depth} deep", &html[..40]);
        assert!(out.contains("deep words"), "{}", &html[..40]);
    }
}

#[test]
fn issue_27_formatting_elements_opened_again_in_every_paragraph_count_as_elements() {
    // 120 formatting elements a tree builder opens again inside each of 2,000 paragraphs:
    // 240,000 elements though the page has 2,121 tags.
    let open: String = (0..120).map(|i| format!("<b class=x{i}>")).collect();
    let html = format!(
        "<html><body><p>{open}x</p>{}</body></html>",
        "<p>lighthouse keeper</p>".repeat(2_000)
    );
    let out = shaped(&html);
    assert!(matches!(out, Cow::Owned(_)));
    let doc = dom_query::Document::from(out.as_ref());
    assert!(
        doc.select("b").length() <= MAX_ELEMENTS,
        "{}",
        doc.select("b").length()
    );
    assert_eq!(out.matches("lighthouse keeper").count(), 2_000);
    // One unclosed formatting element on an ordinary page does not make it past a bound.
    let sloppy = format!("<p><b>a bold start{}", "<p>a paragraph</p>".repeat(500));
    assert!(matches!(shaped(&sloppy), Cow::Borrowed(_)));
}

#[test]
fn issue_27_too_many_elements_or_a_huge_attribute_is_bounded_too() {
    let many = "<b>x</b>".repeat(MAX_ELEMENTS + 10);
    let out = shaped(&many);
    assert!(matches!(out, Cow::Owned(_)));
    assert!(out.matches("<b>").count() <= MAX_ELEMENTS);
    assert_eq!(
        out.matches('x').count(),
        MAX_ELEMENTS + 10,
        "no text is lost"
    );
    let paragraphs = "<p>one two</p>".repeat(MAX_ELEMENTS + 10);
    let plain = crate::feed::render::to_plain(&shaped(&paragraphs));
    assert_eq!(
        plain.split_whitespace().count(),
        2 * (MAX_ELEMENTS + 10),
        "words of blocks left out stay apart"
    );
    let huge = format!(
        "<p class=\"{}\" id=keep>text</p>",
        "a".repeat(MAX_ATTRIBUTE_BYTES + 1)
    );
    let out = shaped(&huge);
    assert!(
        out.contains("<p id=\"keep\">text</p>"),
        "{}",
        &out[..60.min(out.len())]
    );
}

#[test]
fn issue_35_a_tag_of_thousands_of_attributes_is_written_again_with_a_few() {
    // A tree builder compares each attribute of a tag with every earlier one: 30,000 short
    // attributes on one tag (224 KB, within the attribute bytes) took it two seconds.
    let names: Vec<String> = (0..30_000).map(|i| format!("a{i}")).collect();
    let html = format!("<p id=keep {}>text</p>", names.join(" "));
    let out = shaped(&html);
    assert!(matches!(out, Cow::Owned(_)));
    assert!(out.contains("<p id=\"keep\" a0=\"\""), "{}", &out[..60]);
    assert!(out.matches("=\"\"").count() < MAX_ATTRIBUTES);
    assert!(out.contains(">text</p>"));
    // A tag of as many as allowed is read as it is.
    let few = format!("<p {}>text</p>", names[..MAX_ATTRIBUTES].join(" "));
    assert!(matches!(shaped(&few), Cow::Borrowed(_)));
}

#[test]
fn issue_27_a_long_run_of_text_is_split_and_none_of_it_lost() {
    let run = "word&nbsp;\u{a0}".repeat(MAX_TEXT_RUN / 4);
    let html = format!("<p>{run}</p>");
    let out = shaped(&html);
    assert!(matches!(out, Cow::Owned(_)));
    assert!(out.contains("<wbr>"));
    assert_eq!(
        out.replace("<wbr>", "").matches("word").count(),
        MAX_TEXT_RUN / 4
    );
    assert!(
        out.split("<wbr>")
            .all(|piece| piece.len() <= MAX_TEXT_RUN + 64)
    );
}

#[test]
fn issue_27_a_cut_call_stops_the_shape_pass() {
    let (stop, guard) = Stop::new();
    drop(guard);
    let html = "<div>".repeat(CHECK_EVERY * 2);
    assert_eq!(bounded(&html, &stop), Err(Stopped::Cancelled));
}

/// Tags whose rules differ in a tree builder: paragraphs, lists, tables, formatting,
/// foreign content and its integration points, raw text, void and self-closing forms.
fn piece() -> impl Strategy<Value = String> {
    let names = prop::sample::select(vec![
        "div",
        "span",
        "p",
        "b",
        "i",
        "a",
        "font",
        "li",
        "ul",
        "table",
        "tr",
        "td",
        "th",
        "tbody",
        "svg",
        "math",
        "g",
        "title",
        "style",
        "script",
        "desc",
        "foreignobject",
        "mi",
        "mtext",
        "annotation-xml",
        "select",
        "option",
        "textarea",
        "template",
        "h1",
        "h2",
        "button",
        "object",
        "br",
        "img",
        "nobr",
        "em",
        "pre",
        "form",
        "dd",
        "dt",
    ]);
    prop_oneof![
        4 => names.clone().prop_map(|n| format!("<{n}>")),
        2 => names.clone().prop_map(|n| format!("</{n}>")),
        1 => names.prop_map(|n| format!("<{n}/>")),
        1 => Just("text ".to_owned()),
        1 => Just("<![CDATA[>".to_owned()),
        1 => Just("]]>".to_owned()),
        1 => Just("<annotation-xml encoding=text/html>".to_owned()),
        1 => Just("<font color=red>".to_owned()),
        // What an HTML tokenizer reads differently from a naive one.
        1 => Just("<div x==\">".to_owned()),
        1 => Just("<div\"=\">".to_owned()),
        1 => Just("\"".to_owned()),
        1 => Just("'".to_owned()),
        1 => Just("</script\x0c>".to_owned()),
        1 => Just("</style\x0c>".to_owned()),
        1 => Just("<g x=a/>".to_owned()),
        1 => Just("<!--".to_owned()),
        1 => Just("-->".to_owned()),
        1 => Just("</ ".to_owned()),
        1 => Just(">".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Whatever a page's tags, a tree builder never nests what reaches the extractors
    /// deeper than the bounds allow, whether the page went through untouched or written
    /// again.
    #[test]
    fn issue_27_no_tag_soup_reaches_the_extractors_deeper_than_allowed(
        pieces in prop::collection::vec(piece(), 0..400),
    ) {
        let html: String = pieces.concat();
        let limits = Limits { depth: 6, elements: 10_000, attribute_bytes: 1024, text_cost: u64::MAX };
        let out = bounded_by(&html, &limits, &Stop::never()).unwrap();
        let depth = tree_depth(&out);
        prop_assert!(depth <= allowed(limits.depth), "{depth} deep: {html}");
    }
}

#[test]
fn issue_27_comments_count_against_the_element_budget_and_a_rewrite_leaves_them_out() {
    // A million `<?>` made a million comment nodes (1.1 GB in the extractors).
    for junk in ["<?>", "<!---->", "<!x>", "</ >"] {
        let page = format!(
            "<html><body>{}<p>the text stays</p></body></html>",
            junk.repeat(MAX_ELEMENTS + 10)
        );
        let out = shaped(&page);
        assert!(matches!(out, Cow::Owned(_)), "{junk} was not rewritten");
        assert!(tree_size(&out) < 100, "{junk}: {} nodes", tree_size(&out));
        assert!(out.contains("the text stays"));
    }
    let few = format!("<p>a</p>{}<p>b</p>", "<!-- note -->".repeat(100));
    assert!(matches!(shaped(&few), Cow::Borrowed(_)));
}

#[test]
fn issue_27_formatting_reopened_for_every_paragraph_is_priced_past_the_checked_cost() {
    // 120 formatting elements over 50,000 paragraphs: a tree whose every paragraph sits
    // 120 deep. trafilatura took 1.2 GB on it; the nesting cost says to leave it out.
    let page = format!(
        "<html><body>{}{}",
        "<b><i><u><s><font><em><strong><tt><big><small><code><nobr>".repeat(10),
        "<p>word ".repeat(50_000)
    );
    let (out, cost) = measured(&page, &Stop::never()).unwrap();
    assert!(cost > crate::article::CHECKED_MAX_COST, "{cost}");
    assert!(tree_size(&out) <= 4 * MAX_ELEMENTS, "{}", tree_size(&out));
    // Ordinary pages cost a small share of it.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/articles");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "html") {
            let html = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            let (_, cost) = measured(&html, &Stop::never()).unwrap();
            assert!(
                cost < crate::article::CHECKED_MAX_COST / 10,
                "{}: {cost}",
                path.display()
            );
        }
    }
}

#[test]
fn issue_35_paragraphs_under_nested_inline_elements_are_priced_past_the_checked_cost() {
    // 8,000 paragraphs under 120 nested `<span>` (not formatting elements: nothing is
    // opened again), within every bound: trafilatura took 273 MB on it, 0.2 MB or 2 MB of
    // text alike. Its nesting cost leaves trafilatura out.
    let page = format!(
        "<html><body>{}{}{}</body></html>",
        "<span>".repeat(120),
        "<p>a short paragraph of words</p>".repeat(8_000),
        "</span>".repeat(120)
    );
    let (out, cost) = measured(&page, &Stop::never()).unwrap();
    assert!(matches!(out, Cow::Borrowed(_)), "within the bounds");
    assert!(cost > crate::article::CHECKED_MAX_COST, "{cost}");
    // A quarter as deep, a quarter as many paragraphs: still checked.
    let page = format!(
        "<html><body>{}{}</body></html>",
        "<span>".repeat(30),
        "<p>a short paragraph of words</p>".repeat(2_000),
    );
    let (_, cost) = measured(&page, &Stop::never()).unwrap();
    assert!(cost <= crate::article::CHECKED_MAX_COST, "{cost}");
}

#[test]
fn issue_35_much_text_deep_down_is_written_again_less_deep_with_all_its_text() {
    // 127 nested `<div>` over 100 paragraphs of text runs: within every other bound, but
    // each ancestor's copy of the text costs Readability's scoring (19 MB of text took two
    // seconds); here a bound 1,000 times smaller, on a page 1,000 times smaller.
    let limits = Limits {
        text_cost: MAX_TEXT_COST / 1_000,
        ..LIMITS
    };
    let run = "word ".repeat(3_000);
    let page = format!(
        "<html><body>{}{}{}</body></html>",
        "<div>".repeat(127),
        format!("<p>{run}<br>{run}</p>").repeat(2),
        "</div>".repeat(127)
    );
    assert!(page.len() < 2 << 20 && page.len() > 40_000);
    let (out, _) = measured_by(&page, &limits, &Stop::never()).unwrap();
    assert!(matches!(out, Cow::Owned(_)));
    assert_eq!(out.matches("word").count(), 4 * 3_000, "no text is lost");
    let text = 4 * run.len() as u64;
    let depth = tree_depth(&out) as u64;
    assert!(text * depth <= 4 * limits.text_cost, "{depth} deep");
    // Under the bound, the same page is read as it is.
    let (out, _) = measured_by(&page, &LIMITS, &Stop::never()).unwrap();
    assert!(matches!(out, Cow::Borrowed(_)));
}
