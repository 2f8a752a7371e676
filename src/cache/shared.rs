//! The fleet's shared cache tier: in the Redis the fleet's host state lives in, each body
//! one node fetched (under [`MAX_SHARED_BODY`], never a private one), so another node that
//! needs the same URL while the copy is fresh serves it with no request, and one that finds
//! it stale revalidates it (`304`) instead of fetching it whole.
//!
//! Per URL, under the cluster hash tag of its kind and key:
//! - `rss:cache:v1:{KIND:KEY}` — a hash: `m` the entry's [`Meta`] as JSON, `b` the body,
//!   `s` the body's sha256, `w` the writer's clock and `r` Redis's clock when it was written
//!   (Unix ms). A reader takes the metadata first and the body only when the copy is newer
//!   than its own; a `304` rewrites the metadata alone, if the body is still the one it
//!   confirmed. Every time
//!   in `m` is on the writer's clock; a reader moves it onto its own by the two clocks' gap
//!   (measured against Redis's `TIME` at the write and at the read), so a node whose clock
//!   is off never takes a stale copy for fresh. It expires [`KEEP_PAST_FRESH`] after the
//!   copy stops being fresh (or after it was written, when it never was).
//! - `rss:cache:v1:{KIND:KEY}:flight` — held (`SET NX PX`, a random token, renewed every
//!   second) by the node fetching the URL now; another node that needs it waits for that
//!   fetch instead of sending its own (`super::flight`). A crashed holder's lapses within
//!   [`FLIGHT_TTL`].
//!
//! Every operation has a short timeout; a tier that fails is skipped (the node fetches as
//! it would alone), counted in `rss_store_errors_total{store="cache"}`.

use std::time::Duration;

use redis::Script;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::{Entry, Kind, Meta, key};
use crate::payload::Payload;

/// The largest body shared: larger ones stay on the node that fetched them.
pub(crate) const MAX_SHARED_BODY: usize = 1 << 20;

/// Whether `entry` may go to the fleet's tier: not private, fetched with no credentials,
/// within [`MAX_SHARED_BODY`].
fn shareable(entry: &Entry) -> bool {
    let m = &entry.meta;
    !m.private && m.credential_id.is_none() && entry.body.len() <= MAX_SHARED_BODY
}
/// How long a copy stays in the tier once it is no longer fresh (for a `304`).
pub(crate) const KEEP_PAST_FRESH: Duration = Duration::from_secs(3600);
/// How long a fetch's flight lives without renewal.
pub(crate) const FLIGHT_TTL: Duration = Duration::from_secs(3);
/// How often a live flight is renewed.
const FLIGHT_RENEW: Duration = Duration::from_secs(1);
/// How long one operation may take.
const OP_TIMEOUT: Duration = Duration::from_millis(750);

/// Writes the entry (`ARGV[1]` meta, `ARGV[2]` body, `ARGV[3]` its sha256, `ARGV[4]` the
/// writer's clock) with Redis's clock, expiring in `ARGV[5]` ms.
const PUT: &str = r"
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'm', ARGV[1], 'b', ARGV[2], 's', ARGV[3], 'w', ARGV[4], 'r', t[1] * 1000 + math.floor(t[2] / 1000))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1";

/// Rewrites the entry's meta (`ARGV[1]`, the writer's clock `ARGV[3]`, expiring in `ARGV[4]`
/// ms) if its body is still the one of sha256 `ARGV[2]`; 1 when it was.
const TOUCH: &str = r"
if redis.call('HGET', KEYS[1], 's') ~= ARGV[2] then return 0 end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'm', ARGV[1], 'w', ARGV[3], 'r', t[1] * 1000 + math.floor(t[2] / 1000))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1";

/// The entry's meta and clocks (empty when absent) and Redis's `TIME`.
const META: &str = r"
local v = redis.call('HMGET', KEYS[1], 'm', 'w', 'r')
local t = redis.call('TIME')
return {t[1], t[2], v[1] or '', v[2] or '', v[3] or ''}";

/// Deletes `KEYS[1]` if it holds `ARGV[1]`; renews it (`PX ARGV[2]`) instead when given.
/// 1 when it was still ours, 0 when it was taken or had lapsed. (The gate's leases are
/// released and renewed by it too.)
pub(crate) const RELEASE_OR_RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if ARGV[2] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return redis.call('DEL', KEYS[1])
end
return 0";

