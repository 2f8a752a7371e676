//! Where learned host state lives beyond one process, so every `rss` process of a machine
//! (file backend, under the cache directory) or of a fleet (Redis backend) paces each host
//! together. This is the only gate-related code that does I/O.
//!
//! A store keeps, per host, the gate's [`HostState`] with wall-clock times, and per send
//! slot of a host a lease that only the request about to send holds (an OS advisory lock
//! for files, which the kernel drops with a dead process). [`SharedHosts`] is what the HTTP
//! client talks to: it re-reads a host's state right before each send, publishes each
//! event as an atomic read-modify-write, takes the lease, and falls back to the process's
//! own gate, with a warning, when the store cannot be used.

pub(crate) mod file;
mod redis;
mod stored;

use crate::model::WarningCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use crate::config::{Config, HostStateSetting};
use crate::gate::{Event, Gate, HostKey, HostState, Permit, Throttled, newer};
pub(crate) use stored::{Clock, StoredHost};

/// The longest pause between two tries for a send slot another process holds.
const LEASE_POLL_MAX: Duration = Duration::from_millis(50);

/// Why a store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the store could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A stored entry could not be read as host state.
    #[error("the stored state of {host} is unreadable: {source}")]
    Corrupt {
        /// The host (or the entry's file name).
        host: String,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The store did not answer in time.
    #[error("the host-state store did not answer within {0:?}")]
    Timeout(Duration),
    /// A Redis command failed.
    #[error("{action}: {source}")]
    Redis {
        /// What was being done.
        action: &'static str,
        /// The cause.
        #[source]
        source: ::redis::RedisError,
    },
    /// Other workers kept changing a host's state faster than this one could update it.
    #[error("the state of {0} changed under every try to update it")]
    Contended(String),
}

/// A send slot of a host, held while one request sends; released on drop.
pub(crate) struct Lease(#[allow(dead_code)] Box<dyn Send + Sync>);

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lease")
    }
}

/// The read-modify-write of one host's stored state: gets what is stored (`None`: nothing),
/// returns what to store (`None`: remove it).
pub(crate) type Update<'a> = dyn Fn(Option<StoredHost>) -> Option<StoredHost> + Send + Sync + 'a;

/// One stored entry as listed: its state, or why it could not be read.
pub(crate) type Listed = Result<StoredHost, StoreError>;

/// Where host state is kept.
pub(crate) trait HostStore: Send + Sync + std::fmt::Debug {
    /// Where the store is, for people (`file:/…`, `redis://…`).
    fn describe(&self) -> String;
    /// The stored state of `host`, if any.
    fn load<'a>(
        &'a self,
        host: &'a HostKey,
    ) -> BoxFuture<'a, Result<Option<StoredHost>, StoreError>>;
    /// Atomically replaces `host`'s state with `f(current)`; returns what was stored.
    fn update<'a>(
        &'a self,
        host: &'a HostKey,
        f: &'a Update<'a>,
    ) -> BoxFuture<'a, Result<Option<StoredHost>, StoreError>>;
    /// Takes one of `slots` send slots of `host`, or `None` when another holder has each.
    fn try_lease<'a>(
        &'a self,
        host: &'a HostKey,
        slots: usize,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>>;
    /// Every stored entry.
    fn list(&self) -> BoxFuture<'_, Result<Vec<Listed>, StoreError>>;
    /// Forgets `host` (or every host); returns how many entries went.
    fn clear<'a>(&'a self, host: Option<&'a HostKey>) -> BoxFuture<'a, Result<usize, StoreError>>;
    /// Why the store served from a fallback since the last call, if it did (reported as
    /// `GATE_STORE_UNAVAILABLE`).
    fn take_degraded(&self) -> Option<String> {
        None
    }
}

/// A warning the store raised, for the output of the operation that met it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreWarning {
    /// `GATE_STORE_UNAVAILABLE` or `HOST_STATE_CORRUPT`.
    pub code: WarningCode,
    /// What happened and what `rss` did instead.
    pub message: String,
}

/// The link to shared host state that `config` asks for: the file store under the cache
/// directory unless host state is off. A store that cannot be opened (a read-only cache
/// directory) leaves pacing to the process's own gate, with a warning.
pub(crate) fn open(config: &Config) -> SharedHosts {
    let unshared = |why: String| {
        SharedHosts::unavailable(format!(
            "host state is not shared with other processes: {why}"
        ))
    };
    let files = || -> Result<Arc<dyn HostStore>, String> {
        match &config.cache_dir {
            None => Err("no cache directory is known".to_owned()),
            Some(dir) => match file::FileStore::open(&dir.join("hosts")) {
                Ok(store) => Ok(Arc::new(store)),
                Err(e) => Err(e.to_string()),
            },
        }
    };
    match &config.host_state {
        HostStateSetting::Off => SharedHosts::off(),
        HostStateSetting::Files => match files() {
            Ok(store) => SharedHosts::with_store(store),
            Err(why) => unshared(why),
        },
        HostStateSetting::Redis(url) => match redis::RedisStore::open(url, config.gate) {
            Ok(store) => {
                SharedHosts::with_store(Arc::new(redis::Fallback::new(store, files().ok())))
            }
            Err(e) => unshared(e.to_string()),
        },
    }
}

/// The gate's link to a shared store (or to none).
#[derive(Debug, Default)]
pub(crate) struct SharedHosts {
    store: Option<Arc<dyn HostStore>>,
    /// Why there is no store, reported with every operation.
    standing: Option<StoreWarning>,
    /// Warnings met since the last operation collected them.
    pending: Mutex<Vec<StoreWarning>>,
}

