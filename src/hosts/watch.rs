//! Where the watches of several processes meet (`crate::watch`): who checks each watched
//! feed (a lease), what its last check found and when the next is due (a small state), and
//! word that a feed changed (a message every process hears).
//!
//! With host state in files (the default), the processes of a machine meet under the cache
//! directory ([`FileWatch`]): `watch/DIGEST.lock`, an advisory lock its holder keeps while it
//! watches the feed (the kernel drops a dead process's), and `watch/DIGEST.json`, the state it
//! leaves; the others learn of a change from that state, read every second. With host state
//! off, each process watches on its own ([`LocalWatch`]). With the fleet's Redis
//! ([`RedisWatch`]), per feed, under the hash tag of the feed URL's digest (so one feed's keys
//! share a slot):
//! - `rss:watch:v1:{DIGEST}:lease` — the checker's token, taken with `SET NX PX` and kept
//!   alive by its holder (`PEXPIRE` while it still holds it); a holder that dies frees it
//!   within its lifetime;
//! - `rss:watch:v1:{DIGEST}` — the state the holder leaves for the next one, expiring;
//! - channel `rss:watch:v1:changes` — one message per change, heard by every process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use sha2::{Digest, Sha256};
use tokio::sync::broadcast;

use super::StoreError;
use super::redis::{OP_TIMEOUT, RETRY_MAX, RETRY_MIN, redacted};
use crate::config::{Config, HostStateSetting};
use crate::lockfile::HeldLock;
use crate::sync::lock;

/// Messages kept for a slow listener before the oldest are dropped.
const BACKLOG: usize = 1024;
/// The channel every process of a fleet hears changes on.
const CHANNEL: &str = "rss:watch:v1:changes";
const PREFIX: &str = "rss:watch:v1:";

/// Takes the lease `KEYS[1]` for token `ARGV[1]` for `ARGV[2]` ms, or renews it when that
/// token holds it: 1 when held, 0 when another holds it.
const HOLD: &str = r"
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if cur == false then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0";

/// Deletes `KEYS[1]` if token `ARGV[1]` holds it.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0";

/// Where watches meet.
pub(crate) trait WatchStore: Send + Sync + std::fmt::Debug {
    /// Whether other processes share it: leases and messages mean something.
    fn shared(&self) -> bool;
    /// Whether word of a change comes on a channel ([`WatchStore::messages`]); without one,
    /// the processes that do not check a feed read its state for the digest it holds.
    fn has_channel(&self) -> bool {
        self.shared()
    }
    /// Takes (or renews) the lease on checking `feed` as `holder`, for `ttl`: whether
    /// `holder` holds it now.
    fn hold<'a>(
        &'a self,
        feed: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Gives the lease back, if `holder` still holds it.
    fn release<'a>(&'a self, feed: &'a str, holder: &'a str) -> BoxFuture<'a, ()>;
    /// The state the last holder left (`None`: none).
    fn load<'a>(&'a self, feed: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>>;
    /// Leaves `state` for the next holder, for `ttl`.
    fn save<'a>(
        &'a self,
        feed: &'a str,
        state: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Tells every process sharing the store (this one included).
    fn publish<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), StoreError>>;
    /// What every process publishes from now on.
    fn messages(&self) -> broadcast::Receiver<Arc<[u8]>>;
}

/// The watch store `config` asks for: the fleet's Redis with `--gate-store`, else none
/// shared (each process watches for itself).
pub(crate) fn open(config: &Config) -> Arc<dyn WatchStore> {
    match &config.host_state {
        HostStateSetting::Redis(url) => match RedisWatch::open(url) {
            Ok(store) => Arc::new(store),
            Err(e) => {
                tracing::warn!("watches are not shared with the fleet: {e}");
                Arc::new(LocalWatch::default())
            }
        },
        HostStateSetting::Files => match &config.cache_dir {
            Some(dir) => Arc::new(FileWatch::new(dir.join("watch"))),
            None => Arc::new(LocalWatch::default()),
        },
        HostStateSetting::Off => Arc::new(LocalWatch::default()),
    }
}

/// The longest state file read.
const STATE_MAX_BYTES: u64 = 64 * 1024;

/// Watches shared by the processes of one machine, through files.
#[derive(Debug)]
pub(crate) struct FileWatch {
    dir: PathBuf,
    /// The leases this process holds, by tag.
    held: std::sync::Mutex<HashMap<String, HeldLock>>,
    silent: broadcast::Sender<Arc<[u8]>>,
}