/// The tier, on the fleet's Redis.
#[derive(Clone)]
pub(crate) struct SharedCache {
    conn: ConnectionManager,
    put: Script,
    touch: Script,
    meta: Script,
    release: Script,
}

impl std::fmt::Debug for SharedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedCache")
    }
}

/// What taking a URL's flight gave.
pub(crate) enum Flying {
    /// This node holds it: it fetches, the others wait.
    Mine(Flight),
    /// Another node holds it.
    Another,
    /// The tier failed: fetch as if alone.
    Unknown,
}

/// A held flight: released when dropped (its renewals stop; the key is deleted).
pub(crate) struct Flight {
    renew: tokio::task::JoinHandle<()>,
    release: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for Flight {
    fn drop(&mut self) {
        self.renew.abort();
        if let Some(f) = self.release.take() {
            f();
        }
    }
}

fn entry_key(kind: Kind, url: &str) -> String {
    format!("rss:cache:v1:{{{}:{}}}", kind.as_str(), key(url))
}

async fn timed<T>(fut: impl Future<Output = redis::RedisResult<T>>) -> Option<T> {
    match tokio::time::timeout(OP_TIMEOUT, fut).await {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            tracing::debug!("the shared cache failed: {e}");
            crate::metrics::store_error("cache");
            None
        }
        Err(_) => {
            tracing::debug!("the shared cache did not answer in time");
            crate::metrics::store_error("cache");
            None
        }
    }
}

/// How long the copy `m` stays in the tier from `now`: its freshness, and an hour more.
fn keep_ms(m: &Meta, now: u64) -> u64 {
    m.fresh_until_ms
        .unwrap_or(now)
        .max(now)
        .saturating_sub(now)
        .saturating_add(KEEP_PAST_FRESH.as_millis() as u64)
}

/// Unix ms `t` moved by `shift` ms (never before the epoch).
fn moved(t: u64, shift: i64) -> u64 {
    i64::try_from(t)
        .unwrap_or(i64::MAX)
        .saturating_add(shift)
        .max(0) as u64
}

fn random_token() -> String {
    let mut b = [0u8; 16];
    let _ = getrandom::fill(&mut b);
    hex::encode(b)
}

