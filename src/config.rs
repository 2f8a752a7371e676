//! Runtime parameters and their defaults; the one place that reads `RSS_*` variables.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};

mod proxy;
mod watch;

use proxy::proxy_hosts;
pub use watch::*;

/// The default User-Agent: the tool and its version, and no invented address (a user adds
/// their own contact with `--user-agent` / `RSS_USER_AGENT`).
pub const DEFAULT_USER_AGENT: &str = concat!("rss/", env!("CARGO_PKG_VERSION"));
/// Environment variable: the User-Agent sent (`name/version (+contact URL)`).
pub const ENV_USER_AGENT: &str = "RSS_USER_AGENT";

/// Default `--timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `--max-body-bytes`: 20 MiB after decoding.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 20 * 1024 * 1024;
/// Default `rss mcp --call-timeout`: under the 60 s after which the TypeScript SDK's client
/// gives up on a request that sent no progress.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(50);
/// The environment variable of `--call-timeout` (seconds).
pub const ENV_CALL_TIMEOUT: &str = "RSS_CALL_TIMEOUT_SECS";
/// Default `rss mcp --max-response-tokens`: the most tokens a call's result may be asked
/// for (what common MCP clients let a tool result put before a model).
pub const DEFAULT_MAX_RESPONSE_TOKENS: usize = 25_000;
/// Environment variable: `1` lets `rss mcp --http` reach non-public addresses.
pub const ENV_ALLOW_PRIVATE_NETWORKS: &str = "RSS_ALLOW_PRIVATE_NETWORKS";
/// The environment variable holding `rss mcp --http`'s bearer token.
pub const ENV_MCP_TOKEN: &str = "RSS_MCP_TOKEN";

/// The MCP server's bearer token from `RSS_MCP_TOKEN`, when set. Read apart from
/// [`Config`] so the secret never sits in a value that is logged or printed.
pub fn mcp_token_from_env() -> Option<String> {
    std::env::var(ENV_MCP_TOKEN).ok()
}

/// The default cap on the cache's bytes on disk: 1 GiB.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 1 << 30;
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
/// Environment variable: the state directory (readers' delivery marks).
pub const ENV_STATE_DIR: &str = "RSS_STATE_DIR";
/// Environment variable: `off` keeps host state inside the process.
pub const ENV_HOST_STATE: &str = "RSS_HOST_STATE";
/// Environment variable: the cap on the cache's bytes on disk (0: no cap).
pub const ENV_CACHE_MAX_BYTES: &str = "RSS_CACHE_MAX_BYTES";
/// Environment variable: the Redis URL of the fleet's host-state store.
pub const ENV_GATE_STORE: &str = "RSS_GATE_STORE";
/// Environment variable: `1` refuses requests to non-public addresses.
pub const ENV_DENY_PRIVATE_NETWORKS: &str = "RSS_DENY_PRIVATE_NETWORKS";
/// Environment variable: `host` (default) or `site`: what the gate keys a request on.
pub const ENV_HOST_KEY: &str = "RSS_HOST_KEY";
/// Environment variable: the longest a server's own freshness is trusted, seconds.
pub const ENV_MAX_FRESHNESS: &str = "RSS_MAX_FRESHNESS_SECS";
/// Default `--max-freshness`: one hour.
pub const DEFAULT_MAX_FRESHNESS: Duration = Duration::from_secs(3600);
/// Environment variable: the config file to read (`--config`).
pub const ENV_CONFIG: &str = "RSS_CONFIG";
/// Environment variable (for tests): moves this process's wall clock, as the host-state
/// file store reads it, by this many milliseconds (negative: behind).
pub const ENV_TEST_WALL_CLOCK_SKEW: &str = "RSS_TEST_WALL_CLOCK_SKEW_MS";

