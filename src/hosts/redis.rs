//! The fleet's host-state store: Redis (or Valkey), for every `rss` worker behind one
//! egress address.
//!
//! Per host, under the cluster hash tag of the host (so one host's keys share a slot):
//! - `rss:gate:v1:{HOST}` — the learned state as JSON, expiring (`PXAT`) when the state
//!   lapses. It changes only by compare-and-set (a Lua script): read, compute, and write
//!   only if nobody wrote in between, else read again.
//! - `rss:gate:v1:{HOST}:lease:I` — send slot I, held by `SET NX PX` with a random token,
//!   renewed every second while the send runs and deleted (only by its holder) when it
//!   ends. A crashed worker's slot lapses within [`LEASE_TTL`].
//!
//! Every time in the state is on Redis's clock: each read returns the server's `TIME`
//! with the value, and the worker converts against that reading, so a worker whose own
//! clock is off by seconds still paces by the fleet's one clock (to within a round trip).
//!
//! Every operation has a short timeout. When Redis fails, `fallback::Fallback` serves the
//! same operation from the local file store, reports `GATE_STORE_UNAVAILABLE` to every
//! operation that uses it meanwhile, and tries Redis again after a backoff.

use crate::cache::shared::RELEASE_OR_RENEW;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use tokio::time::Instant;

use super::{Clock, Held, Lease, Listed, Snapshot, StoreError, StoredHost, Update};
use crate::gate::HostKey;

/// How long one Redis operation may take before the store counts as down.
pub(super) const OP_TIMEOUT: Duration = Duration::from_millis(750);
/// How long a send slot is held without renewal; a crashed holder frees it this soon.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(3);
/// How often a live holder renews its slot.
const LEASE_RENEW: Duration = Duration::from_secs(1);
/// A send starts only on a slot confirmed this recently (so it has at least
/// `LEASE_TTL - LEASE_FRESH` of its lifetime ahead); an older one is renewed first.
const LEASE_FRESH: Duration = Duration::from_millis(1500);
/// First and longest pause before Redis is tried again after a failure.
pub(super) const RETRY_MIN: Duration = Duration::from_secs(1);
pub(super) const RETRY_MAX: Duration = Duration::from_secs(30);
/// Tries of a compare-and-set before giving up (each conflict means someone else wrote).
const CAS_TRIES: usize = 16;

const PREFIX: &str = "rss:gate:v1:";

/// `KEYS[1]`'s value (empty: absent) with the server's `TIME` (seconds, microseconds).
const READ: &str = r"
local v = redis.call('GET', KEYS[1])
local t = redis.call('TIME')
return {t[1], t[2], v or ''}";

/// Sets `KEYS[1]` to `ARGV[2]` (expiring at Unix ms `ARGV[3]`; `ARGV[2]` empty: deletes
/// it) only if it still holds `ARGV[1]` (empty: absent). 1 when written, 0 on a conflict.
const CAS: &str = r"
local cur = redis.call('GET', KEYS[1])
if (cur == false and ARGV[1] == '') or cur == ARGV[1] then
  if ARGV[2] == '' then redis.call('DEL', KEYS[1])
  else redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3]) end
  return 1
end
return 0";

fn state_key(host: &HostKey) -> String {
    format!("{PREFIX}{{{}}}", host.as_str())
}

fn lease_key(host: &HostKey, slot: usize) -> String {
    format!("{PREFIX}{{{}}}:lease:{slot}", host.as_str())
}

/// `url` with any password replaced, for messages.
pub(crate) fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "(an unparseable Redis URL)".to_owned(),
    }
}

/// Send slots this process holds, key → (connection, token), so that whatever is still
/// held when the process ends (a send cancelled by a signal) is given back before it exits.
/// It is process-wide because what it tracks is: the process's claims on a shared server.
static HELD: std::sync::LazyLock<Mutex<HashMap<String, (ConnectionManager, String)>>> =
    std::sync::LazyLock::new(Default::default);

/// Gives back every send slot this process still holds in Redis.
pub(crate) async fn release_held() {
    let held: Vec<(String, (ConnectionManager, String))> = lock(&HELD).drain().collect();
    let script = Script::new(RELEASE_OR_RENEW);
    for (key, (conn, token)) in held {
        release_slot(conn, &script, &key, &token).await;
    }
}