impl SharedCache {
    /// The tier on `url` (`redis://`, `rediss://`); connects on first use.
    pub(crate) fn open(url: &str) -> Option<SharedCache> {
        let client = redis::Client::open(url).ok()?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(30));
        let conn = ConnectionManager::new_lazy_with_config(client, config).ok()?;
        Some(SharedCache {
            conn,
            put: Script::new(PUT),
            touch: Script::new(TOUCH),
            meta: Script::new(META),
            release: Script::new(RELEASE_OR_RENEW),
        })
    }

    /// The metadata of the copy of `url` the tier holds, its times moved onto this node's
    /// clock; `None` when there is none or the tier fails.
    pub(crate) async fn meta(&self, kind: Kind, url: &str) -> Option<Meta> {
        let mut c = self.conn.clone();
        let call = self.meta.key(entry_key(kind, url));
        let (secs, micros, meta, written_local, written_redis): (
            u64,
            u64,
            Vec<u8>,
            String,
            String,
        ) = timed(async move { call.invoke_async(&mut c).await }).await?;
        let local_now = super::now_ms();
        if meta.is_empty() {
            return None;
        }
        let redis_now = secs.saturating_mul(1000).saturating_add(micros / 1000);
        let mut meta: Meta = serde_json::from_slice(&meta).ok()?;
        let (w, r) = (
            written_local.parse::<i64>().ok()?,
            written_redis.parse::<i64>().ok()?,
        );
        if meta.feed_url != url {
            return None;
        }
        // The writer's clock ran `w - r` ahead of Redis's, this node's runs
        // `local_now - redis_now` ahead: the copy's times move by the difference.
        let shift = (local_now as i64 - redis_now as i64) - (w - r);
        meta.received_ms = moved(meta.received_ms, shift);
        meta.fresh_until_ms = meta.fresh_until_ms.map(|t| moved(t, shift));
        Some(meta)
    }

    /// The body of the copy whose metadata is `meta` (`None` when the tier holds another
    /// body now, or fails).
    pub(crate) async fn body(&self, kind: Kind, meta: Meta) -> Option<Entry> {
        let mut c = self.conn.clone();
        let hget = redis::cmd("HGET")
            .arg(entry_key(kind, &meta.feed_url))
            .arg("b")
            .clone();
        let body: Option<Vec<u8>> = timed(async move { hget.query_async(&mut c).await }).await?;
        let body = Payload::from(body?);
        if body.len() as u64 != meta.body_len || super::sha256_hex(&body) != meta.body_sha256 {
            return None;
        }
        Some(Entry { meta, body })
    }

    /// The copy of `url` the tier holds, whole.
    #[cfg(test)]
    pub(crate) async fn get(&self, kind: Kind, url: &str) -> Option<Entry> {
        let meta = self.meta(kind, url).await?;
        self.body(kind, meta).await
    }

    /// Records that `entry` (already in the tier) was confirmed by a `304`: its metadata
    /// alone is rewritten when the tier still holds its body; else the entry is put whole.
    pub(crate) async fn touch(&self, kind: Kind, entry: &Entry) {
        if shareable(entry) && !self.rewrite_meta(kind, entry).await {
            self.put(kind, entry).await;
        }
    }

    /// Gives the tier's copy `entry`'s metadata (a schedule its body declares, learnt once
    /// the body was read) while the tier holds that same body; a newer body there, or none,
    /// is left as it is.
    pub(crate) async fn annotate(&self, kind: Kind, entry: &Entry) {
        if shareable(entry) {
            self.rewrite_meta(kind, entry).await;
        }
    }

    /// Rewrites the metadata of `entry` in the tier if the tier holds its body: whether it
    /// did.
    async fn rewrite_meta(&self, kind: Kind, entry: &Entry) -> bool {
        let m = &entry.meta;
        let Ok(meta) = serde_json::to_vec(m) else {
            return false;
        };
        let now = super::now_ms();
        let mut c = self.conn.clone();
        let mut call = self.touch.key(entry_key(kind, &m.feed_url));
        call.arg(meta)
            .arg(&m.body_sha256)
            .arg(now)
            .arg(keep_ms(m, now));
        let touched: Option<i64> = timed(async move { call.invoke_async(&mut c).await }).await;
        touched == Some(1)
    }

    /// Puts `entry` in the tier, unless it is private or too large to share.
    pub(crate) async fn put(&self, kind: Kind, entry: &Entry) {
        if !shareable(entry) {
            return;
        }
        let m = &entry.meta;
        let Ok(meta) = serde_json::to_vec(m) else {
            return;
        };
        let now = super::now_ms();
        let keep = keep_ms(m, now);
        let mut body = Vec::with_capacity(entry.body.len());
        for chunk in entry.body.chunks() {
            body.extend_from_slice(chunk);
        }
        let mut c = self.conn.clone();
        let mut call = self.put.key(entry_key(kind, &m.feed_url));
        call.arg(meta)
            .arg(body)
            .arg(&m.body_sha256)
            .arg(now)
            .arg(keep);
        let stored: Option<i64> = timed(async move { call.invoke_async(&mut c).await }).await;
        if stored.is_some() {
            crate::metrics::shared_cache("stored");
        }
    }

    /// Takes the flight of `url` (this node fetches it now), unless another node holds it.
    pub(crate) async fn take_flight(&self, kind: Kind, url: &str) -> Flying {
        let key = format!("{}:flight", entry_key(kind, url));
        let token = random_token();
        let mut c = self.conn.clone();
        let set = redis::cmd("SET")
            .arg(&key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(FLIGHT_TTL.as_millis() as u64)
            .clone();
        let taken: Option<Option<String>> =
            timed(async move { set.query_async(&mut c).await }).await;
        match taken {
            None => Flying::Unknown,
            Some(None) => Flying::Another,
            Some(Some(_)) => {
                let renew = {
                    let (conn, script, key, token) = (
                        self.conn.clone(),
                        self.release.clone(),
                        key.clone(),
                        token.clone(),
                    );
                    tokio::spawn(async move {
                        loop {
                            tokio::time::sleep(FLIGHT_RENEW).await;
                            let mut c = conn.clone();
                            let mut call = script.key(&key);
                            call.arg(&token).arg(FLIGHT_TTL.as_millis() as u64);
                            let kept: Option<i64> =
                                timed(async move { call.invoke_async(&mut c).await }).await;
                            if kept != Some(1) {
                                return;
                            }
                        }
                    })
                };
                let (conn, script) = (self.conn.clone(), self.release.clone());
                let release = Box::new(move || {
                    tokio::spawn(async move {
                        let mut c = conn;
                        let mut call = script.key(&key);
                        call.arg(&token);
                        let _: Option<i64> =
                            timed(async move { call.invoke_async(&mut c).await }).await;
                    });
                });
                Flying::Mine(Flight {
                    renew,
                    release: Some(release),
                })
            }
        }
    }

    /// Whether another node's flight of `url` is still under way.
    pub(crate) async fn flight_held(&self, kind: Kind, url: &str) -> bool {
        let key = format!("{}:flight", entry_key(kind, url));
        let mut c = self.conn.clone();
        let exists = redis::cmd("EXISTS").arg(key).clone();
        let n: Option<i64> = timed(async move { exists.query_async(&mut c).await }).await;
        n == Some(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_their_kind_and_url_hash_as_one_hash_tag() {
        let k = entry_key(Kind::Feed, "https://a.example/feed");
        assert!(k.starts_with("rss:cache:v1:{feed:"), "{k}");
        assert!(k.ends_with('}'));
        assert_ne!(k, entry_key(Kind::Page, "https://a.example/feed"));
    }

    fn entry(url: &str, body: &[u8], private: bool) -> Entry {
        let body = Payload::from(body);
        let now = super::super::now_ms();
        Entry {
            meta: Meta {
                version: 2,
                feed_url: url.to_owned(),
                final_url: url.to_owned(),
                etag: Some("\"e\"".into()),
                last_modified: None,
                content_type: None,
                fetched_at: "2026-12-01T00:00:00Z".into(),
                body_len: body.len() as u64,
                body_sha256: super::super::sha256_hex(&body),
                received_ms: now,
                fresh_until_ms: Some(now + 60_000),
                fresh_from_expires: false,
                must_revalidate: false,
                private,
                credential_id: None,
                via_https: false,
                no_cache: false,
                declared: None,
            },
            body,
        }
    }

    #[tokio::test]
    async fn a_copy_goes_through_redis_whole_and_a_private_one_never() {
        let Ok(url) = std::env::var("RSS_TEST_REDIS") else {
            eprintln!("skipped: RSS_TEST_REDIS is not set (.ci/run starts a Redis server)");
            return;
        };
        let tier = SharedCache::open(&url).unwrap();
        let feed = format!("https://shared.example/{}", random_token());
        assert!(tier.get(Kind::Feed, &feed).await.is_none());
        let e = entry(&feed, b"<rss/>", false);
        tier.put(Kind::Feed, &e).await;
        let got = tier.get(Kind::Feed, &feed).await.unwrap();
        assert_eq!(got.body.into_vec(), b"<rss/>");
        assert_eq!(got.meta.etag, e.meta.etag);
        // One clock: moved by no more than the round trips.
        let drift = got.meta.received_ms.abs_diff(e.meta.received_ms);
        assert!(drift < 1000, "{drift} ms");
        assert!(
            tier.get(Kind::Page, &feed).await.is_none(),
            "a page is not a feed"
        );
        // A 304's touch rewrites the metadata of the same body alone.
        let mut confirmed = e.clone();
        confirmed.meta.etag = Some("\"e2\"".into());
        tier.touch(Kind::Feed, &confirmed).await;
        let meta = tier.meta(Kind::Feed, &feed).await.unwrap();
        assert_eq!(meta.etag.as_deref(), Some("\"e2\""));
        assert_eq!(tier.body(Kind::Feed, meta).await.unwrap().body.len(), 6);
        let secret = format!("https://shared.example/{}", random_token());
        tier.put(Kind::Feed, &entry(&secret, b"mine", true)).await;
        assert!(tier.get(Kind::Feed, &secret).await.is_none());
        // One flight per URL across the fleet, free again once dropped.
        let Flying::Mine(first) = tier.take_flight(Kind::Feed, &feed).await else {
            panic!("the first taker holds the flight");
        };
        assert!(matches!(
            tier.take_flight(Kind::Feed, &feed).await,
            Flying::Another
        ));
        assert!(tier.flight_held(Kind::Feed, &feed).await);
        drop(first);
        let mut freed = false;
        for _ in 0..100 {
            if !tier.flight_held(Kind::Feed, &feed).await {
                freed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(freed, "a dropped flight is released at once");
    }
}
