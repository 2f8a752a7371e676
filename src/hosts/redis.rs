//! The fleet's host-state store: Redis (or Valkey), for every `rss` worker behind one
//! egress address.
//!
//! Per host, under the cluster hash tag of the host (so one host's keys share a slot):
//! - `rss:gate:v1:{HOST}` — the learned state as JSON, with a TTL that ends when the state
//!   would lapse. It changes only by compare-and-set (a Lua script): read, compute, and
//!   write only if nobody wrote in between, else read again.
//! - `rss:gate:v1:{HOST}:lease:I` — send slot I, held by `SET NX PX` with a random token,
//!   renewed while the send runs and deleted (only by its holder) when it ends. A crashed
//!   worker's slot lapses within [`LEASE_TTL`].
//!
//! Every operation has a short timeout. When Redis fails, [`Fallback`] serves the same
//! operation from the local file store, reports `GATE_STORE_UNAVAILABLE` once per run, and
//! tries Redis again after a backoff.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use tokio::time::Instant;

use super::{HostStore, Lease, Listed, StoreError, StoredHost, Update};
use crate::gate::{GateParams, HostKey};

/// How long one Redis operation may take before the store counts as down.
const OP_TIMEOUT: Duration = Duration::from_millis(750);
/// How long a send slot is held without renewal; a crashed holder frees it this soon.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(3);
/// How often a live holder renews its slot.
const LEASE_RENEW: Duration = Duration::from_secs(1);
/// Tries of a compare-and-set before giving up (each conflict means someone else wrote).
const CAS_TRIES: usize = 16;
/// First and longest pause before Redis is tried again after a failure.
const RETRY_MIN: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);

const PREFIX: &str = "rss:gate:v1:";

/// Sets `KEYS[1]` to `ARGV[2]` (with `PX ARGV[3]`; `ARGV[2]` empty: deletes it) only if
/// it still holds `ARGV[1]` (empty: absent). 1 when written, 0 on a conflict.
const CAS: &str = r"
local cur = redis.call('GET', KEYS[1])
if (cur == false and ARGV[1] == '') or cur == ARGV[1] then
  if ARGV[2] == '' then redis.call('DEL', KEYS[1])
  else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
  return 1
end
return 0";

/// Deletes `KEYS[1]` if it holds `ARGV[1]`; renews it (`PX ARGV[2]`) instead when given.
const RELEASE_OR_RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if ARGV[2] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return redis.call('DEL', KEYS[1])
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

