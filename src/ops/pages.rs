//! Pages of a fetch too large for one answer. The first page carries every feed (its
//! status, error and metadata); the items share the budget across feeds, taken in turns
//! (each feed's newest, then each feed's next, ...), as many as fit; a `next_cursor`
//! continues exactly there. Later pages carry the feeds that have items on them.
//!
//! A cursor is `base64url(JSON) "." base64url(tag)`: the JSON says where the page starts,
//! which options it belongs to, how `since` was resolved and when it was issued; the tag is
//! an HMAC-SHA256 (first 16 bytes) under the key of the server's store (`super::service`:
//! drawn once, shared by every node of the store), so a cursor changed by one character,
//! given by a server of another store, or kept past [`CURSOR_LIFETIME`], is refused.
//! Nothing is kept on the server: every page is cut from the whole run, read again from
//! the cache, so `--dedupe` and the order are the same on every page.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chrono::{DateTime, Utc};
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::cut;
use super::request::FetchRequest;
use super::{CacheMode, FetchOptions};
use crate::error::{Error, Result};
use crate::inputs::{Input, Source};
use crate::model::{FeedStatus, FetchOutput, Warning, WarningCode};

/// How long a cursor can be used after it was given.
pub const CURSOR_LIFETIME: Duration = Duration::from_secs(3600);

/// The longest cursor accepted (a real one is about 200 characters).
const MAX_CURSOR_CHARS: usize = 1024;

type HmacSha256 = hmac::Hmac<Sha256>;

/// The key cursors are signed with: the store's (`super::service`), or drawn by the process.
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
    /// The key of these bytes (the store's shared key).
    pub(crate) fn from_bytes(key: [u8; 32]) -> CursorKey {
        CursorKey(key)
    }

    #[cfg(test)]
    pub(crate) fn same_as(&self, other: &CursorKey) -> bool {
        self.0 == other.0
    }

    fn tag(&self, body: &str) -> [u8; 16] {
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0).expect("any key length");
        mac.update(body.as_bytes());
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; 16];
        tag.copy_from_slice(&full[..16]);
        tag
    }
}

/// The cursor format's version.
const VERSION: u8 = 2;

/// Where a page starts, and what it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    /// Format version.
    v: u8,
    /// The options' fingerprint ([`fingerprint`]).
    o: String,
    /// Per feed (in request order), how many of its items earlier pages gave.
    c: Vec<usize>,
    /// The feeds (indices) that failed on the first page: never asked again.
    x: Vec<usize>,
    /// A check of the items the page starts at ([`check_of`]), to see that no feed moved.
    h: String,
    /// `since` as the first page resolved it (Unix ms), so a relative one does not drift.
    s: Option<i64>,
    /// When the cursor was given (Unix seconds).
    t: u64,
    /// With a reader: the walk's first delivery, whose view of the marks later pages keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    w: Option<String>,
}

/// Where a continued call starts (the first page: the default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Start {
    counts: Vec<usize>,
    failed: Vec<usize>,
    check: String,
    walk: Option<String>,
}

impl Start {
    /// Whether this is the first page.
    pub fn is_first(&self) -> bool {
        self.counts.is_empty()
    }

    /// With a reader: the delivery of the walk's first page, whose view of the reader's
    /// marks every later page keeps (`crate::ops::open_view`).
    pub fn walk(&self) -> Option<&str> {
        self.walk.as_deref()
    }
}

/// A fingerprint of what a paged call asked for (its inputs and every option that changes
/// its items), so a cursor is refused by a call that asks for something else. The cache
/// policy and the token budget may change between pages. Keyed by the server's cursor key:
/// a URL's password is among the inputs, and a plain digest of it, readable in the cursor,
/// could be guessed offline.
pub fn fingerprint(key: &CursorKey, urls: &[String], req: &FetchRequest) -> String {
    let asked = serde_json::json!({
        "urls": urls,
        "since": req.since,
        "limit": req.limit,
        "query": req.query,
        "dedupe": format!("{:?}", req.dedupe),
        "content": format!("{:?}", req.content),
        "max_content_chars": req.max_content_chars,
        "articles": req.articles,
        "article_content": format!("{:?}", req.article_content),
        "reader": req.reader,
        "unseen": req.unseen,
    });
    hex::encode(&key.tag(&asked.to_string())[..8])
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
    if c.v != VERSION {
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
            counts: c.c,
            failed: c.x,
            check: c.h,
            walk: c.w,
        },
        since,
    ))
}

