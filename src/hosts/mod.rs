//! Where learned host state lives beyond one process, so every `rss` process of a machine
//! (file backend, under the cache directory) or of a fleet (Redis backend) paces each host
//! together. This is the only gate-related code that does I/O.
//!
//! A store keeps, per host, the gate's [`HostState`] with wall-clock times, and per send
//! slot of a host a lease that only the request about to send holds (an OS advisory lock
//! for files, which the kernel drops with a dead process). [`SharedHosts`] is what the HTTP
//! client talks to: it re-reads a host's state right before each send, publishes each
//! event as an atomic read-modify-write, takes the lease, and falls back to the process's
//! own gate, with a warning to the operation that met the failure, when the store cannot
//! be used.

mod fallback;
pub(crate) mod file;
pub(crate) mod records;
mod redis;
mod stored;
pub(crate) mod watch;

use crate::model::WarningCode;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::time::Instant;

use crate::config::{Config, HostStateSetting};
use crate::gate::{Event, Gate, GateParams, HostKey, HostState, newer};
pub(crate) use stored::{Clock, StoredHost};

pub use crate::error::StoreError;

/// A send slot of a host, held while one request sends; released by [`Lease::release`]
/// (or, for a call cancelled mid-send, on drop).
pub(crate) struct Lease(Box<dyn Held>);

/// What a store's held send slot can do.
pub(crate) trait Held: Send + Sync {
    /// Whether the slot was found taken or lapsed while held (its holder was stalled for
    /// longer than the slot's lifetime): another worker may have sent beside it.
    fn lost(&self) -> bool {
        false
    }
    /// Makes sure the slot has most of its lifetime ahead before a send starts on it
    /// (renewing it if needed); `false` when it is no longer ours.
    fn ensure(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { true })
    }
    /// Gives the slot back now.
    fn release(self: Box<Self>) -> BoxFuture<'static, ()>;
}

impl Lease {
    /// A lease held by `held`.
    pub(crate) fn new(held: impl Held + 'static) -> Lease {
        Lease(Box::new(held))
    }

    /// See [`Held::lost`].
    pub(crate) fn lost(&self) -> bool {
        self.0.lost()
    }

    /// See [`Held::ensure`].
    pub(crate) async fn ensure(&self) -> bool {
        self.0.ensure().await
    }

    /// Gives the slot back, waiting until the store has it (so the next worker finds it
    /// free at once, and a process that ends holds nothing).
    pub(crate) async fn release(self) {
        self.0.release().await;
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lease")
    }
}

/// A store's answer with the store's clock read at the same moment, so stored wall-clock
/// times are converted against the clock that wrote them (Redis's `TIME` for a fleet).
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// What is stored (`None`: nothing).
    pub stored: Option<StoredHost>,
    /// The store's clock at the read.
    pub clock: Clock,
}

/// The read-modify-write of one host's stored state: gets what is stored (`None`: nothing)
/// and the store's clock, returns what to store (`None`: remove it).
pub(crate) type Update<'a> =
    dyn Fn(Option<StoredHost>, Clock) -> Option<StoredHost> + Send + Sync + 'a;

/// One stored entry as listed: its state, or why it could not be read.
pub(crate) type Listed = Result<StoredHost, StoreError>;

/// Where host state is kept.
pub(crate) trait HostStore: Send + Sync + std::fmt::Debug {
    /// Where the store is, for people (`file:/…`, `redis://…`).
    fn describe(&self) -> String;
    /// The stored state of `host`, if any.
    fn load<'a>(&'a self, host: &'a HostKey) -> BoxFuture<'a, Result<Snapshot, StoreError>>;
    /// Atomically replaces `host`'s state with `f(current, clock)`; returns what was stored.
    fn update<'a>(
        &'a self,
        host: &'a HostKey,
        f: &'a Update<'a>,
    ) -> BoxFuture<'a, Result<Snapshot, StoreError>>;
    /// Takes one of `slots` send slots of `host`, or `None` when another holder has each.
    fn try_lease<'a>(
        &'a self,
        host: &'a HostKey,
        slots: usize,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>>;
    /// Every stored entry, and the store's clock.
    fn list(&self) -> BoxFuture<'_, Result<(Vec<Listed>, Clock), StoreError>>;
    /// Removes what the store keeps that nothing uses any more (lock files of hosts no
    /// process is sending to).
    fn tidy(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }
    /// Why the store is serving from a fallback right now, if it is (reported as
    /// `GATE_STORE_UNAVAILABLE` to the operations that use it meanwhile).
    fn degraded(&self) -> Option<String> {
        None
    }
}