/// Host state in Redis.
pub(crate) struct RedisStore {
    pub(super) url: String,
    conn: ConnectionManager,
    read: Script,
    cas: Script,
    release: Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.url)
            .finish()
    }
}

fn failed(what: &'static str) -> impl FnOnce(redis::RedisError) -> StoreError {
    move |e| StoreError::Redis {
        action: what,
        source: e,
    }
}

/// `fut` within [`OP_TIMEOUT`].
async fn timed<T>(fut: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    tokio::time::timeout(OP_TIMEOUT, fut)
        .await
        .unwrap_or(Err(StoreError::Timeout(OP_TIMEOUT)))
}

impl RedisStore {
    /// A store on `url` (`redis://` or `rediss://`); connects on first use, so opening
    /// never blocks and never fails for a server that is down.
    pub(crate) fn open(url: &str) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(failed("cannot use the Redis URL"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(RETRY_MAX);
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(failed("cannot set up the Redis connection"))?;
        Ok(RedisStore {
            url: redacted(url),
            conn,
            read: Script::new(READ),
            cas: Script::new(CAS),
            release: Script::new(RELEASE_OR_RENEW),
        })
    }

    /// When `s` should leave Redis, in Unix ms on Redis's clock: when it lapses, and no
    /// sooner than a second from now.
    fn expires_at_ms(s: &StoredHost, now_ms: u64) -> u64 {
        s.lapses_ms().unwrap_or(0).max(now_ms.saturating_add(1000))
    }

    /// `key`'s raw value (`None`: absent) and Redis's clock at the read.
    async fn read_raw(&self, key: &str) -> Result<(Option<String>, Clock), StoreError> {
        let mut c = self.conn.clone();
        let call = self.read.key(key);
        let before = Instant::now();
        let (secs, micros, raw): (u64, u64, String) = timed(async move {
            call.invoke_async(&mut c)
                .await
                .map_err(failed("cannot read from Redis"))
        })
        .await?;
        // The server read its clock somewhere within the round trip: take the middle.
        let mid = before + before.elapsed() / 2;
        // Redis's clock, read as it sends it: no sum of its numbers may overflow.
        let clock = Clock::at(mid, secs.saturating_mul(1000).saturating_add(micros / 1000));
        Ok(((!raw.is_empty()).then_some(raw), clock))
    }

    fn parse(raw: &str, host: &str) -> Result<StoredHost, StoreError> {
        serde_json::from_str(raw).map_err(|source| StoreError::Corrupt {
            host: host.to_owned(),
            source,
        })
    }

    pub(super) async fn load_inner(&self, host: &HostKey) -> Result<Snapshot, StoreError> {
        let (raw, clock) = self.read_raw(&state_key(host)).await?;
        let stored = match raw {
            Some(raw) => Some(Self::parse(&raw, host.as_str())?),
            None => None,
        };
        Ok(Snapshot { stored, clock })
    }

    pub(super) async fn update_inner(
        &self,
        host: &HostKey,
        f: &Update<'_>,
    ) -> Result<Snapshot, StoreError> {
        let key = state_key(host);
        for _ in 0..CAS_TRIES {
            let (raw, clock) = self.read_raw(&key).await?;
            // A damaged entry is replaced, as the file store does.
            let current = raw
                .as_deref()
                .and_then(|r| Self::parse(r, host.as_str()).ok());
            let next = f(current, clock);
            let (value, at) = match &next {
                Some(s) => (
                    serde_json::to_string(s).unwrap_or_default(),
                    Self::expires_at_ms(s, clock.wall_ms()),
                ),
                None => (String::new(), 0),
            };
            let mut c = self.conn.clone();
            let mut call = self.cas.key(&key);
            call.arg(raw.as_deref().unwrap_or("")).arg(value).arg(at);
            let written: i64 = timed(async move {
                call.invoke_async(&mut c)
                    .await
                    .map_err(failed("cannot write to Redis"))
            })
            .await?;
            if written == 1 {
                return Ok(Snapshot {
                    stored: next,
                    clock,
                });
            }
        }
        Err(StoreError::Contended(host.as_str().to_owned()))
    }

    pub(super) async fn try_lease_inner(
        &self,
        host: &HostKey,
        slots: usize,
    ) -> Result<Option<Lease>, StoreError> {
        let token = format!("{:016x}{:016x}", rand_u64(), rand_u64());
        for slot in 0..slots.max(1) {
            let key = lease_key(host, slot);
            let mut c = self.conn.clone();
            let (k, t) = (key.clone(), token.clone());
            let asked = Instant::now();
            let taken: Option<String> = timed(async move {
                redis::cmd("SET")
                    .arg(&k)
                    .arg(&t)
                    .arg("NX")
                    .arg("PX")
                    .arg(LEASE_TTL.as_millis() as u64)
                    .query_async(&mut c)
                    .await
                    .map_err(failed("cannot take a send slot in Redis"))
            })
            .await?;
            if taken.is_some() {
                return Ok(Some(Lease::new(HeldSlot::start(
                    self.conn.clone(),
                    self.release.clone(),
                    key,
                    token,
                    asked,
                ))));
            }
        }
        Ok(None)
    }

    pub(super) async fn list_inner(&self) -> Result<(Vec<Listed>, Clock), StoreError> {
        let keys = self.state_keys().await?;
        let mut out = Vec::new();
        let mut clock = None;
        for key in keys {
            let (raw, at) = self.read_raw(&key).await?;
            clock = Some(at);
            if let Some(raw) = raw {
                let host = key
                    .trim_start_matches(PREFIX)
                    .trim_matches(['{', '}'])
                    .to_owned();
                out.push(Self::parse(&raw, &host));
            }
        }
        let clock = match clock {
            Some(c) => c,
            None => self.read_raw(PREFIX).await?.1,
        };
        Ok((out, clock))
    }

    async fn state_keys(&self) -> Result<Vec<String>, StoreError> {
        let mut c = self.conn.clone();
        timed(async move {
            let mut keys = Vec::new();
            let mut iter = c
                .scan_match::<_, String>(format!("{PREFIX}{{*}}"))
                .await
                .map_err(failed("cannot list keys in Redis"))?;
            while let Some(k) = futures::StreamExt::next(&mut iter).await {
                keys.push(k.map_err(failed("cannot list keys in Redis"))?);
            }
            Ok(keys)
        })
        .await
    }
}

/// Deletes the slot `key` if it still holds `token`.
async fn release_slot(mut conn: ConnectionManager, script: &Script, key: &str, token: &str) {
    let mut call = script.key(key);
    call.arg(token);
    let _ = tokio::time::timeout(OP_TIMEOUT, call.invoke_async::<i64>(&mut conn)).await;
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// What a held slot and its renewer share.
#[derive(Debug)]
struct SlotLife {
    /// When the slot was last confirmed ours (taken or renewed), by the worker's clock.
    confirmed: Mutex<Instant>,
    /// A renewal found the slot taken or lapsed.
    lost: AtomicBool,
}

/// A held send slot: renewed in the background, deleted (if still ours) when released.
struct HeldSlot {
    renew: tokio::task::JoinHandle<()>,
    life: Arc<SlotLife>,
    conn: ConnectionManager,
    script: Script,
    key: String,
    token: String,
    released: bool,
}

/// Renews `key` (if it still holds `token`) for another [`LEASE_TTL`]: `Some(true)` when
/// it was still ours, `Some(false)` when it was taken or lapsed, `None` when Redis did
/// not answer.
async fn renew(
    mut conn: ConnectionManager,
    script: &Script,
    key: &str,
    token: &str,
) -> Option<bool> {
    let mut call = script.key(key);
    call.arg(token).arg(LEASE_TTL.as_millis() as u64);
    match tokio::time::timeout(OP_TIMEOUT, call.invoke_async::<i64>(&mut conn)).await {
        Ok(Ok(n)) => Some(n == 1),
        _ => None,
    }
}

impl HeldSlot {
    fn start(
        conn: ConnectionManager,
        script: Script,
        key: String,
        token: String,
        asked: Instant,
    ) -> HeldSlot {
        lock(&HELD).insert(key.clone(), (conn.clone(), token.clone()));
        let life = Arc::new(SlotLife {
            // The slot's life is counted from before it was asked for: never longer than
            // Redis counts it.
            confirmed: Mutex::new(asked),
            lost: AtomicBool::new(false),
        });
        let (c, s, k, t, l) = (
            conn.clone(),
            script.clone(),
            key.clone(),
            token.clone(),
            life.clone(),
        );
        let renew = tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE_RENEW).await;
                let asked = Instant::now();
                match renew(c.clone(), &s, &k, &t).await {
                    Some(true) => *lock(&l.confirmed) = asked,
                    Some(false) => {
                        l.lost.store(true, Ordering::SeqCst);
                        tracing::warn!(
                            key = %k,
                            "the send slot lapsed while its request was in flight (this process was stalled): another worker may have sent to the host beside it"
                        );
                        return;
                    }
                    None => tracing::debug!(key = %k, "a send slot could not be renewed"),
                }
            }
        });
        HeldSlot {
            renew,
            life,
            conn,
            script,
            key,
            token,
            released: false,
        }
    }
}