/// Keeps the feeds that failed on the first page from being asked again: a later page
/// shows none of their items, so no request is made for them.
pub fn hold_back(inputs: &mut [Input], start: &Start) {
    for &i in &start.failed {
        if let Some(input) = inputs.get_mut(i) {
            input.source = Source::Invalid(Error::usage("failed on the first page"));
        }
    }
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

/// A short check of where a page starts: each feed's next item's id after `counts`.
fn check_of(full: &FetchOutput, counts: &[usize]) -> String {
    let mut h = Sha256::new();
    for (f, &n) in full.feeds.iter().zip(counts) {
        h.update(f.items.get(n).map_or("-", |i| i.id.as_str()).as_bytes());
        h.update(b"\n");
    }
    hex::encode(&h.finalize()[..4])
}

/// Cuts from `full` the page that starts at `start` and fits `budget` tokens (with
/// `overhead` more for the summary text): on the first page every feed, and the items that
/// fit, taken in turns across feeds ([`cut::cut`]); the cursor of the next page if any
/// item is left. A page whose first item alone does not fit has that item's article and
/// content cut at a paragraph (with `next_offset`); `RESPONSE_TOO_LARGE` only when not
/// even that, or the first page's feeds alone, fit, with suggestions that each, followed
/// alone, make the same call succeed ([`super::suggest::for_page`]).
pub fn page(
    key: &CursorKey,
    full: FetchOutput,
    start: Start,
    (budget, overhead): (usize, usize),
    fingerprint: &str,
    since: Option<DateTime<Utc>>,
    walk: Option<&str>,
) -> Result<FetchOutput> {
    let first = start.is_first();
    let counts = if first {
        vec![0; full.feeds.len()]
    } else if start.counts.len() == full.feeds.len() {
        start.counts.clone()
    } else {
        return Err(refused("it does not match the feeds of this call"));
    };
    let mut warnings = Vec::new();
    if !first && check_of(&full, &counts) != start.check {
        warnings.push(Warning::new(
            None,
            WarningCode::CursorShifted,
            "a feed changed since the last page (a newer copy was fetched): items may \
             repeat or be missing on this page"
                .to_owned(),
        ));
    }
    let failed: Vec<usize> = if first {
        full.feeds
            .iter()
            .enumerate()
            .filter(|(_, f)| f.status == FeedStatus::Error)
            .map(|(i, _)| i)
            .collect()
    } else {
        start.failed.clone()
    };
    let t = unix_now();
    // The cursor is part of what must fit: made for each page tried.
    let cursor = |next: &[usize]| {
        encode(
            key,
            &Cursor {
                v: VERSION,
                o: fingerprint.to_owned(),
                h: check_of(&full, next),
                c: next.to_vec(),
                x: failed.clone(),
                s: since.map(|s| s.timestamp_millis()),
                t,
                w: walk.map(str::to_owned),
            },
        )
    };
    match cut::cut(&full, &counts, first, (budget, overhead), &cursor) {
        Ok(mut page) => {
            page.warnings.extend(warnings);
            Ok(page)
        }
        Err(Error::OverBudget {
            estimated_tokens, ..
        }) => Err(super::suggest::for_page(
            &full,
            &counts,
            first,
            (budget, overhead),
            (estimated_tokens, &cursor),
        )),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(key: &CursorKey, t: u64) -> String {
        encode(
            key,
            &Cursor {
                v: VERSION,
                o: "abc".into(),
                c: vec![3; 50],
                x: vec![7],
                h: "0a1b2c3d".into(),
                s: Some(1_780_000_000_000),
                t,
                w: None,
            },
        )
    }

    #[test]
    fn a_cursor_reads_back_and_a_changed_one_is_refused() {
        let key = CursorKey::default();
        let c = cursor(&key, unix_now());
        assert!(c.len() < 500, "{} chars", c.len());
        let (start, since) = decode(&key, &c, "abc").unwrap();
        assert_eq!((start.counts[49], &start.failed[..]), (3, &[7][..]));
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
        let key = CursorKey::default();
        let urls = vec!["https://a.example/feed".to_owned()];
        let base = FetchRequest::default();
        let f = fingerprint(&key, &urls, &base);
        let refresh = FetchRequest {
            refresh: true,
            ..FetchRequest::default()
        };
        assert_eq!(fingerprint(&key, &urls, &refresh), f);
        let limited = FetchRequest {
            limit: Some(3),
            ..FetchRequest::default()
        };
        assert_ne!(fingerprint(&key, &urls, &limited), f);
        assert_ne!(
            fingerprint(&key, &["https://b.example/feed".to_owned()], &base),
            f
        );
        // Keyed: another server (another key) fingerprints the same call otherwise, so a
        // password among the URLs cannot be guessed from a cursor.
        assert_ne!(fingerprint(&CursorKey::default(), &urls, &base), f);
    }
}