/// Host state in Redis.
pub(crate) struct RedisStore {
    url: String,
    conn: ConnectionManager,
    params: GateParams,
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
    pub(crate) fn open(url: &str, params: GateParams) -> Result<RedisStore, StoreError> {
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
            params,
            cas: Script::new(CAS),
            release: Script::new(RELEASE_OR_RENEW),
        })
    }

    /// How long `s` should live in Redis: until it would lapse, at least a second.
    fn ttl_ms(&self, s: &StoredHost) -> u64 {
        let now = super::stored::wall_ms(std::time::SystemTime::now());
        let warm = self.params.warm_window.as_millis() as u64;
        let until = [
            Some(s.updated_ms.saturating_add(warm)),
            s.next_allowed_ms,
            s.warm_until_ms,
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(now);
        until.saturating_sub(now).max(1000)
    }

    async fn get_raw(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut c = self.conn.clone();
        timed(async move { c.get(key).await.map_err(failed("cannot read from Redis")) }).await
    }

    fn parse(raw: &str, host: &str) -> Result<StoredHost, StoreError> {
        serde_json::from_str(raw).map_err(|source| StoreError::Corrupt {
            host: host.to_owned(),
            source,
        })
    }

    async fn update_inner(
        &self,
        host: &HostKey,
        f: &Update<'_>,
    ) -> Result<Option<StoredHost>, StoreError> {
        let key = state_key(host);
        for _ in 0..CAS_TRIES {
            let raw = self.get_raw(&key).await?;
            // A damaged entry is replaced, as the file store does.
            let current = raw
                .as_deref()
                .and_then(|r| Self::parse(r, host.as_str()).ok());
            let next = f(current);
            let (value, ttl) = match &next {
                Some(s) => (serde_json::to_string(s).unwrap_or_default(), self.ttl_ms(s)),
                None => (String::new(), 0),
            };
            let mut c = self.conn.clone();
            let mut call = self.cas.key(&key);
            call.arg(raw.as_deref().unwrap_or("")).arg(value).arg(ttl);
            let written: i64 = timed(async move {
                call.invoke_async(&mut c)
                    .await
                    .map_err(failed("cannot write to Redis"))
            })
            .await?;
            if written == 1 {
                return Ok(next);
            }
        }
        Err(StoreError::Contended(host.as_str().to_owned()))
    }

    async fn try_lease_inner(
        &self,
        host: &HostKey,
        slots: usize,
    ) -> Result<Option<Lease>, StoreError> {
        let token = format!("{:016x}{:016x}", rand_u64(), rand_u64());
        for slot in 0..slots.max(1) {
            let key = lease_key(host, slot);
            let mut c = self.conn.clone();
            let (k, t) = (key.clone(), token.clone());
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
                return Ok(Some(Lease(Box::new(HeldSlot::start(
                    self.conn.clone(),
                    self.release.clone(),
                    key,
                    token,
                )))));
            }
        }
        Ok(None)
    }

    async fn list_inner(&self) -> Result<Vec<Listed>, StoreError> {
        let keys = self.state_keys().await?;
        let mut out = Vec::new();
        for key in keys {
            if let Some(raw) = self.get_raw(&key).await? {
                let host = key
                    .trim_start_matches(PREFIX)
                    .trim_matches(['{', '}'])
                    .to_owned();
                out.push(Self::parse(&raw, &host));
            }
        }
        Ok(out)
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

    async fn clear_inner(&self, host: Option<&HostKey>) -> Result<usize, StoreError> {
        let keys = match host {
            Some(h) => vec![state_key(h)],
            None => self.state_keys().await?,
        };
        let mut removed = 0;
        for key in keys {
            let mut c = self.conn.clone();
            let n: usize = timed(async move {
                c.del(&key)
                    .await
                    .map_err(failed("cannot delete from Redis"))
            })
            .await?;
            removed += n;
        }
        Ok(removed)
    }
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

/// A held send slot: renewed in the background, deleted (if still ours) on drop.
struct HeldSlot {
    renew: tokio::task::JoinHandle<()>,
    release: Option<(ConnectionManager, Script, String, String)>,
}

impl HeldSlot {
    fn start(conn: ConnectionManager, script: Script, key: String, token: String) -> HeldSlot {
        let (c, s, k, t) = (conn.clone(), script.clone(), key.clone(), token.clone());
        let renew = tokio::spawn(async move {
            let mut c = c;
            loop {
                tokio::time::sleep(LEASE_RENEW).await;
                let mut call = s.key(&k);
                call.arg(&t).arg(LEASE_TTL.as_millis() as u64);
                let renewed: Result<Result<i64, _>, _> =
                    tokio::time::timeout(OP_TIMEOUT, call.invoke_async(&mut c)).await;
                if !matches!(renewed, Ok(Ok(1))) {
                    tracing::debug!(key = %k, "a send slot could not be renewed");
                }
            }
        });
        HeldSlot {
            renew,
            release: Some((conn, script, key, token)),
        }
    }
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        self.renew.abort();
        let Some((mut conn, script, key, token)) = self.release.take() else {
            return;
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let mut call = script.key(&key);
                call.arg(&token);
                let _ = tokio::time::timeout(OP_TIMEOUT, call.invoke_async::<i64>(&mut conn)).await;
            });
        }
    }
}

/// Redis first; the local store while Redis is down, retried after a growing pause.
#[derive(Debug)]
pub(crate) struct Fallback {
    redis: RedisStore,
    local: Option<Arc<dyn HostStore>>,
    down: Mutex<Down>,
}

#[derive(Debug, Default)]
struct Down {
    /// Do not try Redis before this.
    until: Option<Instant>,
    pause: Duration,
    /// What failed, not yet reported.
    unreported: Option<String>,
}

