//! Host state as stored: wall-clock times, so every process (and machine) reads the same
//! instants; converted to and from the gate's `tokio` instants against one clock reading.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::gate::{GateParams, HostKey, HostState, Window};

/// The longest a stored crawl delay is taken to apply (a robots.txt is re-read daily).
pub(crate) const CRAWL_DELAY_LIFETIME_CAP: Duration = Duration::from_secs(86_400);

/// One reading of both clocks: the gate's instant and the wall clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    instant: Instant,
    wall_ms: u64,
}

impl Clock {
    /// Both clocks, now, with this machine's wall clock moved by `skew_ms` (a test knob:
    /// `RSS_TEST_WALL_CLOCK_SKEW_MS`; 0 otherwise).
    pub(crate) fn local(skew_ms: i64) -> Clock {
        let wall = wall_ms(SystemTime::now());
        Clock {
            instant: Instant::now(),
            wall_ms: wall.saturating_add_signed(skew_ms),
        }
    }

    /// The gate's `instant` read at the same moment as a store's clock said `wall_ms` (the
    /// Redis server's `TIME`, so every worker of a fleet reads one clock).
    pub(crate) fn at(instant: Instant, wall_ms: u64) -> Clock {
        Clock { instant, wall_ms }
    }

    /// The gate's instant of this reading.
    pub(crate) fn instant(&self) -> Instant {
        self.instant
    }

    /// The wall-clock milliseconds of `t`, rounded up (so a wait read back from the store
    /// never comes out a millisecond short).
    pub(crate) fn wall_of(&self, t: Instant) -> u64 {
        if t >= self.instant {
            let ahead_ms = (t - self.instant).as_nanos().div_ceil(1_000_000);
            self.wall_ms
                .saturating_add(ahead_ms.min(u64::MAX as u128) as u64)
        } else {
            self.wall_ms
                .saturating_sub((self.instant - t).as_millis().min(u64::MAX as u128) as u64)
        }
    }

    /// The instant of wall-clock `ms`, no further ahead than `cap` (a far-future time is
    /// clock skew or damage); `None` when it is too far past to represent.
    pub(crate) fn instant_of(&self, ms: u64, cap: Duration) -> Option<Instant> {
        if ms >= self.wall_ms {
            Some(self.instant + Duration::from_millis(ms - self.wall_ms).min(cap))
        } else {
            self.instant
                .checked_sub(Duration::from_millis(self.wall_ms - ms))
        }
    }

    /// The wall clock now, in Unix milliseconds.
    pub(crate) fn wall_ms(&self) -> u64 {
        self.wall_ms
    }
}

/// Unix milliseconds of `t`.
pub(crate) fn wall_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(u64::MAX as u128) as u64)
}

/// One host's learned state as stored (times in Unix milliseconds).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredHost {
    /// The host key (`host:port`).
    pub host: String,
    /// No send before this time.
    pub next_allowed_ms: Option<u64>,
    /// Spaced until this time.
    pub warm_until_ms: Option<u64>,
    /// Escalation depth.
    pub depth: u32,
    /// The last `Retry-After`, capped.
    pub last_retry_after_ms: Option<u64>,
    /// The widest gap after an admitted send that the host refused (the learned floor).
    pub floor_ms: Option<u64>,
    /// The refused gap is enforced until this time (a floor lifetime after the refusal).
    #[serde(default)]
    pub floor_until_ms: Option<u64>,
    /// The narrowest gap after an admitted send that the host admitted since it refused
    /// without `Retry-After`: the spacing known to work.
    #[serde(default)]
    pub spacing_ms: Option<u64>,
    /// The known-good spacing is kept until this time (a window lifetime after the last
    /// refusal).
    #[serde(default)]
    pub spacing_until_ms: Option<u64>,
    /// The host's last refusal came without `Retry-After`.
    #[serde(default)]
    pub silent: bool,
    /// When the latest send started, while a gap is known.
    #[serde(default)]
    pub last_sent_ms: Option<u64>,
    /// Admitted sends in a row since the last refusal or probe.
    #[serde(default)]
    pub run: u32,
    /// When the send probing a shorter gap started, while its answer is out.
    #[serde(default)]
    pub probe_ms: Option<u64>,
    /// When the last admitted send started.
    pub last_admitted_ms: Option<u64>,
    /// The last HTTP status the host answered.
    pub last_status: Option<u16>,
    /// The robots.txt crawl delay.
    #[serde(default)]
    pub crawl_delay_ms: Option<u64>,
    /// The crawl delay applies until this time.
    #[serde(default)]
    pub crawl_delay_until_ms: Option<u64>,
    /// Requests left of the host's announced quota.
    #[serde(default)]
    pub quota_remaining: Option<u64>,
    /// When the announced quota refills.
    #[serde(default)]
    pub quota_reset_ms: Option<u64>,
    /// When this state last changed.
    pub updated_ms: u64,
    /// Set on a clear marker (`rss hosts clear`): the state was forgotten at `updated_ms`,
    /// and running processes forget what they knew before it, until this time (when what
    /// it replaced would have lapsed).
    #[serde(default)]
    pub cleared_until_ms: Option<u64>,
}