/// The accepted ranges of the tunables (inclusive).
pub mod limits {
    use std::ops::RangeInclusive;
    /// Sends in flight per host.
    pub const HOST_CONCURRENCY: RangeInclusive<u64> = 1..=64;
    /// Cap on a learned cooldown, seconds.
    pub const MAX_COOLDOWN_SECS: RangeInclusive<u64> = 1..=86_400;
    /// The longest wait on the gate, seconds.
    pub const MAX_GATE_WAIT_SECS: RangeInclusive<u64> = 0..=86_400;
    /// Sends in flight across hosts.
    pub const CONCURRENCY: RangeInclusive<u64> = 1..=1024;
    /// Largest body, bytes (after decoding).
    pub const MAX_BODY_BYTES: RangeInclusive<u64> = 1..=(1 << 32);
    /// The longest a server's freshness is trusted, seconds.
    pub const MAX_FRESHNESS_SECS: RangeInclusive<u64> = 0..=31_536_000;
    /// The MCP server's deadline for one call, seconds.
    pub const CALL_TIMEOUT_SECS: RangeInclusive<u64> = 1..=86_400;
    /// The MCP server's cap on a call's `max_response_tokens`.
    pub const MAX_RESPONSE_TOKENS: RangeInclusive<u64> = 100..=10_000_000;
}

/// Where the gate's learned host state is kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HostStateSetting {
    /// Under the cache directory, shared by every process using it (the default).
    #[default]
    Files,
    /// Inside the process only (`--no-host-state`, `RSS_HOST_STATE=off`).
    Off,
    /// In Redis at this URL, shared by every worker of a fleet (`--gate-store`,
    /// `RSS_GATE_STORE`).
    Redis(String),
}

/// A `--gate-store` / `RSS_GATE_STORE` value checked: a `redis://` or `rediss://` URL with
/// a host. The message never repeats a password.
fn gate_store_url(url: &str) -> Result<String> {
    let parsed = url::Url::parse(url).ok();
    match parsed {
        Some(u) if matches!(u.scheme(), "redis" | "rediss") && u.has_host() => Ok(url.to_owned()),
        Some(u) => Err(Error::usage(format!(
            "--gate-store / {ENV_GATE_STORE} must be a redis:// or rediss:// URL with a host, not a {}: URL",
            crate::error::echo(u.scheme())
        ))),
        None => Err(Error::usage(format!(
            "--gate-store / {ENV_GATE_STORE} is not a URL (redis://host:port/db)"
        ))),
    }
}

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
    /// `--state-dir`.
    pub state_dir: Option<PathBuf>,
    /// `--no-host-state`.
    pub no_host_state: bool,
    /// `--gate-store URL`.
    pub gate_store: Option<String>,
    /// `--cache-max-bytes`.
    pub cache_max_bytes: Option<u64>,
    /// `--deny-private-networks`.
    pub deny_private_networks: bool,
    /// `--max-freshness` in seconds.
    pub max_freshness_secs: Option<u64>,
    /// `--host-key host|site`.
    pub host_key: Option<String>,
    /// `rss mcp --call-timeout` in seconds.
    pub call_timeout_secs: Option<u64>,
    /// Whether page reads honour robots.txt by default (the config file's `[defaults]`;
    /// `--respect-robots` asks for it per command).
    pub respect_robots: Option<bool>,
    /// `rss mcp --max-response-tokens`.
    pub max_response_tokens: Option<u64>,
    /// Private networks are refused unless allowed (`rss mcp --http`): `Some(allowed)`,
    /// where `allowed` is `--allow-private-networks`.
    pub private_networks_by_default: Option<bool>,
    /// The watch's flags.
    pub watch: WatchOverrides,
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
    /// Where state that must outlive the cache lives (readers' delivery marks), if anywhere.
    pub state_dir: Option<PathBuf>,
    /// Where learned host state is kept.
    pub host_state: HostStateSetting,
    /// The cap on the cache's bytes on disk (0: no cap).
    pub cache_max_bytes: u64,
    /// Which local files may be read.
    pub file_access: FileAccess,
    /// Refuse requests to loopback, private, link-local and other non-public addresses.
    pub deny_private_networks: bool,
    /// This process's wall clock moved by this much as the file store reads it (a test
    /// knob, `RSS_TEST_WALL_CLOCK_SKEW_MS`; 0 otherwise).
    pub wall_clock_skew_ms: i64,
    /// Host names of the proxies configured in `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY`
    /// (either case), lowercased: `--deny-private-networks` trusts them.
    pub proxy_hosts: Vec<String>,
    /// The longest a cached copy is served on the server's own freshness (`max-age`,
    /// `Expires`) without asking it again.
    pub max_freshness: Duration,
    /// What the gate keys a request on: the host, or the site (registrable domain).
    pub host_key: KeyMode,
    /// The MCP server's deadline for one tool call, everything included (`--call-timeout`).
    pub call_timeout: Duration,
    /// Whether the CLI's page reads honour robots.txt without `--respect-robots` (the config
    /// file's `[defaults] respect_robots`).
    pub respect_robots: bool,
    /// The MCP server's cap on a call's `max_response_tokens` (`--max-response-tokens`).
    pub max_response_tokens: usize,
    /// How watched feeds are checked, and the caps on subscriptions.
    pub watch: WatchParams,
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
            state_dir: default_state_dir(),
            host_state: HostStateSetting::default(),
            cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
            file_access: FileAccess::default(),
            deny_private_networks: false,
            wall_clock_skew_ms: 0,
            proxy_hosts: Vec::new(),
            max_freshness: DEFAULT_MAX_FRESHNESS,
            host_key: KeyMode::Host,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            respect_robots: false,
            max_response_tokens: DEFAULT_MAX_RESPONSE_TOKENS,
            watch: WatchParams::default(),
        }
    }
}