impl Held for HeldSlot {
    fn lost(&self) -> bool {
        self.life.lost.load(Ordering::SeqCst)
    }

    fn ensure(&self) -> BoxFuture<'_, bool> {
        async move {
            if self.lost() {
                return false;
            }
            if lock(&self.life.confirmed).elapsed() < LEASE_FRESH {
                return true;
            }
            let asked = Instant::now();
            match renew(self.conn.clone(), &self.script, &self.key, &self.token).await {
                Some(true) => {
                    *lock(&self.life.confirmed) = asked;
                    true
                }
                _ => false,
            }
        }
        .boxed()
    }

    fn release(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        self.renew.abort();
        self.released = true;
        lock(&HELD).remove(&self.key);
        let (conn, script, key, token) = (
            self.conn.clone(),
            self.script.clone(),
            self.key.clone(),
            self.token.clone(),
        );
        async move { release_slot(conn, &script, &key, &token).await }.boxed()
    }
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        self.renew.abort();
        if self.released {
            return;
        }
        // Cancelled mid-send: give the slot back in the background; a process that ends
        // first gives back what is left with `release_held`.
        let (conn, script, key, token) = (
            self.conn.clone(),
            self.script.clone(),
            self.key.clone(),
            self.token.clone(),
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                release_slot(conn, &script, &key, &token).await;
                let mut held = lock(&HELD);
                if held.get(&key).is_some_and(|(_, t)| *t == token) {
                    held.remove(&key);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::HostStore;
    use crate::hosts::fallback::Fallback;

    #[test]
    fn keys_share_the_host_hash_tag() {
        let h = HostKey::parse("Example.COM:443").unwrap();
        assert_eq!(state_key(&h), "rss:gate:v1:{example.com:443}");
        assert_eq!(lease_key(&h, 1), "rss:gate:v1:{example.com:443}:lease:1");
    }

    #[test]
    fn passwords_never_reach_messages() {
        let r = redacted("redis://user:s3cret@cache.internal:6379/0");
        assert!(!r.contains("s3cret"), "{r}");
        assert!(r.contains("cache.internal"));
    }

    #[tokio::test]
    async fn a_server_that_is_down_fails_fast_and_falls_back() {
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        let redis = RedisStore::open("redis://127.0.0.1:1/0").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let local: Arc<dyn HostStore> =
            Arc::new(super::super::file::FileStore::open(dir.path(), 0).unwrap());
        let store = Fallback::new(redis, Some(local));
        let h = HostKey::parse("example.com:443").unwrap();
        let started = std::time::Instant::now();
        let lease = store.try_lease(&h, 1).await.unwrap();
        assert!(lease.is_some());
        assert!(store.try_lease(&h, 1).await.unwrap().is_none());
        assert!(started.elapsed() < OP_TIMEOUT * 3);
        let warning = store.degraded().expect("a warning");
        assert!(warning.contains("127.0.0.1:1"), "{warning}");
    }
}