impl StoredHost {
    /// `state` of `host` as stored, against `clock`.
    pub(crate) fn from_state(host: &HostKey, state: &HostState, clock: Clock) -> StoredHost {
        let ms = |d: Duration| d.as_millis().min(u64::MAX as u128) as u64;
        StoredHost {
            host: host.as_str().to_owned(),
            next_allowed_ms: state.next_allowed.map(|t| clock.wall_of(t)),
            warm_until_ms: state.warm_until.map(|t| clock.wall_of(t)),
            depth: state.depth,
            last_retry_after_ms: state.last_retry_after.map(ms),
            floor_ms: state.window.refused.map(ms),
            floor_until_ms: state.window.refused_until.map(|t| clock.wall_of(t)),
            spacing_ms: state.window.good.map(ms),
            spacing_until_ms: state.window.good_until.map(|t| clock.wall_of(t)),
            silent: state.window.silent,
            last_sent_ms: state.window.last_sent.map(|t| clock.wall_of(t)),
            run: state.window.run,
            probe_ms: state.window.probe.map(|t| clock.wall_of(t)),
            last_admitted_ms: state.last_admitted.map(|t| clock.wall_of(t)),
            last_status: state.last_status,
            crawl_delay_ms: state.crawl_delay.map(ms),
            crawl_delay_until_ms: state.crawl_delay_until.map(|t| clock.wall_of(t)),
            quota_remaining: state.quota_remaining,
            quota_reset_ms: state.quota_reset.map(|t| clock.wall_of(t)),
            updated_ms: state.updated.map_or(clock.wall_ms, |t| clock.wall_of(t)),
            cleared_until_ms: None,
        }
    }

    /// A clear marker replacing `replaced` (or nothing) at `clock`'s now: it lives as long as
    /// what it replaced would have, and at least a warm window.
    pub(crate) fn cleared(
        host: &HostKey,
        replaced: Option<&StoredHost>,
        clock: Clock,
        p: &GateParams,
    ) -> StoredHost {
        let ms = |d: Duration| d.as_millis().min(u64::MAX as u128) as u64;
        let until = replaced
            .and_then(StoredHost::lapses_ms)
            .unwrap_or(0)
            .max(clock.wall_ms.saturating_add(ms(p.warm_window)));
        // Newer than what it replaces, even within the same millisecond.
        let at = replaced.map_or(clock.wall_ms, |r| clock.wall_ms.max(r.updated_ms + 1));
        StoredHost {
            host: host.as_str().to_owned(),
            next_allowed_ms: None,
            warm_until_ms: None,
            depth: 0,
            last_retry_after_ms: None,
            floor_ms: None,
            floor_until_ms: None,
            spacing_ms: None,
            spacing_until_ms: None,
            silent: false,
            last_sent_ms: None,
            run: 0,
            probe_ms: None,
            last_admitted_ms: None,
            last_status: None,
            crawl_delay_ms: None,
            crawl_delay_until_ms: None,
            quota_remaining: None,
            quota_reset_ms: None,
            updated_ms: at,
            cleared_until_ms: Some(until),
        }
    }

    /// Whether this entry is a clear marker.
    pub(crate) fn is_clear_marker(&self) -> bool {
        self.cleared_until_ms.is_some()
    }

    /// When every part of this entry has lapsed: its cooldown, warm window and floor (and,
    /// for a clear marker, the marker itself). `None`: nothing in it is enforced.
    pub(crate) fn lapses_ms(&self) -> Option<u64> {
        let floor_until = self.floor_ms.and(self.floor_until_ms);
        let spacing_until = self.spacing_ms.and(self.spacing_until_ms);
        let crawl_until = self.crawl_delay_ms.and(self.crawl_delay_until_ms);
        let quota_until = self.quota_remaining.and(self.quota_reset_ms);
        [
            self.next_allowed_ms,
            self.warm_until_ms,
            floor_until,
            spacing_until,
            crawl_until,
            quota_until,
            self.cleared_until_ms,
        ]
        .into_iter()
        .flatten()
        .max()
    }

