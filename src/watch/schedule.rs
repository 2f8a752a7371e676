//! When a watched feed is checked next: pure arithmetic on what its last check found.
//!
//! The next check is the latest of what the server and the feed state — the copy's HTTP
//! freshness (however short), the feed's declared schedule (`<ttl>`, `sy:*`) — and of what
//! the host asks (a `Retry-After`, the gate's learned cooldown or spacing), with the feed's
//! `skipHours` / `skipDays` (UTC) honoured. When neither the server nor the feed states
//! anything, it adapts to how often the feed changes, between the owner's minimum and
//! maximum. No check is ever planned sooner than [`FLOOR`] or later than the maximum
//! (but for a skipped hour or day).

use std::time::Duration;

use chrono::{DateTime, Datelike, Timelike, Utc};

/// The shortest time between two checks of one feed, whatever the server says.
pub(crate) const FLOOR: Duration = Duration::from_secs(1);
/// How far back the items' dates tell how often a feed publishes.
pub(crate) const RATE_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);

/// The owner's bounds on an adaptive interval (`--watch-min-interval`,
/// `--watch-max-interval`); the maximum bounds every interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// The shortest adaptive interval.
    pub min: Duration,
    /// The longest interval of any kind.
    pub max: Duration,
}

/// What one check found, as the schedule reads it (times are Unix ms, wall clock).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Findings {
    /// When the check ended.
    pub now_ms: u64,
    /// Until when the copy is fresh by the server's word (or the feed's, as the cache
    /// counts it, capped by `--max-freshness`).
    pub fresh_until_ms: Option<u64>,
    /// The feed's declared schedule, counted from `confirmed_ms`, uncapped.
    pub declared: Option<Duration>,
    /// When the origin last sent or confirmed the copy.
    pub confirmed_ms: u64,
    /// The hours (UTC) the feed asks not to be read in: bit `h` for hour `h`.
    pub skip_hours: u32,
    /// The days (UTC) the feed asks not to be read on: bit 0 Monday ... bit 6 Sunday.
    pub skip_days: u8,
    /// How long from now the gate holds the host (cooldown, spacing, quota).
    pub host_wait: Duration,
    /// What a `RATE_LIMITED` answer asked to wait.
    pub retry_after: Option<Duration>,
    /// The check read no items (an error).
    pub failed: bool,
    /// Items of the document dated (published, else updated) within [`RATE_WINDOW`].
    pub dated_recently: usize,
}

/// What the watch has seen of a feed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct History {
    /// When the watch began (Unix ms).
    pub since_ms: u64,
    /// When a change was last seen (Unix ms).
    pub changed_ms: Option<u64>,
    /// Checks that failed in a row.
    pub failures: u32,
}

/// Which rule set the time of a check (for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Rule {
    /// The copy's HTTP freshness.
    Freshness,
    /// The feed's declared schedule.
    Declared,
    /// How often the feed changes (nothing stated).
    Adaptive,
    /// The last checks failed: the minimum, doubled per failure.
    Backoff,
    /// The maximum cut a longer interval.
    Maximum,
    /// [`FLOOR`] lengthened a shorter one.
    Floor,
    /// The host's `Retry-After`.
    RetryAfter,
    /// The gate's hold on the host.
    Gate,
    /// A skipped hour or day (`skipHours`, `skipDays`).
    Skip,
}

/// When (Unix ms) the feed is checked next, and the rule that decided it.
pub(crate) fn next(f: &Findings, h: &History, b: &Bounds) -> (u64, Rule) {
    let now = f.now_ms;
    let after = |d: Duration| now.saturating_add(ms(d));
    let (mut due, mut rule) = if f.failed {
        let doubled = b
            .min
            .saturating_mul(1 << h.failures.saturating_sub(1).min(20));
        (after(doubled.min(b.max)), Rule::Backoff)
    } else {
        let fresh = f.fresh_until_ms.map(|t| (t, Rule::Freshness));
        let declared = f
            .declared
            .map(|d| (f.confirmed_ms.saturating_add(ms(d)), Rule::Declared));
        match (fresh, declared) {
            (Some(a), Some(d)) => Some(if d.0 > a.0 { d } else { a }),
            (a, d) => a.or(d),
        }
        .unwrap_or_else(|| (after(adaptive(f, h, b)), Rule::Adaptive))
    };
    if due > after(b.max) {
        (due, rule) = (after(b.max), Rule::Maximum);
    }
    if due < after(FLOOR) {
        (due, rule) = (after(FLOOR), Rule::Floor);
    }
    for (wait, r) in [
        (f.retry_after, Rule::RetryAfter),
        (Some(f.host_wait), Rule::Gate),
    ] {
        if let Some(w) = wait.filter(|w| after(*w) > due) {
            (due, rule) = (after(w), r);
        }
    }
    let skipped = not_skipped(due, f.skip_hours, f.skip_days);
    if skipped != due {
        (due, rule) = (skipped, Rule::Skip);
    }
    (due, rule)
}

