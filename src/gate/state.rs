//! What the gate knows about one host, and how each event changes it: pure functions of
//! the state, the parameters and the time they are given.

use std::time::Duration;

use tokio::time::Instant;

use super::GateParams;
use super::window::{Taught, Window};

/// Two answers whose quota refills within this of each other speak of one window (a
/// reset given in whole seconds from each answer's own moment moves by up to a second).
const QUOTA_WINDOW_SLACK: Duration = Duration::from_millis(1500);

/// What a send taught the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The host answered and did not refuse (2xx, 3xx, 304, or an HTTP error that is not a
    /// throttle).
    Success,
    /// The host refused (`429`, `403`, a `503` with `Retry-After`): it wants to be left alone.
    Refused {
        /// The server's `Retry-After`, already parsed.
        retry_after: Option<Duration>,
    },
    /// No answer (network failure): spacing still applies to a warm host.
    Failed,
}

/// Something that happened to a host, as the gate records it (locally, and in a shared
/// store by applying the same event to the stored state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A send started at `at` (counted from its start, so a cancelled send still spaces
    /// the next one).
    SendStart { at: Instant },
    /// The send that started at `sent_at` ended at `at` with `outcome`.
    Ended {
        sent_at: Instant,
        at: Instant,
        outcome: Outcome,
        status: Option<u16>,
    },
    /// The host's robots.txt, read at `at`, asks for `delay` between requests (`None`: it
    /// asks for none) until `until`. Under a site's key (`site`), several hosts' robots.txt
    /// files teach the one state, and the largest delay still live wins.
    CrawlDelay {
        at: Instant,
        delay: Option<Duration>,
        until: Instant,
        site: bool,
    },
    /// The owner's config asks for no send to the host before `until` (its `min_interval`
    /// after a send that started at `at`).
    Hold { at: Instant, until: Instant },
    /// A response that arrived at `at` announced `remaining` requests left until `reset`.
    Quota {
        at: Instant,
        remaining: u64,
        reset: Instant,
    },
}

/// Everything the gate has learned about one host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostState {
    /// No send before this instant.
    pub next_allowed: Option<Instant>,
    /// The host refused recently: siblings are spaced until then.
    pub warm_until: Option<Instant>,
    /// Refusals in a row, stepped down one rung per success.
    pub depth: u32,
    /// The host's last `Retry-After`, capped.
    pub last_retry_after: Option<Duration>,
    /// What the host taught of its window: the widest gap it refused, the gap known to
    /// work, probes.
    pub window: Window,
    /// When the last send the host admitted started (or, after a refusal with none known, the
    /// refused send's start: the host admitted one just before it, for all the gate knows).
    pub last_admitted: Option<Instant>,
    /// The last HTTP status the host answered.
    pub last_status: Option<u16>,
    /// The host's robots.txt `Crawl-delay`: the least gap between two sends' starts.
    pub crawl_delay: Option<Duration>,
    /// The crawl delay applies until then (the robots.txt's freshness).
    pub crawl_delay_until: Option<Instant>,
    /// Requests the host's announced quota has left (each send takes one).
    pub quota_remaining: Option<u64>,
    /// When the announced quota refills.
    pub quota_reset: Option<Instant>,
    /// When this state last changed.
    pub updated: Option<Instant>,
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

impl HostState {
    pub(crate) fn is_warm(&self, now: Instant) -> bool {
        self.warm_until.is_some_and(|w| now < w)
    }

    /// The robots.txt crawl delay, while it applies.
    pub(crate) fn live_crawl_delay(&self, now: Instant) -> Option<Duration> {
        self.crawl_delay
            .filter(|_| self.crawl_delay_until.is_some_and(|u| now < u))
    }

    /// What is left of the announced quota, while it applies: (remaining, refills at).
    pub(crate) fn live_quota(&self, now: Instant) -> Option<(u64, Instant)> {
        let reset = self.quota_reset.filter(|r| now < *r)?;
        Some((self.quota_remaining?, reset))
    }

