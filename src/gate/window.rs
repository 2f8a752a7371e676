//! What a host taught of its window by refusing and admitting sends: the widest gap it
//! refused (the window is longer) and, for a host that refuses without `Retry-After`, the
//! narrowest gap it admitted since (the window is no longer). Sends are spaced by the gap
//! known to work; a shorter one is tried only as a probe, after a run of admitted sends.
//! Pure functions of the state and the times they are given.

use std::time::Duration;

use tokio::time::Instant;

use super::GateParams;

/// The least margin by which a send clears a gap the host once refused.
const FLOOR_MARGIN: Duration = Duration::from_millis(50);

/// Admitted sends in a row, at the known-good gap, before a shorter gap is probed.
pub(crate) const PROBE_RUN: u32 = 12;

/// How long a probe's answer is waited for before another probe may go.
const PROBE_ANSWER_WAIT: Duration = Duration::from_secs(60);

/// The known-good gap and the refused one closer than this share of the known-good gap
/// (or than [`FLOOR_MARGIN`]): the window is known, and no probe is worth a refusal.
const CONVERGED_PART: u32 = 20;

/// How a send's outcome bears on the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taught {
    /// The host admitted the send.
    Admitted,
    /// The host refused it; `silent`: without `Retry-After`.
    Refused { silent: bool },
}

/// What the host taught of its window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Window {
    /// The widest gap after an admitted send's start that the host refused: its window is
    /// longer (capped at `max_cooldown`).
    pub refused: Option<Duration>,
    /// The refused gap is known until then: a floor lifetime after the refusal that taught
    /// it last.
    pub refused_until: Option<Instant>,
    /// The narrowest gap after an admitted send's start that the host admitted since it
    /// refused without `Retry-After`: known to work.
    pub good: Option<Duration>,
    /// The known-good gap is known until then: a window lifetime after the host's last
    /// refusal (a success never shortens it, and never erases it).
    pub good_until: Option<Instant>,
    /// The host's last refusal came without `Retry-After` (only then is a known-good gap
    /// learned: a host that says when to come back is paced by what it says).
    pub silent: bool,
    /// When the latest send started, while a gap is known: the next send counts from it.
    pub last_sent: Option<Instant>,
    /// Admitted sends in a row since the last refusal or probe.
    pub run: u32,
    /// The start of the send that probes a gap shorter than the known-good one, while its
    /// answer is out.
    pub probe: Option<Instant>,
}

/// Admitted sends still to go before a probe, for a host whose known-good gap is `good_ms`
/// and refused gap `refused_ms`, after `run` admitted sends in a row; `None` when no probe
/// is planned (the two gaps are close: the window is known).
pub fn probe_after(good_ms: u64, refused_ms: Option<u64>, run: u32) -> Option<u32> {
    let refused = refused_ms.map(Duration::from_millis);
    probe_target(Duration::from_millis(good_ms), refused).map(|_| PROBE_RUN.saturating_sub(run))
}

/// The gap a probe tries: halfway between the refused gap (or nothing) and the known-good
/// one, never below half the known-good gap; `None` when the two are already close.
fn probe_target(good: Duration, refused: Option<Duration>) -> Option<Duration> {
    let low = refused.unwrap_or(Duration::ZERO).min(good);
    let target = ((low + good) / 2).max(good / 2);
    let converged = (good / CONVERGED_PART).max(FLOOR_MARGIN);
    (good.saturating_sub(target) >= converged).then_some(target)
}

/// The least gap after an admitted send that clears a refused gap: strictly more than it.
pub fn floor_gap(refused: Duration) -> Duration {
    refused + (refused / 10).max(FLOOR_MARGIN)
}

/// The widest refused gap kept under `cap` (`max_cooldown`): one whose floor gap is still
/// within the cap, so no wait the window asks for passes it (a host refusing sends 55–60 s
/// apart is paced at the cap, as one that asks for more).
pub(crate) fn widest_refused(cap: Duration) -> Duration {
    (cap * 10 / 11).min(cap.saturating_sub(FLOOR_MARGIN))
}

/// The gap of the next try after a refusal at `refused` with nothing known to work: the
/// first rung of the ladder (`base · 2^k`) above the refused gap, plus a margin of a
/// fortieth (at least 50 ms) so a window exactly a rung long is cleared; capped.
pub(crate) fn next_rung(p: &GateParams, refused: Duration) -> Duration {
    let mut rung = p.base_cooldown.max(Duration::from_millis(1));
    while rung <= refused && rung < p.max_cooldown {
        rung = rung.saturating_mul(2);
    }
    let rung = rung.min(p.max_cooldown);
    (rung + (rung / 40).max(FLOOR_MARGIN)).min(p.max_cooldown)
}

impl Window {
    /// The refused gap, while it is known.
    pub(crate) fn live_refused(&self, now: Instant) -> Option<Duration> {
        self.refused
            .filter(|_| self.refused_until.is_some_and(|u| now < u))
    }

    /// The known-good gap, while it is known.
    pub(crate) fn live_good(&self, now: Instant) -> Option<Duration> {
        self.good
            .filter(|_| self.good_until.is_some_and(|u| now < u))
    }

