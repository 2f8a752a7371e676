//! Pages of a fetch too large for one answer: as many whole feeds (and, of the feed that
//! does not fit, as many whole items) as fit the token budget, and a `next_cursor` that
//! continues exactly there.
//!
//! A cursor is `base64url(JSON) "." base64url(tag)`: the JSON says where the page starts,
//! which options it belongs to, how `since` was resolved and when it was issued; the tag is
//! an HMAC-SHA256 (first 16 bytes) under a key drawn when the server started, so a cursor
//! changed by one character, or kept past a restart or [`CURSOR_LIFETIME`], is refused.
//! Nothing is kept on the server: every page is cut from the whole run, read again from
//! the cache, so `--dedupe` and the order are the same on every page.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chrono::{DateTime, Utc};
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::budget::{self, tokens_of};
use super::request::FetchRequest;
use super::{CacheMode, FetchOptions};
use crate::error::{Error, Result};
use crate::model::{FeedResult, FetchOutput, Warning, WarningCode};

/// How long a cursor can be used after it was given.
pub const CURSOR_LIFETIME: Duration = Duration::from_secs(3600);

/// The longest cursor accepted (a real one is about 200 characters).
const MAX_CURSOR_CHARS: usize = 1024;

/// Tokens kept for `next_cursor` itself and the page counts.
const CURSOR_TOKENS: usize = 96;

type HmacSha256 = hmac::Hmac<Sha256>;

/// The key cursors are signed with, drawn once per process.
#[derive(Clone)]
pub struct CursorKey([u8; 32]);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

impl Default for CursorKey {
    fn default() -> Self {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // No system randomness (not seen on Linux): the clock, the process id and the
            // standard hasher's own random seed, hashed. Weaker, but never a fixed key.
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            let seed = format!("{}{}", h.finish(), std::process::id());
            key.copy_from_slice(&Sha256::digest(seed.as_bytes()));
        }
        CursorKey(key)
    }
}

impl CursorKey {
    fn tag(&self, body: &str) -> [u8; 16] {
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0).expect("any key length");
        mac.update(body.as_bytes());
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; 16];
        tag.copy_from_slice(&full[..16]);
        tag
    }
}

/// Where a page starts, and what it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    /// Format version.
    v: u8,
    /// The options' fingerprint ([`fingerprint`]).
    o: String,
    /// The feed (index in the request) the page starts in.
    f: usize,
    /// The item (index in that feed's returned items) the page starts at.
    n: usize,
    /// That item's id, to find it again if the feed moved.
    i: Option<String>,
    /// `since` as the first page resolved it (Unix ms), so a relative one does not drift.
    s: Option<i64>,
    /// When the cursor was given (Unix seconds).
    t: u64,
}

/// Where a continued call starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Start {
    feed: usize,
    item: usize,
    anchor: Option<String>,
}

/// A fingerprint of what a paged call asked for (its inputs and every option that changes
/// its items), so a cursor is refused by a call that asks for something else. The cache
/// policy and the token budget may change between pages.
pub fn fingerprint(urls: &[String], req: &FetchRequest) -> String {
    let asked = serde_json::json!({
        "urls": urls,
        "since": req.since,
        "limit": req.limit,
        "query": req.query,
        "dedupe": format!("{:?}", req.dedupe),
        "content": format!("{:?}", req.content),
        "max_content_chars": req.max_content_chars,
        "articles": req.articles,
    });
    hex::encode(&Sha256::digest(asked.to_string().as_bytes())[..8])
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn refused(why: &str) -> Error {
    Error::usage(format!(
        "cursor refused: {why}; call again without cursor to start over"
    ))
}

/// Reads a cursor given back by a client: the place to start and `since` as the first
/// page resolved it; a `USAGE_ERROR` when it was changed, expired, or belongs to other
/// options.
pub fn decode(
    key: &CursorKey,
    cursor: &str,
    fingerprint: &str,
) -> Result<(Start, Option<DateTime<Utc>>)> {
    if cursor.len() > MAX_CURSOR_CHARS {
        return Err(refused("it is longer than any cursor this server gives"));
    }
    let (body, tag) = cursor
        .split_once('.')
        .ok_or_else(|| refused("it is not a cursor this server gave"))?;
    let tag = B64
        .decode(tag)
        .map_err(|_| refused("it is not a cursor this server gave"))?;
    let expected = key.tag(body);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(&expected[..], &tag[..])) {
        return Err(refused(
            "it was changed, or given by another server or an earlier run of this one",
        ));
    }
    let json = B64
        .decode(body)
        .map_err(|_| refused("it is not a cursor this server gave"))?;
    let c: Cursor = serde_json::from_slice(&json)
        .map_err(|_| refused("it is not a cursor this server gave"))?;
    if c.v != 1 {
        return Err(refused("it is of another version"));
    }
    if unix_now().saturating_sub(c.t) > CURSOR_LIFETIME.as_secs() {
        return Err(refused(&format!(
            "it expired ({} s after it was given)",
            CURSOR_LIFETIME.as_secs()
        )));
    }
    if c.o != fingerprint {
        return Err(refused(
            "it belongs to a call with other urls or options (give the same ones with it)",
        ));
    }
    let since = c.s.and_then(DateTime::from_timestamp_millis);
    Ok((
        Start {
            feed: c.f,
            item: c.n,
            anchor: c.i,
        },
        since,
    ))
}

