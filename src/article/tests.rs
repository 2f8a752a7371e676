//! Articles from pages: fixtures in `tests/fixtures/articles/`, each read as a server would
//! serve it.

use super::*;
use crate::feed::ContentFormat;

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/articles")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn page_url() -> Url {
    Url::parse("https://coastal.example/stories/skerry-point?utm_source=feed").unwrap()
}

fn read_as(body: &[u8], ct: Option<&str>, format: ContentFormat) -> Result<Article> {
    read(
        body.into(),
        ct,
        &page_url(),
        RenderOptions {
            format,
            max_content_chars: None,
        },
        &Stop::never(),
    )
}

#[test]
fn an_article_comes_with_its_metadata_in_the_stated_order() {
    let a = read_as(
        &fixture("story.html"),
        Some("text/html"),
        ContentFormat::Markdown,
    )
    .unwrap();
    // og:title wins over JSON-LD's headline and <title>.
    assert_eq!(
        a.meta.title.as_deref(),
        Some("The lighthouse keepers of Skerry Point")
    );
    assert_eq!(a.meta.authors, ["Maren Holt"]);
    // article:published_time wins over JSON-LD's datePublished; in UTC.
    assert_eq!(a.meta.published.as_deref(), Some("2026-11-28T08:30:00Z"));
    assert_eq!(a.meta.site_name.as_deref(), Some("Coastal Notes"));
    assert_eq!(a.meta.language.as_deref(), Some("en"));
    assert_eq!(
        a.meta.canonical_url.as_deref(),
        Some("https://coastal.example/stories/skerry-point")
    );
    assert_eq!(
        a.meta.lead_image.as_deref(),
        Some("https://coastal.example/images/skerry-light.jpg")
    );
    assert!(a.meta.excerpt.unwrap().starts_with("Three generations"));
    let md = a.content.unwrap();
    assert!(md.contains("For ninety-one years the light"), "{md}");
    assert!(md.contains("## After the keepers"), "{md}");
    // Links and images are absolute against the page's URL.
    assert!(
        md.contains("(https://coastal.example/people/ingrid-andersen)"),
        "{md}"
    );
    assert!(
        md.contains("(https://coastal.example/stories/images/logbook.jpg)"),
        "{md}"
    );
    // No script, style, navigation or banner text; no script link.
    for leaked in [
        "SECRET_TRACKER_TEXT",
        "STYLE_TEXT",
        "Accept all",
        "Subscribe",
        "javascript:",
    ] {
        assert!(!md.contains(leaked), "{leaked} leaked: {md}");
    }
    assert!(a.word_count > 250, "{}", a.word_count);
    assert_eq!(a.content_hash.len(), 16);
}

#[test]
fn every_rendering_of_an_article_is_safe() {
    let body = fixture("story.html");
    let html = read_as(&body, Some("text/html"), ContentFormat::Html)
        .unwrap()
        .content
        .unwrap();
    for bad in [
        "<script",
        "onclick",
        "javascript:",
        "<style",
        "SECRET_TRACKER_TEXT",
    ] {
        assert!(!html.contains(bad), "{bad} in {html}");
    }
    assert!(
        html.contains("href=\"https://coastal.example/people/ingrid-andersen\""),
        "{html}"
    );
    let text = read_as(&body, Some("text/html"), ContentFormat::Text)
        .unwrap()
        .content
        .unwrap();
    assert!(!text.contains('<'), "{text}");
    assert!(text.contains("The rock itself is barely larger"), "{text}");
    let none = read_as(&body, Some("text/html"), ContentFormat::None).unwrap();
    assert_eq!(none.content, None);
}

#[test]
fn a_base_href_is_the_base_of_the_articles_links() {
    let html = String::from_utf8(fixture("story.html")).unwrap().replace(
        "<head>",
        "<head><base href=\"https://cdn.coastal.example/x/\">",
    );
    let md = read_as(html.as_bytes(), Some("text/html"), ContentFormat::Markdown)
        .unwrap()
        .content
        .unwrap();
    assert!(
        md.contains("(https://cdn.coastal.example/x/images/logbook.jpg)"),
        "{md}"
    );
}

#[test]
fn an_index_page_is_no_readable_content_and_names_the_page() {
    let e = read_as(
        &fixture("index.html"),
        Some("text/html"),
        ContentFormat::Markdown,
    )
    .unwrap_err();
    assert_eq!(e.code().as_str(), "NO_READABLE_CONTENT");
    let d = e.details();
    assert_eq!(d["title"], "Coastal Notes — all stories");
    assert_eq!(d["readerable"], false);
}