impl SharedHosts {
    /// No shared state: the process's own gate only.
    pub(crate) fn off() -> SharedHosts {
        SharedHosts::default()
    }

    /// Shared state in `store`.
    pub(crate) fn with_store(store: Arc<dyn HostStore>) -> SharedHosts {
        SharedHosts {
            store: Some(store),
            ..SharedHosts::default()
        }
    }

    /// No shared state, because `why`; reported with every operation.
    pub(crate) fn unavailable(why: String) -> SharedHosts {
        SharedHosts {
            standing: Some(StoreWarning {
                code: WarningCode::GateStoreUnavailable,
                message: why,
            }),
            ..SharedHosts::default()
        }
    }

    /// The store in use, if any.
    pub(crate) fn store(&self) -> Option<&Arc<dyn HostStore>> {
        self.store.as_ref()
    }

    /// The warnings to report with an operation: the standing one, and those met since the
    /// last call.
    pub(crate) fn take_warnings(&self) -> Vec<StoreWarning> {
        let mut out: Vec<StoreWarning> = self.standing.iter().cloned().collect();
        if let Some(why) = self.store.as_ref().and_then(|s| s.take_degraded()) {
            out.push(StoreWarning {
                code: WarningCode::GateStoreUnavailable,
                message: why,
            });
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for w in pending.drain(..) {
            if !out.contains(&w) {
                out.push(w);
            }
        }
        out
    }

    fn warn(&self, e: &StoreError) {
        let w = match e {
            StoreError::Corrupt { .. } => StoreWarning {
                code: WarningCode::HostStateCorrupt,
                message: format!("{e}; it was ignored"),
            },
            _ => StoreWarning {
                code: WarningCode::GateStoreUnavailable,
                message: format!("{e}; pacing with this process's own gate"),
            },
        };
        tracing::warn!("{}", w.message);
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if !pending.contains(&w) {
            pending.push(w);
        }
    }

    /// Re-reads `key`'s shared state into the gate (what another process learned a moment
    /// ago counts for this send).
    pub(crate) async fn refresh(&self, gate: &Gate, key: &HostKey) {
        let Some(store) = &self.store else { return };
        let params = *gate.params();
        let stored = match store.load(key).await {
            Ok(stored) => stored,
            Err(e) => return self.warn(&e),
        };
        let clock = Clock::now();
        let stored = match stored.as_ref().and_then(|s| s.capped(clock, &params)) {
            // Out of bounds (clock skew, damage): written back capped, once.
            Some(_) => {
                tracing::debug!(host = %key, "capping stored host state");
                let fix =
                    move |s: Option<StoredHost>| s.map(|s| s.capped(clock, &params).unwrap_or(s));
                match store.update(key, &fix).await {
                    Ok(s) => s,
                    Err(e) => return self.warn(&e),
                }
            }
            None => stored,
        };
        gate.adopt(key, stored.map(|s| s.to_state(clock, &params)));
    }

    /// Publishes `event` (already applied to the gate on `before`, the state it had) as an
    /// atomic update of the shared state, and takes the result back into the gate. A host
    /// with nothing learned, before or after, costs no write.
    pub(crate) async fn publish(
        &self,
        gate: &Gate,
        key: &HostKey,
        before: HostState,
        event: Event,
    ) {
        let Some(store) = &self.store else { return };
        let after = gate.state_of(key);
        if !before.is_learned() && !after.is_learned() {
            return;
        }
        let params = *gate.params();
        let clock = Clock::now();
        let update = move |stored: Option<StoredHost>| {
            let shared = stored.map(|s| s.to_state(clock, &params));
            let mut state = newer(shared, Some(before.clone())).unwrap_or_default();
            state.apply(&params, event);
            state
                .is_learned()
                .then(|| StoredHost::from_state(key, &state, clock))
        };
        match store.update(key, &update).await {
            Ok(stored) => {
                let state = stored.map(|s| s.to_state(Clock::now(), &params));
                gate.adopt(key, state);
            }
            Err(e) => self.warn(&e),
        }
    }

    /// Takes `key`'s shared send slot for the holder of `permit`, pacing first with the
    /// freshest shared state. Waiting for another process's send counts against the
    /// deadline: when the known wait passes it, this fails at once. `Ok(None)`: no store (or
    /// it failed, with a warning), so the process's own permit is all there is.
    pub(crate) async fn lease(
        &self,
        gate: &Gate,
        permit: &mut Permit,
        deadline: Instant,
    ) -> Result<Option<Lease>, Throttled> {
        let Some(store) = &self.store else {
            return Ok(None);
        };
        let key = permit.host().clone();
        let slots = gate.params().host_concurrency;
        let mut pause = Duration::from_millis(2);
        loop {
            self.refresh(gate, &key).await;
            permit.pace(deadline).await?;
            match store.try_lease(&key, slots).await {
                Ok(Some(lease)) => {
                    // The holder before us may have learned something as it let go.
                    self.refresh(gate, &key).await;
                    if permit.pacing().is_zero() {
                        return Ok(Some(lease));
                    }
                }
                Ok(None) => {
                    let now = Instant::now();
                    let wait = gate.estimate_behind_one(&key, now);
                    // Another worker's send with nothing known of its length: wait for it
                    // until the deadline, never past it.
                    if (!wait.is_zero() && now + wait > deadline) || now >= deadline {
                        return Err(Throttled {
                            host: key,
                            wait: wait.max(LEASE_POLL_MAX),
                        });
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(LEASE_POLL_MAX);
                }
                Err(e) => {
                    self.warn(&e);
                    return Ok(None);
                }
            }
        }
    }
}
