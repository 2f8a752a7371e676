//! The watch's parameters (`--watch-min-interval`, `--watch-max-interval`, the caps on
//! subscriptions): their defaults, variables and layering.

use std::time::Duration;

use super::{Overrides, env_number, in_range};
use crate::error::{Error, Result};

/// Environment variable: the shortest interval a watched feed that states nothing of its
/// schedule is checked at, seconds (`--watch-min-interval`).
pub const ENV_WATCH_MIN_INTERVAL: &str = "RSS_WATCH_MIN_INTERVAL_SECS";
/// Environment variable: the longest interval between two checks of a watched feed,
/// seconds (`--watch-max-interval`).
pub const ENV_WATCH_MAX_INTERVAL: &str = "RSS_WATCH_MAX_INTERVAL_SECS";
/// Default `--watch-min-interval`: five minutes.
pub const DEFAULT_WATCH_MIN_INTERVAL: Duration = Duration::from_secs(300);
/// Default `--watch-max-interval`: a day.
pub const DEFAULT_WATCH_MAX_INTERVAL: Duration = Duration::from_secs(86_400);
/// Default `rss mcp --max-subscriptions-per-listener`: one `subscriptions/listen`.
pub const DEFAULT_MAX_LISTENER_SUBSCRIPTIONS: usize = 100;
/// Default `rss mcp --max-subscriptions`: every listener's together.
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 1_000;
/// A watch's intervals (`--watch-min-interval`, `--watch-max-interval`), seconds.
pub const WATCH_INTERVAL_SECS: std::ops::RangeInclusive<u64> = 1..=2_592_000;
/// The caps on subscriptions (`--max-subscriptions`, per listener and per server).
pub const SUBSCRIPTIONS: std::ops::RangeInclusive<u64> = 1..=1_000_000;

/// The watch's settings as given (flags, or the config file's `[defaults]`); `None`: not
/// given.
#[derive(Debug, Clone, Copy, Default)]
pub struct WatchOverrides {
    /// `--watch-min-interval` in seconds.
    pub min_interval_secs: Option<u64>,
    /// `--watch-max-interval` in seconds.
    pub max_interval_secs: Option<u64>,
    /// `rss mcp --max-subscriptions`.
    pub max_subscriptions: Option<u64>,
    /// `rss mcp --max-subscriptions-per-listener`.
    pub max_listener_subscriptions: Option<u64>,
}

/// How feeds are watched while someone listens (`rss mcp` subscriptions, `rss watch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchParams {
    /// The shortest interval a feed that states nothing of its schedule is checked at.
    pub min_interval: Duration,
    /// The longest interval between two checks of any feed.
    pub max_interval: Duration,
    /// The most subscriptions one listener (one `subscriptions/listen`) holds.
    pub max_listener_subscriptions: usize,
    /// The most subscriptions a server holds, every listener's together.
    pub max_subscriptions: usize,
}

impl Default for WatchParams {
    fn default() -> Self {
        WatchParams {
            min_interval: DEFAULT_WATCH_MIN_INTERVAL,
            max_interval: DEFAULT_WATCH_MAX_INTERVAL,
            max_listener_subscriptions: DEFAULT_MAX_LISTENER_SUBSCRIPTIONS,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
        }
    }
}

/// The watch's parameters: flags over the environment over the config file's
/// `[defaults]` over the built-in defaults; the minimum may not pass the maximum.
pub(super) fn watch_params(
    overrides: &Overrides,
    env: &impl Fn(&str) -> Option<String>,
    file: &Overrides,
) -> Result<WatchParams> {
    let mut w = WatchParams::default();
    let interval = |flag: Option<u64>, var: &str, from_file: Option<u64>, what: &str| {
        let secs = match flag {
            Some(s) => Some(s),
            None => env_number(env, var)?,
        }
        .or(from_file);
        if let Some(s) = secs {
            in_range(s, WATCH_INTERVAL_SECS, what)?;
        }
        Ok::<_, Error>(secs.map(Duration::from_secs))
    };
    if let Some(d) = interval(
        overrides.watch.min_interval_secs,
        ENV_WATCH_MIN_INTERVAL,
        file.watch.min_interval_secs,
        "--watch-min-interval / RSS_WATCH_MIN_INTERVAL_SECS",
    )? {
        w.min_interval = d;
    }
    if let Some(d) = interval(
        overrides.watch.max_interval_secs,
        ENV_WATCH_MAX_INTERVAL,
        file.watch.max_interval_secs,
        "--watch-max-interval / RSS_WATCH_MAX_INTERVAL_SECS",
    )? {
        w.max_interval = d;
    }
    if w.min_interval > w.max_interval {
        return Err(Error::usage(format!(
            "the watch's minimum interval ({} s) is longer than its maximum ({} s)",
            w.min_interval.as_secs(),
            w.max_interval.as_secs()
        )));
    }
    if let Some(n) = overrides.watch.max_subscriptions {
        in_range(n, SUBSCRIPTIONS, "--max-subscriptions")?;
        w.max_subscriptions = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(n) = overrides.watch.max_listener_subscriptions {
        in_range(n, SUBSCRIPTIONS, "--max-subscriptions-per-listener")?;
        w.max_listener_subscriptions = usize::try_from(n).unwrap_or(usize::MAX);
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_watch_bounds_come_from_flags_then_environment_then_the_file() {
        let c = Config::resolve(Overrides::default(), env_of(&[])).unwrap();
        assert_eq!(c.watch, WatchParams::default());
        assert_eq!(c.watch.min_interval, Duration::from_secs(300));
        assert_eq!(c.watch.max_interval, Duration::from_secs(86_400));
        let env = env_of(&[
            (ENV_WATCH_MIN_INTERVAL, "60"),
            (ENV_WATCH_MAX_INTERVAL, "3600"),
        ]);
        let file = Overrides {
            watch: WatchOverrides {
                min_interval_secs: Some(30),
                max_interval_secs: Some(7200),
                ..WatchOverrides::default()
            },
            ..Overrides::default()
        };
        let flags = Overrides {
            watch: WatchOverrides {
                min_interval_secs: Some(10),
                max_subscriptions: Some(7),
                max_listener_subscriptions: Some(3),
                ..WatchOverrides::default()
            },
            ..Overrides::default()
        };
        let c = Config::resolve_layers(flags, &env, &file).unwrap();
        assert_eq!(c.watch.min_interval, Duration::from_secs(10));
        assert_eq!(c.watch.max_interval, Duration::from_secs(3600));
        assert_eq!(
            (
                c.watch.max_subscriptions,
                c.watch.max_listener_subscriptions
            ),
            (7, 3)
        );
        let c = Config::resolve_layers(Overrides::default(), env_of(&[]), &file).unwrap();
        assert_eq!(c.watch.max_interval, Duration::from_secs(7200));
        // The minimum past the maximum, or either out of range, is a usage error.
        for bad in [(600, 60), (0, 60), (60, 2_592_001)] {
            let o = Overrides {
                watch: WatchOverrides {
                    min_interval_secs: Some(bad.0),
                    max_interval_secs: Some(bad.1),
                    ..WatchOverrides::default()
                },
                ..Overrides::default()
            };
            let e = Config::resolve(o, env_of(&[])).unwrap_err();
            assert_eq!(e.code().as_str(), "USAGE_ERROR", "{bad:?}");
        }
        let o = Overrides {
            watch: WatchOverrides {
                max_subscriptions: Some(0),
                ..WatchOverrides::default()
            },
            ..Overrides::default()
        };
        assert!(Config::resolve(o, env_of(&[])).is_err());
    }
}
