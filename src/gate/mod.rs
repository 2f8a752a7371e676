//! The per-host request gate: permits, pacing and learned cooldowns.
//!
//! Every network send takes a [`Permit`] for its host first. The gate never does I/O and
//! never reads the environment; it decides when a send may happen and learns from the
//! events it is told about. What it learns can be shared with other processes through a
//! store (`crate::hosts`), which hands states back with [`Gate::adopt`].

mod state;
pub(crate) mod window;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use url::Url;

#[cfg(test)]
use state::cooldown;
pub(crate) use state::{Event, HostState, newer};
pub use state::{Outcome, warm_spacing};
pub(crate) use window::{Window, probe_after};

pub use crate::config::{GateParams, KeyMode};

/// Slots kept before idle ones are pruned (a long-lived server meets many hosts).
const PRUNE_ABOVE: usize = 256;

/// A host as the gate sees it: lowercased `host:port`, default port filled in, no
/// trailing dot; or, keyed by site, the registrable domain alone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostKey(String);

impl HostKey {
    /// The key of `url`'s authority, or `None` for a URL without a host.
    pub fn from_url(url: &Url) -> Option<HostKey> {
        let host = url.host_str()?.to_ascii_lowercase();
        // `example.com.` and `example.com` are one host.
        let host = host.trim_end_matches('.');
        if host.is_empty() {
            return None;
        }
        let port = url.port_or_known_default()?;
        Some(HostKey(format!("{host}:{port}")))
    }

    /// The key of `url` under `mode`.
    pub fn for_url(url: &Url, mode: KeyMode) -> Option<HostKey> {
        let by_host = HostKey::from_url(url)?;
        if mode == KeyMode::Host {
            return Some(by_host);
        }
        let Some(url::Host::Domain(name)) = url.host() else {
            return Some(by_host);
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if name == "localhost" || name.ends_with(".localhost") {
            return Some(by_host);
        }
        match psl::domain_str(&name) {
            Some(site) => Some(HostKey(site.to_owned())),
            None => Some(by_host),
        }
    }

    /// A key as written by [`HostKey::as_str`] (`host:port`, or a site's domain), or `None`
    /// when it is not one.
    pub fn parse(s: &str) -> Option<HostKey> {
        let s = s.trim();
        let url = Url::parse(&format!("http://{s}/")).ok()?;
        let has_port = s
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse::<u16>().ok())
            .is_some();
        if has_port {
            return HostKey::from_url(&url);
        }
        // A name without a port is a site's key.
        match url.host() {
            Some(url::Host::Domain(d)) if d.contains('.') => {
                Some(HostKey(d.trim_end_matches('.').to_ascii_lowercase()))
            }
            _ => None,
        }
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is a site's key (`--host-key site`: a registrable domain, no port),
    /// which several hosts share.
    pub(crate) fn is_site(&self) -> bool {
        !self.0.contains(':')
    }
}

impl std::fmt::Display for HostKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The gate declined: waiting for this host would pass the call's deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttled {
    pub host: HostKey,
    /// How long from now until the host could take this call, at least.
    pub wait: Duration,
}

/// What the gate tracks for one host besides its learned state: who is queued for a
/// permit and which holders have not started their send. A wait estimate counts exactly
/// these (a holder already sending has moved the host's next send on by itself).
#[derive(Debug, Default)]
struct SlotState {
    host: HostState,
    /// Tickets of the callers queued for a permit; a smaller ticket came first, and the
    /// permits are handed out in that order.
    queued: BTreeSet<u64>,
    next_ticket: u64,
    /// Permit holders whose send has not started (pacing, or about to retry).
    unstarted: usize,
    /// Permit holders whose send is on the wire (counted against an announced quota until
    /// their answers arrive).
    in_flight: usize,
}

#[derive(Debug)]
struct HostSlot {
    permits: Arc<Semaphore>,
    /// How many permits the host has (`--host-concurrency`, or its config rule's).
    capacity: usize,
    state: Mutex<SlotState>,
    /// Signalled whenever the state changes, so queued callers re-estimate their wait.
    changed: Notify,
}