/// Makes `opts` cut a later page from the same run as the first: the same `since`, and every
/// feed and page from the copy the first page read (no request for anything it fetched;
/// what failed then is asked again, through the gate).
pub fn continue_run(opts: &mut FetchOptions, since: Option<DateTime<Utc>>) {
    opts.selection.since = since;
    let from_copy = |mode: &mut CacheMode| {
        if *mode != CacheMode::Off {
            *mode = CacheMode::MaxAge(Duration::MAX);
        }
    };
    from_copy(&mut opts.cache);
    if let Some(a) = &mut opts.articles {
        from_copy(&mut a.cache);
    }
}

fn encode(key: &CursorKey, c: &Cursor) -> String {
    let body = B64.encode(serde_json::to_vec(c).unwrap_or_default());
    let tag = B64.encode(key.tag(&body));
    format!("{body}.{tag}")
}

/// The feeds of `full` from `start` on, with the items of the first from `start.item`.
fn rest_of(full: &FetchOutput, start: &Start) -> Vec<FeedResult> {
    let mut feeds: Vec<FeedResult> = full.feeds.iter().skip(start.feed).cloned().collect();
    if let Some(first) = feeds.first_mut() {
        first.items.drain(..start.item.min(first.items.len()));
    }
    feeds
}

/// Resets a page's totals, errors, warnings and duplicates to its own feeds.
fn settle(page: &mut FetchOutput, full: &FetchOutput) {
    for f in &mut page.feeds {
        f.item_count = f.items.len();
        f.content_tokens_est_total = f.items.iter().map(|i| i.content_tokens_est).sum();
    }
    page.total_items = page.feeds.iter().map(|f| f.item_count).sum();
    page.total_content_tokens_est = page.feeds.iter().map(|f| f.content_tokens_est_total).sum();
    page.errors = page.feeds.iter().filter_map(|f| f.error.clone()).collect();
    let here = |url: &str| page.feeds.iter().any(|f| f.feed_url == url);
    page.warnings = full
        .warnings
        .iter()
        .filter(|w| w.feed_url.as_deref().is_none_or(here))
        .cloned()
        .collect();
    let holds = |feed_url: &str, id: &str| {
        page.feeds
            .iter()
            .any(|f| f.feed_url == feed_url && f.items.iter().any(|i| i.id == id))
    };
    page.duplicates = full
        .duplicates
        .iter()
        .filter(|d| d.items.iter().any(|i| holds(&i.feed_url, &i.id)))
        .cloned()
        .collect();
}

/// Finds where `start` points in `full` now: at its anchor item if the feed moved (a
/// newer copy replaced the cached one), with a warning; a start past the run is refused.
fn locate(full: &FetchOutput, mut start: Start, warnings: &mut Vec<Warning>) -> Result<Start> {
    let Some(feed) = full.feeds.get(start.feed) else {
        return Err(refused("it points past the feeds of this call"));
    };
    if let Some(anchor) = &start.anchor
        && feed.items.get(start.item).map(|i| &i.id) != Some(anchor)
    {
        match feed.items.iter().position(|i| &i.id == anchor) {
            Some(at) => start.item = at,
            None => start.item = start.item.min(feed.items.len()),
        }
        warnings.push(Warning::new(
            Some(feed.feed_url.clone()),
            WarningCode::CursorShifted,
            "the feed changed since the last page (a newer copy was fetched): items may \
             repeat or be missing on this page"
                .to_owned(),
        ));
    }
    Ok(start)
}