    /// Whether the entry has lapsed at wall-clock `now_ms` (then it is ignored and deleted).
    pub(crate) fn is_expired(&self, now_ms: u64) -> bool {
        self.lapses_ms().is_none_or(|t| t <= now_ms)
    }

    /// The gate's view of this entry against `clock`, every value capped: no cooldown past
    /// `max_cooldown` from now, no warmth past a warm window, no floor or `Retry-After` past
    /// `max_cooldown`, nothing learned in the future.
    pub(crate) fn to_state(&self, clock: Clock, p: &GateParams) -> HostState {
        let capped = |d: u64| Duration::from_millis(d).min(p.max_cooldown);
        let past = |ms: u64| clock.instant_of(ms.min(clock.wall_ms), Duration::ZERO);
        if self.is_clear_marker() {
            // Everything learned before the marker is forgotten.
            return HostState {
                updated: past(self.updated_ms),
                ..HostState::default()
            };
        }
        HostState {
            next_allowed: self
                .next_allowed_ms
                .and_then(|ms| clock.instant_of(ms, p.max_cooldown)),
            warm_until: self
                .warm_until_ms
                .and_then(|ms| clock.instant_of(ms, p.warm_window)),
            depth: self.depth.min(64),
            last_retry_after: self.last_retry_after_ms.map(capped),
            window: Window {
                refused: self.floor_ms.map(|d| {
                    Duration::from_millis(d)
                        .min(crate::gate::window::widest_refused(p.max_cooldown))
                }),
                refused_until: self
                    .floor_until_ms
                    .and_then(|ms| clock.instant_of(ms, p.floor_lifetime)),
                good: self.spacing_ms.map(capped),
                good_until: self
                    .spacing_until_ms
                    .and_then(|ms| clock.instant_of(ms, p.window_lifetime)),
                silent: self.silent,
                last_sent: self.last_sent_ms.and_then(past),
                run: self.run,
                probe: self.probe_ms.and_then(past),
            },
            last_admitted: self.last_admitted_ms.and_then(past),
            last_status: self.last_status,
            crawl_delay: self.crawl_delay_ms.map(capped),
            crawl_delay_until: self
                .crawl_delay_until_ms
                .and_then(|ms| clock.instant_of(ms, CRAWL_DELAY_LIFETIME_CAP)),
            quota_remaining: self.quota_remaining,
            quota_reset: self
                .quota_reset_ms
                .and_then(|ms| clock.instant_of(ms, p.max_cooldown)),
            updated: past(self.updated_ms),
        }
    }