impl FileWatch {
    /// Watches met in `dir` (made on first use).
    pub(crate) fn new(dir: PathBuf) -> FileWatch {
        FileWatch {
            dir,
            held: Default::default(),
            silent: broadcast::channel(1).0,
        }
    }

    fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.display().to_string();
        move |source| StoreError::Io {
            action,
            path,
            source,
        }
    }
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(StoreError::Io {
            action: "cannot finish file work of a watch",
            path: String::new(),
            source: std::io::Error::other(e),
        })
    })
}

impl WatchStore for FileWatch {
    fn shared(&self) -> bool {
        true
    }

    fn has_channel(&self) -> bool {
        false
    }

    fn hold<'a>(
        &'a self,
        feed: &'a str,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let t = tag(feed);
            if lock(&self.held).contains_key(&t) {
                return Ok(true);
            }
            let (dir, path) = (self.dir.clone(), self.dir.join(format!("{t}.lock")));
            let taken = blocking(move || {
                std::fs::create_dir_all(&dir).map_err(FileWatch::io("cannot create", &dir))?;
                HeldLock::try_take(&path).map_err(FileWatch::io("cannot lock", &path))
            })
            .await?;
            Ok(match taken {
                Some(held) => {
                    lock(&self.held).insert(t, held);
                    true
                }
                None => false,
            })
        })
    }

    fn release<'a>(&'a self, feed: &'a str, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let held = lock(&self.held).remove(&tag(feed));
            if let Some(held) = held {
                let _ = tokio::task::spawn_blocking(move || drop(held)).await;
            }
        })
    }

    fn load<'a>(&'a self, feed: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            let path = self.dir.join(format!("{}.json", tag(feed)));
            blocking(move || {
                use std::io::Read;
                let file = match std::fs::File::open(&path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    r => r.map_err(FileWatch::io("cannot read", &path))?,
                };
                let mut bytes = Vec::new();
                file.take(STATE_MAX_BYTES)
                    .read_to_end(&mut bytes)
                    .map_err(FileWatch::io("cannot read", &path))?;
                Ok(Some(bytes))
            })
            .await
        })
    }

    fn save<'a>(
        &'a self,
        feed: &'a str,
        state: &'a [u8],
        _: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let (dir, bytes) = (self.dir.clone(), state.to_vec());
            let path = self.dir.join(format!("{}.json", tag(feed)));
            // Rewritten in place, as often as the feed is checked, so no file is made per
            // check (what a write costs a file system most). A reader that meets it half
            // written reads no JSON, skips it, and reads it whole a second later.
            blocking(move || {
                use std::io::Write;
                std::fs::create_dir_all(&dir).map_err(FileWatch::io("cannot create", &dir))?;
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&path)
                    .map_err(FileWatch::io("cannot write", &path))?;
                file.write_all(&bytes)
                    .and_then(|()| file.set_len(bytes.len() as u64))
                    .map_err(FileWatch::io("cannot write", &path))
            })
            .await
        })
    }

    fn publish<'a>(&'a self, _: &'a [u8]) -> BoxFuture<'a, Result<(), StoreError>> {
        // The state the holder leaves carries the word.
        Box::pin(async { Ok(()) })
    }

    fn messages(&self) -> broadcast::Receiver<Arc<[u8]>> {
        self.silent.subscribe()
    }
}

/// No store: this process watches on its own.
#[derive(Debug)]
pub(crate) struct LocalWatch {
    silent: broadcast::Sender<Arc<[u8]>>,
}

impl Default for LocalWatch {
    fn default() -> Self {
        LocalWatch {
            silent: broadcast::channel(1).0,
        }
    }
}

impl WatchStore for LocalWatch {
    fn shared(&self) -> bool {
        false
    }
    fn hold<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async { Ok(true) })
    }
    fn release<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
    fn load<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async { Ok(None) })
    }
    fn save<'a>(
        &'a self,
        _: &'a str,
        _: &'a [u8],
        _: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }
    fn publish<'a>(&'a self, _: &'a [u8]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }
    fn messages(&self) -> broadcast::Receiver<Arc<[u8]>> {
        self.silent.subscribe()
    }
}