#[test]
fn words_are_counted_by_unicode_segmentation_and_each_cjk_character_counts() {
    assert_eq!(words("The keeper's log, 1953: calm."), 5);
    assert_eq!(words("海角灯塔的守灯人"), 8);
    assert_eq!(words("日本語のテキスト"), 8);
    assert_eq!(words("Skerry 灯塔 point"), 4);
    assert_eq!(words("  — … "), 0);
}

#[test]
fn issue_28_a_chinese_article_in_short_paragraphs_is_returned() {
    let a = read_as(&fixture("zh.html"), Some("text/html"), ContentFormat::Text).unwrap();
    let text = a.content.unwrap();
    assert!(text.contains("守灯人在二零一二年离开"), "{text}");
    assert!(a.word_count > 400, "{}", a.word_count);
}

#[test]
fn issue_28_a_short_news_brief_is_returned() {
    let a = read_as(
        &fixture("brief.html"),
        Some("text/html"),
        ContentFormat::Text,
    )
    .unwrap();
    let text = a.content.unwrap();
    assert!(
        text.contains("Engineers will replace two expansion joints"),
        "{text}"
    );
    assert!(text.contains("allow an extra half hour"), "{text}");
    assert!(!text.contains("Subscribe"), "{text}");
}

#[test]
fn a_login_wall_and_a_list_of_links_are_no_readable_content() {
    for name in ["login.html", "links.html", "index.html"] {
        let e = read_as(&fixture(name), Some("text/html"), ContentFormat::Text).unwrap_err();
        assert_eq!(e.code().as_str(), "NO_READABLE_CONTENT", "{name}");
    }
}

#[test]
fn issue_28_the_text_rendering_carries_no_image_alt_text() {
    let a = read_as(
        &fixture("story.html"),
        Some("text/html"),
        ContentFormat::Text,
    )
    .unwrap();
    let text = a.content.unwrap();
    assert!(!text.contains("A page of the 1953 logbook"), "{text}");
    assert!(
        text.contains("The logbooks, now held by the county archive"),
        "{text}"
    );
    // Markdown keeps the image, alt text and all.
    let md = read_as(
        &fixture("story.html"),
        Some("text/html"),
        ContentFormat::Markdown,
    )
    .unwrap()
    .content
    .unwrap();
    assert!(md.contains("![A page of the 1953 logbook]("), "{md}");
}

#[test]
fn a_feed_is_not_an_article() {
    let feed = b"<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>T</title><item><title>i</title></item></channel></rss>";
    for ct in [Some("application/rss+xml"), Some("text/html"), None] {
        let e = read_as(feed, ct, ContentFormat::Markdown).unwrap_err();
        assert_eq!(e.code().as_str(), "NOT_AN_ARTICLE", "{ct:?}");
        assert_eq!(e.details()["format"], "rss");
    }
}

#[test]
fn what_is_not_a_web_page_is_refused_from_its_header_or_its_first_bytes() {
    assert_eq!(
        refuse(Some("application/pdf"), b""),
        Some("application/pdf".into())
    );
    assert_eq!(
        refuse(Some("image/png; q=1"), b""),
        Some("image/png".into())
    );
    assert_eq!(refuse(Some("video/mp4"), b""), Some("video/mp4".into()));
    assert_eq!(refuse(Some("text/html; charset=utf-8"), b""), None);
    assert_eq!(refuse(Some("text/plain"), b"<p>hi"), None);
    assert_eq!(refuse(Some("application/rss+xml"), b"<rss>"), None);
    assert_eq!(refuse(None, b""), None);
    assert_eq!(
        refuse(None, b"%PDF-1.7\n..."),
        Some("application/pdf".into())
    );
    assert_eq!(
        refuse(Some("text/html"), b"\x89PNG\r\n\x1a\n...."),
        Some("image/png (served as text/html)".into())
    );
    assert_eq!(refuse(Some("text/html"), b"<!doctype html><p>hi"), None);
    let e = read_as(b"%PDF-1.4 binary", None, ContentFormat::Markdown).unwrap_err();
    assert_eq!(e.code().as_str(), "UNSUPPORTED_CONTENT");
    assert_eq!(e.details()["content_type"], "application/pdf");
}

#[test]
fn issue_27_scripts_stylesheets_and_data_are_not_read_as_articles() {
    for t in [
        "text/javascript",
        "text/css; charset=utf-8",
        "text/csv",
        "text/calendar",
        "application/javascript",
    ] {
        let e = read_as(
            b"<p>var x = 1; body { color: red }</p>",
            Some(t),
            ContentFormat::Text,
        )
        .unwrap_err();
        assert_eq!(e.code().as_str(), "UNSUPPORTED_CONTENT", "{t}");
        assert_eq!(
            e.details()["content_type"],
            t.split(';').next().unwrap(),
            "{t}"
        );
    }
}

