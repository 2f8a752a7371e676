//! The per-host request gate: permits, pacing and learned cooldowns.
//!
//! Every network send takes a [`Permit`] for its host first. The gate never does I/O and
//! never reads the environment; it only decides when a send may happen and learns from
//! the outcomes it is told about (see `DESIGN.md`, "The gate, precisely").

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use url::Url;

/// The gate's tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateParams {
    /// Concurrent sends per host (`HOST_MAX_CONCURRENCY`); 0 is treated as 1.
    pub host_concurrency: usize,
    /// First rung of the ladder when a refusal has no `Retry-After`.
    pub base_cooldown: Duration,
    /// Cap on any learned cooldown.
    pub max_cooldown: Duration,
    /// Least gap between a response and the next send while a host is warm.
    pub sticky_spacing: Duration,
    /// How long a host stays warm after its last refusal.
    pub warm_window: Duration,
    /// The longest a call may wait before its send (permit queue and pacing together).
    pub max_gate_wait: Duration,
}

impl Default for GateParams {
    fn default() -> Self {
        GateParams {
            host_concurrency: 1,
            base_cooldown: Duration::from_secs(2),
            max_cooldown: Duration::from_secs(60),
            sticky_spacing: Duration::from_secs(1),
            warm_window: Duration::from_secs(120),
            max_gate_wait: Duration::from_secs(60),
        }
    }
}

/// A host as the gate sees it: lowercased `host:port`, default port filled in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostKey(String);

impl HostKey {
    /// The key of `url`'s authority, or `None` for a URL without a host.
    pub fn from_url(url: &Url) -> Option<HostKey> {
        let host = url.host_str()?.to_ascii_lowercase();
        let port = url.port_or_known_default()?;
        Some(HostKey(format!("{host}:{port}")))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for HostKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a send taught the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A response that was not a refusal (2xx, 3xx, 304, or an error the host did not mean
    /// as a throttle).
    Success,
    /// The host refused (`429`, `403`): it wants to be left alone.
    Refused {
        /// The server's `Retry-After`, already parsed.
        retry_after: Option<Duration>,
    },
    /// No answer (network failure): spacing still applies to a warm host.
    Failed,
}

/// The gate declined: waiting for this host would pass the call's deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttled {
    /// The host.
    pub host: HostKey,
    /// How long from now until the host could take this call, at least.
    pub wait: Duration,
}

/// The cooldown after a refusal at escalation `depth` (1 for the first refusal).
///
/// The server's `Retry-After` wins, capped at `max_cooldown` with no floor; without it the
/// ladder is `base · 2^(depth−1)`, capped.
pub fn cooldown(params: &GateParams, depth: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(ra) = retry_after {
        return ra.min(params.max_cooldown);
    }
    let exp = depth.saturating_sub(1).min(30);
    params
        .base_cooldown
        .saturating_mul(1u32 << exp)
        .min(params.max_cooldown)
}

/// The least gap a warm host gets between a response and the next send.
pub fn warm_spacing(params: &GateParams, last_retry_after: Option<Duration>) -> Duration {
    params
        .sticky_spacing
        .max(last_retry_after.unwrap_or(Duration::ZERO))
}

#[derive(Debug, Default)]
struct HostState {
    next_allowed: Option<Instant>,
    warm_until: Option<Instant>,
    depth: u32,
    last_retry_after: Option<Duration>,
    waiting: usize,
}

impl HostState {
    fn is_warm(&self, now: Instant) -> bool {
        self.warm_until.is_some_and(|w| now < w)
    }

    fn pacing(&self, now: Instant) -> Duration {
        self.next_allowed
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(now))
    }

    fn push_next_allowed(&mut self, at: Instant) {
        self.next_allowed = Some(self.next_allowed.map_or(at, |t| t.max(at)));
    }
}

#[derive(Debug)]
struct HostSlot {
    permits: Arc<Semaphore>,
    state: Mutex<HostState>,
}

