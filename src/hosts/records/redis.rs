//! Records in the fleet's Redis, beside host state: `rss:NAMESPACE:v1:{SEG0}:SEG1:…`
//! (`readers` for readers' records, `keys` for signing keys), the first segment as the
//! cluster hash tag (one reader's records share a slot). A change is a
//! compare-and-set (a Lua script: write only if the record still holds what was read, else
//! read again), and every read returns Redis's `TIME`, so every worker reads one clock.

use futures::FutureExt;
use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};

use super::{Change, Loaded, RecordGuard, RecordKey, RecordStore, RecordUpdate};
use crate::hosts::StoreError;
use crate::hosts::redis::{OP_TIMEOUT, RETRY_MAX, redacted};

/// Tries of a compare-and-set before giving up (each conflict means someone else wrote).
const CAS_TRIES: usize = 32;

/// Each of `KEYS` (empty: absent) with the server's `TIME` (seconds, microseconds).
const READ_MANY: &str = r"
local v = {}
for i, k in ipairs(KEYS) do v[i] = redis.call('GET', k) or '' end
local t = redis.call('TIME')
return {t[1], t[2], v}";

/// The compare-and-set on `KEYS[1]` both scripts run: sets it to `ARGV[2]` (`ARGV[2]` empty:
/// deletes it; `ARGV[3]` not empty: expiring at that Unix ms) only if it still holds `ARGV[1]`
/// (empty: absent). 1 when written, 0 on a conflict.
macro_rules! cas_lua {
    () => {
        r"
local cur = redis.call('GET', KEYS[1])
if (cur == false and ARGV[1] == '') or cur == ARGV[1] then
  if ARGV[2] == '' then redis.call('DEL', KEYS[1])
  elseif ARGV[3] == '' then redis.call('SET', KEYS[1], ARGV[2])
  else redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3]) end
  return 1
end
return 0"
    };
}

/// The compare-and-set on `KEYS[1]` (`ARGV[1..3]`, see [`cas_lua`]).
const CAS: &str = cas_lua!();

/// [`CAS`], only while `KEYS[2]` still holds `ARGV[4]` (empty: absent); 0 on a conflict
/// with either.
const CAS_IF: &str = concat!(
    "\nif (redis.call('GET', KEYS[2]) or '') ~= ARGV[4] then return 0 end",
    cas_lua!()
);

/// Records in Redis.
pub(super) struct RedisRecords {
    url: String,
    /// `rss:NAMESPACE:v1:`.
    prefix: String,
    conn: ConnectionManager,
    read: Script,
    cas: Script,
    cas_if: Script,
}

impl std::fmt::Debug for RedisRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRecords")
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

async fn timed<T>(fut: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    let r = tokio::time::timeout(OP_TIMEOUT, fut)
        .await
        .unwrap_or(Err(StoreError::Timeout(OP_TIMEOUT)));
    if r.is_err() {
        crate::metrics::store_error("records");
    }
    r
}

/// `key` as a Redis key under `prefix`.
fn redis_key(prefix: &str, key: &RecordKey) -> String {
    let segs = key.segments();
    let mut k = format!("{prefix}{{{}}}", segs[0]);
    for s in &segs[1..] {
        k.push(':');
        k.push_str(s);
    }
    k
}

/// The record key of a Redis key of ours under `prefix`.
fn record_key(prefix: &str, k: &str) -> Option<RecordKey> {
    let rest = k.strip_prefix(prefix)?.strip_prefix('{')?;
    let (group, tail) = rest.split_once('}')?;
    let mut segs = vec![group.to_owned()];
    if let Some(tail) = tail.strip_prefix(':') {
        segs.extend(tail.split(':').map(str::to_owned));
    } else if !tail.is_empty() {
        return None;
    }
    RecordKey::new(segs)
}

