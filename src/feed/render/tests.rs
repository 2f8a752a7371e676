//! Rendering tests: markdown, text, one-line text and sanitized HTML.

use super::*;

fn md(html: &str) -> String {
    to_markdown(
        html,
        Url::parse("https://example.com/blog/post/").ok().as_ref(),
    )
    .unwrap()
}

#[test]
fn paragraphs_emphasis_and_links() {
    assert_eq!(
        md("<p>Hello <b>bold</b> and <em> soft </em>text.</p><p>See <a href=\"/x\">this</a>.</p>"),
        "Hello **bold** and *soft* text.\n\nSee [this](https://example.com/x)."
    );
}

#[test]
fn lists_nest_and_number() {
    assert_eq!(
        md("<ul><li>one</li><li>two<ol start=3><li>a</li><li>b</li></ol></li></ul><p>after</p>"),
        "- one\n- two\n  3. a\n  4. b\n\nafter"
    );
    assert_eq!(md("<ul><li>x<li>y</ul>"), "- x\n- y");
}

#[test]
fn headings_quotes_code_and_rules() {
    assert_eq!(
        md(
            "<h2>Title</h2><blockquote><p>q1</p><p>q2</p></blockquote><pre><code>a &lt; b\n  c</code></pre><hr><p>x <code>y*z</code></p>"
        ),
        "## Title\n\n> q1\n>\n> q2\n\n```\na < b\n  c\n```\n\n---\n\nx `y*z`"
    );
}

#[test]
fn script_and_style_never_leak() {
    let html = "<p>ok</p><script>alert('x')</script><style>p{color:red}</style><p>fine</p>";
    for out in [
        md(html),
        to_text(html, None).unwrap(),
        to_plain(html),
        sanitize_html(html, None),
    ] {
        assert!(!out.contains("alert"), "{out}");
        assert!(!out.contains("color"), "{out}");
        assert!(out.contains("fine"), "{out}");
    }
}

#[test]
fn images_resolve_and_tracking_pixels_go() {
    assert_eq!(
        md(
            "<p><img src=\"pic.png\" alt=\"A pic\"><img src=\"/t.gif\" width=\"1\" height=\"1\"></p>"
        ),
        "![A pic](https://example.com/blog/post/pic.png)"
    );
}

#[test]
fn markdown_syntax_in_text_is_escaped() {
    assert_eq!(
        md("<p>2 * 3 = [6] and snake_case</p>"),
        "2 \\* 3 = \\[6\\] and snake_case"
    );
    assert_eq!(md("<p># not a heading</p>"), "\\# not a heading");
}

#[test]
fn tables_become_pipe_tables() {
    assert_eq!(
        md(
            "<table><thead><tr><th>A</th><th>B</th></tr></thead><tbody><tr><td>1</td><td><p>2</p></td></tr></tbody></table>"
        ),
        "| A | B |\n| --- | --- |\n| 1 | 2 |"
    );
}

#[test]
fn text_rendering_keeps_structure_without_markup() {
    assert_eq!(
        to_text(
            "<h1>T</h1><p>a <a href='/x'>link</a></p><ul><li>i</li></ul>",
            None
        )
        .unwrap(),
        "T\n\na link\n\n- i"
    );
}

#[test]
fn plain_text_is_one_line() {
    assert_eq!(
        to_plain("Tom &amp; <b>Jerry</b><br>show"),
        "Tom & Jerry show"
    );
    assert_eq!(to_plain("  a\n b "), "a b");
}

#[test]
fn sanitized_html_drops_handlers_and_script_urls() {
    let out = sanitize_html(
        "<p onclick=\"x()\" class=\"c\">hi <a href=\"javascript:evil()\">x</a> <a href=\"/ok\">y</a></p>",
        Url::parse("https://e.com/").ok().as_ref(),
    );
    assert_eq!(
        out,
        "<p>hi <a rel=\"noopener noreferrer nofollow\">x</a> <a href=\"https://e.com/ok\" rel=\"noopener noreferrer nofollow\">y</a></p>"
    );
}