/// The interval of a feed that states nothing: the time since it last changed (or since
/// the watch began), or the mean gap between its items of the past week when that is
/// shorter, within the owner's bounds. A feed that just changed is checked again soon; one
/// that stays quiet is checked less and less often, each interval as long as the quiet so
/// far.
fn adaptive(f: &Findings, h: &History, b: &Bounds) -> Duration {
    let quiet = Duration::from_millis(
        f.now_ms
            .saturating_sub(h.changed_ms.unwrap_or(h.since_ms).max(h.since_ms)),
    );
    let rate = u32::try_from(f.dated_recently)
        .ok()
        .filter(|n| *n > 0)
        .map(|n| RATE_WINDOW / n);
    let estimate = rate.map_or(quiet, |r| r.min(quiet));
    estimate.clamp(b.min, b.max.max(b.min))
}

/// The first instant at or after `at` (Unix ms) outside the skipped hours and days (UTC):
/// the start of the first hour that is not skipped. `at` itself when nothing is skipped,
/// and when everything is (a feed that asks never to be read asks nothing sensible).
pub(crate) fn not_skipped(at: u64, hours: u32, days: u8) -> u64 {
    const ALL_HOURS: u32 = (1 << 24) - 1;
    const ALL_DAYS: u8 = (1 << 7) - 1;
    let (hours, days) = (hours & ALL_HOURS, days & ALL_DAYS);
    if (hours == 0 && days == 0) || hours == ALL_HOURS || days == ALL_DAYS {
        return at;
    }
    let Some(mut t) = DateTime::<Utc>::from_timestamp_millis(i64::try_from(at).unwrap_or(0)) else {
        return at;
    };
    let skipped = |t: &DateTime<Utc>| {
        hours & (1 << t.hour()) != 0 || days & (1 << t.weekday().num_days_from_monday()) != 0
    };
    // A week of hours holds every combination of hour and day.
    for _ in 0..=7 * 24 {
        if !skipped(&t) {
            return u64::try_from(t.timestamp_millis()).unwrap_or(at);
        }
        let hour_start = t
            .with_minute(0)
            .and_then(|t| t.with_second(0))
            .and_then(|t| t.with_nanosecond(0))
            .unwrap_or(t);
        t = hour_start + chrono::Duration::hours(1);
    }
    at
}

/// The hours of `skip_hours` (0-23) as a mask.
pub(crate) fn hours_mask(hours: &[u32]) -> u32 {
    hours
        .iter()
        .filter(|h| **h < 24)
        .fold(0, |m, h| m | (1 << h))
}