/// Cuts from `full` the page that starts at `start` and fits `budget` tokens (with
/// `overhead` more for the summary text): its feeds, and the cursor of the next page if
/// anything is left. `RESPONSE_TOO_LARGE` (with suggestions) only when the page's first item
/// alone, with its article cut as short as it can be, does not fit.
pub fn page(
    key: &CursorKey,
    full: FetchOutput,
    start: Start,
    budget: usize,
    overhead: usize,
    fingerprint: &str,
    since: Option<DateTime<Utc>>,
) -> Result<FetchOutput> {
    let mut warnings = Vec::new();
    let start = locate(&full, start, &mut warnings)?;
    let rest = rest_of(&full, &start);
    let mut page = FetchOutput {
        feeds: Vec::with_capacity(rest.len()),
        ..full.clone()
    };
    page.feeds.clear();
    let fits = |p: &FetchOutput| tokens_of(p) + overhead + CURSOR_TOKENS <= budget;
    let mut next: Option<(usize, usize)> = None;
    for (k, feed) in rest.into_iter().enumerate() {
        let index = start.feed + k;
        let offset = if k == 0 { start.item } else { 0 };
        page.feeds.push(feed);
        settle(&mut page, &full);
        if fits(&page) {
            continue;
        }
        let whole = page.feeds.pop().expect("just pushed");
        let with = |n: usize| {
            let mut p = page.clone();
            let mut f = whole.clone();
            f.items.truncate(n);
            p.feeds.push(f);
            settle(&mut p, &full);
            p
        };
        match budget::largest_fitting(whole.items.len(), |n| fits(&with(n))) {
            Some(n) if n > 0 => {
                page = with(n);
                next = Some((index, offset + n));
            }
            _ if !page.feeds.is_empty() => next = Some((index, offset)),
            _ => {
                // Not even this page's first item fits: cut its article, else refuse.
                let mut one = with(1);
                budget::fit_fetch(&mut one, budget, overhead + CURSOR_TOKENS)?;
                page = one;
                next = Some((index, offset + 1));
            }
        }
        break;
    }
    // A page that ends with a feed's last item continues with the next feed.
    if let Some((f, n)) = next
        && n > 0
        && n >= full.feeds[f].items.len()
    {
        next = (f + 1 < full.feeds.len()).then_some((f + 1, 0));
    }
    settle(&mut page, &full);
    page.warnings.extend(warnings);
    page.truncation.items_on_later_pages = match next {
        None => 0,
        Some((f, n)) => {
            let later: usize = full.feeds.iter().skip(f).map(|x| x.items.len()).sum();
            later - n.min(later)
        }
    };
    page.next_cursor = next.map(|(f, n)| {
        encode(
            key,
            &Cursor {
                v: 1,
                o: fingerprint.to_owned(),
                f,
                n,
                i: full.feeds[f].items.get(n).map(|i| i.id.clone()),
                s: since.map(|s| s.timestamp_millis()),
                t: unix_now(),
            },
        )
    });
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(key: &CursorKey, t: u64) -> String {
        encode(
            key,
            &Cursor {
                v: 1,
                o: "abc".into(),
                f: 2,
                n: 5,
                i: Some("0123456789abcdef".into()),
                s: Some(1_780_000_000_000),
                t,
            },
        )
    }

    #[test]
    fn a_cursor_reads_back_and_a_changed_one_is_refused() {
        let key = CursorKey::default();
        let c = cursor(&key, unix_now());
        assert!(c.len() < 300, "{} chars", c.len());
        let (start, since) = decode(&key, &c, "abc").unwrap();
        assert_eq!((start.feed, start.item), (2, 5));
        assert_eq!(since.unwrap().timestamp_millis(), 1_780_000_000_000);
        // Every one-character change is refused.
        for at in 0..c.len() {
            let mut b = c.clone().into_bytes();
            b[at] = if b[at] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(b).unwrap();
            if changed == c {
                continue;
            }
            let e = decode(&key, &changed, "abc").unwrap_err();
            assert_eq!(e.code().as_str(), "USAGE_ERROR", "at {at}");
        }
        // Another key (another server, or this one restarted), other options, an old one.
        assert!(decode(&CursorKey::default(), &c, "abc").is_err());
        assert!(decode(&key, &c, "abd").is_err());
        let old = cursor(&key, unix_now() - CURSOR_LIFETIME.as_secs() - 1);
        assert!(
            decode(&key, &old, "abc")
                .unwrap_err()
                .to_string()
                .contains("expired")
        );
        assert!(decode(&key, &"x".repeat(5000), "abc").is_err());
        assert!(decode(&key, "", "abc").is_err());
    }

    #[test]
    fn the_fingerprint_follows_what_changes_the_items() {
        let urls = vec!["https://a.example/feed".to_owned()];
        let base = FetchRequest::default();
        let f = fingerprint(&urls, &base);
        let refresh = FetchRequest {
            refresh: true,
            ..FetchRequest::default()
        };
        assert_eq!(fingerprint(&urls, &refresh), f);
        let limited = FetchRequest {
            limit: Some(3),
            ..FetchRequest::default()
        };
        assert_ne!(fingerprint(&urls, &limited), f);
        assert_ne!(
            fingerprint(&["https://b.example/feed".to_owned()], &base),
            f
        );
    }
}
