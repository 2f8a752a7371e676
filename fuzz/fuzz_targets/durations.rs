//! Any text as a `Retry-After`, a duration flag and a `--since` value. Property: a
//! `Retry-After` date never yields a wait in the past.
#![no_main]

use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    if let Some(wait) = rss::internals::parse_retry_after(&text, now)
        && !text.trim().bytes().all(|b| b.is_ascii_digit())
    {
        assert!(!wait.is_zero());
    }
    let _ = rss::internals::parse_duration(&text);
    let _ = rss::internals::parse_since(&text, chrono::DateTime::UNIX_EPOCH);
});
