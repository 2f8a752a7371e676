//! Feeds that moved for good. A permanent redirect (`301`, `308`) that a feed's address
//! answers on [`REMEMBER_AFTER`] fetches in a row, to the same place, is remembered in the
//! shared store (files under the state directory, or the fleet's Redis: the keyed records of
//! `crate::hosts::records`); from then on a fetch of the old address goes straight to the new
//! one and says so with a `FEED_MOVED` warning. A temporary redirect (`302`, `303`, `307`)
//! is never remembered, and an answer without a permanent redirect ends the run of them.
//! `rss moved` lists what is remembered and `rss moved forget` forgets it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use url::Url;

use super::Context;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::hosts::StoreError;
use crate::hosts::records::{self, Change, RecordKey, RecordStore};
use crate::model::{
    MovedFeed, MovedForgetOutput, MovedOutput, SCHEMA_VERSION, Warning, WarningCode,
};

/// Permanent redirects in a row, to the same place, after which a move is remembered.
pub const REMEMBER_AFTER: u32 = 3;

/// Remembered moves followed one after another at most (a moved feed that moved again).
const MAX_CHAIN: usize = 5;

/// What is kept of one feed address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    /// The address as requested.
    feed_url: String,
    /// Where its permanent redirects led.
    moved_to: String,
    /// Answers in a row that said so.
    seen: u32,
    first_seen_ms: u64,
    last_seen_ms: u64,
}

impl Record {
    fn remembered(&self) -> bool {
        self.seen >= REMEMBER_AFTER
    }
}

/// The moved feeds of one store.
#[derive(Debug)]
pub(crate) struct Moves {
    records: Arc<dyn RecordStore>,
}

/// How an address is kept: without the credentials a URL may carry (a password is never
/// stored, nor a fingerprint of one; a move is the address's, whoever asks).
fn stored(url: &Url) -> String {
    crate::redact::split_userinfo(url).0.to_string()
}

/// Whether following `from` to `to` would drop an https step: a chain that began over https
/// must keep that step, so a rule's credentials are never sent to the http address.
fn downgrade(from: &Url, to: &Url) -> bool {
    from.scheme() == "https" && to.scheme() == "http"
}

fn key(url: &str) -> RecordKey {
    let hash = hex::encode(&Sha256::digest(url.as_bytes())[..16]);
    RecordKey::new([hash]).expect("hex is a valid segment")
}

fn parse(bytes: &[u8]) -> Option<Record> {
    serde_json::from_slice(bytes).ok()
}

fn time(ms: u64) -> Option<String> {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(i64::try_from(ms).ok()?)
        .map(|t| crate::date::format(&t))
}

/// Where a fetch goes, by what is remembered.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// The URL to request: the feed's own, or where its remembered moves end.
    pub url: Url,
    /// The moves followed, in order (empty: none is remembered).
    pub moves: Vec<Url>,
}

impl Moves {
    /// The moved feeds of the store `config` names (its Redis with `--gate-store`, else files
    /// under the state directory); `None` without a state directory.
    pub(crate) fn open(config: &Config) -> Result<Option<Moves>, StoreError> {
        let Some(dir) = config.state_dir.as_ref() else {
            return Ok(None);
        };
        let records = records::open_in(config, &dir.join("moved"), "moved")?;
        Ok(Some(Moves { records }))
    }

    /// Where the store is, for people.
    pub(crate) fn describe(&self) -> String {
        self.records.describe()
    }

    /// Where a fetch of `url` goes: the end of its remembered moves (at most [`MAX_CHAIN`],
    /// never round a loop).
    pub(crate) async fn route(&self, url: &Url) -> Result<Route, StoreError> {
        let mut at = url.clone();
        let mut moves: Vec<Url> = Vec::new();
        for _ in 0..MAX_CHAIN {
            let (found, _) = self.records.load(&key(&stored(&at))).await?;
            let next = found
                .as_deref()
                .and_then(parse)
                .filter(Record::remembered)
                .and_then(|r| Url::parse(&r.moved_to).ok())
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .filter(|u| !downgrade(&at, u) && !downgrade(url, u));
            match next {
                Some(n) if n != *url && !moves.contains(&n) => {
                    moves.push(n.clone());
                    at = n;
                }
                _ => break,
            }
        }
        Ok(Route { url: at, moves })
    }

