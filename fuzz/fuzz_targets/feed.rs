//! Any bytes through the whole per-feed pipeline (decode, parse, ids, select, render) in
//! every content format. Properties: no panic, and no rendering carries a `<script`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rss::{ContentFormat, RenderOptions, Selection};

fuzz_target!(|data: &[u8]| {
    let base = url::Url::parse("https://fuzz.example/feed.xml").unwrap();
    for format in [
        ContentFormat::Markdown,
        ContentFormat::Text,
        ContentFormat::Html,
    ] {
        let render = RenderOptions {
            format,
            max_content_chars: None,
        };
        let Ok(p) = rss::internals::process(
            base.as_str(),
            data.to_vec().into(),
            Some("application/xml"),
            Some(&base),
            &Selection::default(),
            &render,
        ) else {
            return;
        };
        for item in &p.built.items {
            if let Some(c) = &item.content {
                assert!(
                    format == ContentFormat::Text || !c.to_ascii_lowercase().contains("<script"),
                    "{c:?}"
                );
            }
        }
    }
});