impl HostSlot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        // Every update is a few assignments, so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The shared per-host gate.
#[derive(Debug)]
pub struct Gate {
    params: GateParams,
    slots: Mutex<HashMap<HostKey, Arc<HostSlot>>>,
}

impl Gate {
    /// A gate with these parameters and no learned state.
    pub fn new(mut params: GateParams) -> Gate {
        params.host_concurrency = params.host_concurrency.max(1);
        Gate {
            params,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The parameters in force.
    pub fn params(&self) -> &GateParams {
        &self.params
    }

    fn slot(&self, key: &HostKey) -> Arc<HostSlot> {
        self.slot_with(key, self.params.host_concurrency)
    }

    /// `key`'s slot, made with `capacity` permits if it is new.
    fn slot_with(&self, key: &HostKey, capacity: usize) -> Arc<HostSlot> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = slots.get(key) {
            return slot.clone();
        }
        if slots.len() >= PRUNE_ABOVE {
            let now = Instant::now();
            // Only slots nobody holds, waits on, or needs to remember go.
            slots.retain(|_, s| {
                Arc::strong_count(s) > 1
                    || s.permits.available_permits() < s.capacity
                    || s.lock().host.is_live(now)
            });
        }
        slots
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(HostSlot {
                    permits: Arc::new(Semaphore::new(capacity.max(1))),
                    capacity: capacity.max(1),
                    state: Mutex::new(SlotState::default()),
                    changed: Notify::new(),
                })
            })
            .clone()
    }

    /// Hosts the gate holds a slot for (a pruned, idle host is not counted).
    pub fn tracked_hosts(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Waits for `key`'s turn and returns the permit to send. It fails at once, without
    /// waiting, when the turn is known to come after `deadline`: on entry, and again each
    /// time the host's state changes while it queues. The wait it knows is a lower bound:
    /// the host's pacing, then one warm spacing for each send that must go before this
    /// one (queued callers ahead of it and holders that have not started). A host that is
    /// merely slow (its permit held by a long send) is waited for.
    pub async fn acquire(&self, key: &HostKey, deadline: Instant) -> Result<Permit, Throttled> {
        self.acquire_with(key, deadline, self.params.host_concurrency)
            .await
    }

    /// [`Gate::acquire`] for a host with `capacity` permits (its config rule's
    /// `host_concurrency`), when the gate makes the host's slot.
    pub async fn acquire_with(
        &self,
        key: &HostKey,
        deadline: Instant,
        capacity: usize,
    ) -> Result<Permit, Throttled> {
        let started = Instant::now();
        let slot = self.slot_with(key, capacity);
        let throttled = |wait: Duration| Throttled {
            host: key.clone(),
            wait,
        };
        let ticket = {
            let mut guard = slot.lock();
            let now = Instant::now();
            let ahead = guard.unstarted + guard.queued.len();
            let estimate = self.estimate(&guard.host, now, ahead);
            // Nothing to wait for is never a reason to fail: a batch that spent its budget
            // on a slow but willing host still sends to it.
            if !estimate.is_zero() && now + estimate > deadline {
                return Err(throttled(estimate));
            }
            let ticket = guard.next_ticket;
            guard.next_ticket += 1;
            guard.queued.insert(ticket);
            ticket
        };
        let queued = Queued {
            slot: &slot,
            ticket,
        };
        let acquire = slot.permits.clone().acquire_owned();
        tokio::pin!(acquire);
        let permit = loop {
            let changed = slot.changed.notified();
            tokio::select! {
                biased;
                p = &mut acquire => match p {
                    Ok(p) => break p,
                    Err(_) => return Err(throttled(self.params.sticky_spacing)),
                },
                () = changed => {
                    let guard = slot.lock();
                    let now = Instant::now();
                    let ahead = guard.unstarted + guard.queued.range(..ticket).count();
                    let estimate = self.estimate(&guard.host, now, ahead);
                    if !estimate.is_zero() && now + estimate > deadline {
                        return Err(throttled(estimate));
                    }
                }
            }
        };
        {
            // Leaves the queue and becomes a holder that has not started, in one step, so
            // no estimate in between misses it.
            let mut guard = slot.lock();
            guard.queued.remove(&ticket);
            guard.unstarted += 1;
        }
        drop(queued);
        let mut permit = Permit {
            key: key.clone(),
            slot,
            params: self.params,
            _permit: permit,
            waited: Duration::ZERO,
            sent_at: None,
            phase: Phase::Unstarted,
        };
        permit.pace(deadline).await?;
        permit.waited = started.elapsed();
        Ok(permit)
    }

    /// A lower bound of the wait of a caller with `ahead` sends to go before its own: the
    /// pacing, then, while the host is warm, one spacing per holder (divided among the
    /// host's permits) for each of them. Each such send, started while the host is warm,
    /// moves the next one on by that much; a send after the warm window moves nothing, so
    /// the bound never passes the window's end.
    fn estimate(&self, state: &HostState, now: Instant, ahead: usize) -> Duration {
        let pacing = state.pacing(now);
        let first = now + pacing;
        // A robots.txt crawl delay spaces every send's start, warm or not.
        let crawl = state
            .live_crawl_delay(now)
            .map(|d| d.min(self.params.max_cooldown))
            .zip(state.crawl_delay_until);
        let warm = state.warm_until.map(|w| {
            let step = warm_spacing(&self.params, state.last_retry_after)
                / self.params.host_concurrency as u32;
            (step, w)
        });
        // The learned window spaces consecutive sends by the gap known to work.
        let window = state.window.step(now);
        // The largest step still in force when the first send goes, with its end.
        let Some((step, until)) = [crawl, warm, window]
            .into_iter()
            .flatten()
            .filter(|(_, until)| first < *until)
            .max_by_key(|(step, _)| *step)
        else {
            return quota_bound(state, now, ahead, pacing);
        };
        if ahead == 0 || step.is_zero() {
            return quota_bound(state, now, ahead, pacing);
        }
        let chain = step.saturating_mul(u32::try_from(ahead).unwrap_or(u32::MAX));
        // Either every send ahead starts while the step holds (and the chain holds), or one
        // starts after it (and so does this one).
        let start = first.checked_add(chain).map_or(until, |t| t.min(until));
        quota_bound(state, now, ahead, start - now)
    }

    /// How many permits `key` has.
    pub(crate) fn capacity_of(&self, key: &HostKey) -> usize {
        self.slot(key).capacity
    }

    /// Holds `key` until `until` (the owner's `min_interval` after a send's start); returns
    /// the event (for a shared store).
    pub(crate) fn hold(&self, key: &HostKey, until: Instant) -> Event {
        let slot = self.slot(key);
        let event = Event::Hold {
            at: Instant::now(),
            until,
        };
        slot.lock().host.apply(&self.params, event);
        slot.changed.notify_waiters();
        event
    }

    /// What the gate knows about `key` now.
    pub(crate) fn state_of(&self, key: &HostKey) -> HostState {
        self.slot(key).lock().host.clone()
    }

    /// Takes `shared` (a store's view of the host) when it is newer than what this process
    /// knows, and wakes queued callers to re-estimate.
    pub(crate) fn adopt(&self, key: &HostKey, shared: Option<HostState>) {
        let Some(shared) = shared else { return };
        let slot = self.slot(key);
        let changed = {
            let mut guard = slot.lock();
            let chosen = newer(Some(guard.host.clone()), Some(shared)).unwrap_or_default();
            let changed = chosen != guard.host;
            guard.host = chosen;
            changed
        };
        if changed {
            slot.changed.notify_waiters();
        }
    }

    /// Forgets what this process learned of `key` up to `at` (a clear marker made then):
    /// a state changed after it stays.
    pub(crate) fn adopt_clear(&self, key: &HostKey, at: Instant) {
        let slot = self.slot(key);
        let changed = {
            let mut guard = slot.lock();
            let older = guard.host.updated.is_none_or(|u| u <= at);
            if older && guard.host != HostState::default() {
                guard.host = HostState {
                    updated: Some(at),
                    ..HostState::default()
                };
                true
            } else {
                false
            }
        };
        if changed {
            slot.changed.notify_waiters();
        }
    }

    /// Tells the gate `key`'s robots.txt crawl delay (`None`: none), known until `until`;
    /// returns the event (for a shared store).
    pub(crate) fn learn_crawl_delay(
        &self,
        key: &HostKey,
        delay: Option<Duration>,
        until: Instant,
    ) -> Event {
        let slot = self.slot(key);
        let event = Event::CrawlDelay {
            at: Instant::now(),
            delay,
            until,
            site: key.is_site(),
        };
        slot.lock().host.apply(&self.params, event);
        slot.changed.notify_waiters();
        event
    }

    /// Tells the gate what a response from `key` said of its quota; returns the event (for
    /// a shared store).
    pub(crate) fn learn_quota(&self, key: &HostKey, remaining: u64, reset: Instant) -> Event {
        let slot = self.slot(key);
        let event = Event::Quota {
            at: Instant::now(),
            remaining,
            reset,
        };
        slot.lock().host.apply(&self.params, event);
        slot.changed.notify_waiters();
        event
    }

    /// Forgets `key` in this process (or every host).
    pub(crate) fn forget(&self, key: Option<&HostKey>) {
        let slots: Vec<Arc<HostSlot>> = {
            let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots
                .iter()
                .filter(|(k, _)| key.is_none_or(|key| key == *k))
                .map(|(_, s)| s.clone())
                .collect()
        };
        for s in slots {
            s.lock().host = HostState::default();
            s.changed.notify_waiters();
        }
    }

    /// Hosts that refused lately and are paced with care now (warm).
    pub fn warm_hosts(&self) -> usize {
        let slots: Vec<Arc<HostSlot>> = {
            let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.values().cloned().collect()
        };
        let now = Instant::now();
        slots.iter().filter(|s| s.lock().host.is_warm(now)).count()
    }

    /// Hosts that may not be sent to right now.
    pub fn cooling_hosts(&self) -> usize {
        let slots: Vec<Arc<HostSlot>> = {
            let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.values().cloned().collect()
        };
        let now = Instant::now();
        slots
            .iter()
            .filter(|s| !s.lock().host.pacing(now).is_zero())
            .count()
    }
}

