//! Any text as an OPML subscription list.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = rss::internals::opml_urls(&text);
    let _ = rss::internals::list_lines(&text);
});