/// Where the config file is looked for: `--config`, else `RSS_CONFIG`, else
/// `$XDG_CONFIG_HOME/rss/config.toml` (the OS's config directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    /// The path (`None`: no config directory is known).
    pub path: Option<PathBuf>,
    /// Named by `--config` or `RSS_CONFIG`, so it must exist (the default location may
    /// hold nothing).
    pub explicit: bool,
}

/// Where the config file is: `flag` (`--config`), else `RSS_CONFIG` from `env`, else the
/// default location.
pub fn config_file(
    flag: Option<&std::path::Path>,
    env: impl Fn(&str) -> Option<String>,
) -> ConfigFile {
    if let Some(p) = flag {
        return ConfigFile {
            path: Some(p.to_path_buf()),
            explicit: true,
        };
    }
    if let Some(p) = env(ENV_CONFIG).filter(|p| !p.trim().is_empty()) {
        return ConfigFile {
            path: Some(PathBuf::from(p)),
            explicit: true,
        };
    }
    ConfigFile {
        path: directories::ProjectDirs::from("", "", "rss")
            .map(|d| d.config_dir().join("config.toml")),
        explicit: false,
    }
}

impl Config {
    /// The caps on a local read: the body cap and the timeout.
    pub fn read_limits(&self) -> ReadLimits {
        ReadLimits {
            max_bytes: self.max_body_bytes,
            timeout: self.timeout,
        }
    }

    /// Resolves flags over the process environment over defaults.
    pub fn from_env(overrides: Overrides) -> Result<Config> {
        Config::resolve(overrides, |name| std::env::var(name).ok())
    }

    /// Resolves flags over the process environment over `file` (the config file's
    /// `[defaults]`, in the flags' shape) over defaults.
    pub fn from_env_with(overrides: Overrides, file: &Overrides) -> Result<Config> {
        Config::resolve_layers(overrides, |name| std::env::var(name).ok(), file)
    }

    /// Resolves flags over `env` over defaults; an invalid value is a usage error.
    pub fn resolve(overrides: Overrides, env: impl Fn(&str) -> Option<String>) -> Result<Config> {
        Config::resolve_layers(overrides, env, &Overrides::default())
    }

