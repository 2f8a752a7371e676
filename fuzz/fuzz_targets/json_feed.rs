//! Any bytes as a JSON Feed (the content type selects the JSON path).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rss::{RenderOptions, Selection};

fuzz_target!(|data: &[u8]| {
    let base = url::Url::parse("https://fuzz.example/feed.json").unwrap();
    let _ = rss::internals::process(
        base.as_str(),
        data.to_vec().into(),
        Some("application/feed+json"),
        Some(&base),
        &Selection::default(),
        &RenderOptions::default(),
    );
});