impl RedisRecords {
    /// Records of `namespace` on `url`; connects on first use.
    pub(super) fn open(url: &str, namespace: &str) -> Result<RedisRecords, StoreError> {
        let client = redis::Client::open(url).map_err(failed("cannot use the Redis URL"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(RETRY_MAX);
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(failed("cannot set up the Redis connection"))?;
        Ok(RedisRecords {
            url: redacted(url),
            prefix: format!("rss:{namespace}:v1:"),
            conn,
            read: Script::new(READ_MANY),
            cas: Script::new(CAS),
            cas_if: Script::new(CAS_IF),
        })
    }

    async fn read_raw(&self, keys: &[String]) -> Result<(Vec<Vec<u8>>, u64), StoreError> {
        let mut c = self.conn.clone();
        let mut call = self.read.prepare_invoke();
        for k in keys {
            call.key(k);
        }
        let (secs, micros, values): (u64, u64, Vec<Vec<u8>>) = timed(async move {
            call.invoke_async(&mut c)
                .await
                .map_err(failed("cannot read from Redis"))
        })
        .await?;
        Ok((values, secs * 1000 + micros / 1000))
    }

    async fn update_now(&self, key: &RecordKey, f: &RecordUpdate<'_>) -> Result<(), StoreError> {
        let k = redis_key(&self.prefix, key);
        for _ in 0..CAS_TRIES {
            let (mut values, now) = self.read_raw(std::slice::from_ref(&k)).await?;
            let current = values.pop().unwrap_or_default();
            let (value, at) = match f((!current.is_empty()).then_some(&current[..]), now) {
                Change::Keep => return Ok(()),
                Change::Put(bytes, at) => (bytes, at.map(|t| t.max(now + 1000).to_string())),
                Change::Delete if current.is_empty() => return Ok(()),
                Change::Delete => (Vec::new(), None),
            };
            let mut c = self.conn.clone();
            let mut call = self.cas.key(&k);
            call.arg(current).arg(value).arg(at.unwrap_or_default());
            let written: i64 = timed(async move {
                call.invoke_async(&mut c)
                    .await
                    .map_err(failed("cannot write to Redis"))
            })
            .await?;
            if written == 1 {
                return Ok(());
            }
        }
        Err(StoreError::Contended(key.segments().join("/")))
    }

    async fn update_if_now(
        &self,
        key: &RecordKey,
        guard: &RecordKey,
        holds: &RecordGuard<'_>,
        f: &RecordUpdate<'_>,
    ) -> Result<bool, StoreError> {
        let (k, g) = (redis_key(&self.prefix, key), redis_key(&self.prefix, guard));
        for _ in 0..CAS_TRIES {
            let (mut values, now) = self.read_raw(&[k.clone(), g.clone()]).await?;
            let held = values.pop().unwrap_or_default();
            let current = values.pop().unwrap_or_default();
            if !holds((!held.is_empty()).then_some(&held[..])) {
                return Ok(false);
            }
            let (value, at) = match f((!current.is_empty()).then_some(&current[..]), now) {
                Change::Keep => return Ok(true),
                Change::Put(bytes, at) => (bytes, at.map(|t| t.max(now + 1000).to_string())),
                Change::Delete if current.is_empty() => return Ok(true),
                Change::Delete => (Vec::new(), None),
            };
            let mut c = self.conn.clone();
            let mut call = self.cas_if.key(&k);
            call.key(&g)
                .arg(current)
                .arg(value)
                .arg(at.unwrap_or_default())
                .arg(held);
            let written: i64 = timed(async move {
                call.invoke_async(&mut c)
                    .await
                    .map_err(failed("cannot write to Redis"))
            })
            .await?;
            if written == 1 {
                return Ok(true);
            }
        }
        Err(StoreError::Contended(key.segments().join("/")))
    }

    async fn list_now(&self, under: &[String]) -> Result<Vec<RecordKey>, StoreError> {
        let prefix = &self.prefix;
        let pattern = match under.first() {
            None => format!("{prefix}*"),
            Some(group) => format!("{prefix}{{{group}}}*"),
        };
        let mut c = self.conn.clone();
        let keys: Vec<String> = timed(async move {
            let mut keys = Vec::new();
            let mut iter = c
                .scan_match::<_, String>(pattern)
                .await
                .map_err(failed("cannot list keys in Redis"))?;
            while let Some(k) = futures::StreamExt::next(&mut iter).await {
                keys.push(k.map_err(failed("cannot list keys in Redis"))?);
            }
            Ok(keys)
        })
        .await?;
        let mut out: Vec<RecordKey> = keys
            .iter()
            .filter_map(|k| record_key(prefix, k))
            .filter(|k| k.segments().starts_with(under))
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
}

impl RecordStore for RedisRecords {
    fn describe(&self) -> String {
        self.url.clone()
    }

    fn load_many<'a>(&'a self, keys: &'a [RecordKey]) -> BoxFuture<'a, Result<Loaded, StoreError>> {
        async move {
            let names: Vec<String> = keys.iter().map(|k| redis_key(&self.prefix, k)).collect();
            let mut found = Vec::with_capacity(keys.len());
            let mut now = 0;
            // One round trip per group: a script's keys share a cluster slot.
            let mut i = 0;
            while i < names.len() {
                let group = &keys[i].segments()[0];
                let j = (i..keys.len())
                    .find(|&j| &keys[j].segments()[0] != group)
                    .unwrap_or(keys.len());
                let (values, at) = self.read_raw(&names[i..j]).await?;
                now = at;
                found.extend(values.into_iter().map(|v| (!v.is_empty()).then_some(v)));
                i = j;
            }
            if keys.is_empty() {
                now = self.read_raw(&[]).await?.1;
            }
            Ok((found, now))
        }
        .boxed()
    }

    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        f: &'a RecordUpdate<'a>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.update_now(key, f).boxed()
    }

    fn update_if<'a>(
        &'a self,
        key: &'a RecordKey,
        guard: &'a RecordKey,
        holds: &'a RecordGuard<'a>,
        f: &'a RecordUpdate<'a>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.update_if_now(key, guard, holds, f).boxed()
    }

    fn put_if_absent<'a>(
        &'a self,
        key: &'a RecordKey,
        bytes: &'a [u8],
    ) -> BoxFuture<'a, Result<Vec<u8>, StoreError>> {
        async move {
            let k = redis_key(&self.prefix, key);
            let mut c = self.conn.clone();
            let stored: Vec<u8> = timed(async move {
                let _: Option<String> = redis::cmd("SET")
                    .arg(&k)
                    .arg(bytes)
                    .arg("NX")
                    .query_async(&mut c)
                    .await
                    .map_err(failed("cannot write to Redis"))?;
                c.get(&k).await.map_err(failed("cannot read from Redis"))
            })
            .await?;
            Ok(stored)
        }
        .boxed()
    }

    fn list<'a>(
        &'a self,
        under: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<RecordKey>, StoreError>> {
        self.list_now(under).boxed()
    }

    fn remove_under<'a>(&'a self, under: &'a [String]) -> BoxFuture<'a, Result<usize, StoreError>> {
        async move {
            if under.is_empty() {
                return Ok(0);
            }
            let keys = self.list_now(under).await?;
            for key in &keys {
                let mut c = self.conn.clone();
                let k = redis_key(&self.prefix, key);
                let _: i64 =
                    timed(
                        async move { c.del(k).await.map_err(failed("cannot delete from Redis")) },
                    )
                    .await?;
            }
            Ok(keys.len())
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_their_group_as_the_hash_tag_and_read_back() {
        let p = "rss:readers:v1:";
        let k = RecordKey::new(["_~digest", "marks", "00ff"]).unwrap();
        assert_eq!(redis_key(p, &k), "rss:readers:v1:{_~digest}:marks:00ff");
        assert_eq!(record_key(p, &redis_key(p, &k)), Some(k));
        let one = RecordKey::new(["key"]).unwrap();
        assert_eq!(record_key(p, &redis_key(p, &one)), Some(one.clone()));
        assert_eq!(record_key(p, "rss:gate:v1:{x}"), None);
        // Another namespace's keys are not this one's.
        assert_eq!(record_key(p, &redis_key("rss:keys:v1:", &one)), None);
        assert_eq!(record_key("rss:moved:v1:", &redis_key(p, &one)), None);
    }

    #[tokio::test]
    async fn redis_behaves_as_a_record_store() {
        let Ok(url) = std::env::var("RSS_TEST_REDIS") else {
            eprintln!("skipped: RSS_TEST_REDIS is not set (.ci/run starts a Redis server)");
            return;
        };
        let store = RedisRecords::open(&url, "readers").unwrap();
        // A run of its own: nothing left from an earlier one.
        let _ = store.remove_under(&["g1".to_owned()]).await;
        let _ = store.remove_under(&["g2".to_owned()]).await;
        let _ = store.remove_under(&["g3".to_owned()]).await;
        super::super::tests::behaves(&store).await;
        let _ = store.remove_under(&["g2".to_owned()]).await;
        let _ = store.remove_under(&["g3".to_owned()]).await;
    }
}