/// A warning the store raised, for the output of the operation that met it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreWarning {
    /// `GATE_STORE_UNAVAILABLE`, `HOST_STATE_CORRUPT` or `GATE_SLOT_LOST`.
    pub code: WarningCode,
    /// What happened and what `rss` did instead.
    pub message: String,
}

/// The warnings one operation met, each once.
#[derive(Debug, Default)]
pub(crate) struct Notes(Vec<StoreWarning>);

impl Notes {
    /// Adds `w` unless this operation already has it.
    pub(crate) fn push(&mut self, w: StoreWarning) {
        if !self.0.contains(&w) {
            self.0.push(w);
        }
    }

    /// The warnings, in the order met.
    pub(crate) fn into_vec(self) -> Vec<StoreWarning> {
        self.0
    }
}

/// Gives back every shared send slot the process still holds (a send cancelled by a
/// signal leaves its slot to lapse otherwise); call it before the process ends. File
/// slots need nothing: the kernel drops a dead process's locks.
pub(crate) async fn release_held() {
    redis::release_held().await;
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
    let skew = config.wall_clock_skew_ms;
    let files = || -> Result<Arc<dyn HostStore>, String> {
        match &config.cache_dir {
            None => Err("no cache directory is known".to_owned()),
            Some(dir) => match file::FileStore::open(&dir.join("hosts"), skew) {
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
        HostStateSetting::Redis(url) => match redis::RedisStore::open(url) {
            Ok(store) => {
                SharedHosts::with_store(Arc::new(fallback::Fallback::new(store, files().ok())))
            }
            Err(e) => unshared(e.to_string()),
        },
    }
}

/// What trying for a host's shared send slot gave.
pub(crate) enum Slot {
    /// No store: the process's own permit is all there is.
    Unshared,
    /// The slot, held until released.
    Taken(Lease),
    /// Another holder (another process) has every slot.
    Busy,
}

/// The gate's link to a shared store (or to none).
#[derive(Debug, Default)]
pub(crate) struct SharedHosts {
    store: Option<Arc<dyn HostStore>>,
    /// Why there is no store, reported with every operation.
    standing: Option<StoreWarning>,
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

    /// The warning every operation reports when there is no store, if any.
    pub(crate) fn standing_warning(&self) -> Option<StoreWarning> {
        self.standing.clone()
    }

    fn warn(&self, e: &StoreError, notes: &mut Notes) {
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
        notes.push(w);
    }

    /// Notes that the store served from its fallback, when it did.
    fn note_degraded(store: &Arc<dyn HostStore>, notes: &mut Notes) {
        if let Some(why) = store.degraded() {
            notes.push(StoreWarning {
                code: WarningCode::GateStoreUnavailable,
                message: why,
            });
        }
    }

    /// Re-reads `key`'s shared state into the gate (what another process learned, or
    /// cleared, a moment ago counts for this send). A lapsed entry is ignored and deleted;
    /// one out of bounds (clock skew, damage) is capped and written back capped.
    pub(crate) async fn refresh(&self, gate: &Gate, key: &HostKey, notes: &mut Notes) {
        let Some(store) = &self.store else { return };
        let params = *gate.params();
        let loaded = store.load(key).await;
        Self::note_degraded(store, notes);
        let Snapshot { stored, clock } = match loaded {
            Ok(snap) => snap,
            Err(e) => return self.warn(&e, notes),
        };
        let Some(stored) = stored else { return };
        let drop_lapsed =
            |s: Option<StoredHost>, c: Clock| s.filter(|s| !s.is_expired(c.wall_ms()));
        let cap =
            move |s: Option<StoredHost>, c: Clock| s.map(|s| s.capped(c, &params).unwrap_or(s));
        let fix: Option<&Update<'_>> = if stored.is_expired(clock.wall_ms()) {
            tracing::debug!(host = %key, "removing lapsed host state");
            Some(&drop_lapsed)
        } else if stored.capped(clock, &params).is_some() {
            tracing::debug!(host = %key, "capping stored host state");
            Some(&cap)
        } else {
            None
        };
        let snap = match fix {
            Some(fix) => match store.update(key, fix).await {
                Ok(snap) => snap,
                Err(e) => return self.warn(&e, notes),
            },
            None => Snapshot {
                stored: Some(stored),
                clock,
            },
        };
        Self::take_in(gate, key, snap);
    }

    /// Takes what the store holds for `key` into the gate: a live state when it is newer
    /// than the gate's, a clear marker as forgetting what came before it.
    fn take_in(gate: &Gate, key: &HostKey, snap: Snapshot) {
        let params = *gate.params();
        let Some(s) = snap.stored.filter(|s| !s.is_expired(snap.clock.wall_ms())) else {
            return;
        };
        let state = s.to_state(snap.clock, &params);
        if s.is_clear_marker() {
            if let Some(at) = state.updated {
                gate.adopt_clear(key, at);
            }
        } else {
            gate.adopt(key, Some(state));
        }
    }

    /// Publishes `event` (already applied to the gate on `before`, the state it had) as an
    /// atomic update of the shared state, and takes the result back into the gate. A host
    /// with nothing live, before or after, costs no write.
    pub(crate) async fn publish(
        &self,
        gate: &Gate,
        key: &HostKey,
        before: HostState,
        event: Event,
        notes: &mut Notes,
    ) {
        let Some(store) = &self.store else { return };
        let after = gate.state_of(key);
        let now = Instant::now();
        if !before.is_live(now) && !after.is_live(now) {
            return;
        }
        let params = *gate.params();
        let update = move |stored: Option<StoredHost>, clock: Clock| {
            let stored = stored.filter(|s| !s.is_expired(clock.wall_ms()));
            let shared = stored.as_ref().map(|s| s.to_state(clock, &params));
            let mut state = match (&stored, shared) {
                // What this process knew up to a clear is forgotten.
                (Some(m), Some(cleared)) if m.is_clear_marker() => {
                    if before.updated.is_none_or(|u| Some(u) <= cleared.updated) {
                        cleared
                    } else {
                        before.clone()
                    }
                }
                (_, shared) => newer(shared, Some(before.clone())).unwrap_or_default(),
            };
            state.apply(&params, event);
            if state.is_live(clock.instant()) {
                return Some(StoredHost::from_state(key, &state, clock));
            }
            // A clear marker stays until it lapses, so every process still sees it.
            stored.filter(StoredHost::is_clear_marker)
        };
        let written = store.update(key, &update).await;
        Self::note_degraded(store, notes);
        match written {
            Ok(snap) => Self::take_in(gate, key, snap),
            Err(e) => self.warn(&e, notes),
        }
    }

    /// Tries once for one of `key`'s shared send slots.
    pub(crate) async fn try_slot(&self, gate: &Gate, key: &HostKey, notes: &mut Notes) -> Slot {
        let Some(store) = &self.store else {
            return Slot::Unshared;
        };
        let taken = store.try_lease(key, gate.capacity_of(key)).await;
        Self::note_degraded(store, notes);
        match taken {
            Ok(Some(lease)) => Slot::Taken(lease),
            Ok(None) => Slot::Busy,
            Err(e) => {
                self.warn(&e, notes);
                Slot::Unshared
            }
        }
    }

    /// Forgets `host` (or every host) in the store: a clear marker replaces each entry,
    /// under the entry's lock, so running processes forget it on their next re-read.
    /// Returns how many entries were cleared.
    pub(crate) async fn clear(
        &self,
        params: &GateParams,
        host: Option<&HostKey>,
    ) -> Result<usize, StoreError> {
        let Some(store) = &self.store else {
            return Ok(0);
        };
        let targets: Vec<HostKey> = match host {
            Some(h) => vec![h.clone()],
            None => {
                let (listed, _) = store.list().await?;
                listed
                    .into_iter()
                    .filter_map(|e| e.ok())
                    .filter_map(|s| HostKey::parse(&s.host))
                    .collect()
            }
        };
        let mut cleared = 0;
        for key in &targets {
            let counted = std::sync::atomic::AtomicBool::new(false);
            let mark = |s: Option<StoredHost>, c: Clock| {
                let live = s
                    .as_ref()
                    .filter(|s| !s.is_expired(c.wall_ms()) && !s.is_clear_marker());
                counted.store(live.is_some(), std::sync::atomic::Ordering::Relaxed);
                match live {
                    Some(live) => Some(StoredHost::cleared(key, Some(live), c, params)),
                    // Nothing live to forget: a marker already there stays as it is.
                    None => s.filter(|s| s.is_clear_marker() && !s.is_expired(c.wall_ms())),
                }
            };
            store.update(key, &mark).await?;
            if counted.load(std::sync::atomic::Ordering::Relaxed) {
                cleared += 1;
            }
        }
        store.tidy().await?;
        Ok(cleared)
    }
}

#[cfg(test)]
mod tests;