impl HostSlot {
    fn state(&self) -> MutexGuard<'_, HostState> {
        // A panic while holding this lock cannot leave the state inconsistent (every
        // update is a few assignments), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A snapshot of one host's learned state, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSnapshot {
    /// The host.
    pub host: HostKey,
    /// Time until the next send may go.
    pub wait: Duration,
    /// Whether the host has refused within the warm window.
    pub warm: bool,
    /// Escalation depth.
    pub depth: u32,
    /// The host's last `Retry-After`, capped.
    pub last_retry_after: Option<Duration>,
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
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(HostSlot {
                    permits: Arc::new(Semaphore::new(self.params.host_concurrency)),
                    state: Mutex::new(HostState::default()),
                })
            })
            .clone()
    }

    /// Waits for `key`'s turn and returns the permit to send; fails at once, without
    /// waiting, when the turn is known to come after `deadline`.
    pub async fn acquire(&self, key: &HostKey, deadline: Instant) -> Result<Permit, Throttled> {
        let started = Instant::now();
        let slot = self.slot(key);
        let throttled = |wait: Duration| Throttled {
            host: key.clone(),
            wait,
        };

        // Known lower bound of the wait: the host's pacing, plus one spacing per turn
        // ahead of us while the host is warm.
        {
            let mut state = slot.state();
            let now = Instant::now();
            let ahead = state.waiting + self.holders(&slot);
            let estimate = self.estimate(&state, now, ahead);
            // Nothing to wait for is never a reason to fail: a batch that spent its budget
            // on a slow but willing host still sends to it.
            if !estimate.is_zero() && now + estimate > deadline {
                return Err(throttled(estimate));
            }
            state.waiting += 1;
        }
        let waiting = WaitingGuard(&slot);
        let permit =
            match tokio::time::timeout_at(deadline, slot.permits.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                // The semaphore is never closed; treat it like a timeout to stay total.
                Ok(Err(_)) | Err(_) => {
                    let state = slot.state();
                    let now = Instant::now();
                    let ahead = state.waiting.saturating_sub(1) + self.holders(&slot);
                    let wait = self
                        .estimate(&state, now, ahead)
                        .max(self.params.sticky_spacing);
                    return Err(throttled(wait));
                }
            };
        drop(waiting);

        let mut permit = Permit {
            key: key.clone(),
            slot,
            params: self.params,
            _permit: permit,
            waited: Duration::ZERO,
        };
        permit.pace(deadline).await?;
        permit.waited = started.elapsed();
        Ok(permit)
    }

    fn holders(&self, slot: &HostSlot) -> usize {
        self.params
            .host_concurrency
            .saturating_sub(slot.permits.available_permits())
    }

    fn estimate(&self, state: &HostState, now: Instant, ahead: usize) -> Duration {
        let pacing = state.pacing(now);
        if !state.is_warm(now) {
            return pacing;
        }
        let turns = (ahead / self.params.host_concurrency) as u32;
        pacing + warm_spacing(&self.params, state.last_retry_after).saturating_mul(turns)
    }

    /// The learned state of every host the gate has seen, sorted by host.
    pub fn snapshot(&self) -> Vec<HostSnapshot> {
        let slots: Vec<(HostKey, Arc<HostSlot>)> = {
            let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let now = Instant::now();
        let mut out: Vec<HostSnapshot> = slots
            .into_iter()
            .map(|(host, slot)| {
                let s = slot.state();
                HostSnapshot {
                    host,
                    wait: s.pacing(now),
                    warm: s.is_warm(now),
                    depth: s.depth,
                    last_retry_after: s.last_retry_after,
                }
            })
            .collect();
        out.sort_by(|a, b| a.host.cmp(&b.host));
        out
    }

    /// Hosts that may not be sent to right now.
    pub fn cooling_hosts(&self) -> usize {
        self.snapshot().iter().filter(|h| !h.wait.is_zero()).count()
    }
}

struct WaitingGuard<'a>(&'a HostSlot);

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state();
        s.waiting = s.waiting.saturating_sub(1);
    }
}

/// The right to send to one host; released on drop, so a cancelled call frees its host.
#[derive(Debug)]
pub struct Permit {
    key: HostKey,
    slot: Arc<HostSlot>,
    params: GateParams,
    _permit: OwnedSemaphorePermit,
    waited: Duration,
}

impl Permit {
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
    pub async fn pace(&mut self, deadline: Instant) -> Result<Duration, Throttled> {
        let mut slept = Duration::ZERO;
        loop {
            let (now, wait, at) = {
                let s = self.slot.state();
                let now = Instant::now();
                (now, s.pacing(now), s.next_allowed)
            };
            if wait.is_zero() {
                return Ok(slept);
            }
            if now + wait > deadline {
                return Err(Throttled {
                    host: self.key.clone(),
                    wait,
                });
            }
            if let Some(at) = at {
                tokio::time::sleep_until(at).await;
                slept += wait;
                self.waited += wait;
            }
        }
    }

    /// Tells the gate how the send went; call it when the response (or failure) arrives.
    pub fn record(&self, outcome: Outcome) {
        let p = &self.params;
        let now = Instant::now();
        let mut s = self.slot.state();
        let warm = s.is_warm(now);
        match outcome {
            Outcome::Refused { retry_after } => {
                if !warm {
                    s.depth = 0;
                    s.last_retry_after = None;
                }
                s.depth = s.depth.saturating_add(1);
                let retry_after = retry_after.map(|d| d.min(p.max_cooldown));
                if retry_after.is_some() {
                    s.last_retry_after = retry_after;
                }
                let cool = cooldown(p, s.depth, retry_after);
                s.warm_until = Some(now + p.warm_window);
                let gap = cool.max(warm_spacing(p, s.last_retry_after));
                s.push_next_allowed(now + gap);
            }
            Outcome::Success | Outcome::Failed => {
                if warm {
                    if outcome == Outcome::Success {
                        s.depth = s.depth.saturating_sub(1);
                    }
                    let gap = warm_spacing(p, s.last_retry_after);
                    s.push_next_allowed(now + gap);
                } else {
                    s.depth = 0;
                    s.last_retry_after = None;
                }
            }
        }
    }

    /// The host's current escalation depth.
    pub fn depth(&self) -> u32 {
        self.slot.state().depth
    }

    /// How long until the host's next allowed send.
    pub fn pacing(&self) -> Duration {
        self.slot.state().pacing(Instant::now())
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
