//! Any text as an OPML subscription list.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = rss::inputs::opml_urls(&text);
    let _ = rss::inputs::list_lines(&text);
});