    /// The gap a probe would try now, if one is due: after [`PROBE_RUN`] admitted sends in a
    /// row, halfway between the refused gap and the known-good one (never below half the
    /// known-good gap), unless the two are already that close.
    pub(crate) fn probe_gap(&self, now: Instant) -> Option<Duration> {
        let good = self.live_good(now)?;
        // A probe whose answer never came (its call was cut) stops holding the next one back
        // after a cooldown cap.
        let probing = self.probe.is_some_and(|t| now < t + PROBE_ANSWER_WAIT);
        if self.run < PROBE_RUN || probing {
            return None;
        }
        probe_target(good, self.live_refused(now))
    }

    /// The least gap after the latest send (from its start) that the window asks for now:
    /// the probe's gap when one is due, else the known-good gap; with only a refused gap
    /// known, just over it after the last admitted send. `None`: nothing is known.
    pub(crate) fn spacing(&self, now: Instant, last_admitted: Option<Instant>) -> Option<Instant> {
        if let Some(good) = self.live_good(now) {
            let from = self.last_sent.max(last_admitted)?;
            return Some(from + self.probe_gap(now).unwrap_or(good));
        }
        let refused = self.live_refused(now)?;
        Some(last_admitted? + floor_gap(refused))
    }

    /// The least gap each send still to go adds before a later one, while it is known (a
    /// lower bound: a probe's gap, else the known-good gap), and until when.
    pub(crate) fn step(&self, now: Instant) -> Option<(Duration, Instant)> {
        let good = self.live_good(now)?;
        Some((self.probe_gap(now).unwrap_or(good), self.good_until?))
    }

    /// A send starts at `at`: spacing counts from it, and when a probe is due and the send
    /// goes sooner than the known-good gap allows, it is the probe. Returns whether the
    /// window changed.
    pub(crate) fn send_started(&mut self, at: Instant, last_admitted: Option<Instant>) -> bool {
        let Some(good) = self.live_good(at) else {
            return false;
        };
        if self.probe_gap(at).is_some()
            && self
                .last_sent
                .max(last_admitted)
                .is_some_and(|from| at < from + good)
        {
            self.probe = Some(at);
            self.run = 0;
        }
        self.last_sent = Some(self.last_sent.map_or(at, |t| t.max(at)));
        true
    }

    /// The send that started at `sent_at`, `gap` after the last admitted send's start (when
    /// one is known), ended at `now` as `taught`. Returns the earliest next send this asks
    /// for on a refusal (`None`: the caller's ladder decides).
    pub(crate) fn ended(
        &mut self,
        p: &GateParams,
        sent_at: Instant,
        now: Instant,
        gap: Option<Duration>,
        taught: Taught,
    ) -> Option<Instant> {
        let was_probe = self.probe == Some(sent_at);
        if was_probe {
            self.probe = None;
        }
        // A gap past the cooldown cap says nothing of a window the gate could keep.
        let gap = gap.filter(|g| *g < p.max_cooldown);
        match taught {
            Taught::Admitted => {
                let learning = self.silent
                    && (self.live_refused(now).is_some() || self.live_good(now).is_some());
                if let (true, Some(g)) = (learning, gap) {
                    match self.live_good(now) {
                        // Only a deliberate probe makes the known-good gap shorter.
                        Some(good) if was_probe && g < good => self.good = Some(g),
                        Some(_) => {}
                        None => {
                            self.good = Some(g);
                            self.good_until = Some(now + p.window_lifetime);
                        }
                    }
                    // Admitted at or below the refused gap: the window shrank past it.
                    if self.live_refused(now).is_some_and(|r| g <= r) {
                        self.refused = None;
                        self.refused_until = None;
                    }
                }
                self.run = if was_probe {
                    0
                } else {
                    self.run.saturating_add(1)
                };
                None
            }
            Taught::Refused { silent } => {
                self.run = 0;
                self.silent = silent;
                let good = self.live_good(now);
                if let Some(g) = gap {
                    let widest = self.live_refused(now).map_or(g, |r| r.max(g));
                    self.refused = Some(widest.min(widest_refused(p.max_cooldown)));
                    self.refused_until = Some(now + p.floor_lifetime);
                    // Refused at the known-good gap or wider: the window widened.
                    if good.is_some_and(|k| g >= k) {
                        self.good = None;
                        self.good_until = None;
                    }
                }
                if let Some(good) = self.live_good(now) {
                    self.good_until = Some(now + p.window_lifetime);
                    // Straight back to the gap known to work, counted from the refused send.
                    return Some(sent_at + good);
                }
                match (silent, gap) {
                    (true, Some(_)) => {
                        let refused = self.refused.unwrap_or(Duration::ZERO);
                        Some(sent_at - gap.unwrap_or(Duration::ZERO) + next_rung(p, refused))
                    }
                    _ => None,
                }
            }
        }
    }

    /// The send that started at `sent_at` got no answer (a network failure): if it was the
    /// probe, it taught nothing and the next probe may go.
    pub(crate) fn unanswered(&mut self, sent_at: Instant) {
        if self.probe == Some(sent_at) {
            self.probe = None;
        }
    }

    /// When every part of the window has lapsed.
    pub(crate) fn lapses_at(&self) -> Option<Instant> {
        let refused = self.refused.and(self.refused_until);
        let good = self.good.and(self.good_until);
        refused.max(good)
    }
}