    /// How long from `now` until a send may go: the cooldown or spacing in force, the
    /// learned window's spacing after the latest send, and an announced quota with nothing
    /// left (until it refills).
    pub(crate) fn pacing(&self, now: Instant) -> Duration {
        let cooling = self
            .next_allowed
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(now));
        let floor = self
            .window
            .spacing(now, self.last_admitted)
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(now));
        let quota = match self.live_quota(now) {
            Some((0, reset)) => reset.saturating_duration_since(now),
            _ => Duration::ZERO,
        };
        cooling.max(floor).max(quota)
    }

    /// What an announced quota leaves to a send about to start while `in_flight` sends of
    /// this process are on the wire: they are counted against the allowance until their
    /// answers arrive (the server may not have counted them yet). `None`: no quota applies.
    pub(crate) fn quota_left(&self, now: Instant, in_flight: usize) -> Option<(u64, Instant)> {
        let (left, reset) = self.live_quota(now)?;
        Some((left.saturating_sub(in_flight as u64), reset))
    }

    /// When every part of this state has lapsed: the cooldown, the warm window, the refused
    /// gap's and the known-good gap's lifetimes, each counted from the host's last refusal.
    /// `None`: nothing learned.
    pub(crate) fn lapses_at(&self) -> Option<Instant> {
        let floor_until = self.window.lapses_at();
        let crawl_until = self.crawl_delay.and(self.crawl_delay_until);
        let quota_until = self.quota_remaining.and(self.quota_reset);
        [
            self.next_allowed,
            self.warm_until,
            floor_until,
            crawl_until,
            quota_until,
        ]
        .into_iter()
        .flatten()
        .max()
    }

    /// Whether anything of this state is still enforced at `now` (a host that never refused
    /// has nothing: the happy path writes nothing). A lapsed state is ignored and deleted.
    pub(crate) fn is_live(&self, now: Instant) -> bool {
        self.lapses_at().is_some_and(|t| now < t)
    }

    fn push_next_allowed(&mut self, at: Instant) {
        self.next_allowed = Some(self.next_allowed.map_or(at, |t| t.max(at)));
    }

    /// Applies one event.
    pub(crate) fn apply(&mut self, p: &GateParams, event: Event) {
        match event {
            Event::SendStart { at } => {
                if self.window.send_started(at, self.last_admitted) {
                    self.updated = Some(at);
                }
                if self.is_warm(at) {
                    // Concurrent holders of a warm host are spaced too, not released together.
                    let per_holder =
                        warm_spacing(p, self.last_retry_after) / p.host_concurrency.max(1) as u32;
                    self.push_next_allowed(at + per_holder);
                    self.updated = Some(at);
                }
                if let Some(delay) = self.live_crawl_delay(at) {
                    self.push_next_allowed(at + delay.min(p.max_cooldown));
                    self.updated = Some(at);
                }
                // A send takes one of what the host said is left; with none left the host
                // waits for the refill (`pacing`), unless an answer says more is left.
                if let Some((left, _)) = self.live_quota(at) {
                    self.quota_remaining = Some(left.saturating_sub(1));
                    self.updated = Some(at);
                }
            }
            Event::Quota {
                at,
                remaining,
                reset,
            } => {
                // An absurd reset is capped like a cooldown.
                let reset = reset.min(at + p.max_cooldown);
                match self.live_quota(at) {
                    // The same window: answers come back in any order, and one that says
                    // more is left was counted earlier than one that says less.
                    Some((left, known)) if reset <= known + QUOTA_WINDOW_SLACK => {
                        self.quota_remaining = Some(left.min(remaining));
                        self.quota_reset = Some(known.max(reset));
                    }
                    // A new window (or the first word of one).
                    _ => {
                        self.quota_remaining = Some(remaining);
                        self.quota_reset = Some(reset);
                    }
                }
                self.updated = Some(at);
            }
            Event::Hold { at, until } => {
                self.push_next_allowed(until);
                self.updated = Some(at);
            }
            Event::CrawlDelay {
                at,
                delay,
                until,
                site,
            } => {
                let live = self.live_crawl_delay(at);
                // A sibling's larger delay is not erased by a host that asks for less.
                let keep = site && live.is_some_and(|d| delay.is_none_or(|n| n < d));
                if !keep {
                    let until = match (site, live == delay, self.crawl_delay_until) {
                        (true, true, Some(u)) => u.max(until),
                        _ => until,
                    };
                    self.crawl_delay = delay;
                    self.crawl_delay_until = delay.map(|_| until);
                }
                // The request that read the robots.txt counts: the next one waits the delay
                // from its start, as every later one does.
                if let (Some(d), Some(last)) = (self.live_crawl_delay(at), self.last_admitted) {
                    self.push_next_allowed(last + d.min(p.max_cooldown));
                }
                self.updated = Some(at);
            }
            Event::Ended {
                sent_at,
                at,
                outcome,
                status,
            } => {
                self.last_status = status.or(self.last_status);
                self.ended(p, sent_at, at, outcome);
                self.updated = Some(at);
            }
        }
    }

    fn ended(&mut self, p: &GateParams, sent_at: Instant, now: Instant, outcome: Outcome) {
        let warm = self.is_warm(now);
        // The gap after the last admitted send's start, as the host saw this one.
        let mut gap = self
            .last_admitted
            .filter(|last| sent_at > *last)
            .map(|last| sent_at - last);
        // A refusal with no admitted send known (another process's was never written: a
        // host that never refused costs no write) counts as if the host had admitted one just
        // before it, so the ladder's rungs and the gap the next success teaches count from
        // there, as they would from that send.
        if matches!(outcome, Outcome::Refused { .. }) && self.last_admitted.is_none() {
            self.last_admitted = Some(sent_at);
            gap = Some(Duration::ZERO);
        }
        match outcome {
            Outcome::Refused { retry_after } => {
                if !warm {
                    self.depth = 0;
                    self.last_retry_after = None;
                }
                self.depth = self.depth.saturating_add(1);
                let retry_after = retry_after.map(|d| d.min(p.max_cooldown));
                if retry_after.is_some() {
                    self.last_retry_after = retry_after;
                }
                let taught = Taught::Refused {
                    silent: retry_after.is_none(),
                };
                let learned = self.window.ended(p, sent_at, now, gap, taught);
                self.warm_until = Some(now + p.warm_window);
                let spacing = warm_spacing(p, self.last_retry_after);
                match (retry_after, learned) {
                    // What the host said, or the ladder from now when the window taught
                    // nothing (no admitted send to count a gap from).
                    (Some(_), _) | (None, None) => {
                        let cool = cooldown(p, self.depth, retry_after);
                        self.push_next_allowed(now + cool.max(spacing));
                    }
                    (None, Some(at)) => {
                        self.push_next_allowed(at.min(now + p.max_cooldown).max(now + spacing));
                    }
                }
            }
            Outcome::Success | Outcome::Failed => {
                if outcome == Outcome::Failed {
                    self.window.unanswered(sent_at);
                }
                if outcome == Outcome::Success {
                    self.window.ended(p, sent_at, now, gap, Taught::Admitted);
                    self.last_admitted =
                        Some(self.last_admitted.map_or(sent_at, |t| t.max(sent_at)));
                }
                if warm {
                    if outcome == Outcome::Success {
                        self.depth = self.depth.saturating_sub(1);
                    }
                    let gap = warm_spacing(p, self.last_retry_after);
                    self.push_next_allowed(now + gap);
                } else {
                    self.depth = 0;
                    self.last_retry_after = None;
                    self.warm_until = None;
                    if self.next_allowed.is_some_and(|t| t <= now) {
                        self.next_allowed = None;
                    }
                }
            }
        }
    }
}

/// The newer of two views of a host (a shared store's and this process's): the one
/// changed last; an absent one loses.
pub(crate) fn newer(a: Option<HostState>, b: Option<HostState>) -> Option<HostState> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.updated > a.updated { b } else { a }),
        (a, b) => a.or(b),
    }
}