#[test]
fn absurd_nesting_is_unconvertible() {
    let html = "<blockquote>".repeat(200) + "x";
    assert!(to_markdown(&html, None).is_err());
}

#[test]
fn empty_emphasis_and_links_vanish() {
    assert_eq!(md("<p>a<b> </b>b <a href='/x'></a>c</p>"), "a b c");
}

/// Checks that markdown holds no raw HTML and links only to allowed schemes, as a
/// CommonMark renderer with GFM tables and strikethrough reads it.
pub(crate) fn markdown_is_safe(md: &str) -> Result<(), String> {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(md, opts) {
        match event {
            Event::Html(h) | Event::InlineHtml(h) => return Err(format!("raw HTML {h:?}")),
            Event::Start(Tag::HtmlBlock) => return Err("an HTML block".into()),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                match Url::parse(&dest_url) {
                    Ok(u) if crate::urls::CONTENT_SCHEMES.contains(&u.scheme()) => {}
                    _ => return Err(format!("a link to {dest_url:?}")),
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks that sanitized HTML, parsed by an HTML5 parser as a browser would, holds only
/// allowlisted elements, attributes and URL schemes.
pub(crate) fn html_is_safe(html: &str) -> Result<(), String> {
    use html5ever::tendril::TendrilSink;
    use html5ever::{QualName, local_name, ns};
    use markup5ever_rcdom::{Handle, NodeData, RcDom};
    use sanitize::{ALLOWED_ATTRIBUTES, ALLOWED_TAGS, LINK_REL};

    fn walk(node: &Handle, root: bool) -> Result<(), String> {
        match &node.data {
            NodeData::Element { name, attrs, .. } if !root => {
                let tag = name.local.as_ref();
                if name.ns != ns!(html) || !ALLOWED_TAGS.contains(&tag) {
                    return Err(format!("element <{tag}> ({:?})", name.ns));
                }
                for a in attrs.borrow().iter() {
                    let attr = a.name.local.as_ref();
                    let allowed = ALLOWED_ATTRIBUTES
                        .iter()
                        .any(|(t, list)| (*t == "*" || *t == tag) && list.contains(&attr));
                    if attr == "rel" && tag == "a" {
                        if a.value.as_ref() != LINK_REL {
                            return Err(format!("rel={:?}", a.value));
                        }
                        continue;
                    }
                    if !allowed || !a.name.ns.is_empty() {
                        return Err(format!("attribute {attr} on <{tag}>"));
                    }
                    if matches!(attr, "href" | "src") {
                        match Url::parse(&a.value) {
                            Ok(u) if crate::urls::CONTENT_SCHEMES.contains(&u.scheme()) => {}
                            _ => return Err(format!("{attr}={:?}", a.value)),
                        }
                    }
                    if attr == "class" && !a.value.split(' ').all(|c| c.starts_with("lang")) {
                        return Err(format!("class={:?}", a.value));
                    }
                }
            }
            NodeData::Comment { .. } => return Err("a comment".into()),
            NodeData::ProcessingInstruction { .. } | NodeData::Doctype { .. } => {
                return Err("a declaration".into());
            }
            _ => {}
        }
        for child in node.children.borrow().iter() {
            walk(child, false)?;
        }
        Ok(())
    }

    let dom = html5ever::parse_fragment(
        RcDom::default(),
        Default::default(),
        QualName::new(None, ns!(html), local_name!("div")),
        vec![],
        true,
    )
    .one(html);
    // The fragment parser wraps the content in an `<html>` element of its own.
    for top in dom.document.children.borrow().iter() {
        for child in top.children.borrow().iter() {
            walk(child, false)?;
        }
    }
    Ok(())
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/render");

/// Each `tests/fixtures/render/NAME.html` body rendered in each mode must equal the recorded
/// `NAME.md`, `NAME.txt` and `NAME.sanitized.html` (`RSS_BLESS=1` records them anew), and
/// pass the safety checks.
#[test]
fn every_fixture_renders_as_recorded_in_each_mode() {
    let base = Url::parse("https://example.com/blog/post/").unwrap();
    let bless = std::env::var_os("RSS_BLESS").is_some();
    let mut inputs: Vec<_> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".html") && !n.ends_with(".sanitized.html")
        })
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 30, "fixtures missing: {inputs:?}");
    let mut failures = Vec::new();
    for input in &inputs {
        let html = std::fs::read_to_string(input).unwrap();
        let stem = input.to_string_lossy().trim_end_matches(".html").to_owned();
        let markdown = to_markdown(&html, Some(&base)).unwrap();
        let text = to_text(&html, Some(&base)).unwrap();
        let sanitized = sanitize_html(&html, Some(&base));
        if let Err(e) = markdown_is_safe(&markdown) {
            failures.push(format!("{stem}.md is unsafe: {e}"));
        }
        if let Err(e) = html_is_safe(&sanitized) {
            failures.push(format!("{stem}.sanitized.html is unsafe: {e}"));
        }
        for (ext, got) in [
            ("md", markdown),
            ("txt", text),
            ("sanitized.html", sanitized),
        ] {
            let path = format!("{stem}.{ext}");
            if bless {
                std::fs::write(&path, format!("{got}\n")).unwrap();
                continue;
            }
            let want = std::fs::read_to_string(&path).unwrap_or_default();
            if want.strip_suffix('\n').unwrap_or(&want) != got {
                failures.push(format!("{path}:\n--- want\n{want}\n--- got\n{got}\n"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn messy() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("<".to_owned()),
                Just(">".to_owned()),
                Just("</".to_owned()),
                Just("&".to_owned()),
                Just("&amp;".to_owned()),
                Just("&lt;".to_owned()),
                Just("&#x09;".to_owned()),
                Just("\"".to_owned()),
                Just("'".to_owned()),
                Just("=".to_owned()),
                Just(" ".to_owned()),
                Just("\n".to_owned()),
                Just("`".to_owned()),
                Just("```".to_owned()),
                Just("|".to_owned()),
                Just("*".to_owned()),
                Just("_".to_owned()),
                Just("[".to_owned()),
                Just("]".to_owned()),
                Just("(".to_owned()),
                Just("\\".to_owned()),
                Just("#".to_owned()),
                Just("-".to_owned()),
                Just("1.".to_owned()),
                Just("~".to_owned()),
                Just("!".to_owned()),
                Just("é".to_owned()),
                Just("\u{1F600}".to_owned()),
                Just("<!--".to_owned()),
                Just("-->".to_owned()),
                Just("<![CDATA[".to_owned()),
                Just("]]>".to_owned()),
                Just("javascript:alert(1)".to_owned()),
                Just("<img src=x onerror=alert(1)>".to_owned()),
                "(p|b|i|em|a href=x|a href=\"javascript:x\"|a href='java&#x09;script:y'|a href=/rel|a href=\"mailto:a@b\"|li|ul|ol|pre|code|pre class=language-rust|kbd|table|tr|td|th|td colspan=3|blockquote|h2|img src=y alt=\"a|b\"|img src=\"data:x\"|script|style|br/|br|hr|div|video src=v.mp4|audio|source src=s.mp3|iframe src=f|svg|math|plaintext|textarea|noscript|del|sup|details|summary|span|h1)".prop_map(|t| format!("<{t}>")),
                "(p|b|i|em|a|li|ul|ol|pre|code|kbd|table|tr|td|th|blockquote|h2|script|style|div|video|audio|svg|math|textarea|noscript|del|details|span|h1)".prop_map(|t| format!("</{t}>")),
                "[a-z]{1,6}",
            ],
            0..80,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift, ..ProptestConfig::default() })]

        #[test]
        fn markdown_never_holds_raw_html_or_a_foreign_scheme(html in messy()) {
            let base = Url::parse("https://example.com/a/").ok();
            for b in [base.as_ref(), None] {
                let md = to_markdown(&html, b).unwrap_or_default();
                prop_assert!(markdown_is_safe(&md).is_ok(), "{html:?}\n=> {md:?}\n{:?}", markdown_is_safe(&md));
            }
        }

        #[test]
        fn sanitized_html_holds_only_the_allowlist(html in messy()) {
            let base = Url::parse("https://example.com/a/").ok();
            for b in [base.as_ref(), None] {
                let out = sanitize_html(&html, b);
                prop_assert!(html_is_safe(&out).is_ok(), "{html:?}\n=> {out:?}\n{:?}", html_is_safe(&out));
            }
        }

        #[test]
        fn no_rendering_carries_script_or_style_text(html in messy()) {
            let wrapped = format!("<p>a<script>SECRET()</script><style>HIDDEN{{}}</style>{html}");
            let text = to_text(&wrapped, None).unwrap_or_default();
            let plain = to_plain(&wrapped);
            let md = to_markdown(&wrapped, None).unwrap_or_default();
            for out in [text, plain, md] {
                prop_assert!(!out.contains("SECRET") && !out.contains("HIDDEN"), "{out:?}");
            }
        }

        #[test]
        fn plain_text_bodies_become_safe_markdown(text in "[ -~\n]{0,200}") {
            let md = text_to_markdown(&text);
            prop_assert!(markdown_is_safe(&md).is_ok(), "{text:?} => {md:?}");
        }

        #[test]
        fn ids_are_stable_across_parses_and_independent_of_item_order(
            titles in proptest::collection::vec("[a-zA-Z0-9 ]{1,12}", 1..8),
            seed in 0usize..100,
        ) {
            let doc = |order: &[usize]| {
                let items: String = order
                    .iter()
                    .map(|&i| format!("<item><title>{}</title><guid>g{i}</guid></item>", titles[i]))
                    .collect();
                format!("<rss><channel><title>t</title>{items}</channel></rss>")
            };
            let ids = |xml: String| {
                let p = crate::feed::process(
                    "https://example.com/f",
                    xml.into_bytes().into(),
                    None,
                    None,
                    &crate::feed::Selection::default(),
                    &crate::feed::RenderOptions::default(),
                )
                .unwrap();
                let mut v: Vec<(Option<String>, String)> =
                    p.built.items.into_iter().map(|i| (i.guid, i.id)).collect();
                v.sort();
                v
            };
            let forward: Vec<usize> = (0..titles.len()).collect();
            let mut shuffled = forward.clone();
            shuffled.rotate_left(seed % titles.len());
            let first = ids(doc(&forward));
            prop_assert_eq!(&first, &ids(doc(&forward)));
            prop_assert_eq!(&first, &ids(doc(&shuffled)));
        }

        #[test]
        fn dates_accept_any_text(s in "[0-9A-Za-z:+\\-/., TZé]{0,40}") {
            let _ = crate::date::parse(&s);
            let _ = crate::feed::parse_since(&s, chrono::Utc::now());
        }

        #[test]
        fn a_parse_fails_as_not_a_feed_or_returns_no_empty_item(
            body in proptest::collection::vec(any::<u8>(), 0..400),
            html in messy(),
            shape in prop_oneof![
                Just("<rss><channel>{}</channel></rss>"),
                Just("<rss><channel><item>{}"),
                Just("<feed xmlns='http://www.w3.org/2005/Atom'><entry>{}</entry></feed>"),
                Just("<rdf:RDF><item>{}</item></rdf:RDF>"),
                Just("{}"),
            ],
        ) {
            let fragment = format!("<item><title>{html}</title></item><item>{html}</item>");
            let doc = shape.replace("{}", &fragment);
            for bytes in [body, doc.into_bytes()] {
                if let Err(e) = crate::feed::parse(bytes.into(), Some("text/xml; charset=utf-8"), None) {
                    prop_assert_eq!(e.code().as_str(), "FEED_PARSE_FAILED");
                }
            }
        }
    }
}
