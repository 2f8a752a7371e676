//! Any text as a web page scanned for feed links. Property: every feed found is an
//! absolute URL.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let page = url::Url::parse("https://fuzz.example/blog/").unwrap();
    let (feeds, _) = rss::internals::find_feeds(&text, &page);
    for f in feeds {
        assert!(url::Url::parse(&f.url).is_ok(), "{}", f.url);
    }
});