impl Fallback {
    pub(crate) fn new(redis: RedisStore, local: Option<Arc<dyn HostStore>>) -> Fallback {
        Fallback {
            redis,
            local,
            down: Mutex::new(Down::default()),
        }
    }

    fn usable(&self) -> bool {
        let down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        down.until.is_none_or(|t| Instant::now() >= t)
    }

    fn failed(&self, e: &StoreError) {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        down.pause = (down.pause * 2).clamp(RETRY_MIN, RETRY_MAX);
        down.until = Some(Instant::now() + down.pause);
        down.unreported = Some(format!(
            "the gate store {} failed ({e}); pacing with the local store",
            self.redis.url
        ));
        tracing::warn!("Redis gate store failed: {e}");
    }

    fn worked(&self) {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        if down.until.is_some() {
            tracing::info!("Redis gate store is back");
        }
        down.until = None;
        down.pause = Duration::ZERO;
    }

    /// Runs `on_redis`, or on failure (or while Redis is down) `on_local`; a failure of
    /// Redis with no local store is the error itself.
    async fn run<'a, T: Send + 'a>(
        &'a self,
        on_redis: BoxFuture<'a, Result<T, StoreError>>,
        on_local: impl FnOnce(&'a Arc<dyn HostStore>) -> BoxFuture<'a, Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        if self.usable() {
            match on_redis.await {
                Ok(v) => {
                    self.worked();
                    return Ok(v);
                }
                // A damaged entry is the entry's problem, not the store's.
                Err(e @ StoreError::Corrupt { .. }) => return Err(e),
                Err(e) => {
                    self.failed(&e);
                    if self.local.is_none() {
                        return Err(e);
                    }
                }
            }
        }
        match &self.local {
            Some(local) => on_local(local).await,
            None => Err(StoreError::Timeout(OP_TIMEOUT)),
        }
    }
}

impl HostStore for Fallback {
    fn describe(&self) -> String {
        self.redis.url.clone()
    }

    fn take_degraded(&self) -> Option<String> {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        down.unreported.take()
    }

    fn load<'a>(
        &'a self,
        host: &'a HostKey,
    ) -> BoxFuture<'a, Result<Option<StoredHost>, StoreError>> {
        let redis = async move {
            match self.redis.get_raw(&state_key(host)).await? {
                Some(raw) => RedisStore::parse(&raw, host.as_str()).map(Some),
                None => Ok(None),
            }
        };
        self.run(redis.boxed(), move |l| l.load(host)).boxed()
    }

    fn update<'a>(
        &'a self,
        host: &'a HostKey,
        f: &'a Update<'a>,
    ) -> BoxFuture<'a, Result<Option<StoredHost>, StoreError>> {
        self.run(self.redis.update_inner(host, f).boxed(), move |l| {
            l.update(host, f)
        })
        .boxed()
    }

    fn try_lease<'a>(
        &'a self,
        host: &'a HostKey,
        slots: usize,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
        self.run(self.redis.try_lease_inner(host, slots).boxed(), move |l| {
            l.try_lease(host, slots)
        })
        .boxed()
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<Listed>, StoreError>> {
        // `rss hosts` shows the configured store, or says why it cannot.
        self.redis.list_inner().boxed()
    }

    fn clear<'a>(&'a self, host: Option<&'a HostKey>) -> BoxFuture<'a, Result<usize, StoreError>> {
        self.redis.clear_inner(host).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let redis = RedisStore::open("redis://127.0.0.1:1/0", GateParams::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let local: Arc<dyn HostStore> =
            Arc::new(super::super::file::FileStore::open(dir.path()).unwrap());
        let store = Fallback::new(redis, Some(local));
        let h = HostKey::parse("example.com:443").unwrap();
        let started = std::time::Instant::now();
        let lease = store.try_lease(&h, 1).await.unwrap();
        assert!(lease.is_some());
        assert!(store.try_lease(&h, 1).await.unwrap().is_none());
        assert!(started.elapsed() < OP_TIMEOUT * 3);
        let warning = store.take_degraded().expect("a warning");
        assert!(warning.contains("127.0.0.1:1"), "{warning}");
        assert!(store.take_degraded().is_none());
    }
}