/// `wait`, or the quota's refill when the sends ahead use up what the host said is left.
fn quota_bound(state: &HostState, now: Instant, ahead: usize, wait: Duration) -> Duration {
    match state.live_quota(now) {
        Some((left, reset)) if ahead as u64 >= left => wait.max(reset - now),
        _ => wait,
    }
}

/// A caller's place in a host's queue; leaving (a cancelled or failed acquire) gives it up.
struct Queued<'a> {
    slot: &'a HostSlot,
    ticket: u64,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.slot.lock().queued.remove(&self.ticket);
    }
}

/// Where a permit's holder is: before its send (counted by waiters' estimates), sending,
/// or done with a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Unstarted,
    InFlight,
    Done,
}

/// The right to send to one host; released on drop, so a cancelled call frees its host.
#[derive(Debug)]
pub struct Permit {
    key: HostKey,
    slot: Arc<HostSlot>,
    params: GateParams,
    _permit: OwnedSemaphorePermit,
    waited: Duration,
    sent_at: Option<Instant>,
    phase: Phase,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let in_flight = {
            let mut g = self.slot.lock();
            match self.phase {
                Phase::Unstarted => g.unstarted = g.unstarted.saturating_sub(1),
                Phase::InFlight => g.in_flight = g.in_flight.saturating_sub(1),
                Phase::Done => {}
            }
            self.phase == Phase::InFlight
        };
        if in_flight {
            // A send given up on the wire no longer holds back sends waiting for answers.
            self.slot.changed.notify_waiters();
        }
    }
}

