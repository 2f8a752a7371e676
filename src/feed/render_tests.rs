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
        "<p class=\"c\">hi <a>x</a> <a href=\"https://e.com/ok\">y</a></p>"
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

mod never_panics {
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
                Just("\"".to_owned()),
                Just("'".to_owned()),
                Just("=".to_owned()),
                Just(" ".to_owned()),
                Just("\n".to_owned()),
                Just("é".to_owned()),
                Just("\u{1F600}".to_owned()),
                Just("<!--".to_owned()),
                Just("<![CDATA[".to_owned()),
                "(p|b|i|a href=x|li|ul|ol|pre|code|table|tr|td|blockquote|h2|img src=y|script|style|br/)".prop_map(|t| format!("<{t}>")),
                "(p|b|i|a|li|ul|ol|pre|code|table|tr|td|blockquote|h2|script|style)".prop_map(|t| format!("</{t}>")),
                "[a-z]{1,6}",
            ],
            0..80,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn renderers_accept_any_markup(html in messy()) {
            let base = Url::parse("https://example.com/a/").ok();
            let _ = to_markdown(&html, base.as_ref());
            let _ = to_text(&html, base.as_ref());
            let _ = to_plain(&html);
            let _ = sanitize_html(&html, base.as_ref());
        }

        #[test]
        fn dates_accept_any_text(s in "[0-9A-Za-z:+\\-/., TZé]{0,40}") {
            let _ = crate::feed::date::parse(&s);
            let _ = crate::feed::parse_since(&s, chrono::Utc::now());
        }

        #[test]
        fn the_feed_parser_accepts_any_bytes(body in proptest::collection::vec(any::<u8>(), 0..400), html in messy()) {
            let _ = crate::feed::parse(body, None, None);
            let doc = format!("<rss><channel><title>t</title><item><title>{html}</title><description>{html}</description></item></channel></rss>");
            let _ = crate::feed::parse(doc.into_bytes(), Some("text/xml; charset=utf-8"), None);
        }
    }
}
