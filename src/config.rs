//! Runtime parameters and their defaults; the one place that reads `RSS_*` variables.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::gate::GateParams;

/// The default User-Agent: the tool, its version and where it lives.
pub const DEFAULT_USER_AGENT: &str = concat!(
    "rss/",
    env!("CARGO_PKG_VERSION"),
    " (+",
    env!("CARGO_PKG_REPOSITORY"),
    ")"
);

/// Default `--timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `--max-body-bytes`: 20 MiB after decoding.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 20 * 1024 * 1024;
/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 10;
/// Default `--concurrency`: sends in flight across all hosts.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Environment variable: per-host concurrent sends.
pub const ENV_HOST_CONCURRENCY: &str = "RSS_HOST_CONCURRENCY";
/// Environment variable: cap on a learned cooldown, seconds.
pub const ENV_MAX_COOLDOWN: &str = "RSS_MAX_COOLDOWN_SECS";
/// Environment variable: the longest a call waits on the gate, seconds.
pub const ENV_MAX_GATE_WAIT: &str = "RSS_MAX_GATE_WAIT_SECS";
/// Environment variable: the cache directory.
pub const ENV_CACHE_DIR: &str = "RSS_CACHE_DIR";

/// Settings given on the command line (or by a test); `None` means "not given".
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--host-concurrency`.
    pub host_concurrency: Option<usize>,
    /// `--max-gate-wait` in seconds.
    pub max_gate_wait_secs: Option<u64>,
    /// `--timeout` in seconds.
    pub timeout_secs: Option<f64>,
    /// `--max-body-bytes`.
    pub max_body_bytes: Option<u64>,
    /// `--user-agent`.
    pub user_agent: Option<String>,
    /// `--concurrency`.
    pub concurrency: Option<usize>,
    /// `--cache-dir`.
    pub cache_dir: Option<PathBuf>,
}

/// Every runtime parameter, resolved once before any I/O.
#[derive(Debug, Clone)]
pub struct Config {
    /// The gate's parameters.
    pub gate: GateParams,
    /// Time limit for connecting and for reading a whole response.
    pub timeout: Duration,
    /// Largest decoded body accepted.
    pub max_body_bytes: u64,
    /// Redirects followed before giving up.
    pub max_redirects: usize,
    /// The User-Agent header sent.
    pub user_agent: String,
    /// Sends in flight across all hosts.
    pub concurrency: usize,
    /// Where the cache lives, if anywhere.
    pub cache_dir: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            gate: GateParams::default(),
            timeout: DEFAULT_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_redirects: MAX_REDIRECTS,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            concurrency: DEFAULT_CONCURRENCY,
            cache_dir: default_cache_dir(),
        }
    }
}

impl Config {
    /// Resolves flags over the process environment over defaults.
    pub fn from_env(overrides: Overrides) -> Result<Config> {
        Config::resolve(overrides, |name| std::env::var(name).ok())
    }

    /// Resolves flags over `env` over defaults; an invalid value is a usage error.
    pub fn resolve(overrides: Overrides, env: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let mut config = Config::default();
        let gate = &mut config.gate;

        if let Some(n) = overrides.host_concurrency {
            gate.host_concurrency = n;
        } else if let Some(n) = env_number(&env, ENV_HOST_CONCURRENCY)? {
            gate.host_concurrency = n as usize;
        }
        if let Some(secs) = env_number(&env, ENV_MAX_COOLDOWN)? {
            gate.max_cooldown = Duration::from_secs(secs);
        }
        if let Some(secs) = overrides.max_gate_wait_secs {
            gate.max_gate_wait = Duration::from_secs(secs);
        } else if let Some(secs) = env_number(&env, ENV_MAX_GATE_WAIT)? {
            gate.max_gate_wait = Duration::from_secs(secs);
        }
        if gate.host_concurrency == 0 {
            return Err(Error::usage(
                "host concurrency must be at least 1 (--host-concurrency / RSS_HOST_CONCURRENCY)",
            ));
        }

        if let Some(secs) = overrides.timeout_secs {
            if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
                return Err(Error::usage(format!(
                    "--timeout must be a number of seconds between 0 and 86400, got {secs}"
                )));
            }
            config.timeout = Duration::from_secs_f64(secs);
        }
        if let Some(bytes) = overrides.max_body_bytes {
            if bytes == 0 {
                return Err(Error::usage("--max-body-bytes must be at least 1"));
            }
            config.max_body_bytes = bytes;
        }
        if let Some(ua) = overrides.user_agent {
            if ua.trim().is_empty() || ua.chars().any(|c| c.is_control()) {
                return Err(Error::usage(
                    "--user-agent must be non-empty printable text",
                ));
            }
            config.user_agent = ua;
        }
        if let Some(n) = overrides.concurrency {
            if n == 0 {
                return Err(Error::usage("--concurrency must be at least 1"));
            }
            config.concurrency = n;
        }
        if let Some(dir) = overrides.cache_dir {
            config.cache_dir = Some(dir);
        } else if let Some(dir) = env(ENV_CACHE_DIR).filter(|d| !d.is_empty()) {
            config.cache_dir = Some(PathBuf::from(dir));
        }
        Ok(config)
    }
}

/// Parses a duration: a number with a unit (`90s`, `30m`, `2h`, `7d`, `1w`); a bare number
/// is seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_lowercase()),
        _ => (t, 's'),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = num.parse().ok()?;
    let secs = match unit {
        's' => Some(n),
        'm' => n.checked_mul(60),
        'h' => n.checked_mul(3600),
        'd' => n.checked_mul(86_400),
        'w' => n.checked_mul(604_800),
        _ => None,
    }?;
    (secs <= 100 * 365 * 86_400).then(|| Duration::from_secs(secs))
}

fn env_number(env: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Option<u64>> {
    let Some(raw) = env(name) else {
        return Ok(None);
    };
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    trimmed.parse::<u64>().map(Some).map_err(|_| {
        Error::usage(format!(
            "environment variable {name}={raw:?} is not a whole number"
        ))
    })
}

fn default_cache_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "rss").map(|dirs| dirs.cache_dir().to_path_buf())
}

#[cfg(test)]
mod tests {
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
    fn defaults_match_the_design_table() {
        let c = Config::resolve(Overrides::default(), env_of(&[])).unwrap();
        assert_eq!(c.gate.host_concurrency, 1);
        assert_eq!(c.gate.base_cooldown, Duration::from_secs(2));
        assert_eq!(c.gate.max_cooldown, Duration::from_secs(60));
        assert_eq!(c.gate.sticky_spacing, Duration::from_secs(1));
        assert_eq!(c.gate.warm_window, Duration::from_secs(120));
        assert_eq!(c.gate.max_gate_wait, Duration::from_secs(60));
        assert_eq!(c.concurrency, 8);
        assert_eq!(c.timeout, Duration::from_secs(30));
    }

    #[test]
    fn environment_sets_the_gate_and_flags_win() {
        let env = env_of(&[
            (ENV_HOST_CONCURRENCY, "4"),
            (ENV_MAX_COOLDOWN, "10"),
            (ENV_MAX_GATE_WAIT, "30"),
        ]);
        let c = Config::resolve(Overrides::default(), &env).unwrap();
        assert_eq!(c.gate.host_concurrency, 4);
        assert_eq!(c.gate.max_cooldown, Duration::from_secs(10));
        assert_eq!(c.gate.max_gate_wait, Duration::from_secs(30));
        let flags = Overrides {
            host_concurrency: Some(2),
            max_gate_wait_secs: Some(5),
            ..Overrides::default()
        };
        let c = Config::resolve(flags, &env).unwrap();
        assert_eq!(c.gate.host_concurrency, 2);
        assert_eq!(c.gate.max_gate_wait, Duration::from_secs(5));
    }

    #[test]
    fn an_invalid_environment_value_is_a_usage_error() {
        for pairs in [
            &[(ENV_HOST_CONCURRENCY, "many")][..],
            &[(ENV_MAX_COOLDOWN, "-1")][..],
            &[(ENV_MAX_GATE_WAIT, "1.5")][..],
            &[(ENV_HOST_CONCURRENCY, "0")][..],
        ] {
            let pairs: &'static [(&str, &str)] = Box::leak(pairs.to_vec().into_boxed_slice());
            let err = Config::resolve(Overrides::default(), env_of(pairs)).unwrap_err();
            assert_eq!(err.code().as_str(), "USAGE_ERROR", "{pairs:?}");
        }
    }

    #[test]
    fn durations_read_every_unit() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Some(Duration::from_secs(1800)));
        assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_duration("7d"), Some(Duration::from_secs(604_800)));
        assert_eq!(parse_duration("45"), Some(Duration::from_secs(45)));
        for bad in ["", "x", "5y", "-1h", "1.5h", "99999999999999d"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_default_user_agent_names_tool_version_and_repository() {
        assert!(
            DEFAULT_USER_AGENT
                .starts_with(&format!("rss/{} (+https://", env!("CARGO_PKG_VERSION")))
        );
        assert!(DEFAULT_USER_AGENT.contains(env!("CARGO_PKG_REPOSITORY")));
    }
}