/// Watches shared through the fleet's Redis.
pub(crate) struct RedisWatch {
    url: String,
    client: redis::Client,
    conn: ConnectionManager,
    hold: Script,
    release: Script,
    heard: broadcast::Sender<Arc<[u8]>>,
    /// The task that hears the channel, started with the first listener of it.
    hearing: std::sync::OnceLock<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for RedisWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisWatch")
            .field("url", &self.url)
            .finish()
    }
}

impl Drop for RedisWatch {
    fn drop(&mut self) {
        if let Some(task) = self.hearing.get() {
            task.abort();
        }
    }
}

fn failed(what: &'static str) -> impl FnOnce(redis::RedisError) -> StoreError {
    move |e| StoreError::Redis {
        action: what,
        source: e,
    }
}

async fn timed<T>(fut: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    tokio::time::timeout(OP_TIMEOUT, fut)
        .await
        .unwrap_or(Err(StoreError::Timeout(OP_TIMEOUT)))
}

/// What names `feed` in a store: a digest of its URL (a URL may hold braces, or a
/// password, which no store ever holds).
pub(crate) fn tag(feed: &str) -> String {
    hex::encode(&Sha256::digest(feed.as_bytes())[..12])
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisWatch {
    /// Watches shared on `url`; connects on first use.
    pub(crate) fn open(url: &str) -> Result<RedisWatch, StoreError> {
        let client = redis::Client::open(url).map_err(failed("cannot use the Redis URL"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(RETRY_MAX);
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(failed("cannot set up the Redis connection"))?;
        Ok(RedisWatch {
            url: redacted(url),
            client,
            conn,
            hold: Script::new(HOLD),
            release: Script::new(RELEASE),
            heard: broadcast::channel(BACKLOG).0,
            hearing: std::sync::OnceLock::new(),
        })
    }
}

/// Hears `CHANNEL` and hands every message to `heard`, connecting again (after a pause
/// that grows to [`RETRY_MAX`]) whenever the connection is lost.
async fn hear(client: redis::Client, url: String, heard: broadcast::Sender<Arc<[u8]>>) {
    let mut pause = RETRY_MIN;
    loop {
        let subscribed = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(CHANNEL).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        match tokio::time::timeout(OP_TIMEOUT, subscribed).await {
            Ok(Ok(pubsub)) => {
                pause = RETRY_MIN;
                let mut stream = pubsub.into_on_message();
                while let Some(msg) = stream.next().await {
                    let _ = heard.send(Arc::from(msg.get_payload_bytes()));
                }
                tracing::warn!("lost the watch channel of {url}; listening again");
            }
            Ok(Err(e)) => tracing::warn!("cannot hear the watch channel of {url}: {e}"),
            Err(_) => tracing::warn!("cannot hear the watch channel of {url}: no answer"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RETRY_MAX);
    }
}

impl WatchStore for RedisWatch {
    fn shared(&self) -> bool {
        true
    }

    fn hold<'a>(
        &'a self,
        feed: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut c = self.conn.clone();
            let mut call = self.hold.key(format!("{PREFIX}{{{}}}:lease", tag(feed)));
            call.arg(holder).arg(ms(ttl));
            let held: i64 = timed(async move {
                call.invoke_async(&mut c)
                    .await
                    .map_err(failed("cannot take a watch lease in Redis"))
            })
            .await?;
            Ok(held == 1)
        })
    }

    fn release<'a>(&'a self, feed: &'a str, holder: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut c = self.conn.clone();
            let mut call = self.release.key(format!("{PREFIX}{{{}}}:lease", tag(feed)));
            call.arg(holder);
            let _: Result<i64, _> = timed(async move {
                call.invoke_async(&mut c)
                    .await
                    .map_err(failed("cannot give a watch lease back"))
            })
            .await;
        })
    }

    fn load<'a>(&'a self, feed: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            let mut c = self.conn.clone();
            let key = format!("{PREFIX}{{{}}}", tag(feed));
            timed(async move {
                c.get::<_, Option<Vec<u8>>>(key)
                    .await
                    .map_err(failed("cannot read a watch's state from Redis"))
            })
            .await
        })
    }

    fn save<'a>(
        &'a self,
        feed: &'a str,
        state: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut c = self.conn.clone();
            let key = format!("{PREFIX}{{{}}}", tag(feed));
            timed(async move {
                c.pset_ex::<_, _, ()>(key, state, ms(ttl))
                    .await
                    .map_err(failed("cannot write a watch's state to Redis"))
            })
            .await
        })
    }

    fn publish<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut c = self.conn.clone();
            timed(async move {
                c.publish::<_, _, i64>(CHANNEL, message)
                    .await
                    .map(|_| ())
                    .map_err(failed("cannot publish a watch's change to Redis"))
            })
            .await
        })
    }

    fn messages(&self) -> broadcast::Receiver<Arc<[u8]>> {
        let rx = self.heard.subscribe();
        self.hearing.get_or_init(|| {
            tokio::spawn(hear(
                self.client.clone(),
                self.url.clone(),
                self.heard.clone(),
            ))
        });
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_local_store_grants_every_lease_and_hears_nothing() {
        let s = LocalWatch::default();
        assert!(!s.shared());
        assert!(
            s.hold("http://a/", "n1", Duration::from_secs(1))
                .await
                .unwrap()
        );
        assert!(
            s.hold("http://a/", "n2", Duration::from_secs(1))
                .await
                .unwrap()
        );
        s.publish(b"x").await.unwrap();
        let mut rx = s.messages();
        assert!(rx.try_recv().is_err());
        assert_eq!(s.load("http://a/").await.unwrap(), None);
    }

    #[tokio::test]
    async fn on_one_machine_one_process_holds_a_feed_and_leaves_its_state_to_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (
            FileWatch::new(dir.path().join("watch")),
            FileWatch::new(dir.path().join("watch")),
        );
        assert!(one.shared() && !one.has_channel());
        let (feed, ttl) = ("http://a/feed", Duration::from_secs(1));
        assert!(one.hold(feed, "n1", ttl).await.unwrap());
        assert!(one.hold(feed, "n1", ttl).await.unwrap());
        assert!(!two.hold(feed, "n2", ttl).await.unwrap());
        assert!(two.hold("http://b/feed", "n2", ttl).await.unwrap());
        assert_eq!(two.load(feed).await.unwrap(), None);
        one.save(feed, b"{\"digest\":\"12345\"}", ttl)
            .await
            .unwrap();
        one.save(feed, b"{\"digest\":\"1\"}", ttl).await.unwrap();
        assert_eq!(
            two.load(feed).await.unwrap().unwrap(),
            b"{\"digest\":\"1\"}"
        );
        one.release(feed, "n1").await;
        assert!(two.hold(feed, "n2", ttl).await.unwrap());
        // A store dropped (its process gone) leaves its leases free.
        drop(two);
        assert!(one.hold(feed, "n1", ttl).await.unwrap());
    }

    #[tokio::test]
    async fn in_redis_one_node_holds_a_feed_and_every_node_hears_its_word() {
        let Ok(url) = std::env::var("RSS_TEST_REDIS") else {
            eprintln!("skipped: RSS_TEST_REDIS is not set (.ci/run starts a Redis server)");
            return;
        };
        let (one, two) = (
            RedisWatch::open(&url).unwrap(),
            RedisWatch::open(&url).unwrap(),
        );
        assert!(one.shared() && one.has_channel());
        let feed = format!(
            "http://me:secret@example.com/{}.xml",
            crate::readers::random_id()
        );
        let ttl = Duration::from_secs(5);
        assert!(one.hold(&feed, "n1", ttl).await.unwrap());
        assert!(one.hold(&feed, "n1", ttl).await.unwrap());
        assert!(!two.hold(&feed, "n2", ttl).await.unwrap());
        two.release(&feed, "n2").await;
        assert!(!two.hold(&feed, "n2", ttl).await.unwrap());
        one.save(&feed, b"state", ttl).await.unwrap();
        assert_eq!(
            two.load(&feed).await.unwrap().as_deref(),
            Some(&b"state"[..])
        );
        one.release(&feed, "n1").await;
        assert!(two.hold(&feed, "n2", ttl).await.unwrap());
        two.release(&feed, "n2").await;
        // Word published by one reaches the other (once it hears the channel).
        let mut heard = two.messages();
        let word = format!("word {feed}");
        let got = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                one.publish(word.as_bytes()).await.unwrap();
                if let Ok(Ok(m)) =
                    tokio::time::timeout(Duration::from_millis(200), heard.recv()).await
                {
                    return m;
                }
            }
        })
        .await
        .expect("word within 10 s");
        assert_eq!(&*got, word.as_bytes());
    }

    #[test]
    fn a_feeds_tag_is_a_digest_whatever_its_url_holds() {
        let t = tag("http://a/{x}");
        assert_eq!(t.len(), 24);
        assert!(t.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(t, tag("http://a/{y}"));
    }
}