/// The days of `skip_days` (`Monday` ... `Sunday`) as a mask, bit 0 Monday.
pub(crate) fn days_mask(days: &[String]) -> u8 {
    days.iter()
        .filter_map(|d| crate::feed::day_of(d))
        .fold(0, |m, d| m | (1 << d))
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(300);
    const MAX: Duration = Duration::from_secs(86_400);
    const B: Bounds = Bounds { min: MIN, max: MAX };
    /// 2026-12-03T12:00:00Z, a Thursday.
    const NOON: u64 = 1_796_299_200_000;

    fn found() -> Findings {
        Findings {
            now_ms: NOON,
            confirmed_ms: NOON,
            ..Findings::default()
        }
    }

    fn history() -> History {
        History {
            since_ms: NOON,
            ..History::default()
        }
    }

    #[test]
    fn noon_is_a_thursday() {
        let t = DateTime::<Utc>::from_timestamp_millis(NOON as i64).unwrap();
        assert_eq!((t.hour(), t.weekday()), (12, chrono::Weekday::Thu));
    }

    #[test]
    fn the_servers_freshness_however_short_sets_the_next_check() {
        let f = Findings {
            fresh_until_ms: Some(NOON + 2_000),
            ..found()
        };
        assert_eq!(next(&f, &history(), &B), (NOON + 2_000, Rule::Freshness));
        // Shorter than the floor: the floor.
        let f = Findings {
            fresh_until_ms: Some(NOON + 10),
            ..found()
        };
        assert_eq!(next(&f, &history(), &B), (NOON + 1_000, Rule::Floor));
    }

    #[test]
    fn the_declared_schedule_wins_when_it_is_later_and_the_maximum_bounds_both() {
        let f = Findings {
            fresh_until_ms: Some(NOON + 60_000),
            declared: Some(Duration::from_secs(3_600)),
            confirmed_ms: NOON - 600_000,
            ..found()
        };
        assert_eq!(next(&f, &history(), &B), (NOON + 3_000_000, Rule::Declared));
        let f = Findings {
            fresh_until_ms: Some(NOON + 7_200_000),
            ..f
        };
        assert_eq!(
            next(&f, &history(), &B),
            (NOON + 7_200_000, Rule::Freshness)
        );
        let yearly = Findings {
            declared: Some(Duration::from_secs(31_536_000)),
            ..f
        };
        assert_eq!(
            next(&yearly, &history(), &B),
            (NOON + 86_400_000, Rule::Maximum)
        );
    }

    #[test]
    fn a_retry_after_or_the_gates_hold_pushes_the_check_later() {
        let f = Findings {
            fresh_until_ms: Some(NOON + 2_000),
            retry_after: Some(Duration::from_secs(30)),
            ..found()
        };
        assert_eq!(next(&f, &history(), &B), (NOON + 30_000, Rule::RetryAfter));
        let f = Findings {
            host_wait: Duration::from_secs(45),
            ..f
        };
        assert_eq!(next(&f, &history(), &B), (NOON + 45_000, Rule::Gate));
        let f = Findings {
            host_wait: Duration::from_secs(1),
            ..f
        };
        assert_eq!(next(&f, &history(), &B), (NOON + 30_000, Rule::RetryAfter));
    }

    #[test]
    fn failures_back_off_from_the_minimum_to_the_maximum() {
        let mut h = history();
        let f = Findings {
            failed: true,
            fresh_until_ms: Some(NOON + 2_000),
            ..found()
        };
        let mut waits = Vec::new();
        for failures in 1..=12 {
            h.failures = failures;
            waits.push((next(&f, &h, &B).0 - NOON) / 1000);
        }
        assert_eq!(
            waits,
            [
                300, 600, 1200, 2400, 4800, 9600, 19200, 38400, 76800, 86400, 86400, 86400
            ]
        );
        h.failures = u32::MAX;
        assert_eq!(next(&f, &h, &B), (NOON + 86_400_000, Rule::Backoff));
    }

    #[test]
    fn a_feed_that_states_nothing_is_checked_as_often_as_it_changes() {
        // Just began, nothing dated: the minimum.
        assert_eq!(
            next(&found(), &history(), &B),
            (NOON + 300_000, Rule::Adaptive)
        );
        // Quiet for an hour: an hour.
        let h = History {
            since_ms: NOON - 3_600_000,
            ..history()
        };
        assert_eq!(next(&found(), &h, &B).0, NOON + 3_600_000);
        // A change ten minutes ago counts from there.
        let h = History {
            changed_ms: Some(NOON - 600_000),
            ..h
        };
        assert_eq!(next(&found(), &h, &B).0, NOON + 600_000);
        // Quiet for a week, but 56 items in it: every three hours.
        let h = History {
            since_ms: NOON - 7 * 86_400_000,
            changed_ms: None,
            ..h
        };
        let busy = Findings {
            dated_recently: 56,
            ..found()
        };
        assert_eq!(next(&busy, &h, &B).0, NOON + 3 * 3_600_000);
        // Ten thousand a week is under the minimum: the minimum.
        let flood = Findings {
            dated_recently: 10_000,
            ..found()
        };
        assert_eq!(next(&flood, &h, &B).0, NOON + 300_000);
        // Quiet for a month: the maximum.
        let h = History {
            since_ms: NOON - 30 * 86_400_000,
            ..h
        };
        assert_eq!(next(&found(), &h, &B).0, NOON + 86_400_000);
    }

    #[test]
    fn skipped_hours_and_days_move_the_check_to_the_next_hour_read() {
        let f = Findings {
            fresh_until_ms: Some(NOON + 60_000),
            skip_hours: hours_mask(&[12, 13]),
            ..found()
        };
        assert_eq!(next(&f, &history(), &B), (NOON + 2 * 3_600_000, Rule::Skip));
        // Thursday and Friday skipped: Saturday midnight.
        let f = Findings {
            skip_hours: 0,
            skip_days: days_mask(&["thursday".into(), "Friday".into(), "nonsense".into()]),
            ..f
        };
        assert_eq!(next(&f, &history(), &B).0, NOON + 36 * 3_600_000);
        // Both: Saturday, its first hour not skipped.
        let f = Findings {
            skip_hours: hours_mask(&[0, 1, 2, 99]),
            ..f
        };
        assert_eq!(next(&f, &history(), &B).0, NOON + 39 * 3_600_000);
        // Every hour skipped, or every day: the rule is not sensible and is not followed.
        let all: Vec<u32> = (0..24).collect();
        assert_eq!(not_skipped(NOON, hours_mask(&all), 0), NOON);
        assert_eq!(not_skipped(NOON, 0, 0x7f), NOON);
        assert_eq!(not_skipped(NOON + 5, 0, 0), NOON + 5);
    }
}