    /// Resolves flags over `env` over `file` over defaults: each setting from the first
    /// layer that gives it; an invalid value is a usage error.
    pub fn resolve_layers(
        overrides: Overrides,
        env: impl Fn(&str) -> Option<String>,
        file: &Overrides,
    ) -> Result<Config> {
        let mut config = Config {
            watch: watch_params(&overrides, &env, file)?,
            ..Config::default()
        };
        let gate = &mut config.gate;

        let n = match overrides.host_concurrency {
            Some(n) => Some(n as u64),
            None => env_number(&env, ENV_HOST_CONCURRENCY)?,
        }
        .or(file.host_concurrency.map(|n| n as u64));
        if let Some(n) = n {
            in_range(
                n,
                limits::HOST_CONCURRENCY,
                "--host-concurrency / RSS_HOST_CONCURRENCY",
            )?;
            gate.host_concurrency = n as usize;
        }
        if let Some(secs) = env_number(&env, ENV_MAX_COOLDOWN)? {
            in_range(secs, limits::MAX_COOLDOWN_SECS, ENV_MAX_COOLDOWN)?;
            gate.max_cooldown = Duration::from_secs(secs);
        }
        let wait = match overrides.max_gate_wait_secs {
            Some(s) => Some(s),
            None => env_number(&env, ENV_MAX_GATE_WAIT)?,
        }
        .or(file.max_gate_wait_secs);
        if let Some(secs) = wait {
            in_range(
                secs,
                limits::MAX_GATE_WAIT_SECS,
                "--max-gate-wait / RSS_MAX_GATE_WAIT_SECS",
            )?;
            gate.max_gate_wait = Duration::from_secs(secs);
        }
        let gate_store = overrides
            .gate_store
            .clone()
            .or_else(|| env(ENV_GATE_STORE))
            .filter(|s| !s.trim().is_empty());
        let host_state_env = env(ENV_HOST_STATE).filter(|v| !v.trim().is_empty());
        config.host_state = if overrides.no_host_state {
            HostStateSetting::Off
        } else if let Some(url) = gate_store {
            HostStateSetting::Redis(gate_store_url(url.trim())?)
        } else if let Some(v) = host_state_env {
            match v.trim() {
                "on" | "1" | "true" | "files" => HostStateSetting::Files,
                "off" | "0" | "false" => HostStateSetting::Off,
                other => {
                    return Err(Error::usage(format!(
                        "{ENV_HOST_STATE}={other:?} is not one of on, off"
                    )));
                }
            }
        } else if file.no_host_state {
            HostStateSetting::Off
        } else if let Some(url) = &file.gate_store {
            HostStateSetting::Redis(gate_store_url(url.trim())?)
        } else {
            HostStateSetting::Files
        };

        if let Some(secs) = overrides.timeout_secs.or(file.timeout_secs) {
            if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
                return Err(Error::usage(format!(
                    "--timeout must be a number of seconds between 0 and 86400, got {secs}"
                )));
            }
            config.timeout = Duration::from_secs_f64(secs);
        }
        let flag = |name: &str| match env(name).as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some("0" | "false" | "off") => Ok(Some(false)),
            Some("1" | "true" | "on") => Ok(Some(true)),
            Some(other) => Err(Error::usage(format!(
                "{name}={:?} is not one of 1, 0",
                crate::error::echo(other)
            ))),
        };
        let deny = overrides.deny_private_networks
            || flag(ENV_DENY_PRIVATE_NETWORKS)?.unwrap_or(file.deny_private_networks);
        config.deny_private_networks = match overrides.private_networks_by_default {
            None => deny,
            Some(allowed) => {
                let allowed = allowed || flag(ENV_ALLOW_PRIVATE_NETWORKS)?.unwrap_or(false);
                if allowed && overrides.deny_private_networks {
                    return Err(Error::usage(
                        "--allow-private-networks and --deny-private-networks exclude each other",
                    ));
                }
                !allowed
            }
        };
        if let Some(bytes) = overrides.max_body_bytes.or(file.max_body_bytes) {
            in_range(bytes, limits::MAX_BODY_BYTES, "--max-body-bytes")?;
            config.max_body_bytes = bytes;
        }
        if let Some(ua) = overrides
            .user_agent
            .or_else(|| env(ENV_USER_AGENT))
            .or_else(|| file.user_agent.clone())
        {
            if ua.trim().is_empty() || ua.chars().any(|c| c.is_control()) || ua.len() > 512 {
                return Err(Error::usage(
                    "--user-agent / RSS_USER_AGENT must be printable text of 1 to 512 bytes",
                ));
            }
            config.user_agent = ua;
        }
        let cache_max = match overrides.cache_max_bytes {
            Some(n) => Some(n),
            None => env_number(&env, ENV_CACHE_MAX_BYTES)?,
        }
        .or(file.cache_max_bytes);
        if let Some(n) = cache_max {
            config.cache_max_bytes = n;
        }
        if let Some(n) = overrides.concurrency.or(file.concurrency) {
            in_range(n as u64, limits::CONCURRENCY, "--concurrency")?;
            config.concurrency = n;
        }
        config.proxy_hosts = proxy_hosts(&env);
        let key = overrides
            .host_key
            .clone()
            .or_else(|| env(ENV_HOST_KEY))
            .or_else(|| file.host_key.clone());
        config.host_key = match key.as_deref().map(str::trim) {
            None | Some("" | "host") => KeyMode::Host,
            Some("site") => KeyMode::Site,
            Some(other) => {
                return Err(Error::usage(format!(
                    "--host-key / {ENV_HOST_KEY} {:?} is not one of host, site",
                    crate::error::echo(other)
                )));
            }
        };
        let call = match overrides.call_timeout_secs {
            Some(s) => Some(s),
            None => env_number(&env, ENV_CALL_TIMEOUT)?,
        }
        .or(file.call_timeout_secs);
        if let Some(secs) = call {
            in_range(
                secs,
                limits::CALL_TIMEOUT_SECS,
                "--call-timeout / RSS_CALL_TIMEOUT_SECS",
            )?;
            config.call_timeout = Duration::from_secs(secs);
        }
        if let Some(n) = overrides.max_response_tokens {
            in_range(n, limits::MAX_RESPONSE_TOKENS, "--max-response-tokens")?;
            config.max_response_tokens = usize::try_from(n).unwrap_or(usize::MAX);
        }
        let freshness = match overrides.max_freshness_secs {
            Some(s) => Some(s),
            None => env_number(&env, ENV_MAX_FRESHNESS)?,
        }
        .or(file.max_freshness_secs);
        if let Some(secs) = freshness {
            in_range(
                secs,
                limits::MAX_FRESHNESS_SECS,
                "--max-freshness / RSS_MAX_FRESHNESS_SECS",
            )?;
            config.max_freshness = Duration::from_secs(secs);
        }
        config.respect_robots = overrides
            .respect_robots
            .or(file.respect_robots)
            .unwrap_or(false);
        if let Some(skew) = env(ENV_TEST_WALL_CLOCK_SKEW).filter(|s| !s.trim().is_empty()) {
            config.wall_clock_skew_ms = skew.trim().parse().map_err(|_| {
                Error::usage(format!(
                    "{ENV_TEST_WALL_CLOCK_SKEW}={skew:?} is not a number of milliseconds"
                ))
            })?;
        }
        if let Some(dir) = overrides.state_dir {
            config.state_dir = Some(dir);
        } else if let Some(dir) = env(ENV_STATE_DIR).filter(|d| !d.is_empty()) {
            config.state_dir = Some(PathBuf::from(dir));
        }
        if let Some(dir) = overrides.cache_dir {
            config.cache_dir = Some(dir);
        } else if let Some(dir) = env(ENV_CACHE_DIR).filter(|d| !d.is_empty()) {
            config.cache_dir = Some(PathBuf::from(dir));
        } else if let Some(dir) = &file.cache_dir {
            config.cache_dir = Some(dir.clone());
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

fn in_range(value: u64, range: std::ops::RangeInclusive<u64>, what: &str) -> Result<()> {
    if range.contains(&value) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "{what} must be between {} and {}, got {value}",
        range.start(),
        range.end()
    )))
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