    /// Notes how `requested` was answered: moved for good to `moved_to`, or not
    /// (`None`). Returns how many answers in a row have said so (0: none).
    pub(crate) async fn observe(
        &self,
        requested: &Url,
        moved_to: Option<&Url>,
    ) -> Result<u32, StoreError> {
        let seen = std::sync::Mutex::new(0u32);
        let feed_url = stored(requested);
        let feed_url = feed_url.as_str();
        // A move from https to http is never remembered: followed each time, the chain keeps
        // its https step (and the credentials decision with it).
        let to = moved_to.filter(|to| !downgrade(requested, to)).map(stored);
        let to = to.as_deref();
        self.records
            .update(&key(feed_url), &|cur, now| {
                let cur = cur.and_then(parse).filter(|r| r.feed_url == feed_url);
                let Some(to) = to else {
                    *crate::sync::lock(&seen) = 0;
                    return if cur.is_some() {
                        Change::Delete
                    } else {
                        Change::Keep
                    };
                };
                let next = match cur {
                    Some(r) if r.moved_to == to => Record {
                        seen: r.seen.saturating_add(1),
                        last_seen_ms: now,
                        ..r
                    },
                    _ => Record {
                        feed_url: feed_url.to_owned(),
                        moved_to: to.to_owned(),
                        seen: 1,
                        first_seen_ms: now,
                        last_seen_ms: now,
                    },
                };
                *crate::sync::lock(&seen) = next.seen;
                Change::Put(serde_json::to_vec(&next).unwrap_or_default(), None)
            })
            .await?;
        Ok(seen.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    async fn all(&self) -> Result<(Vec<Record>, usize), StoreError> {
        let keys = self.records.list(&[]).await?;
        let (found, _) = self.records.load_many(&keys).await?;
        let mut unreadable = 0;
        let mut out: Vec<Record> = Vec::new();
        for bytes in found.into_iter().flatten() {
            match parse(&bytes) {
                Some(r) => out.push(r),
                None => unreadable += 1,
            }
        }
        out.sort_by(|a, b| a.feed_url.cmp(&b.feed_url));
        Ok((out, unreadable))
    }
}

fn failed(e: StoreError) -> Error {
    Error::HostStore(e)
}

/// The FEED_MOVED warning of a fetch that went where `route` led.
pub(crate) fn moved_warning(feed_url: &str, route: &Route) -> Option<(WarningCode, String)> {
    let to = route.moves.last()?;
    Some((
        WarningCode::FeedMoved,
        format!(
            "{feed_url} moved for good to {to} (it answered a permanent redirect there on {REMEMBER_AFTER} fetches in a row), so it was fetched from {to}: use that address from now on (`rss moved forget` makes the old one be asked again)"
        ),
    ))
}

/// The FEED_MOVED warning of the fetch whose answer made a move remembered.
pub(crate) fn remembered_warning(feed_url: &str, to: &Url) -> (WarningCode, String) {
    (
        WarningCode::FeedMoved,
        format!(
            "{feed_url} moved for good to {to}: it answered a permanent redirect there on {REMEMBER_AFTER} fetches in a row, so later fetches go straight to {to}; use that address from now on"
        ),
    )
}

/// Lists the remembered moves and the runs of permanent redirects seen so far (`rss moved`).
pub async fn moved_list(ctx: &Context) -> Result<MovedOutput> {
    let mut warnings = Vec::new();
    let Some(moves) = Moves::open(&ctx.config).map_err(failed)? else {
        return Ok(MovedOutput {
            schema_version: SCHEMA_VERSION.to_owned(),
            store: None,
            feeds: Vec::new(),
            warnings,
        });
    };
    let (all, unreadable) = moves.all().await.map_err(failed)?;
    if unreadable > 0 {
        warnings.push(Warning::new(
            None,
            WarningCode::HostStateCorrupt,
            format!("{unreadable} moved-feed records could not be read and were left out"),
        ));
    }
    Ok(MovedOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        store: Some(moves.describe()),
        feeds: all
            .into_iter()
            .map(|r| MovedFeed {
                remembered: r.remembered(),
                times_in_a_row: r.seen,
                first_seen: time(r.first_seen_ms),
                last_seen: time(r.last_seen_ms),
                feed_url: r.feed_url,
                moved_to: r.moved_to,
            })
            .collect(),
        warnings,
    })
}

/// Forgets what is kept of `feed_url` (as a fetch names it), or of every feed (`rss moved
/// forget`): the old address is asked again.
pub async fn moved_forget(ctx: &Context, feed_url: Option<&str>) -> Result<MovedForgetOutput> {
    let Some(moves) = Moves::open(&ctx.config).map_err(failed)? else {
        return Err(Error::usage(
            "no state directory is known for moved feeds: pass --state-dir or set RSS_STATE_DIR",
        ));
    };
    let keys: Vec<RecordKey> = match feed_url {
        Some(u) => vec![key(&Url::parse(u)
            .map(|u| stored(&u))
            .unwrap_or_else(|_| u.to_owned()))],
        None => moves.records.list(&[]).await.map_err(failed)?,
    };
    let (found, _) = moves.records.load_many(&keys).await.map_err(failed)?;
    let mut forgotten = 0;
    for (k, bytes) in keys.iter().zip(found) {
        if bytes.is_some() {
            moves
                .records
                .update(k, &|_, _| Change::Delete)
                .await
                .map_err(failed)?;
            forgotten += 1;
        }
    }
    Ok(MovedForgetOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        forgotten,
    })
}
