//! Redis first, the local file store while Redis is down: the same operation is served from
//! the files, every operation meanwhile reports `GATE_STORE_UNAVAILABLE`, and Redis is tried
//! again after a growing pause.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::time::Instant;

use super::redis::{OP_TIMEOUT, RETRY_MAX, RETRY_MIN, RedisStore};
use super::{Clock, HostStore, Lease, Listed, Snapshot, StoreError, Update};
use crate::gate::HostKey;
use crate::sync::lock;

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
    /// What failed last, while Redis is down.
    why: Option<String>,
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
        lock(&self.down).until.is_none_or(|t| Instant::now() >= t)
    }

    fn failed(&self, e: &StoreError) {
        let mut down = lock(&self.down);
        down.pause = (down.pause * 2).clamp(RETRY_MIN, RETRY_MAX);
        down.until = Some(Instant::now() + down.pause);
        down.why = Some(format!(
            "the gate store {} failed ({e}); pacing with the local store",
            self.redis.url
        ));
        tracing::warn!("Redis gate store failed: {e}");
    }

    fn worked(&self) {
        let mut down = lock(&self.down);
        if down.until.is_some() {
            tracing::info!("Redis gate store is back");
        }
        *down = Down::default();
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
                    crate::metrics::store_error("gate");
                    self.failed(&e);
                    if self.local.is_none() {
                        return Err(e);
                    }
                }
            }
        }
        match &self.local {
            Some(local) => {
                crate::metrics::store_fallback();
                on_local(local).await
            }
            None => Err(StoreError::Timeout(OP_TIMEOUT)),
        }
    }
}

impl HostStore for Fallback {
    fn describe(&self) -> String {
        self.redis.url.clone()
    }

    fn degraded(&self) -> Option<String> {
        lock(&self.down).why.clone()
    }

    fn load<'a>(&'a self, host: &'a HostKey) -> BoxFuture<'a, Result<Snapshot, StoreError>> {
        self.run(self.redis.load_inner(host).boxed(), move |l| l.load(host))
            .boxed()
    }

    fn update<'a>(
        &'a self,
        host: &'a HostKey,
        f: &'a Update<'a>,
    ) -> BoxFuture<'a, Result<Snapshot, StoreError>> {
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

    fn list(&self) -> BoxFuture<'_, Result<(Vec<Listed>, Clock), StoreError>> {
        // `rss hosts` shows the configured store, or says why it cannot.
        self.redis.list_inner().boxed()
    }

    fn tidy(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            match &self.local {
                Some(local) => local.tidy().await,
                None => Ok(()),
            }
        }
        .boxed()
    }
}