/// `$XDG_STATE_HOME/rss` (`~/.local/state/rss`); where the OS has no state directory, its
/// local data directory.
fn default_state_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "rss").map(|dirs| {
        dirs.state_dir()
            .unwrap_or_else(|| dirs.data_local_dir())
            .to_path_buf()
    })
}

/// The gate's tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateParams {
    /// Concurrent sends per host (`HOST_MAX_CONCURRENCY`); 0 is treated as 1.
    pub host_concurrency: usize,
    /// First rung of the ladder when a refusal has no `Retry-After`.
    pub base_cooldown: Duration,
    /// Cap on any learned cooldown (and on the learned floor).
    pub max_cooldown: Duration,
    /// Least gap between a response and the next send while a host is warm.
    pub sticky_spacing: Duration,
    /// How long a host stays warm after its last refusal.
    pub warm_window: Duration,
    /// The longest a call may wait before its send (permit queue and pacing together).
    pub max_gate_wait: Duration,
    /// How long a refused gap is enforced after the refusal that taught it.
    pub floor_lifetime: Duration,
    /// How long a gap known to work is kept after the host's last refusal.
    pub window_lifetime: Duration,
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
            floor_lifetime: Duration::from_secs(3600),
            window_lifetime: Duration::from_secs(86_400),
        }
    }
}

