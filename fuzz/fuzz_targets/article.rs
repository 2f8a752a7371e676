//! Any bytes as a web page read as an article, in every rendering, and its metadata.
//! Property: an answer (an article or an error code) for any page, never a panic, an abort
//! or a hang; the shape the extractors read is within its bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let url = "https://fuzz.example/a/page.html";
    for format in [
        rss::ContentFormat::Text,
        rss::ContentFormat::Markdown,
        rss::ContentFormat::Html,
    ] {
        let _ = rss::internals::article_content(&text, url, format);
    }
    let _ = rss::internals::article_meta(&text, url);
    let depth = rss::internals::shaped_depth(&text);
    assert!(depth <= rss::internals::SHAPED_DEPTH_ALLOWED, "{depth}");
});