#[test]
fn a_legacy_encoding_with_no_declared_charset_is_detected() {
    let a = read_as(
        &fixture("cp1251.html"),
        Some("text/html"),
        ContentFormat::Text,
    )
    .unwrap();
    assert_eq!(a.meta.title.as_deref(), Some("Маяк на мысе"));
    assert!(a.content.unwrap().contains("смотрителей"));
}

#[test]
fn a_page_converted_to_utf8_that_kept_its_old_label_is_read_as_utf8() {
    let html = String::from_utf8(fixture("story.html"))
        .unwrap()
        .replace(
            "<meta charset=\"utf-8\">",
            "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=gb2312\">",
        )
        .replace("Andersens", "Андерсены");
    let a = read_as(html.as_bytes(), Some("text/html"), ContentFormat::Text).unwrap();
    assert!(a.content.unwrap().contains("Андерсены"));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn reading_any_bytes_as_a_page_never_panics(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = read_as(&body, Some("text/html"), ContentFormat::Markdown);
            let _ = read_as(&body, None, ContentFormat::Html);
        }

        #[test]
        fn an_articles_html_never_carries_script(tail in "[<>a-z =\"'/:;()]{0,200}") {
            let html = String::from_utf8(fixture("story.html")).unwrap()
                .replace("</article>", &format!("<p>{tail}<script>alert(1)</script><img src=x onerror=alert(1)></p></article>"));
            if let Ok(a) = read_as(html.as_bytes(), Some("text/html"), ContentFormat::Html) {
                let c = a.content.unwrap_or_default();
                prop_assert!(!c.contains("<script"));
                prop_assert!(!c.contains("onerror"));
            }
        }
    }
}

#[test]
fn issue_27_what_a_page_says_of_itself_is_capped() {
    let words = "a long line of words that goes on ".repeat(5_000);
    let authors: String = (0..100)
        .map(|i| format!("<meta name=\"author\" content=\"Author {i} {words}\">"))
        .collect();
    let page = format!(
        "<html lang=\"{}\"><head><title>{words}</title><meta name=\"description\" content=\"{words}\">{authors}</head>\
         <body><article><p>{}</p></article></body></html>",
        "x".repeat(500),
        "The keeper climbed the stairs every evening and wrote the weather in the log. ".repeat(20)
    );
    let a = read_as(page.as_bytes(), Some("text/html"), ContentFormat::None).unwrap();
    let chars = |s: &Option<String>| s.as_deref().map_or(0, |s| s.chars().count());
    assert!(chars(&a.meta.title) <= META_MAX_CHARS + 1);
    assert!(chars(&a.meta.excerpt) <= META_MAX_CHARS + 1);
    assert!(a.meta.authors.len() <= MAX_AUTHORS);
    assert!(
        a.meta
            .authors
            .iter()
            .all(|s| s.chars().count() <= AUTHOR_MAX_CHARS + 1)
    );
    assert!(chars(&a.meta.language) <= LANGUAGE_MAX_CHARS + 1);
}

#[test]
fn issue_27_an_svg_image_or_an_article_only_an_svg_holds_is_not_passed_off_as_an_article() {
    let words: String = (0..40)
        .map(|i| format!("<text y=\"{i}\">the keeper wrote the weather in the log</text>"))
        .collect();
    let svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\">{words}</svg>");
    let e = read_as(svg.as_bytes(), Some("image/svg+xml"), ContentFormat::Text).unwrap_err();
    assert_eq!(e.code().as_str(), "UNSUPPORTED_CONTENT");
    let page = format!("<html><body><article>{svg}</article></body></html>");
    for format in [
        ContentFormat::Text,
        ContentFormat::Html,
        ContentFormat::None,
    ] {
        let e = read_as(page.as_bytes(), Some("text/html"), format).unwrap_err();
        assert_eq!(e.code().as_str(), "NO_READABLE_CONTENT", "{format:?}");
    }
}

#[test]
fn issue_27_a_utf16_page_with_its_bom_is_read() {
    let page = format!(
        "<html><head><title>Sixteen</title></head><body><article><p>{}</p></article></body></html>",
        "The keeper climbed the stairs every evening and wrote the weather in the log. ".repeat(10)
    );
    let mut body = vec![0xff, 0xfe];
    body.extend(page.encode_utf16().flat_map(u16::to_le_bytes));
    let a = read_as(&body, Some("text/html"), ContentFormat::Text).unwrap();
    assert_eq!(a.meta.title.as_deref(), Some("Sixteen"));
    assert!(a.content.unwrap().contains("wrote the weather"));
}