/// What the gate keys a request on (`--host-key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyMode {
    /// Each `host:port` is its own host (the default).
    #[default]
    Host,
    /// Hosts are grouped by their registrable domain (the Public Suffix List's eTLD+1):
    /// `a.blogs.example` and `b.blogs.example` are one; `alice.github.io` and
    /// `bob.github.io` are two (`github.io` is a public suffix). IP addresses and
    /// `localhost` stay their own keys.
    Site,
}

/// Which local files may be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FileAccess {
    /// Any path the process can read (the CLI).
    #[default]
    Any,
    /// None: only `http`/`https` inputs (the MCP server's default).
    Deny,
    /// Regular files inside this directory tree (canonical: symlinks resolved).
    Under(PathBuf),
}

/// The caps on one local read.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    /// Largest number of bytes read.
    pub max_bytes: u64,
    /// Time allowed for opening and reading a file.
    pub timeout: Duration,
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
            &[(ENV_HOST_CONCURRENCY, "65")][..],
            &[(ENV_MAX_GATE_WAIT, "99999999999999999999")][..],
            &[(ENV_MAX_GATE_WAIT, "18446744073709551615")][..],
            &[(ENV_MAX_COOLDOWN, "0")][..],
            &[(ENV_MAX_COOLDOWN, "86401")][..],
            &[(ENV_HOST_STATE, "maybe")][..],
        ] {
            let pairs: &'static [(&str, &str)] = Box::leak(pairs.to_vec().into_boxed_slice());
            let err = Config::resolve(Overrides::default(), env_of(pairs)).unwrap_err();
            assert_eq!(err.code().as_str(), "USAGE_ERROR", "{pairs:?}");
        }
    }

    #[test]
    fn flags_outside_their_range_are_usage_errors() {
        for o in [
            Overrides {
                max_gate_wait_secs: Some(u64::MAX),
                ..Overrides::default()
            },
            Overrides {
                host_concurrency: Some(usize::MAX),
                ..Overrides::default()
            },
            Overrides {
                concurrency: Some(0),
                ..Overrides::default()
            },
            Overrides {
                max_body_bytes: Some(u64::MAX),
                ..Overrides::default()
            },
        ] {
            let err = Config::resolve(o.clone(), env_of(&[])).unwrap_err();
            assert_eq!(err.code().as_str(), "USAGE_ERROR", "{o:?}");
        }
    }

    #[test]
    fn host_state_is_shared_unless_turned_off() {
        let c = Config::resolve(Overrides::default(), env_of(&[])).unwrap();
        assert_eq!(c.host_state, HostStateSetting::Files);
        let c = Config::resolve(Overrides::default(), env_of(&[(ENV_HOST_STATE, "off")])).unwrap();
        assert_eq!(c.host_state, HostStateSetting::Off);
        let flags = Overrides {
            no_host_state: true,
            ..Overrides::default()
        };
        assert_eq!(
            Config::resolve(flags, env_of(&[])).unwrap().host_state,
            HostStateSetting::Off
        );
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
    fn the_default_user_agent_names_tool_and_version_only_and_users_add_a_contact() {
        assert_eq!(
            DEFAULT_USER_AGENT,
            format!("rss/{}", env!("CARGO_PKG_VERSION"))
        );
        const UA: &str = "rss/0.1 (+https://ops.example/feeds)";
        let ua = UA;
        let c = Config::resolve(Overrides::default(), env_of(&[(ENV_USER_AGENT, UA)])).unwrap();
        assert_eq!(c.user_agent, ua);
        let bad = Config::resolve(Overrides::default(), env_of(&[(ENV_USER_AGENT, "a\nb")]));
        assert!(bad.is_err());
    }
}