impl Permit {
    /// Moves this holder to `phase`, keeping the count of holders that have not started
    /// right; a holder that goes back to waiting (a retry) wakes the queue to re-estimate.
    fn enter(&mut self, phase: Phase) {
        if self.phase == phase {
            return;
        }
        {
            let mut g = self.slot.lock();
            match self.phase {
                Phase::Unstarted => g.unstarted = g.unstarted.saturating_sub(1),
                Phase::InFlight => g.in_flight = g.in_flight.saturating_sub(1),
                Phase::Done => {}
            }
            match phase {
                Phase::Unstarted => g.unstarted += 1,
                Phase::InFlight => g.in_flight += 1,
                Phase::Done => {}
            }
        }
        let back_in_line = phase == Phase::Unstarted;
        self.phase = phase;
        if back_in_line {
            self.slot.changed.notify_waiters();
        }
    }

    /// The host this permit is for.
    pub fn host(&self) -> &HostKey {
        &self.key
    }

    /// Time spent waiting for this permit (queue and pacing).
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Sleeps until the host's next allowed send, keeping the permit (so this call stays
    /// at the front of the host's queue); fails at once if that is after `deadline`.
    /// Returns the time slept.
    pub async fn pace(&mut self, deadline: Instant) -> Result<Duration, Throttled> {
        self.enter(Phase::Unstarted);
        let mut slept = Duration::ZERO;
        loop {
            let changed = self.slot.changed.notified();
            let (now, wait, answers_due) = {
                let g = self.slot.lock();
                let now = Instant::now();
                let wait = g.host.pacing(now);
                // An announced quota that the sends on the wire use up: their answers say
                // what is left, so this send waits for them (not for the refill).
                let answers_due = g.in_flight > 0
                    && g.host
                        .quota_left(now, g.in_flight)
                        .is_some_and(|(left, _)| left == 0);
                (now, wait, answers_due)
            };
            if wait.is_zero() && !answers_due {
                return Ok(slept);
            }
            if !wait.is_zero() {
                if now + wait > deadline {
                    return Err(Throttled {
                        host: self.key.clone(),
                        wait,
                    });
                }
                tokio::time::sleep_until(now + wait).await;
            } else if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let wait = self
                    .slot
                    .lock()
                    .host
                    .live_quota(Instant::now())
                    .map_or(self.params.sticky_spacing, |(_, reset)| {
                        reset.saturating_duration_since(Instant::now())
                    });
                return Err(Throttled {
                    host: self.key.clone(),
                    wait,
                });
            }
            let took = now.elapsed();
            slept += took;
            self.waited += took;
        }
    }

    /// Records that the send starts now; returns the event (for a shared store).
    pub(crate) fn start_send(&mut self) -> Event {
        let at = Instant::now();
        self.sent_at = Some(at);
        self.enter(Phase::InFlight);
        let event = Event::SendStart { at };
        self.apply(event);
        event
    }

    /// Tells the gate how the send went (call it when the response or failure arrives);
    /// returns the event (for a shared store).
    pub(crate) fn record(&mut self, outcome: Outcome, status: Option<u16>) -> Event {
        let at = Instant::now();
        self.enter(Phase::Done);
        let event = Event::Ended {
            sent_at: self.sent_at.unwrap_or(at),
            at,
            outcome,
            status,
        };
        self.apply(event);
        event
    }

    fn apply(&self, event: Event) {
        self.slot.lock().host.apply(&self.params, event);
        self.slot.changed.notify_waiters();
    }

    /// The host's current escalation depth.
    pub fn depth(&self) -> u32 {
        self.slot.lock().host.depth
    }

    /// How long until the host's next allowed send.
    pub fn pacing(&self) -> Duration {
        self.slot.lock().host.pacing(Instant::now())
    }
}

#[cfg(test)]
mod tests;