    /// This entry with every value brought within its cap against `clock` (see
    /// [`StoredHost::to_state`]), or `None` when nothing was out of bounds. Written back,
    /// it makes the cap stable: a far-future time read afresh each time would otherwise be
    /// capped to a later instant at every read, and never reached.
    pub(crate) fn capped(&self, clock: Clock, p: &GateParams) -> Option<StoredHost> {
        let now = clock.wall_ms;
        let ms = |d: Duration| d.as_millis().min(u64::MAX as u128) as u64;
        let limit = |t: Option<u64>, cap: Duration| t.map(|t| t.min(now.saturating_add(ms(cap))));
        let fixed = StoredHost {
            host: self.host.clone(),
            next_allowed_ms: limit(self.next_allowed_ms, p.max_cooldown),
            warm_until_ms: limit(self.warm_until_ms, p.warm_window),
            depth: self.depth.min(64),
            last_retry_after_ms: self.last_retry_after_ms.map(|d| d.min(ms(p.max_cooldown))),
            floor_ms: self.floor_ms.map(|d| d.min(ms(p.max_cooldown))),
            floor_until_ms: limit(self.floor_until_ms, p.floor_lifetime),
            spacing_ms: self.spacing_ms.map(|d| d.min(ms(p.max_cooldown))),
            spacing_until_ms: limit(self.spacing_until_ms, p.window_lifetime),
            silent: self.silent,
            last_sent_ms: self.last_sent_ms.map(|t| t.min(now)),
            run: self.run,
            probe_ms: self.probe_ms.map(|t| t.min(now)),
            last_admitted_ms: self.last_admitted_ms.map(|t| t.min(now)),
            last_status: self.last_status,
            crawl_delay_ms: self.crawl_delay_ms.map(|d| d.min(ms(p.max_cooldown))),
            crawl_delay_until_ms: limit(self.crawl_delay_until_ms, CRAWL_DELAY_LIFETIME_CAP),
            quota_remaining: self.quota_remaining,
            quota_reset_ms: limit(self.quota_reset_ms, p.max_cooldown),
            updated_ms: self.updated_ms.min(now),
            cleared_until_ms: limit(
                self.cleared_until_ms,
                p.window_lifetime.max(p.floor_lifetime).max(p.warm_window),
            ),
        };
        (fixed != *self).then_some(fixed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> GateParams {
        GateParams::default()
    }

    #[tokio::test(start_paused = true)]
    async fn a_state_survives_the_round_trip_to_wall_clock() {
        let clock = Clock::local(0);
        let now = clock.instant;
        let state = HostState {
            next_allowed: Some(now + Duration::from_millis(1500)),
            warm_until: Some(now + Duration::from_secs(100)),
            depth: 2,
            last_retry_after: Some(Duration::from_secs(5)),
            window: Window {
                refused: Some(Duration::from_millis(700)),
                refused_until: Some(now + Duration::from_secs(3000)),
                good: Some(Duration::from_millis(900)),
                good_until: Some(now + Duration::from_secs(80_000)),
                silent: true,
                last_sent: Some(now - Duration::from_secs(2)),
                run: 7,
                probe: Some(now - Duration::from_secs(1)),
            },
            last_admitted: Some(now - Duration::from_secs(3)),
            last_status: Some(429),
            crawl_delay: Some(Duration::from_secs(2)),
            crawl_delay_until: Some(now + Duration::from_secs(3600)),
            quota_remaining: Some(3),
            quota_reset: Some(now + Duration::from_secs(30)),
            updated: Some(now),
        };
        let key = HostKey::parse("a.test:80").unwrap();
        let stored = StoredHost::from_state(&key, &state, clock);
        let back = stored.to_state(clock, &params());
        assert_eq!(back, state);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_read_back_is_never_shorter() {
        let clock = Clock::local(0);
        let key = HostKey::parse("a.test:80").unwrap();
        let state = HostState {
            next_allowed: Some(clock.instant + Duration::from_micros(1_999_001)),
            ..HostState::default()
        };
        let back = StoredHost::from_state(&key, &state, clock).to_state(clock, &params());
        assert!(back.next_allowed.unwrap() >= state.next_allowed.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn far_future_and_huge_values_are_capped_on_read() {
        let clock = Clock::local(0);
        let stored = StoredHost {
            host: "a.test:80".into(),
            next_allowed_ms: Some(u64::MAX),
            warm_until_ms: Some(clock.wall_ms() + 10 * 86_400_000),
            depth: u32::MAX,
            last_retry_after_ms: Some(u64::MAX),
            floor_ms: Some(u64::MAX),
            floor_until_ms: Some(u64::MAX),
            spacing_ms: Some(u64::MAX),
            spacing_until_ms: Some(u64::MAX),
            silent: true,
            last_sent_ms: Some(u64::MAX),
            run: u32::MAX,
            probe_ms: Some(u64::MAX),
            last_admitted_ms: Some(u64::MAX),
            last_status: Some(429),
            crawl_delay_ms: None,
            crawl_delay_until_ms: None,
            quota_remaining: None,
            quota_reset_ms: None,
            updated_ms: u64::MAX,
            cleared_until_ms: None,
        };
        let p = params();
        let s = stored.to_state(clock, &p);
        assert_eq!(s.next_allowed, Some(clock.instant + p.max_cooldown));
        assert_eq!(s.warm_until, Some(clock.instant + p.warm_window));
        // Kept where its floor gap is the cap: no wait past `max_cooldown`.
        assert_eq!(
            s.window.refused,
            Some(crate::gate::window::widest_refused(p.max_cooldown))
        );
        assert!(s.pacing(clock.instant) <= p.max_cooldown);
        assert_eq!(
            s.window.refused_until,
            Some(clock.instant + p.floor_lifetime)
        );
        assert_eq!(s.window.good, Some(p.max_cooldown));
        assert_eq!(s.window.good_until, Some(clock.instant + p.window_lifetime));
        assert_eq!(s.window.last_sent, Some(clock.instant));
        assert_eq!(s.last_retry_after, Some(p.max_cooldown));
        assert_eq!(s.last_admitted, Some(clock.instant));
        assert_eq!(s.updated, Some(clock.instant));
        assert_eq!(s.depth, 64);
        assert_eq!(s.pacing(clock.instant), p.max_cooldown);
    }
}
